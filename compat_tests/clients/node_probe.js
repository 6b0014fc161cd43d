'use strict';
// Loads ali-ons and prints its version: the compat tests skip node tests when this fails.
const pkg = require('ali-ons/package.json');
require('ali-ons');
process.stdout.write('RESULT ' + JSON.stringify({ ok: true, version: pkg.version, node: process.version }) + '\n');

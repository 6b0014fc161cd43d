'use strict';
// Shared helpers of the ali-ons drivers: JSON args in argv[2], one "RESULT {json}" line out.

let printed = false;

function emit(result) {
  if (printed) return;
  printed = true;
  process.stdout.write('RESULT ' + JSON.stringify(result) + '\n');
}

function finish(result, code) {
  emit(result);
  // ali-ons keeps timers alive; leave once the result is out
  setTimeout(() => process.exit(code || 0), 50);
}

function watchdog(seconds, result) {
  const t = setTimeout(() => {
    if (!result.error) result.error = `watchdog: still running after ${seconds} s`;
    result.watchdog = true;
    finish(result, 3);
  }, seconds * 1000);
  t.unref();
}

// ali-ons insists on an http client (used only to look up name servers over HTTP,
// which nameSrv turns off)
const httpclient = {
  async request() {
    throw new Error('http lookups are disabled in the compat tests');
  },
};

function args() {
  return JSON.parse(process.argv[2] || '{}');
}

function clientOptions(a) {
  const options = { httpclient, nameSrv: a.namesrv };
  if (a.access_key) {
    options.accessKeyId = a.access_key;
    options.accessKeySecret = a.secret_key || 'compat-secret';
  }
  if (a.instance_name) options.instanceName = a.instance_name;
  return options;
}

function errorText(err) {
  return err && (err.name + ': ' + err.message);
}

module.exports = { emit, finish, watchdog, args, clientOptions, errorText };

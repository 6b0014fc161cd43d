#!/usr/bin/env bash
# Installs the third-party RocketMQ clients the compat tests drive, each in its own
# environment under compat_tests/.envs/ (git-ignored), never in the project's venv:
#   .envs/cpp1/  venv with rocketmq==0.4.4           (Apache C++ client 1.x, version 63)
#   .envs/cpp2/  venv with rocketmq-python-cvs==2.1.0.3 (C++ client 2.1.0, version 333)
#   .envs/node/  npm project with ali-ons@3            (pure JS, version 121)
# Idempotent and quick when already installed (a stamp file per env records what it holds).
# A client that cannot install (no network, another CPU, no node) is reported and left
# out; its tests then skip with the reason. Always exits 0 unless COMPAT_STRICT=1.
set -uo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ENVS="${COMPAT_ENVS_DIR:-$HERE/.envs}"
PYTHON="${COMPAT_PYTHON:-python3}"
CPP1_SPEC="rocketmq==0.4.4"
CPP2_SPEC="rocketmq-python-cvs==2.1.0.3"
NODE_SPEC="ali-ons@3"
mkdir -p "$ENVS"
failed=0

note() { echo "compat install: $*" >&2; }

# librocketmq.so needs libstdc++6 and (cpp2) zlib1g; both are on a stock Debian, but
# install them when missing and we are root (CI runs as root on a fresh machine).
ensure_system_libs() {
  local missing=()
  ldconfig -p 2>/dev/null | grep -q 'libstdc++.so.6 ' || missing+=(libstdc++6)
  ldconfig -p 2>/dev/null | grep -q 'libz.so.1 ' || missing+=(zlib1g)
  if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      note "installing ${missing[*]}"
      (apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; }) ||
        note "could not install ${missing[*]}"
    else
      note "missing system libraries ${missing[*]} (not root: not installing)"
    fi
  fi
}

install_venv() {  # name spec
  local name="$1" spec="$2" dir="$ENVS/$1"
  if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$spec" ] && [ -x "$dir/bin/python" ]; then
    note "$name: $spec already installed"
    return 0
  fi
  rm -rf "$dir"
  if ! "$PYTHON" -m venv "$dir" >/dev/null 2>&1; then
    note "$name: cannot create a venv with $PYTHON"
    return 1
  fi
  if ! "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$spec" 2>"$dir.pip.log"; then
    note "$name: pip install $spec failed (see $dir.pip.log)"
    return 1
  fi
  rm -f "$dir.pip.log"
  echo "$spec" >"$dir/.stamp"
  note "$name: installed $spec"
}

install_node() {
  local dir="$ENVS/node"
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    note "node: node/npm not found, ali-ons tests will skip"
    return 1
  fi
  if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$NODE_SPEC" ] && [ -d "$dir/node_modules/ali-ons" ]; then
    note "node: $NODE_SPEC already installed"
    return 0
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  echo '{"name": "rocketpy-compat-clients", "private": true}' >"$dir/package.json"
  if ! (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "$NODE_SPEC" >"$dir/npm.log" 2>&1); then
    note "node: npm install $NODE_SPEC failed (see $dir/npm.log)"
    return 1
  fi
  echo "$NODE_SPEC" >"$dir/.stamp"
  note "node: installed $NODE_SPEC"
}

ensure_system_libs
install_venv cpp1 "$CPP1_SPEC" || failed=1
install_venv cpp2 "$CPP2_SPEC" || failed=1
install_node || failed=1

if [ "$failed" -ne 0 ] && [ "${COMPAT_STRICT:-0}" = 1 ]; then
  exit 1
fi
exit 0

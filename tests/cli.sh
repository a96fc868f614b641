#!/usr/bin/env bash
# Command-line behaviour: exit codes (0 ok, 1 failure, 2 usage), data on
# stdout and messages on stderr, colour rules, help for every command, JSON
# that parses and carries its schema version.
set -u
bin=$1 data=$2
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() { # description, then a command whose success is the assertion
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}
status() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

check "--help exits 0"              [ "$(status "$bin" --help)" = 0 ]
check "--help lists scan"           grep -q '^  scan' "$tmp/out"
check "--version exits 0"           [ "$(status "$bin" --version)" = 0 ]
check "--version prints a version"  grep -Eq '^kernelsmith-cc [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out"
check "no command is a usage error" [ "$(status "$bin")" = 2 ]
check "unknown command exits 2"     [ "$(status "$bin" frobnicate)" = 2 ]
check "unknown command names it"    grep -q "frobnicate" "$tmp/err"
check "unknown option exits 2"      [ "$(status "$bin" scan --frob)" = 2 ]
check "bad --color exits 2"         [ "$(status "$bin" --color=sometimes scan)" = 2 ]
check "bad --jobs exits 2"          [ "$(status "$bin" scan -j 0 "$data/frontend")" = 2 ]
for cmd in scan doctor; do
  check "$cmd --help exits 0"       [ "$(status "$bin" "$cmd" --help)" = 0 ]
  check "$cmd --help has usage"     grep -q "^usage: kernelsmith-cc $cmd" "$tmp/out"
  check "help $cmd works"           [ "$(status "$bin" help "$cmd")" = 0 ]
done
check "missing path exits 1"        [ "$(status "$bin" scan /nonexistent/ks-path)" = 1 ]
check "missing path is named"       grep -q "/nonexistent/ks-path" "$tmp/err"
check "missing -p compdb exits 1"   [ "$(status "$bin" scan -p "$tmp" "$data/frontend/overloads.cu")" = 1 ]
check "missing compdb is named"     grep -q "compile_commands.json" "$tmp/err"

check "scan exits 0"                [ "$(status "$bin" scan --no-compdb "$data/frontend/overloads.cu")" = 0 ]
check "table on stdout"             grep -q "^KERNEL" "$tmp/out"
check "summary on stderr"           grep -q "3 kernels, 3 launch sites in 1 file" "$tmp/err"
check "no colour when piped"        bash -c "! grep -q $'\033' '$tmp/out' '$tmp/err'"
NO_COLOR=1 status "$bin" --color=auto scan --no-compdb "$data/frontend/overloads.cu" >/dev/null
check "NO_COLOR respected"          bash -c "! grep -q $'\033' '$tmp/out' '$tmp/err'"
check "-q silences the summary"     [ "$(status "$bin" -q scan --no-compdb "$data/frontend/overloads.cu")" = 0 ]
check "-q leaves stderr empty"      [ ! -s "$tmp/err" ]

check "--json exits 0"              [ "$(status "$bin" scan --json --no-compdb "$data/frontend")" = 0 ]
check "--json parses"               python3 -c "import json,sys; d=json.load(open('$tmp/out')); sys.exit(0 if d['schema']=='kernelsmith-cc.scan' and d['version']==1 and d['summary']['kernels']==len(d['kernels']) else 1)"
check "--json links launches"       python3 -c "
import json,sys
d=json.load(open('$tmp/out'))
for l in d['launches']:
    if l['kernel'] is not None and l['id'] not in d['kernels'][l['kernel']]['launches']: sys.exit(1)
"
check "broken file reported"        grep -q "broken.cu:6:25: expected ';'" "$tmp/err"

# A source that cannot be read is named with the reason, not reported as a
# parse failure or "no kernels". Root reads through chmod 000, so there the
# fault site stands in for the permission (CI may run as root).
mkdir -p "$tmp/unread"
printf '__global__ void k(float *x) { x[0] = 1; }\n' >"$tmp/unread/u.cu"
check "unreadable (fault): exit 1"  [ "$(KERNELSMITH_FAULTS=read:1 status "$bin" scan --no-compdb "$tmp/unread")" = 1 ]
check "unreadable (fault): named"   grep -q "error: .*/unread/u.cu: cannot read: Permission denied" "$tmp/err"
if [ "$(id -u)" = 0 ]; then
  echo "cli: running as root, where chmod 000 does not stop a read: the unreadable source was checked through KERNELSMITH_FAULTS=read:1 only"
else
  chmod 000 "$tmp/unread/u.cu"
  check "unreadable: exit 1"        [ "$(status "$bin" scan --no-compdb "$tmp/unread")" = 1 ]
  check "unreadable: named"         grep -q "error: .*/unread/u.cu: cannot read: Permission denied" "$tmp/err"
  chmod 644 "$tmp/unread/u.cu"
fi

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

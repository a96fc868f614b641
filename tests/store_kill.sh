#!/usr/bin/env bash
# store_kill: the results store loses nothing committed when its writer is
# killed with SIGKILL at any moment (docs/store.md, "Crash safety").
#
# `test_store --writer DIR N` prints "opening", then writes variants and
# evaluations, printing "committed K" after each commit. It is killed a
# random time after "opening"; then `test_store --verify DIR` checks the
# file (integrity, foreign keys, every evaluation readable back) and counts
# the evaluations: at least every K the writer printed, at most one more
# (committed, killed before printing), never fewer than before.
#
# 1. Kills while a new store is being created (directory, schema), each in
#    a fresh directory; a writer must then work in what was left.
# 2. Kills at random moments of a long run in one store, each writer
#    resuming where the previous one was killed; a last one runs to the end
#    and must leave the exact count.
#
# Usage: store_kill.sh PATH/TO/test_store
set -u
bin=${1:?usage: store_kill.sh PATH/TO/test_store}
work=$(mktemp -d "${TMPDIR:-/tmp}/ks-store-kill-XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "store_kill: $*" >&2; exit 1; }

# verify STORE WHEN: prints the number of evaluations.
verify() {
  local out
  out=$("$bin" --verify "$1" 2>"$work/verify.err") ||
    fail "verify failed after $2: $(cat "$work/verify.err")"
  [[ $out =~ ^evaluations\ ([0-9]+)$ ]] || fail "verify printed: $out"
  echo "${BASH_REMATCH[1]}"
}

# kill_writer STORE SECONDS BEFORE: starts a writer, kills it SECONDS after
# it printed "opening", checks the store; prints the new count.
kill_writer() {
  local store=$1 delay=$2 before=$3 pid status last n
  "$bin" --writer "$store" 100000000 >"$work/out" 2>"$work/err" &
  pid=$!
  for _ in $(seq 5000); do
    grep -q '^opening' "$work/out" && break
    sleep 0.001
  done
  sleep "$delay"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  status=$?
  # 137: killed. Anything else: the writer failed by itself.
  [[ $status == 137 ]] || fail "writer exited with $status before the kill: $(cat "$work/err")"
  last=$(grep '^committed ' "$work/out" | tail -n 1 | cut -d' ' -f2)
  last=${last:-$before}
  n=$(verify "$store" "a kill ${delay} s after opening")
  ((n >= last)) || fail "kill at ${delay} s: the writer printed committed $last, the store has $n"
  ((n <= last + 1)) || fail "kill at ${delay} s: $n evaluations, but the writer printed $last"
  ((n >= before)) || fail "kill at ${delay} s: $n evaluations, $before before"
  echo >&2 "killed ${delay} s after opening: $((n - before)) new evaluations, $n in all"
  echo "$n"
}

# finish STORE GOAL: a writer that is not killed reaches GOAL exactly,
# evaluating first what a killed one left without its evaluation.
finish() {
  "$bin" --writer "$1" "$2" >"$work/out" 2>"$work/err" ||
    fail "a writer after the kills failed: $(cat "$work/err")"
  local n
  n=$(verify "$1" "a writer after the kills")
  ((n == $2)) || fail "a writer after the kills should leave $2 evaluations, the store has $n"
}

RANDOM=$$
# 1. While the store is created.
for delay in 0 0 0.0005 0.001 0.002 0.003 0.005 0.008; do
  store=$work/new-$RANDOM/.kernelsmith
  n=$(kill_writer "$store" "$delay" 0)
  finish "$store" $((n + 3))
done

# 2. A long run, killed again and again.
store=$work/project/.kernelsmith
n=0
for _ in 1 2 3 4 5 6 7 8; do
  n=$(kill_writer "$store" "$(printf '0.%03d' $((RANDOM % 300)))" "$n")
done
finish "$store" $((n + 25))
echo "resumed and finished: $((n + 25)) evaluations"

#!/usr/bin/env bash
# tune --mpi under mpirun on a CPU (--oversubscribe), with the stand-in
# judge and tune_app.sh's stand-in program: rank 0 runs the program and
# every phase, the search is spread over the ranks, and the result is the
# one process's (the same table, the same evaluations in the same order,
# the same patch), with the program run once per phase; a program that
# fails before the search stops the other ranks with a line that says so;
# rank 0 killed during the search: `tune --mpi --resume` under mpirun
# finishes it; usage errors.
# usage: tune_mpi.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
data=$(cd "$2" && pwd)
. "$(dirname "$0")/check.sh"
if ! command -v mpirun >/dev/null; then
  echo "mpirun not found (Debian: openmpi-bin): skipped"
  exit 77
fi
. "$(dirname "$0")/tune_app.sh"
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
# As in mpi_cli.sh: no leak checks under Open MPI, no single-copy transport.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
mpi() { # np, command...
  local np=$1
  shift
  timeout 600 mpirun "${root[@]}" --oversubscribe --enable-recovery -x TUNE_LOG \
    -x KERNELSMITH_INJECT_LIB -x KERNELSMITH_FAULTS -x FAIL_IN -np "$np" "$@"
}
opts=(--stand-in-judge --rounds 3 --seed 5 --max-seconds 120)
export KERNELSMITH_FAULTS= FAIL_IN=

# What a tune decided: the table's lines and every evaluation of a variant
# in the order the store received it.
decided() { # repo
  python3 - "$1/.kernelsmith/kernelsmith.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for row in db.execute("SELECT k.name, v.hash, e.verdict, e.speedup FROM evaluations e "
                      "JOIN kernels k ON k.id = e.kernel JOIN variants v ON v.id = e.variant "
                      "ORDER BY e.id"):
    print("eval", *row)
PY
}
ranks_of() { # repo: the ranks that judged, "rank:count" each
  python3 - "$1/.kernelsmith/kernelsmith.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(" ".join(f"{r}:{n}" for r, n in db.execute(
    "SELECT rank, count(*) FROM eval_ranks GROUP BY rank ORDER BY rank")))
PY
}

# 1. One process, then two ranks.
newrepo "$tmp/one"
export TUNE_LOG=$tmp/one.log
(cd "$tmp/one" && tune "${opts[@]}" -- sh "$tmp/app.sh" >"$tmp/one.out" 2>"$tmp/one.err")
check "alone: exit 0" [ $? -eq 0 ]
newrepo "$tmp/two"
export TUNE_LOG=$tmp/two.log
(cd "$tmp/two" && mpi 2 "$bin" tune --mpi "${opts[@]}" -- sh "$tmp/app.sh" >"$tmp/two.out" 2>"$tmp/two.err")
check "-np 2: exit 0" [ $? -eq 0 ]
check "-np 2: the program ran once per phase (on rank 0)" \
  [ "$(grep -v '^capture asked' "$TUNE_LOG" | tr '\n' ' ')" = "profile capture verify-off verify-on " ]
check "-np 2: the same table" cmp -s "$tmp/one.out" <(sed "s|$tmp/two|$tmp/one|" "$tmp/two.out")
decided "$tmp/one" >"$tmp/one.dec"
decided "$tmp/two" >"$tmp/two.dec"
check "-np 2: the same evaluations in the same order ($(wc -l <"$tmp/one.dec"))" \
  bash -c "[ -s '$tmp/one.dec' ] && cmp -s '$tmp/one.dec' '$tmp/two.dec'"
judged=$(ranks_of "$tmp/two")
check "-np 2: both ranks judged ($judged)" bash -c "[[ '$judged' == 0:*' '1:* ]]"
check "-np 2: the same patch" cmp -s "$tmp/one/.kernelsmith/tune.patch" "$tmp/two/.kernelsmith/tune.patch"
check "-np 2: one table (rank 0's)" [ "$(grep -c '^kernel  ' "$tmp/two.out")" -eq 1 ]

# 2. A program that fails before the search: rank 0 says why, the other
# rank that it stopped before the search; the job ends.
newrepo "$tmp/fail"
export TUNE_LOG=$tmp/fail.log FAIL_IN=profile
(cd "$tmp/fail" && mpi 2 "$bin" tune --mpi "${opts[@]}" -- sh "$tmp/app.sh" >/dev/null 2>"$tmp/fail.err"; exit 0)
cat "$tmp/fail.err" >&2
export FAIL_IN=
check "failing program: rank 0 says the program failed" grep -q "error: the program failed in the profile run (exit status 3)" "$tmp/fail.err"
check "failing program: rank 1 says rank 0 stopped before the search" \
  grep -q "(rank 1 on .*): error: --mpi: rank 0 stopped before the search" "$tmp/fail.err"

# 3. Rank 0 killed (kill -9) after its first kernel's search: rank 1
# stops and says so; tune --mpi --resume under mpirun finishes the tune
# with the one process's result.
newrepo "$tmp/kill"
export TUNE_LOG=$tmp/kill.log KERNELSMITH_FAULTS=tune_kill:5
(cd "$tmp/kill" && mpi 2 "$bin" tune --mpi "${opts[@]}" -- sh "$tmp/app.sh" >/dev/null 2>"$tmp/kill.err")
cat "$tmp/kill.err" >&2
export KERNELSMITH_FAULTS=
check "rank 0 killed: rank 1 says rank 0 is lost" grep -q "(rank 1 on .*): .*rank 0 is lost" "$tmp/kill.err"
(cd "$tmp/kill" && mpi 2 "$bin" tune --mpi --resume >"$tmp/resume.out" 2>"$tmp/resume.err")
check "resume under mpirun: exit 0" [ $? -eq 0 ]
check "resume: the same table" cmp -s "$tmp/one.out" <(sed "s|$tmp/kill|$tmp/one|" "$tmp/resume.out")
check "resume: the program ran once per phase, the capture not again" \
  [ "$(grep -v '^capture asked' "$TUNE_LOG" | tr '\n' ' ')" = "profile capture verify-off verify-on " ]

# 4. Usage.
tune --mpi-timeout 5 --stand-in-judge -- true >/dev/null 2>"$tmp/u1.err"
check "usage: --mpi-timeout without --mpi" \
  bash -c "[ $? -eq 2 ] && grep -q -- '--mpi-timeout goes with --mpi' '$tmp/u1.err'"
tune --mpi --mpi-timeout 0 --stand-in-judge -- true >/dev/null 2>"$tmp/u2.err"
check "usage: --mpi-timeout 0" \
  bash -c "[ $? -eq 2 ] && grep -q -- '--mpi-timeout takes seconds' '$tmp/u2.err'"

echo "tune_mpi: $fails failed"
[ "$fails" -eq 0 ]

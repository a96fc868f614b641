#!/usr/bin/env bash
# optimize --mpi under mpirun on a CPU (--oversubscribe), with the stand-in
# judge: one process, 2 ranks and 3 ranks make the same search for a seed
# and an evaluation budget (the same winners, the same evaluations in the
# same order), rank 0's store names the rank and host that judged each;
# ranks on a "host without the project" (KERNELSMITH_MIRROR_COPY=1) work on
# the files rank 0 sent; a rank killed mid-run (SIGKILL): the others go on,
# say so and decide the same; rank 0 killed: the others stop, and --resume
# under mpirun finishes with the same winners; usage errors.
# usage: mpi_cli.sh KERNELSMITH_CC TESTDATA
set -u
bin=$1
data=$2
. "$(dirname "$0")/check.sh"
if ! command -v mpirun >/dev/null; then
  echo "mpirun not found (Debian: openmpi-bin): skipped"
  exit 77
fi
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
# Leak checks off here (a sanitized build): Open MPI keeps what it
# allocated past MPI_Finalize, and only the slow unwinder names its
# libraries through their plugins' frames (tests/cluster_mpi.sh), which
# makes every allocation of libclang's parses too slow to run. Our code's
# leaks are checked by the other tests, the transport's by cluster_mpi.
# Containers often refuse the shared-memory transport's single copy.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# --enable-recovery: a rank's death does not end the job (Open MPI 4).
mpi() { # np, env names to pass (comma-separated or ""), command...
  local np=$1 envs=$2
  shift 2
  local x=()
  [ -n "$envs" ] && for e in ${envs//,/ }; do x+=(-x "$e"); done
  timeout 600 mpirun "${root[@]}" --oversubscribe --enable-recovery "${x[@]}" -np "$np" "$@"
}

# A copy of two apps, so that the mirror's files are ours to change.
cp -r "$data/apps/saxpy" "$data/apps/softmax" "$tmp/"
apps=("$tmp/saxpy" "$tmp/softmax")
args() { # store
  echo optimize --stand-in-judge --rounds 4 --max-evals 20 --seed 5 -k saxpy_kernel \
    -k softmax_rows_kernel --store "$tmp/$1" --json
}
opt() { # store, launcher... (then the options after --)
  local store=$1
  shift
  local pre=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do pre+=("$1"); shift; done
  shift
  # shellcheck disable=SC2046
  "${pre[@]}" "$bin" $(args "$store") "$@" "${apps[@]}" >"$tmp/$store.json" 2>"$tmp/$store.err"
}

# What a run decided: each kernel's winner, and every evaluation of a
# variant in the order the store received it (hash, verdict, speedup).
decided() {
  python3 - "$tmp/$1.json" "$tmp/$1/kernelsmith.db" "${2:-all}" <<'PY'
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
for k in sorted(d["kernels"], key=lambda k: k["kernel"]):
    print("winner", k["kernel"], k["status"], k["techniques"], k["speedup"], k["evaluated"])
if sys.argv[3] == "all":
    db = sqlite3.connect(sys.argv[2])
    for row in db.execute("SELECT k.name, v.hash, e.verdict, e.speedup FROM evaluations e "
                          "JOIN kernels k ON k.id = e.kernel JOIN variants v ON v.id = e.variant "
                          "ORDER BY e.id"):
        print("eval", *row)
PY
}
judged_by() { # store: "rank host count" per line
  python3 - "$tmp/$1/kernelsmith.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for r in db.execute("SELECT r.rank, r.host, count(*) FROM eval_ranks r GROUP BY r.rank, r.host "
                    "ORDER BY r.rank"):
    print(*r)
PY
}

# 1. One process, 2 and 3 ranks: the same search.
opt one -- 
check "one process: exit 0" [ $? -eq 0 ]
decided one >"$tmp/one.decided"
check "... both kernels optimized, 20 evaluations each" \
  [ "$(grep -c '^winner .* optimized .* 20$' "$tmp/one.decided")" = 2 ]
opt two mpi 2 "" -- --mpi
check "mpirun -np 2: exit 0" [ $? -eq 0 ]
decided two >"$tmp/two.decided"
check "-np 2 decides as one process (winners and every evaluation)" \
  diff -u "$tmp/one.decided" "$tmp/two.decided"
opt three mpi 3 "" -- --mpi
check "mpirun -np 3: exit 0" [ $? -eq 0 ]
decided three >"$tmp/three.decided"
check "-np 3 decides as one process" diff -u "$tmp/one.decided" "$tmp/three.decided"
judged_by three >"$tmp/three.by"
check "... rank 0's store names ranks 0, 1 and 2 as judges" \
  [ "$(cut -d' ' -f1 "$tmp/three.by" | tr '\n' ' ')" = "0 1 2 " ]
check "... with their host" [ "$(cut -d' ' -f2 "$tmp/three.by" | sort -u)" = "$(hostname)" ]
"$bin" status --store "$tmp/three" >"$tmp/three.status" 2>&1
check "status shows each rank's evaluations" grep -q "rank 2 on $(hostname): device 0, worker 0:" \
  "$tmp/three.status"
check "only rank 0 prints the outcome" \
  [ "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["kernels"]))' \
    "$tmp/three.json")" = 2 ]

# The beam, with two workers per rank (a round's share judged by a pool).
opt beam_one -- --strategy beam
decided beam_one >"$tmp/beam_one.decided"
opt beam_two mpi 2 "" -- --mpi --strategy beam --devices 0,0
check "beam, -np 2 with two workers each: exit 0" [ $? -eq 0 ]
decided beam_two >"$tmp/beam_two.decided"
check "... decides as one process" diff -u "$tmp/beam_one.decided" "$tmp/beam_two.decided"

# 2. The other ranks on a host without the project: they search the files
# rank 0 sent them, in a private copy removed at the end.
mkdir -p "$tmp/t"
# shellcheck disable=SC2046
TMPDIR=$tmp/t KERNELSMITH_MIRROR_COPY=1 mpi 2 TMPDIR,KERNELSMITH_MIRROR_COPY "$bin" -v \
  $(args copy) --mpi "${apps[@]}" >"$tmp/copy.json" 2>"$tmp/copy.err"
check "ranks with a copy of the files: exit 0" [ $? -eq 0 ]
check "... rank 1 worked on a copy" grep -q "rank 1 on .*files copied to $tmp/t/kernelsmith-mirror-" \
  "$tmp/copy.err"
decided copy >"$tmp/copy.decided"
check "... and decided as one process" diff -u "$tmp/one.decided" "$tmp/copy.decided"
check "... the copy and the rank's store are removed" [ -z "$(ls -A "$tmp/t")" ]

# 3. A rank killed in the middle of a round (after its 3rd evaluation):
# rank 0 notices its silence, judges its share and says so.
KERNELSMITH_FAULTS=rank1_kill:3 opt kill1 mpi 3 KERNELSMITH_FAULTS -- --mpi --mpi-timeout 3
check "rank 1 killed: rank 0 finishes (json written)" \
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/kill1.json"
check "... and says rank 1 is lost" grep -q "rank 1 (.*) is lost (.*): rank 0 takes over its share; 2 ranks go on" \
  "$tmp/kill1.err"
decided kill1 >"$tmp/kill1.decided"
check "... the same winners and evaluations as one process" \
  diff -u "$tmp/one.decided" "$tmp/kill1.decided"
judged_by kill1 >"$tmp/kill1.by"
check "... rank 1 judged nothing that was kept" [ -z "$(grep '^1 ' "$tmp/kill1.by")" ]

# 4. Rank 0 killed (after 5 evaluations of a round's share): the other rank
# stops and says how to go on; --resume under mpirun finishes the search.
KERNELSMITH_FAULTS=rank0_kill:5 opt kill0 mpi 2 KERNELSMITH_FAULTS -- --mpi --mpi-timeout 3
check "rank 0 killed: no outcome written" [ ! -s "$tmp/kill0.json" ]
check "... rank 1 says rank 0 is lost" grep -q "rank 0 is lost; this rank stops" "$tmp/kill0.err"
mpi 2 "" "$bin" optimize --mpi --resume --store "$tmp/kill0" --json >"$tmp/kill0.json" \
  2>"$tmp/kill0.resume.err"
check "--resume under mpirun: exit 0" [ $? -eq 0 ]
# A chain that ties with another (the same speedup) may win in its place.
check "... the winners' speedups of the uninterrupted search, nothing judged twice" \
  python3 - "$tmp/kill0/kernelsmith.db" "$tmp/kill0.json" "$tmp/one.json" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
got, want = (sorted((k["kernel"], k["status"], k["speedup"]) for k in json.load(open(f))["kernels"])
             for f in sys.argv[2:])
assert got == want, (got, want)
assert db.execute("SELECT status FROM runs").fetchone()[0] == "done"
twice = db.execute("SELECT variant, count(*) FROM evaluations WHERE variant IS NOT NULL "
                   "GROUP BY variant HAVING count(*) > 1").fetchall()
assert len(twice) <= 2 * 3, twice   # the winners' rechecks, up to three per kernel
PY

# 5. Usage.
"$bin" optimize --mpi --profile p.json "${apps[@]}" >/dev/null 2>"$tmp/u1.err"
check "--mpi with --profile: usage error" [ $? -eq 2 ]
check "... saying to give captures" grep -q "give its captures with --capture" "$tmp/u1.err"
"$bin" optimize --mpi-timeout 5 --stand-in-judge "${apps[@]}" >/dev/null 2>"$tmp/u2.err"
check "--mpi-timeout without --mpi: usage error" [ $? -eq 2 ]

[ "$fails" -eq 0 ] && echo "all passed" || { echo "$fails failed"; exit 1; }

#!/usr/bin/env bash
# cluster_mpi: the cluster transport (cluster/ks_cluster.h) under mpirun,
# with tests/test_cluster.c as every rank (its header says what each mode
# does and prints).
#
# 1. exchange, -np 2 and 3 (and 3 over TCP): every rank's gathers and
#    bcasts check out, nobody is lost, every rank closes and exits 0.
# 2. kill-worker: the last rank SIGKILLs itself in round 10 (over shared
#    memory right after starting a 5 MB send; over TCP while rank 0 waits
#    for it: kill-worker-quiet, see cluster/ks_cluster.h on TCP); rank 0
#    hears of the loss once (after the 2 s timeout), the others go on to
#    the end and exit 0.
# 3. kill-root, -np 2 and 3 (and 3 over TCP): rank 0 SIGKILLs itself in
#    round 10; every other rank's bcast returns 1, and they close and
#    exit 0.
#
# Under --enable-recovery mpirun keeps the job going when a rank dies and
# exits 0 even when a rank failed, so each rank runs under a shell that
# prints its exit status ("rank R: exit S"), and the checks read what the
# ranks print, not mpirun's status. A sanitizer report anywhere fails.
#
# Usage: cluster_mpi.sh PATH/TO/test_cluster   (exit 77: no mpirun)
set -u
bin=${1:?usage: cluster_mpi.sh PATH/TO/test_cluster}
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (Open MPI: openmpi-bin)"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/check.sh"

as_root=()
[ "$(id -u)" -eq 0 ] && as_root=(--allow-run-as-root)
# Open MPI keeps what MPI_Init_thread allocated past MPI_Finalize; the
# suppressions name its libraries only, and the slow unwinder is needed to
# see them through its plugins' frames.
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}fast_unwind_on_malloc=0:suppressions=$here/cluster_lsan.supp"
# In containers the shared-memory transport's single copy (CMA,
# process_vm_readv) is often refused, which breaks large messages; copying
# through the shared segment works everywhere.
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}

# run NAME NP MODE [mpirun options]: the ranks' output in $tmp/NAME.out.
run() {
  local name=$1 np=$2 mode=$3
  shift 3
  timeout -k 10 240 mpirun "${as_root[@]}" --oversubscribe --enable-recovery "$@" -np "$np" \
    sh -c '"$@"; echo "rank ${OMPI_COMM_WORLD_RANK:-?}: exit $?"' sh "$bin" "$mode" \
    >"$tmp/$name.out" 2>&1
  status=$?
}

has() { grep -qxF -- "$2" "$tmp/$1.out"; }   # NAME LINE
lacks() { ! has "$@"; }
count() { grep -cxF -- "$2" "$tmp/$1.out"; } # NAME LINE
ended() { [ "$status" -ne 124 ] && [ "$status" -ne 137 ]; }
clean() { ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|^rank [0-9]+: FAIL' "$tmp/$1.out"; }

# A survivor: its last words and exit 0.
survived() { # NAME RANK
  check "$1: rank $2 closed" has "$1" "rank $2: closed"
  check "$1: rank $2 exit 0" has "$1" "rank $2: exit 0"
}

# Every run: no hang (timeout's 124/137), no sanitizer report, no FAIL;
# the output shown when a check of the run failed.
finish() { # NAME
  check "$1: mpirun ended (status $status)" ended
  check "$1: no FAIL, no sanitizer report" clean "$1"
  if [ "$fails" -ne "$before" ]; then
    echo "--- output of $1"
    cat "$tmp/$1.out"
    echo "---"
  fi
}

exchange() { # NAME NP [mpirun options]
  local name=$1 np=$2 r
  shift 2
  before=$fails
  run "$name" "$np" exchange "$@"
  check "$name: rank 0 done, nobody lost" has "$name" "rank 0: done 24 rounds, lost 0"
  for ((r = 1; r < np; r++)); do
    check "$name: rank $r done" has "$name" "rank $r: done 24 rounds"
  done
  for ((r = 0; r < np; r++)); do survived "$name" "$r"; done
  finish "$name"
}

kill_worker() { # NAME NP MODE [mpirun options]
  local name=$1 np=$2 mode=$3 r victim=$(($2 - 1))
  shift 3
  before=$fails
  run "$name" "$np" "$mode" "$@"
  check "$name: rank $victim killed itself" has "$name" "rank $victim: exit 137"
  check "$name: ... in round 10" has "$name" "rank $victim: killing myself in round 10"
  check "$name: ... and did not go on" lacks "$name" "rank $victim: done 24 rounds"
  check "$name: rank 0 told of its loss once" \
    [ "$(grep -c "^rank 0: lost rank" "$tmp/$name.out")" = 1 ]
  check "$name: ... in round 10 (its first gather after the death)" \
    has "$name" "rank 0: lost rank $victim (round 10)"
  check "$name: rank 0 went on to the end" has "$name" "rank 0: done 24 rounds, lost 1"
  for ((r = 1; r < victim; r++)); do
    check "$name: rank $r went on to the end" has "$name" "rank $r: done 24 rounds"
  done
  for ((r = 0; r < victim; r++)); do survived "$name" "$r"; done
  finish "$name"
}

kill_root() { # NAME NP [mpirun options]
  local name=$1 np=$2 r
  shift 2
  before=$fails
  run "$name" "$np" kill-root "$@"
  check "$name: rank 0 killed itself" has "$name" "rank 0: exit 137"
  check "$name: ... and did not close" lacks "$name" "rank 0: closed"
  for ((r = 1; r < np; r++)); do
    check "$name: rank $r's bcast said rank 0 is lost" has "$name" "rank $r: rank 0 lost in round 10"
    check "$name: ... once" [ "$(count "$name" "rank $r: rank 0 lost in round 10")" = 1 ]
    survived "$name" "$r"
  done
  finish "$name"
}

exchange exchange-2 2
exchange exchange-3 3
exchange exchange-3-tcp 3 --mca btl tcp,self
kill_worker kill-worker-2 2 kill-worker
kill_worker kill-worker-3 3 kill-worker
kill_worker kill-worker-3-tcp 3 kill-worker-quiet --mca btl tcp,self
kill_root kill-root-2 2
kill_root kill-root-3 3
kill_root kill-root-3-tcp 3 --mca btl tcp,self

echo "cluster_mpi: $fails failed"
[ "$fails" -eq 0 ]

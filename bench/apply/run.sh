#!/usr/bin/env bash
# apply's evidence on a GPU machine: the test apps built from their own
# Makefiles before and after `kernelsmith-cc apply --write`, each run for its
# own CPU check and its own kernel timing; the patched apps again with
# KERNELSMITH_DISABLE=1 (they must run the original kernels: the original
# times); and saxpy built through CMake with CMAKE_CUDA_COMPILER_LAUNCHER,
# its sources untouched. Prints a table (app, original ms, patched ms,
# speedup, the search's speedup, disabled ms, CPU check) and writes
# bench/results/apply-<gpu>-<date>.json.
#
#   bench/apply/run.sh STORE
#
# STORE is the .kernelsmith directory of an optimize run of testdata/apps on
# this GPU (bench/optimize/run.sh keeps them with KS_KEEP_STORES=DIR: use
# DIR/rules). KS_BIN (default build/cli/kernelsmith-cc), KS_RESULTS (default
# bench/results), NVCC.
set -uo pipefail
cd "$(dirname "$0")/../.."
store=$(realpath "${1:?usage: bench/apply/run.sh STORE}")
bin=$(realpath "${KS_BIN:-build/cli/kernelsmith-cc}")
out=${KS_RESULTS:-bench/results}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
apps=(saxpy gelu reduce_sum softmax layernorm transpose sgemm stencil2d histogram prefix_sum spmv_csr gemv)

repo=$tmp/apps
mkdir -p "$repo"
cp -r testdata/apps/. "$repo/"
rm -rf "$repo/expected"
cp -r "$store" "$repo/.kernelsmith"
(cd "$repo" && git init -q . && git add -A . ':!.kernelsmith' && git -c user.email=b@b -c user.name=b commit -qm apps)

# name: "app: kernel K 0.1234 ms" lines of one run, summed over the app's kernels
run_app() { # dir app -> "ms pass"
  local log
  log=$( (cd "$1/$2" && env "${@:3}" ./"$2") 2>&1)
  local ms pass
  ms=$(echo "$log" | sed -n "s/^$2: kernel .* \([0-9.]*\) ms .*/\1/p" | head -1)
  pass=$(echo "$log" | grep -q "^$2: PASS" && echo PASS || echo FAIL)
  echo "${ms:-0} $pass"
}
median3() { # dir app env... -> "ms pass" (median of three runs)
  local a b c
  a=$(run_app "$@"); b=$(run_app "$@"); c=$(run_app "$@")
  printf '%s\n%s\n%s\n' "$a" "$b" "$c" | sort -n | sed -n 2p
}

make -s -C "$repo" NVCC="$nvcc" -j"$(nproc)" >"$tmp/build0.log" 2>&1 || { echo "original apps do not build"; tail "$tmp/build0.log"; exit 1; }
declare -A before
for app in "${apps[@]}"; do before[$app]=$(median3 "$repo" "$app"); done

(cd "$repo" && "$bin" apply --write 2>"$tmp/apply.err")
apply_rc=$?
cat "$tmp/apply.err"
make -s -C "$repo" clean >/dev/null 2>&1
make -s -C "$repo" NVCC="$nvcc" -j"$(nproc)" >"$tmp/build1.log" 2>&1
build_rc=$?
[ $build_rc -eq 0 ] || tail -20 "$tmp/build1.log"

# The search's speedup per kernel, from the store.
python3 - "$repo/.kernelsmith/kernelsmith.db" >"$tmp/search.txt" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
run = db.execute("SELECT max(id) FROM runs").fetchone()[0]
for name, sp in db.execute("""SELECT k.name, max(e.speedup) FROM kernels k JOIN evaluations e ON e.kernel = k.id
                              WHERE k.run = ? AND e.verdict = 'FAST' GROUP BY k.name""", (run,)):
    print(name, sp)
PY

printf '%-12s %10s %10s %8s %8s %11s %7s\n' app "orig ms" "patched" speedup search "disabled ms" check
rows=""
for app in "${apps[@]}"; do
  read -r b0 p0 <<<"${before[$app]}"
  read -r b1 p1 <<<"$(median3 "$repo" "$app")"
  read -r b2 p2 <<<"$(median3 "$repo" "$app" KERNELSMITH_DISABLE=1)"
  kernel=$(cd "$repo/$app" && ./"$app" 2>/dev/null | sed -n "s/^$app: kernel \([^ ]*\) .*/\1/p" | head -1)
  search=$(awk -v k="${kernel%%+*}" '$1 == k { printf "%.2fx", $2 }' "$tmp/search.txt")
  sp=$(python3 -c "print(f'{$b0 / $b1:.2f}x' if $b1 > 0 else '-')")
  check=$([ "$p0$p1$p2" = PASSPASSPASS ] && echo PASS || echo "FAIL($p0/$p1/$p2)")
  printf '%-12s %10s %10s %8s %8s %11s %7s\n' "$app" "$b0" "$b1" "$sp" "${search:--}" "$b2" "$check"
  rows="$rows{\"app\": \"$app\", \"kernel\": \"$kernel\", \"original_ms\": $b0, \"patched_ms\": $b1, \"disabled_ms\": $b2, \"search_speedup\": \"${search:--}\", \"check\": \"$check\"},"
done

# CMake with the launcher: saxpy, its sources untouched.
cm=$tmp/cmake
mkdir -p "$cm"
(cd "$repo" && git stash -q -u -- . ':!.kernelsmith' 2>/dev/null || git checkout -q .)
cat >"$repo/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(apps LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES native)
add_executable(saxpy saxpy/saxpy.cu)
CM
(cd "$cm" && CUDACXX="$nvcc" cmake -S "$repo" -B . -DCMAKE_CUDA_COMPILER_LAUNCHER="$bin" >cm.log 2>&1 &&
 cmake --build . >>cm.log 2>&1)
cm_rc=$?
cm_ms=0
if [ $cm_rc -eq 0 ]; then
  cm_ms=$( (cd "$repo/saxpy" && "$cm/saxpy") | sed -n 's/^saxpy: kernel .* \([0-9.]*\) ms .*/\1/p' | head -1)
fi
untouched=$(cd "$repo" && git status --porcelain --untracked-files=no -- '*.cu' | wc -l)
echo
echo "apply --write exit $apply_rc, patched apps build: $([ $build_rc -eq 0 ] && echo yes || echo NO)"
echo "CMake + launcher: saxpy ${cm_ms:-?} ms (patched build above: ${before[saxpy]%% *} ms original), sources changed: $untouched"
"$bin" stats --store "$repo/.kernelsmith"

dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
label=$(echo "${dev:-gpu}" | sed 's/NVIDIA //; s/ /-/g' | tr 'A-Z' 'a-z')
mkdir -p "$out"
cat >"$out/apply-$label-$(date +%F).json" <<JSON
{"device": "$dev", "date": "$(date +%F)", "command": "bench/apply/run.sh",
 "apply_exit": $apply_rc, "patched_build_ok": $([ $build_rc -eq 0 ] && echo true || echo false),
 "apps": [${rows%,}],
 "cmake_launcher": {"ok": $([ $cm_rc -eq 0 ] && echo true || echo false), "saxpy_ms": ${cm_ms:-0}, "sources_changed": $untouched}}
JSON
echo "wrote $out/apply-$label-$(date +%F).json"

#!/usr/bin/env bash
# bench/fuzz/run.sh: fuzz the parsers with the libFuzzer harnesses of
# tests/fuzz (expression evaluator, spec parser, capture reader, LLM reply
# parsers, compiler flags) and record executions, coverage and findings in
# bench/results/fuzz-<label>-<date>.{json,md}.
#
#   bench/fuzz/run.sh [HARNESS...]     # default: expr spec capture llm flags
#
#   KS_FUZZ_SECONDS  total fuzzing time, split evenly over the harnesses,
#                    which run one after another in one process each
#                    (default 3600: an hour; under 3600 the results say it
#                    was a short run)
#   KS_FUZZ_BUILD    build directory (default build-fuzz)
#   KS_FUZZ_TIMEOUT  seconds one input may take before it is a finding (10)
#   KS_FUZZ_RSS_MB   memory one harness may use before it is a finding (2048)
#   KS_LABEL         results label (default cpu<cores>)
#   KS_FUZZ_NOTE     a sentence for the results (where and why it ran)
#   KS_FUZZ_STRICT   1: exit 1 when there is a finding (CI's smoke run)
#   KS_FUZZ_WORK     working corpora and findings (default bench/out/fuzz)
#   KS_RESULTS       results directory (default bench/results)
#
# It configures the build with clang and -DKS_FUZZ=ON (installing Debian's
# clang, libclang-rt-dev and llvm, for libFuzzer and the symbolizer, when
# they are missing), builds the five harnesses, and fuzzes each from its
# seed corpus (tests/fuzz/corpus/NAME, with tests/fuzz/NAME.dict) into a
# fresh working corpus under bench/out/fuzz/. After a crash, a timeout or an
# out-of-memory, the harness starts again for the time it has left (at most
# 20 times), so one finding does not end its share of the hour. Findings
# are kept in bench/out/fuzz/NAME/findings/ and listed in the results with
# the first frame of their stack outside the sanitizer and libFuzzer.
set -euo pipefail
cd "$(dirname "$0")/../.."

harnesses=("$@")
[[ ${#harnesses[@]} -gt 0 ]] || harnesses=(expr spec capture llm flags)
total=${KS_FUZZ_SECONDS:-3600}
build=${KS_FUZZ_BUILD:-build-fuzz}
timeout=${KS_FUZZ_TIMEOUT:-10}
rss=${KS_FUZZ_RSS_MB:-2048}
label=${KS_LABEL:-cpu$(nproc)}
results=${KS_RESULTS:-bench/results}
date=$(date +%F)
work=${KS_FUZZ_WORK:-bench/out/fuzz}

say() { printf 'fuzz: %s\n' "$*" >&2; }

# clang with libFuzzer and the sanitizer runtimes, and llvm-symbolizer for
# the stacks: Debian's packages, installed only when missing.
need=()
command -v clang >/dev/null || need+=(clang)
dpkg-query -W -f='${Status}' libclang-rt-dev 2>/dev/null | grep -q 'install ok installed' ||
  ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
  need+=(libclang-rt-dev)
command -v llvm-symbolizer >/dev/null || ls /usr/lib/llvm-*/bin/llvm-symbolizer >/dev/null 2>&1 ||
  need+=(llvm)
if [[ ${#need[@]} -gt 0 ]]; then
  say "installing ${need[*]}"
  sudo=$([[ $(id -u) == 0 ]] || echo sudo)
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
symbolizer=$(command -v llvm-symbolizer || ls /usr/lib/llvm-*/bin/llvm-symbolizer | tail -1)

# -O1 -g with assertions on: the usual trade between speed and stacks.
say "building the harnesses in $build (clang, -DKS_FUZZ=ON)"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DKS_FUZZ=ON -DKS_BUILD_TESTS=ON \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" >/dev/null
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null

export ASAN_SYMBOLIZER_PATH=$symbolizer
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
per=$((total / ${#harnesses[@]}))
[[ $per -ge 1 ]] || per=1
for h in "${harnesses[@]}"; do
  dir=$work/$h
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/findings" "$dir/logs"
  bin=$build/tests/fuzz/fuzz_$h
  left=$per
  run=0
  say "$h: $per s"
  while [[ $left -gt 0 && $run -lt 20 ]]; do
    run=$((run + 1))
    start=$(date +%s)
    rc=0
    "$bin" -max_total_time="$left" -timeout="$timeout" -rss_limit_mb="$rss" \
      -print_final_stats=1 -dict="tests/fuzz/$h.dict" -artifact_prefix="$dir/findings/" \
      "$dir/corpus" "tests/fuzz/corpus/$h" >"$dir/logs/run-$run.log" 2>&1 || rc=$?
    echo "$rc $(( $(date +%s) - start ))" >"$dir/logs/run-$run.rc"
    [[ $rc -ne 0 ]] || break
    say "$h: run $run ended with status $rc (a finding); $((left - ($(date +%s) - start))) s left"
    left=$((left - ($(date +%s) - start)))
  done
done

mkdir -p "$results"
python3 bench/fuzz/summarize.py --work "$work" --harnesses "${harnesses[@]}" \
  --seconds "$total" --per "$per" --label "$label" --note "${KS_FUZZ_NOTE:-}" \
  --bin-dir "$build/tests/fuzz" --out "$results/fuzz-$label-$date"
if [[ ${KS_FUZZ_STRICT:-0} == 1 ]]; then
  python3 - "$results/fuzz-$label-$date.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))
found = [(h["name"], f["kind"], f.get("first_frame")) for h in res["harnesses"] for f in h["findings"]]
for name, kind, frame in found:
    print("fuzz: %s: %s at %s" % (name, kind, frame), file=sys.stderr)
sys.exit(1 if found else 0)
PY
fi

#!/usr/bin/env bash
# bench/scan/run.sh: time `kernelsmith-cc scan` over a generated tree of 200
# CUDA files (bench/scan/gen_tree.py) in three configurations, check that it
# finds exactly the kernels and launch sites the generator wrote, and write
# bench/results/scan-<label>-<date>.json. Target: >= 4 files/s by default.
#
#   bench/scan/run.sh                 # KS_BIN, KS_REPEAT, KS_LABEL override
#
# Builds nothing: it runs $KS_BIN, or build-release/cli/kernelsmith-cc.
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=${KS_BIN:-build-release/cli/kernelsmith-cc}
tree=bench/out/scan-tree
repeat=${KS_REPEAT:-3}
label=${KS_LABEL:-cpu$(nproc)}
out=bench/results/scan-$label-$(date +%F).json

if [[ ! -x $bin ]]; then
  echo "no $bin; build it with:" >&2
  echo "  cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DKS_BUILD_TESTS=OFF && cmake --build build-release -j" >&2
  exit 1
fi
# GNU time (Debian package "time") gives the maximum resident set size; the
# shell's `time` keyword does not.
if [[ ! -x /usr/bin/time ]]; then
  echo "installing GNU time (apt-get install time)" >&2
  $([[ $(id -u) == 0 ]] || echo sudo) apt-get install -y time >&2
fi
[[ -f $tree/MANIFEST.json ]] || python3 bench/scan/gen_tree.py --out "$tree"

# name:arguments. --no-compdb everywhere: the tree lives inside this repo,
# whose build/compile_commands.json the scan would otherwise find and read.
configs=("default:" "no-pch:--no-pch" "j1:-j 1")
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
for config in "${configs[@]}"; do
  name=${config%%:*}
  read -ra args <<<"${config#*:}"
  for ((i = 1; i <= repeat; i++)); do
    echo "scan $name (${args[*]:-defaults}), run $i of $repeat" >&2
    /usr/bin/time -v -o "$runs/$name.$i.time" \
      "$bin" -q scan --json --no-compdb "${args[@]}" "$tree" >"$runs/$name.$i.json"
  done
done

"$bin" doctor --json >"$runs/doctor.json" 2>/dev/null || true
mkdir -p bench/results
python3 bench/scan/summarize.py --runs "$runs" --manifest "$tree/MANIFEST.json" \
  --configs "${configs[@]}" --repeat "$repeat" --label "$label" --bin "$bin" --out "$out"

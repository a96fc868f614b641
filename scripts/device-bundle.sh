#!/usr/bin/env bash
# Builds kernelsmith-cc and its test programs here and packs them, with the
# shared libraries a bare GPU machine lacks (libclang, LLVM, cJSON, cmocka...)
# and clang's resource headers, into .bundle/ks-bundle.tar.xz (git-ignored).
# scripts/gpu-check.sh unpacks it on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-bundle
cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release -DKS_BUILD_TESTS=ON >/dev/null
cmake --build $build -j"$(nproc)" >/dev/null

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/clang"
bins=($build/cli/kernelsmith-cc $build/tests/test_support $build/tests/test_scan
      $build/tests/test_flags $build/tests/test_backend $build/tests/test_gpu_driver
      $build/backend/kernelsmith-worker $build/tests/test_wire $build/tests/test_worker_gpu
      $build/tests/test_capture_ref_gpu
      $build/tests/test_compile $build/tests/test_expr $build/tests/test_spec
      $build/bench/compile/compile_bench)
for t in test_slice test_kast test_store test_search test_rules test_runtime_header test_emit \
         test_footprint test_verify; do
  [ -x $build/tests/$t ] && bins+=($build/tests/$t)
done
cp "${bins[@]}" "$stage/bin/"
# The injection library profile loads into applications, where the tool
# looks for it when installed (bin/../lib/kernelsmith/).
if [ -f $build/runtime/inject/libkernelsmith_inject.so ]; then
  mkdir -p "$stage/lib/kernelsmith"
  cp $build/runtime/inject/libkernelsmith_inject.so "$stage/lib/kernelsmith/"
  [ -x $build/tests/test_inject ] && cp $build/tests/test_inject "$stage/bin/"
fi

# Every library the binaries load, except the C and C++ runtimes and the CUDA
# toolkit's own (the GPU machine has those, at the same paths; its C++ runtime
# is as new or newer, and an older one on LD_LIBRARY_PATH would break the
# programs profiled there that its g++ built).
for b in "${bins[@]}"; do ldd "$b"; done | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*|libnvrtc*|libcuda.so*|libcupti*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
# ICU's data (31 MB; LLVM -> libxml2 -> ICU) as an empty table: libxml2
# asks ICU only to convert encodings, which nothing here does, and the
# bundle travels under a size limit.
if [ -f "$stage/lib/libicudata.so.72" ]; then
  echo 'const char icudt72_dat[16] = {0};' |
    gcc -x c -shared -o "$stage/lib/libicudata.so.72" -Wl,-soname,libicudata.so.72 -
fi
resource=$(sed -n 's/^LibClang_RESOURCE_DIR:PATH=//p' $build/CMakeCache.txt)
cp -r "$resource/include" "$stage/clang/include"
# Other targets' intrinsics (ARM, RISC-V, POWER, ...): CUDA on x86 reads
# none of them, and the bundle travels under a size limit.
(cd "$stage/clang/include" && rm -rf arm_*.h arm64intr.h armintr.h hexagon*.h riscv_*.h altivec.h \
  htmintrin.h htmxlintrin.h msa.h s390intrin.h vecintrin.h velintrin*.h wasm_simd128.h \
  ppc_wrappers)

mkdir -p .bundle
XZ_OPT="-9e -T0" tar -C "$stage" -cJf .bundle/ks-bundle.tar.xz .
echo "bundle: $(du -h .bundle/ks-bundle.tar.xz | cut -f1) in .bundle/ks-bundle.tar.xz ($(ls "$stage/lib" | wc -l) libraries)"

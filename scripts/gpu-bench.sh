#!/usr/bin/env bash
# GPU throughput of evolve-hud against llama-bench on the same GPU, for a GPU
# machine that has CUDA's compiler and CMake but no Rust toolchain.
#
#   scripts/gpu-bench.sh pack DIR
#       here: builds evolve-hud with the `dynamic-backends` feature (llama.cpp's
#       back-ends as modules next to the binary) for x86-64-v3, and writes
#         DIR/ours.tar.xz       the binary and its libraries
#         DIR/ggml-src.tar.xz   the llama.cpp that llama-cpp-sys-2 builds, for its
#                               CUDA back-end (the same ggml as the binary's)
#         DIR/peer-src.tar.xz   the llama.cpp of the llama-cpp-python sdist, for
#                               llama-bench (scripts/llama-cpp.sh's peer)
#   scripts/gpu-bench.sh build DIR WORK
#       there: builds WORK/ggml/build/bin/libggml-cuda.so and
#       WORK/peer/bin/llama-bench for the GPU at hand (CUDA_ARCH, default native)
#   scripts/gpu-bench.sh ours DIR WORK
#       there: unpacks ours into WORK/ours, with the CUDA module beside it. Then:
#   OURS=WORK/ours/evolve-hud THEIRS=WORK/peer/bin/llama-bench VARIANTS=cuda \
#     GPU_LAYERS=99 FLASH_ATTN="off on" THREADS=8 scripts/bench-compare.sh MODEL...
set -euo pipefail
cd "$(dirname "$0")/.."

backends=(vulkan sycl metal opencl cann webgpu hexagon openvino zdnn zendnn musa hip et virtgpu blas rpc)
exclude_backends() {
  for b in "${backends[@]}"; do echo "--exclude=llama.cpp/ggml/src/ggml-$b"; done
}

case "${1:-}" in
pack)
  dir="$(realpath -m "${2:?usage: gpu-bench.sh pack DIR}")"
  mkdir -p "$dir"
  ggml="$(scripts/llama-cpp.sh source linked)"
  # shellcheck disable=SC2046
  tar cJf "$dir/ggml-src.tar.xz" -C "$(dirname "$ggml")" $(exclude_backends) --exclude=llama.cpp/tools llama.cpp
  peer="$(scripts/llama-cpp.sh source)"
  # shellcheck disable=SC2046
  tar cJf "$dir/peer-src.tar.xz" -C "$(dirname "$peer")" $(exclude_backends) \
    --exclude=llama.cpp/models --exclude=llama.cpp/media --exclude=llama.cpp/docs \
    --exclude=llama.cpp/tools/server --exclude=llama.cpp/tools/ui --exclude=llama.cpp/gguf-py \
    --exclude=llama.cpp/examples --exclude=llama.cpp/tests --exclude=llama.cpp/build llama.cpp
  target="${DYN_TARGET_DIR:-target/dyn}"
  RUSTFLAGS="-C target-cpu=x86-64-v3" CARGO_TARGET_DIR="$target" \
    cargo build --release --locked --features dynamic-backends >&2
  out="$(ls -d "$target"/release/build/llama-cpp-sys-2-*/out | head -n 1)"
  stage="$(mktemp -d)"
  trap 'rm -rf "$stage"' EXIT
  cp "$target/release/evolve-hud" "$stage/"
  cp -P "$out"/lib*/lib*.so* "$out"/backends/*.so "$stage/" 2>/dev/null || true
  tar cJf "$dir/ours.tar.xz" -C "$stage" .
  ls -l "$dir"
  ;;
build)
  dir="$(realpath "${2:?usage: gpu-bench.sh build DIR WORK}")"
  work="$(realpath -m "${3:?usage: gpu-bench.sh build DIR WORK}")"
  arch="${CUDA_ARCH:-native}"
  jobs="${JOBS:-$(nproc)}"
  export PATH="$PATH:/usr/local/cuda/bin"
  mkdir -p "$work/ggml" "$work/peer"
  tar xJf "$dir/ggml-src.tar.xz" -C "$work/ggml"
  tar xJf "$dir/peer-src.tar.xz" -C "$work/peer"
  # The back-end module for our binary: only ggml-cuda, against the same ggml.
  cmake -S "$work/ggml/llama.cpp" -B "$work/ggml/build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_CUDA=ON -DGGML_BACKEND_DL=ON -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF >"$work/ggml.log" 2>&1
  cmake --build "$work/ggml/build" --target ggml-cuda -j "$jobs" >>"$work/ggml.log" 2>&1
  # The peer: llama-bench, built as llama.cpp builds it for CUDA, minus
  # ggml's AMX kernels (they crash on AMX CPUs, as GPU hosts often are).
  no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  cmake -S "$work/peer/llama.cpp" -B "$work/peer/build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_CUDA=ON -DGGML_NATIVE=ON -DCMAKE_C_FLAGS="$no_amx" -DCMAKE_CXX_FLAGS="$no_amx" -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF >"$work/peer.log" 2>&1
  cmake --build "$work/peer/build" --target llama-bench -j "$jobs" >>"$work/peer.log" 2>&1
  ln -sfn build/bin "$work/peer/bin"
  ;;
ours)
  dir="$(realpath "${2:?usage: gpu-bench.sh ours DIR WORK}")"
  work="$(realpath -m "${3:?usage: gpu-bench.sh ours DIR WORK}")"
  mkdir -p "$work/ours"
  tar xJf "$dir/ours.tar.xz" -C "$work/ours"
  cp "$work/ggml/build/bin/libggml-cuda.so" "$work/ours/"
  ;;
*)
  sed -n '2,21p' "$0" >&2
  exit 2
  ;;
esac

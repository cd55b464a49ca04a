#!/usr/bin/env bash
# Builds the PTX of CUTLASS's examples/77_blackwell_fmha/77_blackwell_fmha.cu for sm_100a, the
# large real input of benchmarks/frontend.py (issue #20: "the 480k-line CUTLASS FMHA module").
# Only fetches and compiles: nothing of CUTLASS is copied into the repository, and the PTX
# (tens of MB) stays in the cache directory; it is never committed.
#
#   scripts/build_fmha_ptx.sh [OUT_DIR]        (default /work/cache/frontend)
#   PTXSIM_FRONTEND_FILES=OUT_DIR/77_blackwell_fmha.ptx python benchmarks/frontend.py
#
# CUTLASS: a git clone at $CUTLASS_GIT (default: the local mirror, else github), commit 7107b0553.
# nvcc: $NVCC, else nvcc on PATH (13.0 used for the numbers in docs/frontend.md).
# curand_kernel.h (the example's host-side reference includes it): $CURAND_INCLUDE, else the
# nvidia-curand wheel's include directory where one is found.
set -euo pipefail
OUT=${1:-/work/cache/frontend}
REV=7107b0553
GIT=${CUTLASS_GIT:-/work/.mirror/NVIDIA+cutlass/repo}
SRC=$OUT/cutlass-$REV
NVCC=${NVCC:-nvcc}
mkdir -p "$OUT"
CURAND_INCLUDE=${CURAND_INCLUDE:-/work/cache/cudacpp/curand/nvidia/cu13/include}
if [ ! -d "$SRC/include" ]; then
  if [ ! -d "$GIT" ]; then
    git clone --filter=blob:none --no-checkout https://github.com/NVIDIA/cutlass.git "$OUT/cutlass.git"
    GIT=$OUT/cutlass.git
  fi
  mkdir -p "$SRC"
  git -C "$GIT" archive "$REV" include tools/util/include examples/common examples/77_blackwell_fmha \
    | tar -x -C "$SRC"
fi
# the example's own flags (examples/77_blackwell_fmha/CMakeLists.txt: --use_fast_math), device
# code for sm_100a only, PTX out
"$NVCC" -std=c++17 -O3 --expt-relaxed-constexpr --use_fast_math -ptx -arch=sm_100a \
  -DCUTLASS_ENABLE_TENSOR_CORE_MMA=1 -DNDEBUG \
  -I"$SRC/include" -I"$SRC/tools/util/include" -I"$SRC/examples/common" \
  -I"$SRC/examples/77_blackwell_fmha" -I"$CURAND_INCLUDE" \
  "$SRC/examples/77_blackwell_fmha/77_blackwell_fmha.cu" -o "$OUT/77_blackwell_fmha.ptx.tmp"
mv "$OUT/77_blackwell_fmha.ptx.tmp" "$OUT/77_blackwell_fmha.ptx"
wc -lc "$OUT/77_blackwell_fmha.ptx"

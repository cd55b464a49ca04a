#!/bin/bash
# Device side, tanh call 1: SASS, structure analysis (tanh.cu analyse) over all positive finite
# inputs, dense captures of the positive binades 2^-15 .. 16 (first differences, lzma; pack.py),
# and tanh / sin / cos .approx.f32 of the 65,536 committed random inputs.
#   bash .device/mufu/t2/tanh_capture.sh   (.device/mufu/t2 holds tanh.cu, pack.py, x_random.bin)
set -e
H=.device/mufu/t2; T=/tmp/th; mkdir -p $T
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -cubin -o $T/t.cubin $H/tanh.cu
cuobjdump -sass $T/t.cubin | grep -E "Function|MUFU|FMUL|FADD|FFMA|FSETP|FSEL|LOP|IMAD|FMNMX" | head -60 > $OUT/tanh_sass.txt
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o $T/t $H/tanh.cu
for op in 0 1 2; do $T/t list $op $H/x_random.bin $T/r$op.bin; done
python3 - <<PY
import numpy as np
x = np.fromfile("$H/x_random.bin", "<u4")
y = np.stack([np.fromfile(f"$T/r{k}.bin", "<u4") for k in range(3)])
np.savez_compressed("$OUT/tanh_random.npz", x=x, y=y, ops=np.array(["tanh.approx.f32", "sin.approx.f32", "cos.approx.f32"]))
PY
( time $T/t analyse ) > $OUT/tanh_analysis.txt 2>&1 &
AP=$!
cd $T
for E in $(seq 112 130); do
  $T/t range $((E << 23)) 8388608 e$E.bin
done
cd - >/dev/null
wait $AP
cat $OUT/tanh_analysis.txt | head -5
cd $T
for g in "112 113 114 115 116 117 118" "119 120 121 122 123" "124 125 126" "127 128" "129 130"; do
  n=$(echo $g | cut -d' ' -f1)
  args=""; for E in $g; do args="$args e$E=$((E << 23)):8388608:e$E.bin"; done
  python3 $OLDPWD/$H/pack.py $OUT/tanh_dense_$n.npz $args > pack_$n.log &
done
wait
cat pack_*.log
ls -la $OUT

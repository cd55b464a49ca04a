#!/bin/bash
# Device side, call 1: build, SASS, dense captures of the ftz forms, the committed random list.
#   bash .device/mufu/capture.sh   (from the repo root; .device/mufu holds mufu.cu, pack.py, x_random.bin)
set -e
H=.device/mufu; T=/tmp/cap; mkdir -p $T
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
nvcc --version | tail -1
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -cubin -o $T/mufu.cubin $H/mufu.cu
cuobjdump -sass $T/mufu.cubin > $OUT/mufu_sass.txt
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o $T/mufu $H/mufu.cu
M=$T/mufu
for op in 0 1 2 3 4 5 6 7 8 9; do $M list $op $H/x_random.bin $T/rand_$op.bin; done
python3 - <<PY
import numpy as np
x = np.fromfile("$H/x_random.bin", "<u4")
y = np.stack([np.fromfile(f"$T/rand_{k}.bin", "<u4") for k in range(10)])
np.savez_compressed("$OUT/random.npz", x=x, y=y)
PY
P23=8388608
$M range 0 0x3F800000 $P23 $T/rcp.bin
$M range 2 0x3F800000 $((2*P23)) $T/rsqrt.bin
$M range 4 0x3F800000 $((2*P23)) $T/sqrt.bin
$M range 6 0x3E800000 $((3*P23)) $T/ex2p.bin
$M range 6 0xBE800000 $((2*P23)) $T/ex2n.bin
$M range 8 0x3F000000 $((3*P23)) $T/lg2.bin
cd $T
python3 $OLDPWD/$H/pack.py $OUT/rcp.npz rcp=0x3F800000:$P23:rcp.bin &
python3 $OLDPWD/$H/pack.py $OUT/rsqrt.npz rsqrt=0x3F800000:$((2*P23)):rsqrt.bin &
python3 $OLDPWD/$H/pack.py $OUT/sqrt.npz sqrt=0x3F800000:$((2*P23)):sqrt.bin &
python3 $OLDPWD/$H/pack.py $OUT/ex2.npz ex2p=0x3E800000:$((3*P23)):ex2p.bin ex2n=0xBE800000:$((2*P23)):ex2n.bin &
python3 $OLDPWD/$H/pack.py $OUT/lg2.npz lg2=0x3F000000:$((3*P23)):lg2.bin &
wait
ls -la $OUT

#!/bin/bash
# Device side: the tanh / sin / cos models against the hardware over all 2^32 inputs, in CUDA
# (tsc.cu) and as ptxsim's numpy code (np_verify_tsc.py), then the negative control (one entry of
# each table changed).   bash .device/mufu/t2/tsc_verify.sh BUDGET_S
# (.device/mufu/t2 holds hardware/mufu/* and src/)
set -e
H=.device/mufu/t2; T=/tmp/tsc; mkdir -p $T
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
python3 $H/expand_tsc.py $H/src/ptxsim/data $T/tab
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o $T/tsc $H/tsc.cu
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -cubin -o $T/tsc.cubin $H/tsc.cu
cuobjdump -sass $T/tsc.cubin | grep -E "Function : range|MUFU|FMUL" > $OUT/tsc_sass.txt || true
$T/tsc verify $T/tab 2>&1 | tee $OUT/tsc_verify_cuda.txt
$T/tsc verify $T/tab 1 2>&1 | tee $OUT/tsc_negative_control.txt
PYTHONUNBUFFERED=1 python3 $H/np_verify_tsc.py $T/tsc.cubin $H/src ${1:-240} 2>&1 | tee $OUT/tsc_verify_numpy.txt

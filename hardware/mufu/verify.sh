#!/bin/bash
# Device side, call 2: the CUDA transcription of the model over all 2^32 inputs of each form,
# then ptxsim's numpy model itself chunk by chunk (np_verify.py).  bash .device/mufu/verify.sh BUDGET_S
set -e
H=.device/mufu; T=/tmp/ver; mkdir -p $T
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
python3 $H/expand.py $H/mufu_sm90_f32.npz $T/tab
nvcc -O2 -DWITH_MODEL -gencode=arch=compute_90a,code=sm_90a -o $T/mufu $H/mufu.cu
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -cubin -o $T/mufu.cubin $H/mufu.cu
$T/mufu verify -1 $T/tab 2>&1 | tee $OUT/verify_cuda.txt
PYTHONUNBUFFERED=1 python3 $H/np_verify.py $T/mufu.cubin $H/src ${1:-240} 2>&1 | tee $OUT/verify_numpy.txt

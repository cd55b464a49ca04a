#!/bin/bash
# Device side: div.approx / div.full (.ftz) f32 model vs the H200. bash .device/mufu/div_verify.sh
set -e
H=.device/mufu; T=/tmp/divv; mkdir -p $T
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
python3 $H/expand.py $H/mufu_sm90_f32.npz $T/tab > /dev/null
nvcc -O2 -DWITH_MODEL -gencode=arch=compute_90a,code=sm_90a -o $T/divv $H/div.cu
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o $T/div $H/div.cu
$T/divv verify $T/tab 2>&1 | tee $OUT/div_verify_cuda.txt
PYTHONUNBUFFERED=1 python3 $H/div_np_verify.py $T/div $H/src 2>&1 | tee $OUT/div_verify_numpy.txt

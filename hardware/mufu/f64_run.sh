#!/bin/bash
# Device side (helper mufu3), one call: SASS, captures, the CUDA model over all 2^32 upper words
# x 3 lower words of each form, the negative control, ptxsim's numpy code (np_verify_f64.py).
#   bash .device/mufu/t3/f64_run.sh NUMPY_BUDGET_S
#   (.device/mufu/t3 holds hardware/mufu/{f64.cu,expand.py,np_verify_f64.py},
#   x64_random.bin, src/ptxsim)
H=.device/mufu/t3; T=/tmp/f64; mkdir -p $T
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -1; date -u
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o $T/f64 $H/f64.cu || exit 1
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -cubin -o $T/f64.cubin $H/f64.cu
cuobjdump -sass $T/f64.cubin > $OUT/f64_sass.txt
python3 $H/expand.py $H/src/ptxsim/data/mufu_sm90_f32.npz $T/tab
for op in 0 1 2; do $T/f64 list $op $H/x64_random.bin $T/r$op.bin; done
$T/f64 range 0 0x3FF00000 1048576 $T/t_rcp.bin
$T/f64 range 1 0x3FF00000 2097152 $T/t_rsq.bin
python3 - <<PY
import numpy as np
x = np.fromfile("$H/x64_random.bin", "<u8")
y = np.stack([np.fromfile(f"$T/r{k}.bin", "<u8") for k in range(3)])
np.savez_compressed("$OUT/f64_random.npz", x=x, y=y)
np.savez_compressed("$OUT/f64_tables.npz", rcp=np.fromfile("$T/t_rcp.bin", "<u4"),
                    rsq=np.fromfile("$T/t_rsq.bin", "<u4"))
PY
$T/f64 verify $T/tab 2>&1 | tee $OUT/f64_verify_cuda.txt
$T/f64 verify $T/tab 1 2>&1 | tee $OUT/f64_negative_control.txt
PYTHONUNBUFFERED=1 python3 $H/np_verify_f64.py $T/f64.cubin $H/src ${1:-240} 2>&1 | tee $OUT/f64_verify_numpy.txt
date -u

#!/bin/bash
# Device side: SASS of div.approx / div.full (.ftz) f32 and their results for div_pairs.py's
# 262,144 pairs -> $OUT/div_sm90.npz, $OUT/div_sass.txt.   bash .device/mufu/div_capture.sh
set -e
H=.device/mufu; T=/tmp/div; mkdir -p $T
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -cubin -o $T/div.cubin $H/div.cu
cuobjdump -sass $T/div.cubin > $OUT/div_sass.txt
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o $T/div $H/div.cu
python3 $H/div_pairs.py $T/a.bin $T/b.bin
$T/div list $T/a.bin $T/b.bin $T/out.bin
python3 - <<PY
import numpy as np
a = np.fromfile("$T/a.bin", "<u4"); b = np.fromfile("$T/b.bin", "<u4")
y = np.fromfile("$T/out.bin", "<u4").reshape(4, -1)
np.savez_compressed("$OUT/div_sm90.npz", a=a, b=b, y=y,
                    ops=np.array(["div.approx.f32", "div.approx.ftz.f32", "div.full.f32", "div.full.ftz.f32"]))
PY
ls -la $OUT

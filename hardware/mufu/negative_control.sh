#!/bin/bash
# Device side, call 3: the verifier must see a wrong table. Add 1 to one entry each of the rcp,
# ex2 and lg2_e0 tables and run `mufu verify` on all ten forms: rcp, ex2 and lg2 must report
# mismatches (at exactly the inputs that use those entries), rsqrt and sqrt none.
set -e
H=.device/mufu; T=/tmp/neg; mkdir -p $T
python3 $H/expand.py $H/mufu_sm90_f32.npz $T/tab > /dev/null
python3 - <<PY
import numpy as np
for name, idx in (("rcp", 12345), ("ex2", 777), ("lg2_e0", 4242)):
    t = np.fromfile("$T/tab/%s.bin" % name, "<u4"); t[idx] += 1; t.tofile("$T/tab/%s.bin" % name)
PY
nvcc -O2 -DWITH_MODEL -gencode=arch=compute_90a,code=sm_90a -o $T/mufu $H/mufu.cu
$T/mufu verify -1 $T/tab 2>&1 | tee $OUT/negative_control.txt

#!/bin/bash
# Device side: SASS of sin/cos.approx{.ftz}.f32, the factorisation analysis (sincos.cu), and the
# key-0 tables of the .ftz forms packed (first differences, lzma) -> $OUT.
set -e
H=.device/mufu; T=/tmp/sc; mkdir -p $T/tab
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -cubin -o $T/sc.cubin $H/sincos.cu
cuobjdump -sass $T/sc.cubin | grep -A40 "list_" | grep -o '/\*[0-9a-f]\{4\}\*/ .*;' > $OUT/sincos_sass.txt || true
nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o $T/sc $H/sincos.cu
$T/sc analyse $T/tab 2>&1 | tee $OUT/sincos_analysis.txt
cd $T/tab
python3 - <<PY
import lzma, numpy as np
from concurrent.futures import ProcessPoolExecutor
def pack(nm):
    t = np.fromfile(nm + ".bin", "<u4").astype(np.int64)
    d = np.diff(t, prepend=0).astype(np.int32)
    return nm, lzma.compress(d.tobytes(), preset=2)
out = {}
with ProcessPoolExecutor(4) as ex:
    for nm, blob in ex.map(pack, ["sin_ftz", "cos_ftz", "sin", "cos"]):
        out[nm] = np.frombuffer(blob, np.uint8); print(nm, len(blob))
np.savez("$OUT/sincos_tables.npz", **out)
PY
ls -la $OUT

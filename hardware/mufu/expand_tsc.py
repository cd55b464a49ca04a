"""Device side: the package tables for tanh and sin/cos (src/ptxsim/data/mufu_sm90_tanh.npz,
mufu_sm90_sincos.npz) as raw u32 files for `tsc verify`.  python3 expand_tsc.py DATADIR OUTDIR"""
import sys
from pathlib import Path

import numpy as np

src, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
for npz, key, name in (("mufu_sm90_tanh.npz", "tanh", "tanh"), ("mufu_sm90_sincos.npz", "sin_q", "sinq")):
    d = np.load(src / npz)
    t = np.concatenate([[0], np.cumsum(d[key + "_diff"], dtype=np.int64)]) + int(d[key + "_first"])
    t.astype("<u4").tofile(out / f"{name}.bin")
    print(name, t.size)

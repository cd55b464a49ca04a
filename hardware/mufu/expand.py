"""Device side: the package tables (src/ptxsim/data/mufu_sm90_f32.npz) as raw u32 files for
`mufu verify`. python3 expand.py NPZ DIR"""
import sys
from pathlib import Path

import numpy as np

d = np.load(sys.argv[1])
out = Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
for k in sorted({n.rsplit("_", 1)[0] for n in d.files}):
    t = np.concatenate([[0], np.cumsum(d[k + "_diff"], dtype=np.int64)]) + int(d[k + "_first"])
    t.astype("<u4").tofile(out / f"{k}.bin")
    print(k, t.size)

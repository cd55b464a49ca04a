"""Merge the per-section files probe.py writes into the record the tests replay:

    python hardware/tma_modes/pack.py DIR [OUT]   (OUT default tests/data/hardware/tma_modes/tma_modes_sm90.npz)
"""
import json
import sys
from pathlib import Path

import numpy as np

src = Path(sys.argv[1])
out = Path(sys.argv[2] if len(sys.argv) > 2 else
           Path(__file__).parents[2] / "tests/data/hardware/tma_modes/tma_modes_sm90.npz")
arrays, metas = {}, []
for f in sorted(src.glob("tma_modes_sm90_*.npz")):
    with np.load(f) as z:
        metas.append(json.loads(str(z["meta"])))
        arrays.update({k: z[k] for k in z.files if k != "meta"})
meta = dict(metas[0], sections=[f.stem.removeprefix("tma_modes_sm90_")
                                for f in sorted(src.glob("tma_modes_sm90_*.npz"))])
out.parent.mkdir(parents=True, exist_ok=True)
np.savez_compressed(out, meta=np.array(json.dumps(meta)), **arrays)
print(out, len(arrays), "arrays", meta)

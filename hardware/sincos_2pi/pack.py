"""Here: repack what capture.py brought back into the committed vectors.

    python hardware/sincos_2pi/pack.py DIR

tests/data/hardware/sincos_2pi/sincos_2pi_sm90.npz: meta, sin, cos (inputs.sample() order; the
inputs themselves are regenerated), check_counts, check_first_bad.
tests/data/hardware/tma_modes/tensor_reduce_sm90.npz: the tensor-reduce cases that ran (the
map-in-global variant; the map-as-parameter variant gave the same bytes) and a note of the case
that faulted. tests/data/hardware/tma_modes/tensor_reduce2_sm90.npz: the tr_cases.py capture,
each result XOR the regenerated global tensor; meta's log names the cases that faulted."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def main(d: Path) -> None:
    sc = np.load(d / "sincos_2pi_sm90.npz")
    out = ROOT / "tests" / "data" / "hardware" / "sincos_2pi"
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "sincos_2pi_sm90.npz", meta=sc["meta"], sin=sc["sin"],
                        cos=sc["cos"], check_counts=sc["check_counts"],
                        check_first_bad=sc["check_first_bad"])
    g, p = np.load(d / "tensor_reduce_tr_global.npz"), np.load(d / "tensor_reduce_tr_param.npz")
    same = all(np.array_equal(g[k], p[k]) for k in g.files if k.startswith("tensor_reduce/"))
    meta = json.loads(str(sc["meta"]))
    meta.update(variants_agree=same,
                log={v: (d / f"tensor_reduce_{v}.txt").read_text().split("\n")[:-1]
                     for v in ("tr_global", "tr_param")})
    np.savez_compressed(ROOT / "tests" / "data" / "hardware" / "tma_modes" /
                        "tensor_reduce_sm90.npz", meta=np.array(json.dumps(meta)),
                        **{k: g[k] for k in g.files if k.startswith("tensor_reduce/")})
    print("packed; variants agree:", same)
    tr2 = d / "tensor_reduce2_sm90.npz"
    if tr2.exists():
        sys.path.insert(0, str(ROOT / "hardware" / "tma_modes"))
        import cases
        g, _ = cases.tensor_reduce_data()
        r = np.load(tr2)
        # stored as the XOR with the regenerated global tensor (zero outside the box: small)
        np.savez_compressed(ROOT / "tests" / "data" / "hardware" / "tma_modes" /
                            "tensor_reduce2_sm90.npz", meta=r["meta"],
                            **{"xor/" + k.split("/", 1)[1]: r[k] ^ g for k in r.files
                               if k.startswith("tensor_reduce/")})
        print("packed", tr2.name)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

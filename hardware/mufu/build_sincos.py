"""Here: the sin/cos.approx.f32 quarter-turn table from the full-turn captures of sincos2.sh.

    python hardware/mufu/build_sincos.py DIR      (DIR holds sin_pos.xz and cos_pos.xz of sincos2.sh)

sin_pos / cos_pos: for every F in [0, 2^25) the result of sin / cos.approx.ftz.f32 at an input a
whose positive revolution r = RZ(a * 0x3E22F983) has trunc(r 2^25) mod 2^25 = F, 0xFFFFFFFF where
no finite f32 input reaches F (odd F >= 2^24 among others). Stored there as the lzma'd first
differences (int32) of the raw u32 results.

The model checked here against every reached entry of both tables (the same model is checked on
the H200 over all 2^32 inputs by sincos_verify.sh): with quadrant = F >> 23, low = F mod 2^23,
    sin[F] = (-1)^(quadrant >= 2) * Q[low]              for quadrants 0, 2
    sin[F] = (-1)^(quadrant >= 2) * Q[2^23 - 1 - low]   for quadrants 1, 3 (one's complement)
    cos[F] = sin[(F + 2^23) mod 2^25]
Q = sin[0 .. 2^23 - 1] (every one is reached). Writes src/ptxsim/data/mufu_sm90_sincos.npz: Q's
first value and first differences (int32), np.savez_compressed."""
import lzma
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
N, Q4 = 1 << 25, 1 << 23
UNSET = np.uint32(0xFFFFFFFF)


def load(path: Path) -> np.ndarray:
    d = np.frombuffer(lzma.decompress(path.read_bytes()), np.int32)
    return np.cumsum(d, dtype=np.int64).astype(np.uint32)


def main(src: Path):
    S, C = load(src / "sin_pos.xz"), load(src / "cos_pos.xz")
    Q = S[:Q4].astype(np.int64)
    assert (S[:Q4] != UNSET).all()
    F = np.arange(N)
    quad, low = F >> 23, F & (Q4 - 1)
    model = (Q[np.where(quad & 1, Q4 - 1 - low, low)] | np.where(quad >= 2, 1 << 31, 0)).astype(np.uint32)
    for name, table, m in (("sin", S, model), ("cos", C, model[(F + Q4) % N])):
        ok = table != UNSET
        bad = np.count_nonzero(m[ok] != table[ok])
        print(f"{name}: {ok.sum()} reached entries, {bad} differ from the quarter-turn model")
        assert bad == 0
    np.savez_compressed(ROOT / "src/ptxsim/data/mufu_sm90_sincos.npz", sin_q_first=np.int64(Q[0]),
                        sin_q_diff=np.diff(Q).astype(np.int32))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""Here: turn the device captures of capture.sh (files under CAPDIR) into the package tables and
the committed test vectors.

    python hardware/mufu/build_tables.py CAPDIR

writes src/ptxsim/data/mufu_sm90_f32.npz (the tables) and tests/data/hardware/mufu/mufu_f32_sm90.npz (the
65,536-input list through all ten instructions). Each table is the raw result bits of the MUFU
instruction over 2^23 (2^24) consecutive inputs, stored as its first value and its first
differences (int8 where they fit, else int32), np.savez_compressed: the differences are small and
regular, and integer cumsum decodes them identically everywhere (no libm reference needed)."""
import lzma
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
P = 1 << 23


def block(path, name):
    d = np.load(path)
    raw = lzma.decompress(d[name + "_xz"].tobytes())
    dd = np.frombuffer(raw, dtype=str(d[name + "_dtype"])).astype(np.int64)
    dd[0] += int(d[name + "_first"])
    return int(d[name + "_start"]), np.cumsum(dd).astype(np.uint32)


def main(cap: Path):
    tables = {}
    start, r = block(cap / "rcp.npz", "rcp")
    assert start == 0x3F800000 and r.size == P
    tables["rcp"] = r                              # rcp.approx.ftz of [1, 2)
    for nm in ("rsqrt", "sqrt"):
        start, r = block(cap / f"{nm}.npz", nm)
        assert start == 0x3F800000 and r.size == 2 * P
        tables[nm] = r                             # [1, 2) then [2, 4)
    start, r = block(cap / "ex2.npz", "ex2p")
    assert start == 0x3E800000 and r.size == 3 * P
    tables["ex2"] = r[2 * P:]                      # ex2.approx.ftz of [1, 2) = 2 * 2^(j 2^-23)
    start, r = block(cap / "lg2.npz", "lg2")
    assert start == 0x3F000000 and r.size == 3 * P
    tables["lg2_em1"] = r[:P]                      # lg2.approx.ftz of [0.5, 1)
    tables["lg2_e0"] = r[P:2 * P]                  # lg2.approx.ftz of [1, 2)
    packed = {}
    for k, v in tables.items():
        d = np.diff(v.astype(np.int64))
        small = d.min() >= -128 and d.max() <= 127
        packed[k + "_first"] = np.uint32(v[0])
        packed[k + "_diff"] = d.astype(np.int8 if small else np.int32)
    out = ROOT / "src/ptxsim/data/mufu_sm90_f32.npz"
    np.savez_compressed(out, **packed)
    print(out, out.stat().st_size)
    rnd = np.load(cap / "random.npz")
    ops = np.array(["rcp.approx.ftz.f32", "rcp.approx.f32", "rsqrt.approx.ftz.f32",
                    "rsqrt.approx.f32", "sqrt.approx.ftz.f32", "sqrt.approx.f32",
                    "ex2.approx.ftz.f32", "ex2.approx.f32", "lg2.approx.ftz.f32",
                    "lg2.approx.f32"])
    out = ROOT / "tests/data/hardware/mufu/mufu_f32_sm90.npz"
    np.savez_compressed(out, x=rnd["x"], y=rnd["y"], ops=ops)
    print(out, out.stat().st_size)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

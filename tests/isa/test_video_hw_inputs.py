"""The recorded hardware vectors store no inputs: the generators in ptxsim.testing must reproduce
the exact inputs the GPU saw (checksums recorded at capture time), for video and mma.sp."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ptxsim.testing.gen import Stream, checksum, splitmix64
from ptxsim.testing.mma_sp_inputs import META_1_2, META_2_4, mma_sp_inputs

DATA = Path(__file__).resolve().parents[1] / "data" / "hardware" / "mma_sp"


def test_splitmix64_reference_values():
    # splitmix64 of state 0 (first output of the reference C generator seeded with 0):
    # 0xe220a8397b1dcdaf, then 0x6e789e6aa1b965f4 (Vigna's splitmix64.c, x += golden first)
    assert int(splitmix64(np.array([0], np.uint64))[0]) == 0xE220A8397B1DCDAF
    assert int(splitmix64(np.array([0x9E3779B97F4A7C15], np.uint64))[0]) == 0x6E789E6AA1B965F4
    s = Stream(1, "x")
    assert not np.array_equal(s.u32(4), s.u32(4))     # the counter advances


def test_mma_sp_inputs_match_the_capture():
    z = np.load(DATA / "mma_sp_sm90.npz")
    forms = json.loads(str(z["forms_json"]))
    warps = int(z["warps"])
    for f in forms[::7]:                              # a spread sample keeps this fast
        regs = mma_sp_inputs(f, warps)
        assert checksum(np.stack([regs[r] for r in f["inputs"]])) == f["inputs_checksum"], f["instruction"]


def test_mma_sp_metadata_is_valid_outside_the_anymeta_warps():
    z = np.load(DATA / "mma_sp_sm90.npz")
    forms = json.loads(str(z["forms_json"]))
    for f in (forms[0], next(f for f in forms if f["atype"] == "tf32")):
        e = mma_sp_inputs(f, int(z["warps"]))["%e"][: 32 * 80]
        nib = (e[:, None] >> (4 * np.arange(8, dtype=np.uint32))) & 0xF
        table = META_1_2 if f["meta"] == "1:2" else META_2_4
        assert np.isin(nib, table).all()
        lo, hi = nib & 3, nib >> 2
        assert (lo < hi).all()                         # ordered: idx0 < idx1 in every chunk


def test_mma_sp_probe_records_match_the_documented_m16n8k16_layout():
    """The one-hot pair probes (hardware/mma_sp/mma_sp_probes.py) of mma.sp m16n8k16 f16 with f32 D,
    checked against an independent reading of the fragment layouts: D (f32) row groupID + 8*(reg>=2),
    column 2*(lane%4) + (reg&1) (the dense mma.m16n8k16 D layout); B element i = 2*reg + slot at
    k = 2*(lane%4) + (i&1) + 8*(i>=2), n = groupID; compressed A: row groupID + 8*reg, compressed
    column c = 2*(lane%4) + slot, logical k = 4*(c//2) + {0,1 | 2,3 by metadata family} + c%2.
    Every pair that meets in k is recorded, and only those."""
    z = np.load(DATA / "mma_sp_probes_sm90.npz")
    it = json.loads(str(z["forms_json"]))[0]
    assert it["instruction"].endswith("m16n8k16.row.col.f32.f16.f16.f32")
    w, code, count = z["records_" + it["name"]].astype(np.int64)
    assert (count == 1).all() and len(w) == 2 * 128 * 8
    na, nb, per, ar, br = it["na"], it["nb"], it["per"], it["a_regs"], it["b_regs"]
    fam, ia, ib = w // (na * nb), (w % (na * nb)) // nb, w % nb
    ta, ra, sa = ia // (ar * per), (ia // per) % ar, ia % per
    tb, rb, sb = ib // (br * per), (ib // per) % br, ib % per
    c = (ta % 4) * 2 + sa
    i = rb * 2 + sb
    assert np.array_equal(4 * (c // 2) + 2 * fam + c % 2, (tb % 4) * 2 + (i & 1) + 8 * (i >= 2))
    lane, reg = (code - 1) // 8, ((code - 1) % 8) // 2
    assert np.array_equal((lane >> 2) + 8 * (reg >= 2), (ta >> 2) + 8 * ra)
    assert np.array_equal((lane % 4) * 2 + (reg & 1), tb >> 2)

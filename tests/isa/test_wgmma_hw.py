"""Replay of the H200 wgmma.mma_async sweep (tests/data/hardware/wgmma/wgmma_sm90.npz, made by
hardware/wgmma/build.py): isa.wgmma -- sm_90 descriptors read with tcgen05's canonical layouts and
swizzles, A from registers, the D fragment, scale-d, imm-scale, imm-trans, chains, sparse forms --
against silicon, bit for bit. Each item ran on two CTAs: random inputs, special values."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ptxsim.isa import wgmma as wg
from ptxsim.ptx import parse_instruction
from ptxsim.testing import matrix_inputs as mi
from ptxsim.testing.gen import Stream, checksum

FILE = Path(__file__).resolve().parents[1] / "data" / "hardware" / "wgmma" / "wgmma_sm90.npz"
if not FILE.exists():
    pytest.skip(f"hardware vectors {FILE} not present", allow_module_level=True)
Z = np.load(FILE)
ITEMS = json.loads(str(Z["items_json"]))
CTAS = (("random", 0), ("special", 1))
META_2_4 = np.array([0x4, 0x8, 0xC, 0x9, 0xD, 0xE], np.uint32)
META_1_2 = np.array([0x4, 0xE], np.uint32)


def inputs(it):
    """As hardware/wgmma/build.py inputs(): per CTA the image, A registers, C, metadata."""
    sp, lay = it["spec"], it["layout"]
    form = wg.form_of(parse_instruction(it["instruction"]))
    per = []
    for regime, cta in CTAS:
        tag = f"{sp['name']}|{it['instruction']}|cta{cta}"
        img = np.zeros(lay["smem_bytes"], np.uint8)
        for op, t in (("a", sp["atype"]), ("b", sp["btype"])):
            if op in lay:
                lo, hi = lay[op]["region"]
                img[lo:hi] = mi.smem_image(f"{tag}|{op}", t, hi - lo, regime)
        areg = (mi.registers(f"{tag}|areg", sp["atype"], 4, 128, regime)
                if sp["a_src"] == "regs" else None)
        c = mi.registers(f"{tag}|c", sp["dtype"], form.d_regs, 128, regime)
        meta = None
        if sp["sparse"]:
            s = Stream(mi.SEED, f"{tag}|meta")
            table = META_1_2 if sp["atype"] == "tf32" else META_2_4
            nib = s.choice(128 * 8, table).reshape(128, 8).astype(np.uint64)
            meta = (nib << (np.arange(8, dtype=np.uint64) * np.uint64(4))).sum(
                axis=1, dtype=np.uint64).astype(np.uint32)
        per.append((img, areg, c, meta))
    words = np.concatenate([np.concatenate([img.view(np.uint32)] + ([a.reshape(-1)] if a is not None else [])
                                           + [c.reshape(-1)] + ([m] if m is not None else []))
                            for img, a, c, m in per])
    return form, per, words


def replay(it):
    sp, lay = it["spec"], it["layout"]
    form, per, words = inputs(it)
    assert checksum(words) == it["inputs_checksum"]
    smem = np.stack([p[0] for p in per])
    d = np.stack([p[2] for p in per], axis=1)                       # (d_regs, G, 128)
    kw = dict(smem=smem, scale_a=sp["scale_a"], scale_b=sp["scale_b"],
              trans_a=int(sp["a_major"] == "MN" and sp["a_src"] == "smem"),
              trans_b=int(sp["b_major"] == "MN"), selector=sp["selector"])
    if sp["sparse"]:
        kw["meta"] = np.stack([p[3] for p in per])
    if sp["a_src"] == "regs":
        kw["a"] = np.stack([p[1] for p in per], axis=1)
    for step in range(sp["chain"]):
        if sp["a_src"] == "smem":
            kw["a_desc"] = [lay["a"]["desc"] + ((lay["a"]["step"] * step) >> 4)] * 2
        kw["b_desc"] = [lay["b"]["desc"] + ((lay["b"]["step"] * step) >> 4)] * 2
        d = wg.wgmma(form, d, scale_d=bool(sp["scale_d"]) or step > 0, **kw)
    return d


def test_provenance():
    assert "H200" in str(Z["machine"]) and all(s == "ok" for s in Z["status"])
    assert len(ITEMS) >= 99


@pytest.mark.parametrize("k", range(len(ITEMS)), ids=lambda k: ITEMS[k]["name"])
def test_bit_exact(k):
    it = ITEMS[k]
    got = replay(it)                                                 # (d_regs, 2, 128)
    out = Z["outputs"][Z["offsets"][k]:Z["offsets"][k + 1]].reshape(2, got.shape[0], 128)
    out = np.swapaxes(out, 0, 1)
    same = (got == out).all(axis=(0, 2))
    assert same.all(), f"{it['instruction']}: CTA random {same[0]}, special {same[1]}"

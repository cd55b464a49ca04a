"""Replay of the H200 recording of ldmatrix / stmatrix / movmatrix (every sm_90a .m8n8 .b16 form;
tests/data/hardware/matrix/matrix_sm90.npz, made by hardware/matrix/build.py): isa.matrix against
silicon, bit for bit. Each item: 8 CTAs of one warp, a 1024-byte shared buffer, rows at distinct
16-byte slots in random order (not contiguous), lanes beyond the used ones given addresses too."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ptxsim.isa import matrix as mx
from ptxsim.ptx import parse_instruction
from ptxsim.testing import matrix_inputs as mi
from ptxsim.testing.gen import Stream, checksum

FILE = Path(__file__).resolve().parents[1] / "data" / "hardware" / "matrix" / "matrix_sm90.npz"
if not FILE.exists():
    pytest.skip(f"hardware vectors {FILE} not present", allow_module_level=True)
Z = np.load(FILE)
ITEMS = json.loads(str(Z["items_json"]))
CTAS, SMEM, WORDS = 8, 1024, 256


def inputs(it):
    """As hardware/matrix/build.py: per CTA the buffer, the lanes' offsets, 4 register rows."""
    img, off, regs = [], [], []
    for cta in range(CTAS):
        tag = f"{it['name']}|{it['instruction']}|cta{cta}"
        img.append(mi.registers(f"{tag}|smem", "b16", 1, WORDS, "random")[0])
        s = Stream(mi.SEED, f"{tag}|rows")
        off.append(np.argsort(s.u32(SMEM // 16))[:32].astype(np.uint32) * 16)
        regs.append(mi.registers(f"{tag}|regs", "b16", 4, 32, "random"))
    words = np.concatenate([np.concatenate([a, b, c.reshape(-1)]) for a, b, c in zip(img, off, regs)])
    return np.stack(img), np.stack(off), np.stack(regs, axis=1), words


def test_provenance():
    assert "H200" in str(Z["machine"]) and all(s == "ok" for s in Z["status"])
    assert len(ITEMS) == 17


@pytest.mark.parametrize("k", range(len(ITEMS)), ids=lambda k: ITEMS[k]["instruction"].split(" ")[0])
def test_bit_exact(k):
    it = ITEMS[k]
    form = mx.form_of(parse_instruction(it["instruction"]))
    img, off, regs, words = inputs(it)
    assert checksum(words) == it["inputs_checksum"]
    out = Z["outputs"][Z["offsets"][k]:Z["offsets"][k + 1]]
    smem = img.view(np.uint8).reshape(CTAS, SMEM)
    if form.op == "ldmatrix":
        got = np.stack([mx.ldmatrix(form, smem[c], off[c][None])[:, 0] for c in range(CTAS)])
        assert np.array_equal(got.reshape(-1), out)
    elif form.op == "stmatrix":
        for c in range(CTAS):
            mem = smem[c].copy()
            mx.stmatrix(form, mem, off[c][None], regs[:form.num, c][:, None])
            assert np.array_equal(mem.view(np.uint32), out[c * WORDS:(c + 1) * WORDS]), c
    else:
        got = mx.movmatrix(regs[0])
        assert np.array_equal(got.reshape(-1), out)

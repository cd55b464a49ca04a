"""Replay of the H200 sweep of every dense mma.sync form ptxas accepts for sm_90a
(tests/data/hardware/mma_sync/mma_sync_sweep_sm90*.npz, made by hardware/mma_sync/sweep.py through
hardware/matrix/stage.py): isa.mma_sync -- fragments, numerics, the m8n8k4 FFMA expansion, the
f64 DMMA chain and its NaN rule -- against silicon, bit for bit.

Inputs are regenerated (ptxsim.testing.matrix_inputs.mma_sync_registers) and checked against the
recorded checksum; floating-point forms have 36 random + 12 special warps (subnormals, zeros,
Inf, NaN payloads quiet and signalling, huge, tiny), integer and .b1 forms 12 + 4.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ptxsim.isa import mma_sync as ms
from ptxsim.ptx import parse_instruction
from ptxsim.testing import matrix_inputs as mi
from ptxsim.testing.gen import checksum

DATA = Path(__file__).resolve().parents[1] / "data" / "hardware" / "mma_sync"
FILES = [DATA / "mma_sync_sweep_sm90.npz", DATA / "mma_sync_sweep_sm90_int.npz"]
if not all(f.exists() for f in FILES):
    pytest.skip(f"hardware vectors {FILES} not present", allow_module_level=True)
Z = [np.load(f) for f in FILES]
CASES = [(z, i) for z in Z for i in range(len(z["instructions"]))]


def _input_rows(form):
    regs = mi.mma_sync_registers(form)
    rows = []
    for p, fr in (("a", form.a), ("b", form.b), ("c", form.c)):
        for i in range(fr.nregs):
            v = regs[f"%{p}{i}"]
            rows += ([(v & np.uint64(0xFFFFFFFF)).astype(np.uint32),
                      (v >> np.uint64(32)).astype(np.uint32)] if v.dtype == np.uint64 else [v])
    return regs, np.stack(rows)


def test_provenance():
    for z in Z:
        assert "H200" in str(z["machine"]) and str(z["arch"]) == "sm_90a"
        assert all(s == "ok" for s in z["status"])
    texts = [str(t).split(" ")[0] for z in Z for t in z["instructions"]]
    # every form of the legality table for sm_90a, each once
    assert sorted(texts) == sorted(f.text for f in ms.forms("sm_90a"))


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[0]["instructions"][c[1]]).split(" ")[0][17:])
def test_form_is_bit_exact(case):
    z, i = case
    inst = parse_instruction(str(z["instructions"][i]))
    form = ms.form_of(inst)
    regs, rows = _input_rows(form)
    assert checksum(rows) == str(z["inputs_checksums"][i])
    w = int(z["warps"][i])
    st = lambda p, fr: np.stack([regs[f"%{p}{k}"].reshape(w, 32) for k in range(fr.nregs)])
    got = ms.mma_sync(form, st("a", form.a), st("b", form.b), st("c", form.c), target="sm_90a")
    out = z["outputs"][z["offsets"][i]:z["offsets"][i + 1]]
    if got.dtype == np.uint64:
        out = out.reshape(-1, 2, 32 * w)
        out = out[:, 0].astype(np.uint64) | (out[:, 1].astype(np.uint64) << np.uint64(32))
    out = out.reshape(got.shape)
    same = (out == got).all(axis=(0, 2))
    assert same.all(), f"{(~same).sum()} of {w} warps differ (first {np.flatnonzero(~same)[:5]})"


def test_the_f64_nan_rule_is_exercised():
    """The special warps of the f64 forms hold NaN operands whose order decides the result
    (B before the running sum before A, quiet and signalling alike): the replay above would
    fail under the scalar fma rule (first quiet NaN)."""
    from ptxsim.isa import floating
    z = Z[0]
    i = [str(t).split(" ")[0] for t in z["instructions"]].index(
        "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64")
    form = ms.form_of(parse_instruction(str(z["instructions"][i])))
    regs, _ = _input_rows(form)
    w = int(z["warps"][i])
    st = lambda p, fr: np.stack([regs[f"%{p}{k}"].reshape(w, 32) for k in range(fr.nregs)])
    A, B, C = form.a.unpack(st("a", form.a)), form.b.unpack(st("b", form.b)), form.c.unpack(st("c", form.c))
    d = C.copy()
    for k in range(form.k):           # the scalar rule: first quiet NaN among (a, b, c)
        a = np.broadcast_to(A[:, :, k, None], d.shape)
        b = np.broadcast_to(B[:, None, k, :], d.shape)
        r = floating.fma_f64(a.view(np.float64), b.view(np.float64), d.view(np.float64))
        d = floating.f64_nan_result(r, a, b, d)
    assert not np.array_equal(form.d.pack(d), ms.mma_sync(form, st("a", form.a), st("b", form.b),
                                                          st("c", form.c), target="sm_90a"))

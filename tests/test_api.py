"""ptxsim.execute: register validation, dispatch through the registry, guards.

The instruction is given pre-parsed (a minimal stand-in with the documented attributes of
ptxsim.ptx.Instruction) so these tests do not depend on the front end; the tests at the bottom use
the real parser once it is merged.
"""
from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

import ptxsim
from ptxsim.errors import ExecutionError, OperandError, UndefinedBehavior
from ptxsim.isa import mma_sp, registry

INT_TEXT = ("mma.sp.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%d0, %d1, %d2, %d3}, "
            "{%a0, %a1}, {%b0, %b1}, {%c0, %c1, %c2, %c3}, %e, 0;")


def mini_parse(text, predicate=None):
    import re
    head, ops = text.rstrip(";").split(None, 1)
    parts = head.split(".")

    def op(tok):
        tok = tok.strip()
        if tok.startswith("{"):
            return NS(elements=tuple(op(x) for x in tok[1:-1].split(",")))
        if tok[0].isdigit():
            return NS(value=int(tok, 0))
        return NS(name=tok)
    return NS(opcode=parts[0], qualifiers=tuple("." + p for p in parts[1:]), predicate=predicate,
              operands=tuple(op(t) for t in re.findall(r"\{[^}]*\}|[^,\s]+", ops)), text=text)


def int_engine(a, b, c, *, atype, btype, satfinite=False, **_):
    sx = lambda x: np.where(x >= 128, x.astype(np.int64) - 256, x.astype(np.int64))
    acc = np.einsum("wmk,wmkn->wmn", sx(a), sx(b)) + c.view(np.int32)   # exact s8 dot products
    return (acc & 0xFFFFFFFF).astype(np.uint32)


@pytest.fixture
def engine(monkeypatch):
    monkeypatch.setattr(mma_sp, "_numerics_mma_sparse", lambda: int_engine)


def int_registers(warps, rng=np.random.default_rng(5)):
    """s8 m16n8k32: A holds 1s (stored), metadata 0b0100 (positions 0, 1) in every chunk, B
    random, C zero -> D[m, n] = sum over k%4 in {0,1} of B[k, n] (hand derivation)."""
    regs = {f"%a{i}": np.full(32 * warps, 0x01010101, np.uint32) for i in range(2)}
    B = rng.integers(-5, 6, (warps, 32, 8))
    form = mma_sp.MmaSpForm(32, "s32", "s8", "s8", "s32")
    b = form.b.pack((B & 0xFF).astype(np.uint32))
    regs |= {f"%b{i}": b[i].reshape(-1) for i in range(2)}
    regs |= {f"%c{i}": np.zeros(32 * warps, np.uint32) for i in range(4)}
    regs["%e"] = np.full(32 * warps, 0x44444444, np.uint32)
    keep = (np.arange(32) % 4 < 2)
    expect = B[:, keep, :].sum(axis=1)                       # (W, 8), same for every row m
    return regs, np.broadcast_to(expect[:, None, :], (warps, 16, 8)), form


def test_execute_dispatches_mma_sp(engine):
    regs, expect, form = int_registers(3)
    out = ptxsim.execute(mini_parse(INT_TEXT), regs)
    assert sorted(out) == ["%d0", "%d1", "%d2", "%d3"]
    assert all(v.shape == (96,) and v.dtype == np.uint32 for v in out.values())
    d = form.d.unpack(np.stack([out[f"%d{i}"].reshape(3, 32) for i in range(4)]))
    assert np.array_equal(d.view(np.int32), expect)


def test_missing_register_is_named(engine):
    regs, _, _ = int_registers(1)
    del regs["%b1"]
    with pytest.raises(OperandError, match="%b1"):
        ptxsim.execute(mini_parse(INT_TEXT), regs)


@pytest.mark.parametrize("bad,why", [
    (np.zeros(33, np.uint32), "multiple of 32"),
    (np.zeros((2, 32), np.uint32), "1-D"),
    (np.zeros(64, np.complex64), "dtype"),
    (np.full(32, -1, np.int64), "outside"),
])
def test_register_shape_and_dtype_errors(engine, bad, why):
    regs, _, _ = int_registers(1)
    regs = {"%x": bad} | regs
    with pytest.raises(OperandError, match=why):
        ptxsim.execute(mini_parse(INT_TEXT), regs)


def test_warps_must_agree(engine):
    regs, _, _ = int_registers(2)
    with pytest.raises(OperandError, match="%"):
        ptxsim.execute(mini_parse(INT_TEXT), regs, warps=1)
    regs["%e"] = regs["%e"][:32]
    with pytest.raises(OperandError, match="%e"):
        ptxsim.execute(mini_parse(INT_TEXT), regs)


def test_int32_and_float32_arrays_are_viewed_as_bits(engine):
    regs, expect, form = int_registers(1)
    regs = {k: v.view(np.int32) for k, v in regs.items()}
    out = ptxsim.execute(mini_parse(INT_TEXT), regs)
    d = form.d.unpack(np.stack([out[f"%d{i}"].reshape(1, 32) for i in range(4)]))
    assert np.array_equal(d.view(np.int32), expect)


def test_unknown_opcode():
    with pytest.raises(ExecutionError, match="frobnicate"):
        ptxsim.execute(NS(opcode="frobnicate", qualifiers=(), operands=(), predicate=None),
                       {"%r": np.zeros(32, np.uint32)})


def test_dense_mma_runs_through_the_registry():
    # dense m16n8k32 s8 (isa.mma_sync): A all 1, B all 2, C = 7 -> every D = 7 + 32*2 (hand
    # derivation; uniform operands need no fragment layout)
    text = ("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%d0, %d1, %d2, %d3}, "
            "{%a0, %a1, %a2, %a3}, {%b0, %b1}, {%c0, %c1, %c2, %c3};")
    regs = {f"%a{i}": np.full(32, 0x01010101, np.uint32) for i in range(4)}
    regs |= {f"%b{i}": np.full(32, 0x02020202, np.uint32) for i in range(2)}
    regs |= {f"%c{i}": np.full(32, 7, np.uint32) for i in range(4)}
    out = ptxsim.execute(mini_parse(text), regs)
    assert all((out[f"%d{i}"] == 7 + 64).all() for i in range(4))


def test_registry_refuses_a_second_handler():
    registry.handler_for("mma")
    with pytest.raises(ValueError):
        registry.register("mma", lambda *a: {})


def test_guard_false_warps_keep_their_destination(engine):
    regs, expect, form = int_registers(2)
    regs["%p"] = np.repeat(np.array([1, 0], np.uint32), 32)   # warp 0 runs, warp 1 does not
    old = {f"%d{i}": np.full(64, 0xDEAD0000 + i, np.uint32) for i in range(4)}
    out = ptxsim.execute(mini_parse(INT_TEXT, NS(name="%p", negated=False)), regs | old)
    d = form.d.unpack(np.stack([out[f"%d{i}"].reshape(2, 32) for i in range(4)]))
    assert np.array_equal(d[0].view(np.int32), expect[0])
    for i in range(4):
        assert (out[f"%d{i}"][32:] == 0xDEAD0000 + i).all()


def test_guard_that_differs_within_a_warp_is_undefined(engine):
    regs, _, _ = int_registers(1)
    regs["%p"] = (np.arange(32) < 5).astype(np.uint32)
    with pytest.raises(UndefinedBehavior):
        ptxsim.execute(mini_parse(INT_TEXT, NS(name="%p", negated=False)), regs)


def test_execute_parses_text_with_the_front_end(engine):
    ptx = pytest.importorskip("ptxsim.ptx")
    if not hasattr(ptx, "parse_instruction"):
        pytest.skip("ptxsim.ptx.parse_instruction not merged yet")
    regs, expect, form = int_registers(2)
    out = ptxsim.execute(INT_TEXT, regs)
    d = form.d.unpack(np.stack([out[f"%d{i}"].reshape(2, 32) for i in range(4)]))
    assert np.array_equal(d.view(np.int32), expect)
    with pytest.raises(OperandError, match="%a0"):
        ptxsim.execute(INT_TEXT, {k: v for k, v in regs.items() if k != "%a0"})


def test_f64_mma_takes_64_bit_registers():
    # m16n8k4 .f64 through ptxsim.execute with float64 arrays: A all 1, B all 2, C all 0.5 ->
    # every D = 0.5 + 4 * 2 (hand derivation; uniform operands need no layout)
    text = ("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%d0, %d1, %d2, %d3}, {%a0, %a1}, "
            "{%b0}, {%c0, %c1, %c2, %c3};")
    regs = {f"%a{i}": np.full(32, 1.0) for i in range(2)} | {"%b0": np.full(32, 2.0)}
    regs |= {f"%c{i}": np.full(32, 0.5) for i in range(4)}
    out = ptxsim.execute(mini_parse(text), regs, target="sm_90a")
    assert all((out[f"%d{i}"].view(np.float64) == 8.5).all() for i in range(4))

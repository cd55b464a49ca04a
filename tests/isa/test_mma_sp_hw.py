"""Replay of the H200 mma.sp captures (tests/data/hardware/mma_sp/mma_sp_sm90.npz, format in
hardware/mma_sp/README.md)
through ptxsim.execute: every warp must come out bit-exact.

The vectors hold the instruction texts and the hardware outputs; the inputs are regenerated
deterministically by ptxsim.testing.mma_sp_inputs (checksummed in the file). Per form, warps
0..63 are random finite operands, 64..79 special values (subnormals, Inf, NaN, huge/tiny), and
80..87 arbitrary 32-bit metadata (undefined behaviour in the spec for most words).
"""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest

import ptxsim
from ptxsim.errors import IllegalInstructionError, PtxsimError, SparsityMetadataError
from ptxsim.isa import mma_sp as sp

DATA = Path(__file__).resolve().parents[1] / "data" / "hardware" / "mma_sp" / "mma_sp_sm90.npz"
if not DATA.exists():
    pytest.skip(f"hardware vectors {DATA} not present", allow_module_level=True)
inputs = pytest.importorskip("ptxsim.testing.mma_sp_inputs")
numerics = pytest.importorskip("ptxsim.numerics")
if not hasattr(numerics, "mma"):
    pytest.skip("ptxsim.numerics.mma not merged yet", allow_module_level=True)

Z = np.load(DATA)
FORMS = json.loads(str(Z["forms_json"]))
WARPS = int(Z["warps"])
OUTPUTS = Z["outputs"]            # (forms, 4, 32*WARPS) uint32, decompressed once
STATUS = [str(s) for s in Z["status"]]
VALID = 80                        # regimes random (64) + special (16); then anymeta (8)


def parse(text: str):
    """The front end's parser when merged, else a minimal stand-in for the operand forms of
    these texts (registers, immediates, vectors)."""
    try:
        from ptxsim.ptx import parse_instruction
        return parse_instruction(text)
    except ImportError:
        pass
    head, ops = text.rstrip(";").split(None, 1)
    parts = head.split(".")

    def op(tok):
        tok = tok.strip()
        if tok.startswith("{"):
            return NS(elements=tuple(op(x) for x in tok[1:-1].split(",")))
        return NS(value=int(tok, 0)) if tok[0].isdigit() else NS(name=tok)
    return NS(opcode=parts[0], qualifiers=tuple("." + p for p in parts[1:]), predicate=None,
              operands=tuple(op(t) for t in re.findall(r"\{[^}]*\}|[^,\s]+", ops)), text=text)


# every form, the 8 e4m3/e5m2 ones included: sm_90 computes them as ptxas's f16 expansion
# (numerics kind fp8_sync; SASS in tests/data/hardware/mma_sync/mma_sync_sm90_sass.txt)
CASES = [pytest.param(i, id=f"{i}:{f['instruction'].split(' ')[0]}:sel{f['selector']}")
         for i, f in enumerate(FORMS)]


@functools.lru_cache(maxsize=None)
def _inputs(i):
    return inputs.mma_sp_inputs(FORMS[i], WARPS)


def _hw(i, form, warps):
    out = OUTPUTS[i][:form["d_regs"]].reshape(form["d_regs"], WARPS, 32)
    return out[:, warps]


def _slice(regs, warps):
    return {k: v.reshape(WARPS, 32)[warps].reshape(-1) for k, v in regs.items()}


def test_capture_provenance():
    assert "H200" in str(Z["machine"]) and str(Z["arch"]) == "sm_90a"
    assert WARPS >= 64 + 16


@pytest.mark.parametrize("i", [0, len(FORMS) // 2, len(FORMS) - 1])
def test_regenerated_inputs_are_the_captured_ones(i):
    """The generator still produces the bits that ran on the GPU (checksum recorded at build)."""
    from ptxsim.testing.gen import checksum
    form = FORMS[i]
    regs = _inputs(i)
    assert checksum(np.stack([regs[r] for r in form["inputs"]])) == form["inputs_checksum"]


@pytest.mark.parametrize("i", CASES)
def test_replay_bit_exact(i):
    form = FORMS[i]
    inst = parse(form["instruction"])
    if STATUS[i] != "ok":
        # m16n8k32 .f32.f16.f16.f32 with selector 2/3: illegal-instruction fault (FACTS §5)
        assert "IllegalInstruction" in STATUS[i]
        regs = inputs.mma_sp_inputs(form, 1)
        with pytest.raises(IllegalInstructionError):
            ptxsim.execute(inst, regs, target="sm_90a")
        return
    regs = _inputs(i)
    valid = np.arange(VALID)
    out = ptxsim.execute(inst, _slice(regs, valid), target="sm_90a")
    got = np.stack([out[r].reshape(VALID, 32) for r in form["outputs"]])
    same = (got == _hw(i, form, valid)).all(axis=(0, 2))
    assert same.all(), (f"{form['instruction']}: random {same[:64].sum()}/64, special "
                        f"{same[64:].sum()}/16 warps bit-exact; first mismatching warp "
                        f"{int(np.argmin(same))}")


@pytest.mark.parametrize("i", [c for c in CASES if STATUS[c.values[0]] == "ok"])
def test_arbitrary_metadata(i):
    """Warps 80..87: ptxsim refuses what the spec calls undefined; with
    undefined_metadata="gather" it reproduces what the H200 did (2:4 and 4:8 metadata)."""
    form = FORMS[i]
    inst = parse(form["instruction"])
    regs = _inputs(i)
    any_meta = np.arange(VALID, WARPS)
    hw = _hw(i, form, any_meta)
    for j, w in enumerate(any_meta):
        try:
            out = ptxsim.execute(inst, _slice(regs, np.array([w])), target="sm_90a")
        except SparsityMetadataError:
            continue
        got = np.stack([out[r] for r in form["outputs"]])
        assert (got == hw[:, j]).all(), f"warp {w}: valid metadata, result differs"
    f = sp.form_of(inst)
    sub = _slice(regs, any_meta)
    stack = lambda p, n: np.stack([sub[f"%{p}{k}"].reshape(-1, 32) for k in range(n)])
    args = (stack("a", form["a_regs"]), stack("b", form["b_regs"]), stack("c", form["c_regs"]),
            sub["%e"].reshape(-1, 32), form["selector"])
    if f.pattern == "1:2":
        with pytest.raises(SparsityMetadataError):
            sp.mma_sp(f, *args, undefined_metadata="gather")
        return
    d = sp.mma_sp(f, *args, undefined_metadata="gather")
    assert (d == hw).all()


def test_legality_agrees_with_ptxas_records():
    """ptxas 13.0's verdicts recorded with the captures: rejected on sm_90a, accepted on
    sm_120a."""
    def accepted(text, target):
        inst = parse(str(text))
        try:
            form = sp.form_of(inst)
            form.check_target(target)
            form.check_selector(inst.operands[5].value)
        except IllegalInstructionError:
            return True
        except PtxsimError:
            return False
        return True
    wrong = [t for t in Z["rejected_sm_90a"] if accepted(t, "sm_90a")]
    wrong += [t for t in Z["accepted_sm_120a"] if not accepted(t, "sm_120a")]
    assert not wrong, wrong[:5]

"""isa.wgmma's and isa.matrix's tables against ptxas 13.5 (tests/data/ptx/wgmma_matrix_ptxas.json,
made by scripts/ptxas_wgmma_matrix.py): wgmma.mma_async dense / sparse spellings (types, D types,
N, A from registers or a descriptor, bit operations, operand counts) and ldmatrix / stmatrix /
movmatrix spellings on six targets, and the lowest PTX ISA version ptxas takes on sm_90a."""
from __future__ import annotations

import json
import re
from pathlib import Path

from ptxsim.errors import PtxValidationError, UnsupportedFeature
from ptxsim.isa import matrix as mx
from ptxsim.isa import wgmma as wg
from ptxsim.ptx import parse_instruction
from ptxsim.ptx.instruction import Vector

DATA = json.loads((Path(__file__).parents[1] / "data" / "ptx" / "wgmma_matrix_ptxas.json").read_text())
TARGETS = DATA["targets"]


def expand(text):
    return re.sub(r"\{%r(\d+)\.\.%r(\d+)\}", lambda m: "{" + ", ".join(
        f"%r{i}" for i in range(int(m.group(1)), int(m.group(2)) + 1)) + "}", text)


CASES = [(expand(t), mask, msg, since) for t, mask, msg, since in DATA["cases"]]


def wgmma_verdict(inst, target, version="9.2"):
    try:
        form = wg.form_of(inst)
        form.check(target, version)
    except PtxValidationError:
        return False
    ops = inst.operands
    a_regs = isinstance(ops[1], Vector)
    return (len(ops) == form.operand_count(a_regs) and len(ops[0].elements) == form.d_regs
            and (not a_regs or len(ops[1].elements) == form.a_fragment.nregs))


def matrix_verdict(inst, target, version="9.2"):
    """True / False, or None for a form ptxsim does not model (UnsupportedFeature)."""
    try:
        form = mx.form_of(inst)
        mx.check(form, target, version)
    except PtxValidationError:
        return False
    except UnsupportedFeature:
        return None
    if form.op == "movmatrix":
        return True
    regs = inst.operands[0] if form.op == "ldmatrix" else inst.operands[1]
    return isinstance(regs, Vector) and len(regs.elements) == form.nregs and \
        not isinstance(inst.operands[1 if form.op == "ldmatrix" else 0], Vector)


def test_recording():
    assert DATA["ptxas"].startswith("Build cuda_13.5") and len(CASES) > 1000


def test_wgmma_table_agrees_with_ptxas():
    wrong = []
    for text, mask, msg, since in CASES:
        if not text.startswith("wgmma"):
            continue
        inst = parse_instruction(text)
        for j, t in enumerate(TARGETS):
            if wgmma_verdict(inst, t) != bool(mask >> j & 1):
                wrong.append((text[:70], t, bool(mask >> j & 1), DATA["messages"][msg] if msg >= 0 else ""))
        if since is not None:
            lowest = next(v for v in ("8.0", "8.1", "8.2", "8.3", "8.4", "8.5", "8.6", "8.7")
                          if wgmma_verdict(inst, "sm_90a", v))
            if lowest != since:
                wrong.append((text[:70], "version", since, lowest))
    assert not wrong, f"{len(wrong)} disagree, e.g. {wrong[:6]}"


def test_matrix_tables_agree_with_ptxas():
    """Every spelling agrees: .m8n8 .b16 and the 8-bit / widened 4- and 6-bit shapes of sm_100a+
    (.m16n16 / .m8n16 ldmatrix, .m16n8 stmatrix), on six targets; none is left unmodelled."""
    wrong, unsupported = [], 0
    for text, mask, msg, since in CASES:
        if text.startswith("wgmma"):
            continue
        inst = parse_instruction(text)
        for j, t in enumerate(TARGETS):
            got = matrix_verdict(inst, t)
            if got is None:
                unsupported += 1
                continue
            if got != bool(mask >> j & 1):
                wrong.append((text[:70], t, bool(mask >> j & 1)))
        if since is not None and matrix_verdict(inst, "sm_90a", "8.0") is not None:
            # sm_90a itself needs PTX ISA 8.0: no lower version can show on it
            lowest = next(v for v in ("7.8", "8.0") if matrix_verdict(inst, "sm_90a", v))
            lowest = max(lowest, "8.0")
            if lowest != since:
                wrong.append((text[:70], "version", since, lowest))
    assert not wrong, f"{len(wrong)} disagree, e.g. {wrong[:6]}"
    assert unsupported == 0

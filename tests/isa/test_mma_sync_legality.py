"""isa.mma_sync's legality table against ptxas 13.5 (tests/data/ptx/mma_sync_ptxas.json, made by
scripts/ptxas_mma_sync.py): every dense mma form the grammar can spell (wider than the syntax) on
23 targets, and the lowest PTX ISA version ptxas accepts each legal form at on 7 targets."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptxsim.errors import PtxValidationError
from ptxsim.isa import mma_sync as ms
from ptxsim.isa.targets import TARGET_MIN_PTX, parse_version
from ptxsim.ptx import parse_instruction

DATA = json.loads((Path(__file__).parents[1] / "data" / "ptx" / "mma_sync_ptxas.json").read_text())
TARGETS = DATA["targets"]
CASES = DATA["cases"]


def verdict(text: str, target: str, version=None) -> bool:
    inst = parse_instruction(text)
    try:
        form = ms.form_of(inst)
    except PtxValidationError:
        return False
    return _verdict(inst, form, target, version)


def _verdict(inst, form, target, version) -> bool:
    if form is None:
        return False
    try:
        form.check_target(target)
        form.check_version(version)
    except PtxValidationError:
        return False
    counts = [len(o.elements) for o in inst.operands[:4]]
    return counts == [form.d.nregs, form.a.nregs, form.b.nregs, form.c.nregs]


def lowest_version(text: str, target: str) -> str | None:
    form = ms.form_of(parse_instruction(text))
    v = max([n.since for n in form.notes] + [TARGET_MIN_PTX[target]])
    return f"{v[0]}.{v[1]}"


def test_the_recording():
    assert DATA["ptxas"].startswith("Build cuda_13.5")
    assert len(CASES) > 600 and len(TARGETS) == 23


def test_target_verdicts_agree_with_ptxas():
    wrong = []
    n = 0
    for text, mask, msg, _ in CASES:
        inst = parse_instruction(text)
        try:
            form = ms.form_of(inst)
        except PtxValidationError:
            form = None
        for j, t in enumerate(TARGETS):
            want = bool(mask >> j & 1)
            n += 1
            if _verdict(inst, form, t, DATA["version"]) != want:
                wrong.append((text.split(" ")[0], t, want, DATA["messages"][msg] if msg >= 0 else ""))
    assert not wrong, f"{len(wrong)} of {n} disagree, e.g. {wrong[:8]}"


def test_lowest_ptx_versions_agree_with_ptxas():
    wrong = []
    for text, mask, _, since in CASES:
        for t, v in since.items():
            got = lowest_version(text, t)
            if parse_version(got) != parse_version(v):
                wrong.append((text.split(" ")[0], t, v, got))
    assert not wrong, f"{len(wrong)} disagree, e.g. {wrong[:8]}"


def test_every_legal_form_is_in_the_recording():
    """The table enumerates no form ptxas was not asked about (the candidates cover it)."""
    asked = {parse_instruction(c[0]).qualifiers for c in CASES}
    for form in ms.forms():
        assert parse_instruction(form.text + " {%r0}, {%r1}, {%r2}, {%r3};").qualifiers in asked, form.text


def test_the_validator_follows_the_table():
    """`ptxsim check` (ptx.validator) judges dense mma through isa.mma_sync: its verdict on
    every recorded form equals ptxas's, on five targets."""
    from ptxsim.ptx.validator import errors_of, validate
    wrong = []
    for text, mask, _, _ in CASES:
        inst = parse_instruction(text)
        for j, t in enumerate(TARGETS):
            if t not in ("sm_80", "sm_90a", "sm_100a", "sm_120", "sm_120a"):
                continue
            ok = not errors_of(validate(inst, target=t, ptx_version=DATA["version"]))
            if ok != bool(mask >> j & 1):
                wrong.append((text.split(" ")[0], t, bool(mask >> j & 1)))
    assert not wrong, f"{len(wrong)} disagree, e.g. {wrong[:6]}"

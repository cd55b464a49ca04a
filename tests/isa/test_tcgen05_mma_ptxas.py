"""The qualifier rules of Tcgen05Mma (QUALIFIER_RULES, TARGET_FEATURES) against ptxas 13.0, the
oracle for PTX legality: every rendered instruction assembles iff ptxsim finds no issue.

ptxas never looks inside descriptors (FACTS section 5), so only qualifiers and operands are
compared here; Table 39 is tested in test_tcgen05_mma_errors.py. Where the spec is stricter than
ptxas, ptxsim follows the spec (KNOWN_STRICTER) and the test pins that ptxas still differs.
"""
from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile

import pytest

from ptxsim.isa.tcgen05_mma import Tcgen05Mma

PTXAS = shutil.which("ptxas")
pytestmark = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
KINDS = ["f16", "tf32", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4"]


def _wrap(text: str, target: str, version: str = "9.0") -> str:
    return (f".version {version}\n.target {target}\n.address_size 64\n.visible .entry k(){{\n"
            " .reg .b32 r<16>; .reg .b64 rd<4>; .reg .pred p<2>;\n"
            " mov.b32 r1, 0; mov.b64 rd1, 0; mov.b64 rd2, 0; mov.b64 rd3, 0;\n"
            f" setp.ne.b32 p0, r1, 0;\n {text}\n ret;\n}}\n")


def ptxas_accepts(text: str, target: str = "sm_100a", version: str = "9.0") -> bool:
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(_wrap(text, target, version))
    try:
        return subprocess.run([PTXAS, f"-arch={target}", f.name, "-o", os.devnull],
                              capture_output=True).returncode == 0
    finally:
        os.unlink(f.name)


def _grid():
    out = []
    for kind, ws, sp, cta, at, bs in itertools.product(KINDS, (False, True), (False, True),
                                                       (1, 2), (False, True), (False, True)):
        for sv in (None, "1X", "2X", "4X", "block16", "block32"):
            if sv is None or bs:
                out.append(Tcgen05Mma(kind, cta, sp, ws, at, bs, sv))
    for kind, ws, col, ash, at in itertools.product(
            ("f16", "i8", "mxf4"), (False, True),
            (None, "a::fill", "a::use", "a::lastuse", "a::discard", "b0::fill", "b3::use"),
            (False, True), (False, True)):
        out.append(Tcgen05Mma(kind, 1, False, ws, at, kind == "mxf4", None, col, ash))
    for kind, ws in itertools.product(("f16", "tf32", "i8", "mxf4"), (False, True)):
        bs = kind == "mxf4"
        out += [Tcgen05Mma(kind, 1, False, ws, False, bs, None, scale_input_d=3),
                Tcgen05Mma(kind, 1, False, ws, False, bs, None, has_disable_output_lane=True),
                Tcgen05Mma(kind, 2, False, ws, False, bs, None, has_disable_output_lane=True),
                Tcgen05Mma(kind, 1, False, ws, False, bs, None, has_zero_column_mask=True)]
    return out


GRID = _grid()
# The spec says scale-input-d "is only valid for .kind::tf32 and .kind::f16" and .ws has no such
# operand (9.7.16.10.9.1 / .3); ptxas 13.0 assembles i8 with it, and reads a trailing immediate
# of .ws as the zero-column-mask operand.
KNOWN_STRICTER = {m.ptx() for m in GRID if m.scale_input_d is not None
                  and (m.kind == "i8" or (m.ws and m.kind in ("f16", "tf32")))}


def _check(mmas, target="sm_100a"):
    diffs = []
    for m in mmas:
        ok = ptxas_accepts(m.ptx(), target)
        mine = not m.issues(target)
        if m.ptx() in KNOWN_STRICTER:
            assert ok and not mine, m.ptx()
        elif ok != mine:
            diffs.append((m.ptx(), ok, [str(e) for e in m.issues(target)]))
    assert not diffs, diffs


def test_qualifier_rules_sample_vs_ptxas():
    _check(GRID[::17] + [m for m in GRID if m.collector or m.scale_input_d is not None
                         or m.has_zero_column_mask or m.has_disable_output_lane][::5])


@pytest.mark.slow
def test_qualifier_rules_all_vs_ptxas():
    _check(GRID)


@pytest.mark.parametrize("target", ["sm_100a", "sm_100f", "sm_103a", "sm_110a", "sm_110f"])
def test_target_features_vs_ptxas(target):
    _check([Tcgen05Mma("f16", scale_input_d=3), Tcgen05Mma("tf32", scale_input_d=0),
            Tcgen05Mma("mxf8f6f4", block_scale=True, scale_vec="1X"),
            Tcgen05Mma("mxf4nvf4", block_scale=True, scale_vec="4X"),
            Tcgen05Mma("mxf4nvf4", block_scale=True, scale_vec="block16"),
            Tcgen05Mma("mxf4", block_scale=True, scale_vec="block32")], target)


def test_from_opcode_round_trips_the_grid():
    for m in GRID:
        flags = dict(a_tmem=m.a_tmem, scale_input_d=m.scale_input_d,
                     has_disable_output_lane=m.has_disable_output_lane,
                     has_zero_column_mask=m.has_zero_column_mask)
        assert Tcgen05Mma.from_opcode(m.ptx(operands=False), **flags) == m


def test_from_opcode_refuses_unknown_qualifiers():
    from ptxsim.errors import OperandError
    with pytest.raises(OperandError, match="unknown"):
        Tcgen05Mma.from_opcode("tcgen05.mma.cta_group::1.kind::f16.sync")
    with pytest.raises(OperandError, match="kind"):
        Tcgen05Mma.from_opcode("tcgen05.mma.cta_group::1")


@pytest.mark.parametrize("version", ["8.5", "8.6", "8.7", "8.8"])
def test_ptx_version_notes_vs_ptxas(version):
    forms = [Tcgen05Mma("f16"), Tcgen05Mma("i8", sparse=True, ws=True, collector="b1::fill"),
             Tcgen05Mma("mxf4nvf4", block_scale=True, scale_vec="4X"),
             Tcgen05Mma("mxf4nvf4", block_scale=True, scale_vec="block16"),
             Tcgen05Mma("mxf4", block_scale=True), Tcgen05Mma("mxf8f6f4", block_scale=True),
             Tcgen05Mma("mxf8f6f4", block_scale=True, scale_vec="1X"),
             Tcgen05Mma("f16", scale_input_d=3)]
    for m in forms:
        assert ptxas_accepts(m.ptx(), version=version) == (not m.issues(ptx_version=version)), \
            (version, m.ptx(), [str(e) for e in m.issues(ptx_version=version)])

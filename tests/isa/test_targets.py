"""ptxsim.isa.targets: the one owner of target-name parsing and the family / arch-specific rules.

Expected values come from the spec's Target ISA notes (written out by hand below) and from ptxas
13.0 runs on this machine (the COMPATIBLE table, recorded 2026-11-21 and re-checked live when
ptxas is installed)."""
from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import pytest

from ptxsim.errors import OperandError, PtxValidationError, TargetError
from ptxsim.isa import targets as T

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "ptxsim"


# ------------------------------------------------------------------------------- parsing
@pytest.mark.parametrize("name,sm,suffix,family", [
    ("sm_90a", 90, "a", 9), ("sm_100a", 100, "a", 10), ("sm_100f", 100, "f", 10),
    ("sm_103a", 103, "a", 10), ("sm_101a", 101, "a", 11),   # sm_101 is the old name of sm_110
    ("sm_110f", 110, "f", 11), ("sm_120a", 120, "a", 12), ("sm_121a", 121, "a", 12),
    ("sm_80", 80, "", 8), (" sm_89 ", 89, "", 8),
])
def test_parse_target(name, sm, suffix, family):
    t = T.parse_target(name)
    assert (t.name, t.sm, t.suffix, t.family) == (name.strip(), sm, suffix, family)
    assert T.parse_target(t) is t


def test_renamed_targets_are_one_target():
    # "sm_101a (Renamed to sm_110a from PTX ISA version 9.0)" (9.7.16.10.9.2 Target ISA Notes)
    assert T.parse_target("sm_101a").canonical.name == "sm_110a"
    assert T.parse_target("sm_101f").canonical.name == "sm_110f"
    assert T.parse_target("sm_103a").canonical.name == "sm_103a"
    assert T.Req(T.Arch("sm_101a")).ok("sm_110a") and T.Req(T.Arch("sm_110a")).ok("sm_101a")


@pytest.mark.parametrize("bad", ["sm100a", "hopper", "sm_100x", "sm_", "compute", "", "sm_100af"])
def test_bad_target_names_raise_one_named_error(bad):
    with pytest.raises(TargetError, match="unknown target") as e:
        T.parse_target(bad)
    # callers that expect a validation error (validator, misc, video) and those that expect an
    # operand error (mma_sp) both catch it
    assert isinstance(e.value, PtxValidationError) and isinstance(e.value, OperandError)


def test_parse_version():
    assert T.parse_version("8.7") == (8, 7) and T.parse_version((9, 0)) == (9, 0)
    with pytest.raises(TargetError, match="malformed PTX ISA version"):
        T.parse_version("eight")


# ------------------------------------------------------------------ requirement language
ALL = ("sm_80", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_100f", "sm_101a", "sm_101f",
       "sm_103", "sm_103a", "sm_103f", "sm_110", "sm_110a", "sm_110f", "sm_120", "sm_120a",
       "sm_120f", "sm_121", "sm_121a", "sm_121f")


def _set(req, v=None):
    return {n for n in ALL if req.ok(n, v)}


def test_tcgen05_note():
    # 9.7.16.7.1 ... Target ISA Notes: "sm_100a, sm_101a (renamed sm_110a), and from PTX ISA 8.8
    # sm_100f or higher in the same family, sm_101f or higher in the same family; sm_110f or
    # higher in the same family (9.0)". Written out: every a/f target of families 10 and 11.
    want = {"sm_100a", "sm_100f", "sm_101a", "sm_101f", "sm_103a", "sm_103f", "sm_110a", "sm_110f"}
    assert _set(T.TCGEN05) == want
    # before PTX ISA 8.8 only the arch-specific names hold
    assert _set(T.TCGEN05, (8, 7)) == {"sm_100a", "sm_101a", "sm_110a"}
    assert T.FEATURES["tcgen05"].targets == frozenset(want)


def test_other_tcgen05_notes():
    # .kind::i8: "sm_100a, sm_101a (sm_110a)" only (9.7.16.10.9.1)
    assert _set(T.TCGEN05_I8) == {"sm_100a", "sm_101a", "sm_110a"}
    # scale-input-d: "requires sm_100a and is supported on sm_100f or higher in the same family"
    assert _set(T.SCALE_INPUT_D) == {"sm_100a", "sm_100f", "sm_103a", "sm_103f"}
    # .scale_vec::NX and tcgen05.mma.sp .kind::mxf4*: the arch-specific targets
    assert _set(T.ARCH_SPECIFIC_10X_11X) == {"sm_100a", "sm_101a", "sm_103a", "sm_110a"}
    # K = 96 and the absolute LBO mode: sm_103a
    assert _set(T.SM103A) == {"sm_103a"}


def test_at_least_and_any_of_family():
    assert _set(T.Req(T.AtLeast(100))) == {n for n in ALL if int(re.findall(r"\d+", n)[0]) >= 100}
    assert _set(T.Req(T.AnyOfFamily(12))) == {"sm_120", "sm_120a", "sm_120f", "sm_121",
                                               "sm_121a", "sm_121f"}


def test_family_from_a_later_member():
    # "sm_103f or higher in the same family": sm_103a/f only, not sm_100*
    assert _set(T.Req(T.Family("sm_103f"))) == {"sm_103a", "sm_103f"}
    # "sm_120f or higher in the same family" covers sm_121a/f and not the plain sm_12x
    assert _set(T.Req(T.Family("sm_120f"))) == {"sm_120a", "sm_120f", "sm_121a", "sm_121f"}


def test_ptx_version_gates_an_alternative():
    req = T.Req(T.Arch("sm_100a"), T.Family("sm_110f", (9, 0)))
    assert req.ok("sm_110f", "9.0") and not req.ok("sm_110f", "8.8")
    assert req.ok("sm_110f")                 # version unknown: the target alone decides
    assert req.ok("sm_100a", "8.6")


def test_supports_and_check_target():
    assert T.supports("sm_103a", "tcgen05.mma.k96") and not T.supports("sm_100a", "tcgen05.mma.k96")
    with pytest.raises(TargetError, match="unknown target 'sm_120a'"):
        T.supports("sm_120a", "tcgen05")       # outside the descriptor tools' list


# ------------------------------------------------------- .target vs --gpu-name compatibility
# ptxas 13.0, `ptxas -arch=ARCH k.ptx` for an empty kernel with `.version 9.0` / `.target PTX`
# (8.8 for sm_101*): True = assembles. Recorded on this machine, 2026-11-21.
COMPATIBLE = {
    ("sm_100f", "sm_100"): True, ("sm_100f", "sm_100a"): True, ("sm_100f", "sm_103"): True,
    ("sm_100f", "sm_103a"): True, ("sm_100f", "sm_103f"): True, ("sm_100f", "sm_110"): False,
    ("sm_100f", "sm_120"): False, ("sm_100f", "sm_121a"): False,
    ("sm_100a", "sm_100"): False, ("sm_100a", "sm_100a"): True, ("sm_100a", "sm_100f"): False,
    ("sm_100a", "sm_103a"): False, ("sm_100a", "sm_110"): False,
    ("sm_103f", "sm_100a"): False, ("sm_103f", "sm_103"): True, ("sm_103f", "sm_103a"): True,
    ("sm_103f", "sm_110"): False,
    ("sm_120f", "sm_103a"): False, ("sm_120f", "sm_120"): True, ("sm_120f", "sm_121"): True,
    ("sm_120f", "sm_121a"): True,
    ("sm_100", "sm_103"): True, ("sm_100", "sm_110a"): True, ("sm_100", "sm_110f"): True,
    ("sm_110", "sm_103"): False, ("sm_110", "sm_110a"): True,
    ("sm_101", "sm_103"): True, ("sm_101", "sm_110"): True,
    ("sm_101a", "sm_110a"): True, ("sm_101a", "sm_110"): False, ("sm_101a", "sm_110f"): False,
    ("sm_101a", "sm_103"): False,
    ("sm_101f", "sm_110a"): True, ("sm_101f", "sm_110"): True, ("sm_101f", "sm_110f"): True,
    ("sm_101f", "sm_103"): False,
}


@pytest.mark.parametrize("ptx_target,arch", sorted(COMPATIBLE))
def test_compatible_matches_ptxas(ptx_target, arch):
    assert T.compatible(ptx_target, arch) == COMPATIBLE[ptx_target, arch]


def test_compatible_table_is_what_ptxas_says(tmp_path):
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not installed")
    for (p, a), want in COMPATIBLE.items():
        v = "8.8" if p.startswith("sm_101") else "9.0"
        f = tmp_path / "k.ptx"
        f.write_text(f".version {v}\n.target {p}\n.address_size 64\n.visible .entry k(){{ ret; }}\n")
        res = subprocess.run([ptxas, f"-arch={a}", str(f), "-o", "/dev/null"], capture_output=True,
                             text=True)
        assert (res.returncode == 0) == want, (p, a, res.stderr)


# ---------------------------------------------------------------------- one source of truth
def test_no_second_target_parser_in_the_package():
    """Only isa/targets.py may spell out the target-name grammar or the family rule."""
    offenders = []
    for f in SRC.rglob("*.py"):
        if f.relative_to(SRC).as_posix() == "isa/targets.py":
            continue
        text = f.read_text()
        if re.search(r"sm_\(\\d|sm_\\d|\b(sm|cc) // 10\b|def _family\(sm", text):
            offenders.append(f.relative_to(SRC).as_posix())
    assert offenders == []


def test_front_end_and_isa_share_the_vocabulary():
    from ptxsim.isa import misc, mma_sp, tcgen05_mma
    from ptxsim.ptx import targets as ptx_targets
    from ptxsim.ptx.legality import tcgen05 as leg_tcgen05
    assert ptx_targets.parse_target is T.parse_target and ptx_targets.Req is T.Req
    assert ptx_targets.compatible is T.compatible
    assert all(isinstance(r, T.Req) for r in mma_sp.REQUIREMENTS.values())
    assert all(isinstance(a, (T.Arch, T.Family, T.AtLeast)) for a in misc.SETMAXNREG_TARGETS)
    assert leg_tcgen05.SCALE_INPUT_D is T.SCALE_INPUT_D
    assert leg_tcgen05.SCALE_VEC_NX is T.ARCH_SPECIFIC_10X_11X is leg_tcgen05.SP_MXF4
    assert tcgen05_mma.TARGET_FEATURES["scale_input_d"] == T.SCALE_INPUT_D.targets()
    assert tcgen05_mma.TARGET_FEATURES["scale_vec::NX"] == T.ARCH_SPECIFIC_10X_11X.targets()
    from ptxsim.ptx.legality import mma_sp as leg_mma_sp, stack_misc as leg_misc
    assert leg_mma_sp.SM120 is mma_sp.REQUIREMENTS["sm_120f"]
    assert leg_mma_sp.SM120A_121A is mma_sp.REQUIREMENTS["sm_120a"]
    assert leg_misc.SETMAXNREG.alternatives == misc.SETMAXNREG_TARGETS


# ------------------------------------------------------------------- renamed .target names
RENAMED_PTX = (".version 9.0\n.target {t}\n.address_size 64\n.visible .entry k()\n{{\n"
               "\t.reg .b32 %r<3>;\n"
               "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;\n\tret;\n}}\n")


@pytest.mark.parametrize("old", ["sm_101a", "sm_101f"])
def test_renamed_target_is_a_warning_not_an_error(old, tmp_path):
    # ptxas 13.0 assembles `.version 9.0 / .target sm_101a` (and sm_101f) for -arch=sm_110a
    # (recorded 2026-11-21, exit status 0; re-run below when ptxas is installed).
    from ptxsim.ptx import errors_of, parse_module, validate
    diags = validate(parse_module(RENAMED_PTX.format(t=old), "k.ptx"))
    assert errors_of(diags) == []
    assert [d.severity for d in diags if "renamed" in d.message] == ["warning"]
    ptxas = shutil.which("ptxas")
    if ptxas is not None:
        f = tmp_path / "k.ptx"
        f.write_text(RENAMED_PTX.format(t=old))
        res = subprocess.run([ptxas, "-arch=sm_110a", str(f), "-o", "/dev/null"],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr

"""Which PTX `cvt` forms exist for each destination format: rounding, `.satfinite`, `.relu`.

Transcribed from PTX ISA 9.1, section 9.7.9.21 (`cvt`), its Syntax block and the `.relu` /
`.satfinite` notes, and checked form by form against ptxas 13.0 (tests/types/test_types_rules_ptxas.py
assembles every row):

    cvt{.frnd}.f32.f64                           .frnd  = {.rn, .rz, .rm, .rp}
    cvt{.frnd}.{f16,bf16}.f32                    (plain form: no .relu, no .satfinite)
    cvt.frnd2{.relu}{.satfinite}.{f16,bf16}.f32  .frnd2 = {.rn, .rz}
    cvt.rna{.satfinite}.tf32.f32                 (no .relu with .rna)
    cvt.frnd2{.satfinite}{.relu}.tf32.f32
    cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2,e2m1x2,e2m3x2,e3m2x2}.f32   (.satfinite mandatory)
    cvt.frnd3{.satfinite}.ue8m0x2.f32            .frnd3 = {.rz, .rp}   (no .relu: ptxas refuses it)
    cvt.{irnd}.{s8,u8,s32,u32}.f32               .irnd  = {.rni, .rzi, .rmi, .rpi}, clamps by default

Two rows are not PTX `cvt` forms and say so (`ptx_form=None` or `nonsat_extension`):
  * `.e4m3`/`.e5m2` without `.satfinite` (ptxas: "'.satfinite' modifier required"): the OCP FP8
    conversion (overflow -> NaN for e4m3, -> Inf for e5m2), kept because test data and ml_dtypes
    use it;
  * `ue4m3` and `s4`/`u4` have no `cvt` destination at all: ue4m3 is produced like e4m3 with the sign
    bit 0, 4-bit integers by clamping like `cvt.pack`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ptxsim.errors import FormatError

ROUNDINGS = ("rn", "rz", "rm", "rp", "rna")


@dataclass(frozen=True)
class CvtRule:
    satfinite: str            # "optional" | "required" | "never"
    relu: bool                # .relu allowed
    ptx_form: str | None      # the PTX instruction this row models (None: no cvt form exists)
    nonsat_extension: bool = False   # satfinite=False allowed although PTX requires .satfinite


def _rows():
    rows: dict[tuple[str, str], CvtRule] = {}
    for r in ("rn", "rz", "rm", "rp"):
        rows["f32", r] = CvtRule("never", False, f"cvt.{r}.f32.f64")
    for fmt in ("f16", "bf16"):
        for r in ("rn", "rz"):
            rows[fmt, r] = CvtRule("optional", True, f"cvt.{r}{{.relu}}{{.satfinite}}.{fmt}.f32")
        for r in ("rm", "rp"):
            rows[fmt, r] = CvtRule("never", False, f"cvt.{r}.{fmt}.f32")
    rows["tf32", "rna"] = CvtRule("optional", False, "cvt.rna{.satfinite}.tf32.f32")
    for r in ("rn", "rz"):
        rows["tf32", r] = CvtRule("optional", True, f"cvt.{r}{{.satfinite}}{{.relu}}.tf32.f32")
    for fmt in ("e4m3", "e5m2"):
        rows[fmt, "rn"] = CvtRule("required", True, f"cvt.rn.satfinite{{.relu}}.{fmt}x2.f32",
                                  nonsat_extension=True)
    for fmt in ("e2m3", "e3m2", "e2m1"):
        rows[fmt, "rn"] = CvtRule("required", True, f"cvt.rn.satfinite{{.relu}}.{fmt}x2.f32")
    for r in ("rz", "rp"):
        rows["ue8m0", r] = CvtRule("optional", False, f"cvt.{r}{{.satfinite}}.ue8m0x2.f32")
    rows["ue4m3", "rn"] = CvtRule("required", True, None)
    for fmt in ("s32", "u32", "s8", "u8"):
        for r in ("rn", "rz", "rm", "rp"):
            rows[fmt, r] = CvtRule("optional", False, f"cvt.{r}i.{fmt}.f32")
    for fmt in ("s4", "u4"):
        for r in ("rn", "rz", "rm", "rp"):
            rows[fmt, r] = CvtRule("optional", False, None)
    return rows


CVT_RULES: dict[tuple[str, str], CvtRule] = _rows()


def check_cvt(fmt: str, rounding: str, satfinite: bool, relu: bool) -> CvtRule:
    """Return the rule for an encode request, or raise FormatError naming what PTX lacks."""
    if rounding not in ROUNDINGS:
        raise FormatError(f"unknown rounding '{rounding}'; PTX has {', '.join(ROUNDINGS)}")
    rule = CVT_RULES.get((fmt, rounding))
    if rule is None:
        have = [r for (f, r) in CVT_RULES if f == fmt]
        raise FormatError(f"PTX has no cvt to .{fmt} with .{rounding} rounding"
                          + (f" (it has {', '.join('.' + r for r in have)})" if have
                             else "; it is not a cvt destination format"))
    if satfinite and rule.satfinite == "never":
        raise FormatError(f"PTX cvt to .{fmt} with .{rounding} takes no .satfinite ({rule.ptx_form})")
    if not satfinite and rule.satfinite == "required" and not rule.nonsat_extension:
        raise FormatError(f"PTX cvt to .{fmt} requires .satfinite ({rule.ptx_form or 'no cvt form'}); "
                          f"the format has no NaN or Inf to overflow to")
    if relu and not rule.relu:
        raise FormatError(f"PTX cvt to .{fmt} with .{rounding} takes no .relu"
                          + (f" ({rule.ptx_form})" if rule.ptx_form else ""))
    return rule

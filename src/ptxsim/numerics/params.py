"""The (arch, kind) table: which element types each MMA kind takes, and the arithmetic it does.

Two tables, both data:

* ``KINDS``  -- legality: for each kind, the allowed A/B element types and (C, D) type pairs.
  Transcribed from PTX ISA 9.7.16.2.1 Table 39 (tcgen05.mma kinds and types) and 9.7.16.10.7.1
  Tables 54/55 (block scaling), and for the warp-level forms from the ``mma`` type lists that
  MMA-Sim carries (mmasim/nv_ptx/isa_mma.py, which follows the PTX ``mma`` section).
* ``ARCH``   -- arithmetic of the fused dot-product unit per architecture: F (fraction bits kept
  below the largest exponent), bytes of A per fused block (terms per block = bytes / element
  size), the exponent a zero term counts with (f32 vs f16 output).  Source: FACTS.md section 1,
  which is MMA-Sim's table (mmasim/nv_ptx/sim.py, ``_mma_F_bits`` / ``_mma_L_max_bytes`` /
  ``_mma_e_zero_*``), validated by its authors on A100/H100/B200/RTX-5090.

``params(arch, kind, atype, btype, dtype)`` combines them into one ``Params`` row.
"""
from __future__ import annotations

from dataclasses import dataclass

from ptxsim.errors import MmaTypeError

F8F6F4 = ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1")
FP8 = ("e4m3", "e5m2")

# ---------------------------------------------------------------------------------------------
# Legality.  kind -> (A/B types, allowed (ctype, dtype) pairs, scale types, scale block sizes)
# 9.7.16.2.1 Table 39; 9.7.16.10.7.1 Table 55.  Warp-level mma (9.7.14) uses the same kind names
# here: "f16" covers .f16/.bf16, "tf32", "f8f6f4" (sm_89/90: only e4m3/e5m2), "i8" covers
# .s8/.u8/.s4/.u4 (warp-level 4-bit forms included).
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KindRule:
    ab_types: tuple[str, ...]
    cd_types: tuple[tuple[str, str], ...]        # allowed (ctype, dtype)
    scale_types: tuple[str, ...] = ()            # empty: not block scaled
    blocks: dict | None = None                   # scale_type -> allowed block sizes (K per scale)
    same_ab: bool = False                        # A and B must have the same type
    f16_d_needs_f16_ab: bool = False             # Table 39: .f16 D only with .f16 A/B
    # warp-level mma may mix C and D types (9.7.14: .ctype / .dtype each .f16 or .f32); the
    # tcgen05 accumulator is D itself, so tcgen05 callers pass ctype == dtype
    mixed_cd_needs_f16_ab: bool = False          # 9.7.14.6.3: bf16 / tf32 forms are .f32 only


# (ctype, dtype): matching pairs (tcgen05, MMA-Sim) and the warp-level mixed ones
MIXED_CD = (("f32", "f32"), ("f16", "f16"), ("f16", "f32"), ("f32", "f16"))

KINDS: dict[str, KindRule] = {
    # Table 39: kind::tf32 -> D .f32, A/B .tf32
    "tf32": KindRule(("tf32",), (("f32", "f32"),)),
    # Table 39: kind::f16 -> D .f16 with .f16 A/B; D .f32 with .f16 or .bf16 A/B
    "f16": KindRule(("f16", "bf16"), MIXED_CD, same_ab=True, f16_d_needs_f16_ab=True,
                    mixed_cd_needs_f16_ab=True),
    # Table 39: kind::f8f6f4 -> D .f32 or .f16, A/B any of e4m3 e5m2 e2m3 e3m2 e2m1 (mixed allowed)
    "f8f6f4": KindRule(F8F6F4, MIXED_CD),
    # warp-level mma(.sp).sync with .e4m3/.e5m2 (9.7.14.5.14, 9.7.14.6.3): D .f32 with C .f32,
    # or .f16 with .f16 (ptxas 13.0 rejects mixed C/D for these shapes).  A kind of its own
    # because sm_90 computes it differently from wgmma / tcgen05 fp8 (EMULATED below).
    "fp8_sync": KindRule(FP8, (("f32", "f32"), ("f16", "f16"))),
    # Table 39: kind::i8 -> D .s32, A/B .s8/.u8 (warp-level mma adds .s4/.u4)
    "i8": KindRule(("s8", "u8", "s4", "u4"), (("s32", "s32"),)),
    # Table 39 + Table 55: kind::mxf8f6f4 -> D .f32, scale .ue8m0, scale_vec::1X (block32)
    "mxf8f6f4": KindRule(F8F6F4, (("f32", "f32"),), ("ue8m0",), {"ue8m0": (32,)}),
    # Table 55: kind::mxf4 -> E2M1, UE8M0, scale_vec::2X / block32
    "mxf4": KindRule(("e2m1",), (("f32", "f32"),), ("ue8m0",), {"ue8m0": (32,)}),
    # Table 55: kind::mxf4nvf4 -> E2M1 with UE8M0 (block32 or block16) or UE4M3 (block16 only)
    "mxf4nvf4": KindRule(("e2m1",), (("f32", "f32"),), ("ue8m0", "ue4m3"),
                         {"ue8m0": (32, 16), "ue4m3": (16,)}),
}

# Which kinds exist on which architecture (warp-level mma on sm_80/89/90, tcgen05 on sm_100,
# warp-level kind::* block-scaled mma on sm_120).  fp8 needs sm_89+; f6/f4 and block scaling
# need sm_100 / sm_120.
ARCH_KINDS: dict[str, tuple[str, ...]] = {
    "sm_80": ("tf32", "f16", "i8"),
    "sm_89": ("tf32", "f16", "f8f6f4", "fp8_sync", "i8"),
    "sm_90": ("tf32", "f16", "f8f6f4", "fp8_sync", "i8"),
    "sm_100": ("tf32", "f16", "f8f6f4", "fp8_sync", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4"),
    "sm_120": ("tf32", "f16", "f8f6f4", "fp8_sync", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4"),
}
# fp8 only (no 6/4-bit) under kind f8f6f4 on these (PTX mma .e4m3/.e5m2, sm_89+)
FP8_ONLY_ARCHS = ("sm_89", "sm_90")

# ---------------------------------------------------------------------------------------------
# Arithmetic.  FACTS.md section 1 / MMA-Sim sim.py.
# F: fraction bits kept below the largest exponent; block_bytes: bytes of A per fused block;
# e_zero_f32 / e_zero_f16: exponent of a zero term for f32 / f16 output.
# ---------------------------------------------------------------------------------------------
ARCH: dict[str, dict] = {
    "sm_80": dict(F=24, block_bytes=16, e_zero_f32=-132, e_zero_f16=-20),   # Ampere
    "sm_89": dict(F=24, block_bytes=16, e_zero_f32=-132, e_zero_f16=-20),   # Ada
    "sm_90": dict(F=25, block_bytes=32, e_zero_f32=-133, e_zero_f16=-21),   # Hopper
    "sm_100": dict(F=25, block_bytes=32, e_zero_f32=-133, e_zero_f16=-21),  # Blackwell
    "sm_120": dict(F=25, block_bytes=32, e_zero_f32=-133, e_zero_f16=-21),  # RTX Blackwell
}
# Special rules (FACTS section 1 / MMA-Sim):
#  * sm_89/sm_90 fp8: F = 13 and an f32 result keeps only 13 fraction bits (rounding "RZ-E8M13").
#    MMA-Sim models this for Ada mma and Hopper wgmma; ptxsim applies it to all sm_90 fp8.
#  * kind::mxf8f6f4: the plain fused model with scale exponents added (F 25, 32 terms, e_zero -133)
#  * kind::mxf4 / mxf4nvf4: groups of 16 products summed exactly, times SF_A*SF_B, then 4 group
#    sums + c fused with F = 35, e_zero = -139.
ELEMENT_BYTES = {"tf32": 4, "f16": 2, "bf16": 2, "e4m3": 1, "e5m2": 1, "e2m3": 1, "e3m2": 1,
                 "e2m1": 1}   # f6/f4 occupy one byte container each (FACTS section 2)
GROUPED = dict(G=16, F=35, L=64, e_zero=-139)

# Instructions that ptxas expands into other instructions on an architecture (measured: the SASS
# of every captured kernel, tests/data/hardware/mma_sync/mma_sync_sm90_sass.txt; the H200 results,
# tests/data/hardware/mma_sync/mma_sync_sm90.npz and tests/data/hardware/mma_sp/mma_sp_sm90.npz).  (arch, kind) ->
#   via:    the kind whose arithmetic each emitted tensor-core instruction has (A/B converted to
#           its element type exactly: F2FP.F16.E4M3/E5M2.UNPACK_B);
#   chunk:  K elements per emulated instruction (32: the m16n8k32 / stored K of m16n8k64 .sp);
#   split:  within a chunk, element k goes to the first half-instruction if k % 4 < 2 (the low
#           16-bit half of each 32-bit fp8 register), else to the second, which continues from
#           the first one's result (HMMA ... RZ; HMMA ... R4);
#   then:   C is added to that sum with one IEEE round-to-nearest add (FADD for .f32,
#           HADD2 for .f16 D) -- C never enters the tensor core.
# sm_100 (sm_100a SASS, ptxas 13.0: F2FP.F16.E4M3/E5M2.UNPACK_B, two HMMA.16816 / HMMA.1688,
# FADD / HADD2 -- the sm_90 expansion; hardware/matrix/stage.py sass_targets) is the same
# expansion on the sm_100 f16 row. sm_89 and sm_120 run warp-level fp8 natively (their SASS has
# no conversion; MMA-Sim's Ada / RTX Blackwell models, the f8f6f4 row).
EMULATED = {
    ("sm_90", "fp8_sync"): dict(via="f16", elem="f16", chunk=32, split=4),
    ("sm_100", "fp8_sync"): dict(via="f16", elem="f16", chunk=32, split=4),
}
SCALED = dict(F=25, L=32, e_zero=-133)


@dataclass(frozen=True)
class Params:
    model: str        # "fused" (plain / scale-folded), "grouped" (mxf4, mxf4nvf4), or
    #                   "emulated" (EMULATED: `inner` is the emitted instruction's row)
    F: int
    L: int            # terms (K elements) per fused block
    e_zero: int
    rho: str          # "RZ-FP32" | "RZ-E8M13" | "RNE-FP16"
    G: int = 0        # group size (grouped model)
    inner: "Params | None" = None   # emulated: the arithmetic of the emitted instructions
    via: str = ""                   # emulated: element type A/B are converted to
    chunk: int = 0                  # emulated: K per emitted instruction pair


def check_types(arch: str, kind: str, atype: str, btype: str, ctype: str, dtype: str,
                scale_type: str | None = None, block: int | None = None) -> KindRule:
    """Raise MmaTypeError unless the combination is legal; return the kind's rule."""
    if arch not in ARCH_KINDS:
        raise MmaTypeError(f"arch '{arch}' is not modelled; known: {', '.join(ARCH_KINDS)}")
    if kind not in KINDS:
        raise MmaTypeError(f"unknown MMA kind '{kind}'; known: {', '.join(KINDS)}")
    if kind not in ARCH_KINDS[arch]:
        raise MmaTypeError(f"kind '{kind}' does not exist on {arch}")
    rule = KINDS[kind]
    for name, t in (("atype", atype), ("btype", btype)):
        allowed = rule.ab_types
        if kind == "f8f6f4" and arch in FP8_ONLY_ARCHS:
            allowed = FP8
        if t not in allowed:
            raise MmaTypeError(f"{name} '{t}' is not allowed for kind::{kind} on {arch}; "
                               f"allowed: {', '.join(allowed)} (Table 39)")
    if rule.same_ab and atype != btype:
        raise MmaTypeError(f"kind::{kind} needs atype == btype, got {atype} / {btype} (Table 39)")
    if (ctype, dtype) not in rule.cd_types:
        raise MmaTypeError(f"(ctype, dtype) = ({ctype}, {dtype}) is not allowed for kind::{kind}; "
                           f"allowed: {rule.cd_types} (Table 39)")
    if rule.f16_d_needs_f16_ab and dtype == "f16" and atype != "f16":
        raise MmaTypeError(f"kind::{kind} with .f16 D needs .f16 A/B, got {atype} (Table 39)")
    if rule.mixed_cd_needs_f16_ab and ctype == "f16" and atype != "f16":
        raise MmaTypeError(f"kind::{kind} with .f16 C needs .f16 A/B, got {atype} (9.7.14)")
    if rule.scale_types:
        if scale_type not in rule.scale_types:
            raise MmaTypeError(f"kind::{kind} needs scale_type in {rule.scale_types}, got "
                               f"{scale_type!r} (Table 55)")
        if block not in rule.blocks[scale_type]:
            raise MmaTypeError(f"kind::{kind} with {scale_type} scales needs block in "
                               f"{rule.blocks[scale_type]}, got {block!r} (Table 55)")
    elif scale_type is not None or block is not None:
        raise MmaTypeError(f"kind::{kind} is not block scaled: scale_type/block must be None")
    return rule


def params(arch: str, kind: str, atype: str, btype: str, dtype: str) -> Params:
    """The arithmetic of one (arch, kind, types) row.  Types must already be checked."""
    if kind in ("mxf4", "mxf4nvf4"):
        return Params("grouped", GROUPED["F"], GROUPED["L"], GROUPED["e_zero"], "RZ-FP32",
                      G=GROUPED["G"])
    if kind == "mxf8f6f4":
        return Params("fused", SCALED["F"], SCALED["L"], SCALED["e_zero"], "RZ-FP32")
    if kind == "fp8_sync":
        emu = EMULATED.get((arch, kind))
        if emu is None:                      # native: the arch's fp8 row
            return params(arch, "f8f6f4", atype, btype, dtype)
        inner = params(arch, emu["via"], emu["elem"], emu["elem"], dtype)
        return Params("emulated", inner.F, inner.L, inner.e_zero,
                      "RN-FP16" if dtype == "f16" else "RN-FP32", inner=inner,
                      via=emu["elem"], chunk=emu["chunk"])
    a = ARCH[arch]
    f16_out = dtype == "f16"
    F = a["F"]
    rho = "RNE-FP16" if f16_out else "RZ-FP32"
    if kind == "f8f6f4" and arch in FP8_ONLY_ARCHS:
        F = 13
        rho = "RNE-FP16" if f16_out else "RZ-E8M13"
    L = a["block_bytes"] // max(ELEMENT_BYTES[atype], 1)
    return Params("fused", F, L, a["e_zero_f16"] if f16_out else a["e_zero_f32"], rho)

"""The three tcgen05 descriptors: instruction, shared-memory, zero-column mask (PTX ISA 9.7.16.4).

Each descriptor is a frozen dataclass of raw bit-fields (exactly the bits of the register, so an
illegal value can still be decoded and shown), with one `encode()` and one `decode()`, a
`make()` that builds it from named values (M=128, "bf16", 1024 bytes), and `issues(...)` /
`validate(...)` that check it against the spec tables. `issues` returns every `DescriptorError`
(the CLI prints them all); `validate` raises the first.

Table 39 (legal M/N/K per kind, .ws, cta_group, sparsity) is exported as `MMA_SHAPES`, for the
tcgen05.mma code to reuse.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from ptxsim.errors import DescriptorError
from ptxsim.isa import targets

# --------------------------------------------------------------------------------------------
# MMA kinds and their type codes (9.7.16.4.2, Tables 42, 43, 44)
# --------------------------------------------------------------------------------------------
MMA_KINDS: tuple[str, ...] = ("tf32", "f16", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4")
BLOCK_SCALED_KINDS = frozenset({"mxf8f6f4", "mxf4", "mxf4nvf4"})

# dtype (Matrix D type), bits 4-5 of Table 42. Block-scaled kinds always produce f32 (Table 39).
DTYPE_CODES: dict[str, int] = {"f16": 0, "f32": 1, "s32": 2}
# Legal D types per kind (Table 39, column dtype).
KIND_DTYPES: dict[str, tuple[str, ...]] = {
    "tf32": ("f32",), "f16": ("f16", "f32"), "f8f6f4": ("f16", "f32"), "i8": ("s32",),
    "mxf8f6f4": ("f32",), "mxf4": ("f32",), "mxf4nvf4": ("f32",),
}
_F8F6F4_CODES = {"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}
# atype / btype codes (Table 42 bits 7-9 / 10-12; Table 43; Table 44). Note E2M1 = 5 under
# f8f6f4 / mxf8f6f4 but 1 under mxf4 / mxf4nvf4.
KIND_ABTYPE_CODES: dict[str, dict[str, int]] = {
    "tf32": {"tf32": 2},
    "f16": {"f16": 0, "bf16": 1},
    "f8f6f4": _F8F6F4_CODES,
    "i8": {"u8": 0, "s8": 1},
    "mxf8f6f4": _F8F6F4_CODES,
    "mxf4": {"e2m1": 1},
    "mxf4nvf4": {"e2m1": 1},
}
# Scale Matrix Type, bit 23 of Tables 43/44, and the scale types each kind allows (Table 39, 55).
SCALE_TYPE_CODES: dict[str, int] = {"ue4m3": 0, "ue8m0": 1}
KIND_SCALE_TYPES: dict[str, tuple[str, ...]] = {
    "mxf8f6f4": ("ue8m0",), "mxf4": ("ue8m0",), "mxf4nvf4": ("ue8m0", "ue4m3"),
}
MAX_SHIFT_VALUES = {0: "no shift", 1: "8", 2: "16", 3: "32"}     # Table 42 bits 30-31
EIGHT_BIT_TYPES = frozenset({"e4m3", "e5m2", "s8", "u8"})
SUB_BYTE_TYPES = frozenset({"e2m3", "e3m2", "e2m1"})


def _name_of(codes: dict[str, int], code: int) -> str | None:
    for name, c in codes.items():
        if c == code:
            return name
    return None


def _check_kind(kind: str) -> str:
    if kind not in MMA_KINDS:
        raise DescriptorError("kind", kind, f"unknown MMA kind; one of {', '.join(MMA_KINDS)}",
                              "instruction descriptor")
    return kind


# --------------------------------------------------------------------------------------------
# Table 39: shapes per kind, .ws, cta_group, sparsity
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MmaShape:
    """One row of Table 39: for these qualifiers, M in `m`, N in `n`, and the implied K."""
    kind: str
    ws: bool
    cta_group: int
    sparse: bool
    m: tuple[int, ...]
    n: tuple[int, ...]
    k: int
    feature: str | None = None      # target feature (targets.FEATURES) the row needs
    source: str = "Table 39"


_N8 = tuple(range(8, 257, 8))            # N = {8, 16, 24, ... 256}
_N16 = tuple(range(16, 257, 16))         # N = {16, 32, ... 256}
_N_WS_DENSE = (64, 128, 256)
_N_WS_SPARSE = (64, 128)
_N_I8_CTA1 = (8, 16, 24, 32) + tuple(range(48, 257, 16))   # steps of 16 after N > 32
_N_I8_CTA2 = tuple(range(32, 257, 32))
DENSE_K: dict[str, int] = {"tf32": 8, "f16": 16, "f8f6f4": 32, "i8": 32, "mxf8f6f4": 32,
                           "mxf4": 64, "mxf4nvf4": 64}


def _table39() -> tuple[MmaShape, ...]:
    rows: list[MmaShape] = []
    for kind in ("f16", "tf32", "f8f6f4", "i8"):
        k = DENSE_K[kind]
        n1, n2 = (_N_I8_CTA1, _N_I8_CTA2) if kind == "i8" else (_N8, _N16)
        for sparse in (False, True):
            kk = 2 * k if sparse else k
            rows.append(MmaShape(kind, False, 1, sparse, (64, 128), n1, kk))
            rows.append(MmaShape(kind, False, 2, sparse, (128, 256), n2, kk))
            rows.append(MmaShape(kind, True, 1, sparse, (32, 64, 128),
                                 _N_WS_SPARSE if sparse else _N_WS_DENSE, kk))
        # .ws with cta_group::2: Invalid
    for kind in ("mxf8f6f4", "mxf4", "mxf4nvf4"):
        k = DENSE_K[kind]
        rows.append(MmaShape(kind, False, 1, False, (128,), _N8, k))
        rows.append(MmaShape(kind, False, 1, True, (128,), _N8, 2 * k))
        rows.append(MmaShape(kind, False, 2, False, (128, 256), _N16, k))
        rows.append(MmaShape(kind, False, 2, True, (256,), _N16, 2 * k))
        # .ws: Invalid
    for kind in ("mxf4", "mxf4nvf4"):
        # Table 39 "256xNxK1, K1 = 96" under cta_group::2 dense (sm_103a, 9.7.16.2.1.1).
        rows.append(MmaShape(kind, False, 2, False, (256,), _N16, 96, "tcgen05.mma.k96"))
        # Not in Table 39 but used by NVIDIA's CUTLASS sm_103 kernels (cute/arch/mma_sm100_umma.hpp,
        # SM103_MXF4_ULTRA_SS_VS: M == 128, N % 16 == 0; SM103_MXF4_ULTRA_2x1SM_SS_VS: M 128 or 256).
        rows.append(MmaShape(kind, False, 1, False, (128,), _N16, 96, "tcgen05.mma.k96",
                             "CUTLASS SM103_MXF4_ULTRA_SS_VS (not in Table 39)"))
        rows.append(MmaShape(kind, False, 2, False, (128,), _N16, 96, "tcgen05.mma.k96",
                             "CUTLASS SM103_MXF4_ULTRA_2x1SM_SS_VS (not in Table 39)"))
    return tuple(rows)


MMA_SHAPES: tuple[MmaShape, ...] = _table39()


def mma_k(kind: str, sparse: bool, k96: bool = False) -> int:
    """K of one MMA (Table 39): implied by the kind and the sparsity (and bit 31 for mxf4*)."""
    _check_kind(kind)
    if k96:
        return 96
    return DENSE_K[kind] * (2 if sparse else 1)


def shape_issues(kind: str, m: int, n: int, *, sparse: bool, ws: bool = False, cta_group: int = 1,
                 k96: bool = False, target: str = "sm_100a") -> list[DescriptorError]:
    """Reasons why M x N (x K implied) is not a legal tcgen05.mma shape (Table 39)."""
    where = "instruction descriptor"
    k = mma_k(kind, sparse, k96)
    qual = (f".kind::{kind}{'.sp' if sparse else ''}{'.ws' if ws else ''} .cta_group::{cta_group}"
            f"{' K=96' if k96 else ''}")
    rows = [r for r in MMA_SHAPES if (r.kind, r.ws, r.cta_group, r.sparse, r.k) ==
            (kind, ws, cta_group, sparse, k)]
    if not rows:
        if k96 and sparse:
            why = "K=96 (bit 31) exists only for dense MMA (Table 44)"
        else:
            why = f"{qual} is Invalid in Table 39"
        return [DescriptorError("k_dim" if k96 else "kind", kind, why, where)]
    out = []
    ms = sorted({mm for r in rows for mm in r.m})
    if m not in ms:
        out.append(DescriptorError("m", m, f"{qual} allows M in {ms} (Table 39), got M = {m}",
                                   where))
        return out
    rows = [r for r in rows if m in r.m]
    ns = sorted({nn for r in rows for nn in r.n})
    if n not in ns:
        out.append(DescriptorError("n", n, f"{qual} M={m} allows N in {_ranges(ns)} (Table 39), "
                                   f"got N = {n}",
                                   where))
    for r in rows:
        if r.feature and not targets.supports(target, r.feature):
            out.append(DescriptorError("k_dim", 1, f"K=96 needs target "
                                       f"{'/'.join(sorted(targets.FEATURES[r.feature].targets))}, "
                                       f"not {target} ({targets.FEATURES[r.feature].source})", where))
            break
    return out


def _ranges(ns: list[int]) -> str:
    """Compact text for a sorted list of N values: '{8, 16, ... 256} step 8'."""
    if len(ns) > 4:
        steps = {b - a for a, b in zip(ns, ns[1:])}
        if len(steps) == 1:
            return f"{{{ns[0]}, {ns[1]}, ... {ns[-1]}}} (steps of {steps.pop()})"
    return "{" + ", ".join(map(str, ns)) + "}"


# --------------------------------------------------------------------------------------------
# Bit-field helpers
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BitField:
    name: str          # attribute of the dataclass
    lo: int
    width: int
    spec: str          # the spec's name for the field

    @property
    def bits(self) -> str:
        return f"{self.lo}" if self.width == 1 else f"{self.lo}-{self.lo + self.width - 1}"

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lo

    def get(self, word: int) -> int:
        return (word >> self.lo) & ((1 << self.width) - 1)


def _reserved_mask(layout: tuple[BitField, ...], total_bits: int, fixed: tuple[BitField, ...] = ()) -> int:
    used = 0
    for f in layout + fixed:
        used |= f.mask
    return ((1 << total_bits) - 1) & ~used


def _bit_list(mask: int) -> str:
    bits = [i for i in range(64) if mask >> i & 1]
    # group consecutive runs: 24,25,26 -> 24-26
    runs, start = [], None
    for i, b in enumerate(bits):
        if start is None:
            start = b
        if i + 1 == len(bits) or bits[i + 1] != b + 1:
            runs.append(f"{start}" if start == b else f"{start}-{b}")
            start = None
    return ", ".join(runs)


def _pack(desc, layout: tuple[BitField, ...], what: str) -> int:
    word = 0
    for f in layout:
        v = getattr(desc, f.name)
        if v is None:
            v = 0
        v = int(v)
        if not 0 <= v < (1 << f.width):
            raise DescriptorError(f.name, v, f"does not fit the {f.width}-bit field at bits {f.bits}",
                                  what)
        word |= v << f.lo
    return word


# --------------------------------------------------------------------------------------------
# Instruction descriptor (Tables 42, 43, 44)
# --------------------------------------------------------------------------------------------
_IDESC_T42 = (
    BitField("sparsity_selector", 0, 2, "Sparsity selector"),
    BitField("sparsity", 2, 1, "Sparsity"),
    BitField("saturate", 3, 1, "Saturate for integer types"),
    BitField("dtype", 4, 2, "dtype (Matrix D type)"),
    BitField("atype", 7, 3, "atype (Matrix A type)"),
    BitField("btype", 10, 3, "btype (Matrix B type)"),
    BitField("negate_a", 13, 1, "Negate A Matrix"),
    BitField("negate_b", 14, 1, "Negate B Matrix"),
    BitField("transpose_a", 15, 1, "Transpose A Matrix"),
    BitField("transpose_b", 16, 1, "Transpose B Matrix"),
    BitField("n_dim", 17, 6, "N, Dimension of Matrix B (N >> 3)"),
    BitField("m_dim", 24, 5, "M, Dimension of Matrix A (M >> 4)"),
    BitField("max_shift", 30, 2, "Maximum shift while attempting B matrix reuse in .ws"),
)
_IDESC_T43 = (
    BitField("sparsity", 2, 1, "Sparsity"),
    BitField("scale_b_id", 4, 2, "Matrix B Scale Factor Data ID"),
    BitField("atype", 7, 3, "atype (Matrix A type)"),
    BitField("btype", 10, 3, "btype (Matrix B type)"),
    BitField("negate_a", 13, 1, "Negate A Matrix"),
    BitField("negate_b", 14, 1, "Negate B Matrix"),
    BitField("transpose_a", 15, 1, "Transpose A Matrix"),
    BitField("transpose_b", 16, 1, "Transpose B Matrix"),
    BitField("n_dim", 17, 6, "N, Dimension of Matrix B (N >> 3)"),
    BitField("scale_type", 23, 1, "Scale Matrix Type, for both scale_A / scale_B"),
    BitField("m_dim", 27, 2, "M, Dimension of Matrix A (M >> 7)"),
    BitField("scale_a_id", 29, 2, "Matrix A Scale Factor Data ID"),
)
_IDESC_T44 = tuple(BitField("btype", 10, 2, f.spec) if f.name == "btype" else f for f in _IDESC_T43) + (
    BitField("k_dim", 31, 1, "K Dimension (0: dense K=64 / sparse K=128, 1: dense K=96)"),
)


def idesc_layout(kind: str) -> tuple[tuple[BitField, ...], int, str]:
    """(bit-fields, reserved-bit mask, table name) of the instruction descriptor for `kind`."""
    _check_kind(kind)
    if kind in ("mxf4", "mxf4nvf4"):
        layout, table = _IDESC_T44, "Table 44"
    elif kind == "mxf8f6f4":
        layout, table = _IDESC_T43, "Table 43"
    else:
        layout, table = _IDESC_T42, "Table 42"
    return layout, _reserved_mask(layout, 32), table


@dataclass(frozen=True)
class InstrDescriptor:
    """A tcgen05.mma instruction descriptor: raw field values, by the layout of `kind`.

    Fields absent from the kind's table are None. `reserved` holds the reserved bits in place.
    Use `InstrDescriptor.make(...)` to build one from named values, `.m`, `.n`, `.dtype_name`...
    for decoded values.
    """
    kind: str
    sparsity: int = 0
    atype: int = 0
    btype: int = 0
    negate_a: int = 0
    negate_b: int = 0
    transpose_a: int = 0
    transpose_b: int = 0
    n_dim: int = 0
    m_dim: int = 0
    # Table 42 only
    sparsity_selector: int | None = None
    saturate: int | None = None
    dtype: int | None = None
    max_shift: int | None = None
    # Tables 43 / 44 only
    scale_b_id: int | None = None
    scale_type: int | None = None
    scale_a_id: int | None = None
    k_dim: int | None = None          # Table 44 only
    reserved: int = 0

    # ---- encode / decode -------------------------------------------------------------------
    def encode(self) -> int:
        layout, reserved_mask, table = idesc_layout(self.kind)
        if self.reserved & ~reserved_mask:
            raise DescriptorError("reserved", self.reserved,
                                  f"reserved bits of {table} are bits {_bit_list(reserved_mask)}",
                                  "instruction descriptor")
        return _pack(self, layout, "instruction descriptor") | self.reserved

    @classmethod
    def decode(cls, value: int, kind: str) -> InstrDescriptor:
        layout, reserved_mask, _ = idesc_layout(kind)
        value = int(value)
        if not 0 <= value < 1 << 32:
            raise DescriptorError("idesc", value, "an instruction descriptor is a 32-bit value",
                                  "instruction descriptor")
        return cls(kind=kind, reserved=value & reserved_mask, **{f.name: f.get(value) for f in layout})

    @classmethod
    def make(cls, kind: str, *, m: int, n: int, atype: str, btype: str, dtype: str = "f32",
             sparse: bool = False, selector: int = 0, saturate: bool = False,
             negate_a: bool = False, negate_b: bool = False, transpose_a: bool = False,
             transpose_b: bool = False, max_shift: int = 0, scale_type: str | None = None,
             scale_a_id: int = 0, scale_b_id: int = 0, k96: bool = False) -> InstrDescriptor:
        """Build from named values (M and N as numbers, types by PTX name). Raises
        DescriptorError for a value the descriptor cannot express; legality is `validate()`'s."""
        what = "instruction descriptor"
        _check_kind(kind)
        codes = KIND_ABTYPE_CODES[kind]
        for field, t in (("atype", atype), ("btype", btype)):
            if t not in codes:
                raise DescriptorError(field, t, f".kind::{kind} takes {', '.join(codes)} "
                                      f"({idesc_layout(kind)[2]})", what)
        m_shift = 7 if kind in BLOCK_SCALED_KINDS else 4
        if m <= 0 or m % (1 << m_shift):
            raise DescriptorError("m", m, f"M is stored as M >> {m_shift}, so it must be a positive "
                                  f"multiple of {1 << m_shift} ({idesc_layout(kind)[2]})", what)
        if n <= 0 or n % 8:
            raise DescriptorError("n", n, "N is stored as N >> 3, so it must be a positive multiple "
                                  "of 8 (Table 42/43/44, bits 17-22)", what)
        common = dict(kind=kind, sparsity=int(sparse), atype=codes[atype], btype=codes[btype],
                      negate_a=int(negate_a), negate_b=int(negate_b), transpose_a=int(transpose_a),
                      transpose_b=int(transpose_b), n_dim=n >> 3, m_dim=m >> m_shift)
        if kind in BLOCK_SCALED_KINDS:
            if dtype != "f32":
                raise DescriptorError("dtype", dtype, f".kind::{kind} always accumulates in f32 "
                                      "(Table 39); the descriptor has no dtype field", what)
            if selector:
                raise DescriptorError("sparsity_selector", selector, f"bits 0-1 are reserved for "
                                      f".kind::{kind} ({idesc_layout(kind)[2]}); the selector is "
                                      "assumed 0 (9.7.16.10.8.4.5)", what)
            if saturate or max_shift:
                raise DescriptorError("saturate" if saturate else "max_shift", 1, f".kind::{kind} "
                                      f"has no such field ({idesc_layout(kind)[2]})", what)
            scale_type = scale_type or "ue8m0"
            if scale_type not in SCALE_TYPE_CODES:
                raise DescriptorError("scale_type", scale_type, "one of ue8m0, ue4m3 (Table 43/44)",
                                      what)
            if k96 and kind == "mxf8f6f4":
                raise DescriptorError("k_dim", 1, "K=96 exists only for .kind::mxf4 / mxf4nvf4 "
                                      "(Table 44)", what)
            return cls(**common, scale_type=SCALE_TYPE_CODES[scale_type], scale_a_id=scale_a_id,
                       scale_b_id=scale_b_id, k_dim=int(k96) if kind != "mxf8f6f4" else None)
        if dtype not in DTYPE_CODES:
            raise DescriptorError("dtype", dtype, "one of f16, f32, s32 (Table 42)", what)
        if scale_type is not None or scale_a_id or scale_b_id or k96:
            raise DescriptorError("kind", kind, "scale type / scale IDs / K=96 exist only for "
                                  "block-scaled kinds (Tables 43, 44)", what)
        return cls(**common, sparsity_selector=selector, saturate=int(saturate),
                   dtype=DTYPE_CODES[dtype], max_shift=max_shift)

    # ---- decoded values ----------------------------------------------------------------------
    @property
    def block_scaled(self) -> bool:
        return self.kind in BLOCK_SCALED_KINDS

    @property
    def m(self) -> int:
        return self.m_dim << (7 if self.block_scaled else 4)

    @property
    def n(self) -> int:
        return self.n_dim << 3

    @property
    def sparse(self) -> bool:
        return bool(self.sparsity)

    @property
    def k96(self) -> bool:
        return bool(self.k_dim)

    @property
    def k(self) -> int:
        return mma_k(self.kind, self.sparse, self.k96)

    @property
    def dtype_name(self) -> str | None:
        if self.block_scaled:
            return "f32"
        return _name_of(DTYPE_CODES, self.dtype)

    @property
    def atype_name(self) -> str | None:
        return _name_of(KIND_ABTYPE_CODES[self.kind], self.atype)

    @property
    def btype_name(self) -> str | None:
        return _name_of(KIND_ABTYPE_CODES[self.kind], self.btype)

    @property
    def scale_type_name(self) -> str | None:
        return None if self.scale_type is None else _name_of(SCALE_TYPE_CODES, self.scale_type)

    @property
    def selector(self) -> int:
        return self.sparsity_selector or 0

    def fields_table(self) -> list[tuple[str, str, int, str]]:
        """(bits, spec name, raw value, meaning) for every field, reserved bits included."""
        layout, reserved_mask, table = idesc_layout(self.kind)
        meaning = {
            "sparsity_selector": str(self.selector),
            "sparsity": "sparse" if self.sparsity else "dense",
            "saturate": "saturate" if self.saturate else "no saturate",
            "dtype": self.dtype_name or "invalid",
            "atype": self.atype_name or "invalid",
            "btype": self.btype_name or "invalid",
            "negate_a": "negate" if self.negate_a else "no negate",
            "negate_b": "negate" if self.negate_b else "no negate",
            "transpose_a": "transpose (M-major)" if self.transpose_a else "no transpose (K-major)",
            "transpose_b": "transpose (N-major)" if self.transpose_b else "no transpose (K-major)",
            "n_dim": f"N = {self.n}",
            "m_dim": f"M = {self.m}",
            "max_shift": "no shift" if not self.max_shift else
                         f"maximum shift of {MAX_SHIFT_VALUES.get(self.max_shift)}",
            "scale_b_id": str(self.scale_b_id),
            "scale_a_id": str(self.scale_a_id),
            "scale_type": self.scale_type_name or "invalid",
            "k_dim": "dense K=96" if self.k_dim else "dense K=64 / sparse K=128",
        }
        rows = [(f.bits, f.spec, getattr(self, f.name), meaning[f.name]) for f in layout]
        rows.append((_bit_list(reserved_mask), f"Reserved ({table})", self.reserved,
                     "0" if not self.reserved else f"bits {_bit_list(self.reserved)} set"))
        return rows

    # ---- validation -----------------------------------------------------------------------
    def issues(self, *, sparse: bool | None = None, ws: bool = False, cta_group: int = 1,
               target: str = "sm_100a", scale_vec: str | None = None) -> list[DescriptorError]:
        """Every reason this descriptor is illegal for an instruction with these qualifiers.

        `sparse`: whether the instruction is tcgen05.mma.sp (None: take the descriptor's bit);
        `ws`: .ws; `cta_group`: 1 or 2; `target`: the .target; `scale_vec`: the
        .scale_vectorsize qualifier ("1X", "2X", "4X", "block16", "block32") or None.
        """
        what = "instruction descriptor"
        kind = self.kind
        layout, reserved_mask, table = idesc_layout(kind)
        out: list[DescriptorError] = []

        def err(field, value, why):
            out.append(DescriptorError(field, value, why, what))

        targets.check_target(target)
        if cta_group not in (1, 2):
            err("cta_group", cta_group, ".cta_group is ::1 or ::2 (9.7.16.10.9.1)")
            return out
        if not targets.supports(target, "tcgen05"):
            err("target", target, f"tcgen05 needs one of "
                f"{', '.join(sorted(targets.FEATURES['tcgen05'].targets))}")
        if kind == "i8" and not targets.supports(target, "tcgen05.mma.kind::i8"):
            err("kind", kind, f".kind::i8 is not supported on {target} (9.7.16.10.9.1 Target ISA "
                "Notes: sm_100a, sm_101a, sm_110a only)")
        if self.reserved:
            extra = ""
            if self.block_scaled and self.reserved & (0b111 << 24):
                extra = (f"; bits 24-26 would be the low bits of M >> 4 in the Table 42 layout "
                         f"(M = {((self.reserved >> 24) & 0x1F | self.m_dim << 3) << 4}), but "
                         f".kind::{kind} stores M >> 7 in bits 27-28 and allows only M=128/256")
            if self.block_scaled and self.reserved & 0b11:
                extra += ("; bits 0-1 (sparsity selector in Table 42) are reserved: the selector "
                          f"is assumed 0 for .kind::{kind} (9.7.16.10.8.4.5)")
            err("reserved", self.reserved, f"reserved bits {_bit_list(self.reserved)} must be 0 "
                f"({table}){extra}")

        # types (Table 42/43/44 codes; Table 39 combinations)
        codes = KIND_ABTYPE_CODES[kind]
        a, b = self.atype_name, self.btype_name
        for field, code, name in (("atype", self.atype, a), ("btype", self.btype, b)):
            if name is None:
                err(field, code, f"not a .kind::{kind} type code; valid: "
                    + ", ".join(f"{t.upper()} = {c}" for t, c in codes.items()) + f" ({table})")
        d = self.dtype_name
        if not self.block_scaled:
            if d is None or d not in KIND_DTYPES[kind]:
                err("dtype", self.dtype, f".kind::{kind} takes dtype "
                    + ", ".join(f"{t.upper()} = {DTYPE_CODES[t]}" for t in KIND_DTYPES[kind])
                    + " (Table 42)")
            if kind == "f16" and d == "f16" and (a == "bf16" or b == "bf16"):
                err("atype" if a == "bf16" else "btype", 1, ".kind::f16 with dtype F16 takes only "
                    "F16 inputs; BF16 needs dtype F32 (Table 39)")
            if kind == "f16" and a and b and a != b:
                err("btype", self.btype, ".kind::f16 takes A and B of one type, both F16 or both "
                    "BF16 (Table 39 lists one atype/btype per row)")
            if self.saturate and kind != "i8":
                err("saturate", self.saturate, f"Saturate is for integer types only; .kind::{kind} "
                    "must leave it 0 (Table 42)")
            if self.max_shift and not ws:
                err("max_shift", self.max_shift, "Maximum shift applies to B-matrix reuse in .ws; "
                    "without .ws it must be 0 (Table 42)")
        else:
            st = self.scale_type_name
            if st not in KIND_SCALE_TYPES[kind]:
                err("scale_type", self.scale_type, f".kind::{kind} takes Scale Matrix Type "
                    + " or ".join(f"{t.upper()} = {SCALE_TYPE_CODES[t]}" for t in KIND_SCALE_TYPES[kind])
                    + f" ({table})")

        # negate / transpose (Table 49, 50, 52)
        if kind == "i8":
            for field in ("negate_a", "negate_b"):
                if getattr(self, field):
                    err(field, 1, ".kind::i8 does not support negate (Table 49; Table 42 "
                        "'No Negate = 0')")
        for field, t in (("transpose_a", a), ("transpose_b", b)):
            if not getattr(self, field):
                continue
            if kind in ("mxf4", "mxf4nvf4"):
                err(field, 1, f".kind::{kind} does not support transpose (Table 49; Table 44 "
                    "'No Transpose = 0')")
            elif t in SUB_BYTE_TYPES:
                err(field, 1, f"{t.upper()} is a {6 if t != 'e2m1' else 4}-bit type and only "
                    "8-, 16- and 32-bit types can be MN-major (transposed) (Table 52)")
        if self.transpose_b and b in EIGHT_BIT_TYPES:
            ok = range(16, 257, 16) if cta_group == 1 else range(32, 257, 32)
            if self.n not in ok:
                err("n_dim", self.n_dim, f"8-bit transpose B with .cta_group::{cta_group} needs "
                    f"N in {ok.start}..{ok.stop - 1} step {ok.step} (Table 50), got N = {self.n}")

        # sparsity
        if sparse is not None and bool(sparse) != self.sparse:
            err("sparsity", self.sparsity, "the instruction is tcgen05.mma"
                + (".sp but the descriptor says Dense = 0" if sparse else
                   " (dense) but the descriptor says Sparse = 1") + f" ({table}, bit 2)")
        is_sparse = self.sparse if sparse is None else bool(sparse)
        if not self.block_scaled and self.sparsity_selector:
            if not self.sparse:
                err("sparsity_selector", self.sparsity_selector, "the sparsity selector is used "
                    "only if Sparsity is enabled (Table 42); a dense descriptor must leave bits "
                    "0-1 at 0")
            elif kind in ("i8", "f8f6f4"):
                err("sparsity_selector", self.sparsity_selector, f"must be 0 for .kind::{kind} "
                    "(9.7.16.10.8.4.5 / 9.7.16.10.8.4.6)")
        if is_sparse and kind in ("mxf4", "mxf4nvf4") and not targets.supports(
                target, "tcgen05.mma.sp.kind::mxf4"):
            err("sparsity", 1, f"tcgen05.mma.sp .kind::{kind} is not supported on {target} "
                "(9.7.16.10.9.2 Target ISA Notes)")

        # scale factor IDs (Tables 43, 44; 9.7.16.10.7.2 / .3)
        if self.block_scaled:
            out.extend(self._scale_issues(scale_vec))

        # shape (Table 39), .ws
        if ws and cta_group == 2:
            err("cta_group", 2, ".ws with .cta_group::2 is Invalid (Table 39)")
        elif ws and self.block_scaled:
            err("kind", kind, f".kind::{kind} has no .ws form (Table 39)")
        else:
            out.extend(shape_issues(kind, self.m, self.n, sparse=is_sparse, ws=ws,
                                    cta_group=cta_group, k96=self.k96, target=target))
        return out

    def _scale_issues(self, scale_vec: str | None) -> list[DescriptorError]:
        kind, what = self.kind, "instruction descriptor"
        out = []
        vec = _normalize_scale_vec(kind, scale_vec, self.k96)
        if vec is not None and vec not in _SCALE_VEC_KINDS.get(kind, ()):
            out.append(DescriptorError("scale_vec", scale_vec, f".kind::{kind} takes "
                                       f"{', '.join(_SCALE_VEC_KINDS[kind])} (Table 54, 55)", what))
            return out
        if vec is not None and self.scale_type_name == "ue4m3" and vec not in ("4X", "6X"):
            out.append(DescriptorError("scale_type", 0, "UE4M3 scales need .scale_vec::4X / "
                                       ".block16 (Table 55)", what))
        if kind == "mxf8f6f4":
            allowed, rule = (0, 1, 2, 3), "0-3 (Table 43)"
        elif vec == "4X":
            allowed, rule = (0,), "0 with .scale_vec::4X / .block16 (9.7.16.10.7.2.3)"
        elif vec == "3X":
            allowed, rule = (0, 1, 2, 3), "0-3 with .block32 and K=96 (9.7.16.10.7.2.4)"
        else:
            allowed, rule = (0, 2), "0 or 2 (Table 44)"
        for field in ("scale_a_id", "scale_b_id"):
            v = getattr(self, field)
            if v not in allowed:
                out.append(DescriptorError(field, v, f"Scale Factor Data ID must be {rule}", what))
        return out

    def validate(self, **qualifiers) -> InstrDescriptor:
        """Raise the first issue (see `issues` for the qualifiers); return self when legal."""
        found = self.issues(**qualifiers)
        if found:
            raise found[0]
        return self

    def to_json(self, **qualifiers) -> dict:
        found = self.issues(**qualifiers)
        d = {
            "kind": self.kind, "m": self.m, "n": self.n, "k": self.k,
            "dtype": self.dtype_name, "atype": self.atype_name, "btype": self.btype_name,
            "sparse": self.sparse, "selector": self.selector,
            "negate_a": bool(self.negate_a), "negate_b": bool(self.negate_b),
            "transpose_a": bool(self.transpose_a), "transpose_b": bool(self.transpose_b),
        }
        if self.block_scaled:
            d.update(scale_type=self.scale_type_name, scale_a_id=self.scale_a_id,
                     scale_b_id=self.scale_b_id)
            if self.k_dim is not None:
                d["k96"] = self.k96
        else:
            d.update(saturate=bool(self.saturate), max_shift=self.max_shift)
        d["reserved"] = self.reserved
        d["fields"] = {f.name: getattr(self, f.name) for f in idesc_layout(self.kind)[0]}
        d["value"] = f"0x{self.encode():08x}"
        d["valid"] = not found
        d["errors"] = [str(e) for e in found]
        return d


_SCALE_VEC_KINDS = {"mxf8f6f4": ("1X",), "mxf4": ("2X", "3X"), "mxf4nvf4": ("2X", "4X", "3X", "6X")}


def _normalize_scale_vec(kind: str, scale_vec: str | None, k96: bool) -> str | None:
    """.blockN aliases to .scale_vec::NX (9.7.16.10.9.1); K=96 block32/16 act as 3X/6X (Table 54)."""
    if scale_vec is None:
        return None
    s = scale_vec.removeprefix(".").removeprefix("scale_vec::")
    if s == "block32":
        return "1X" if kind == "mxf8f6f4" else ("3X" if k96 else "2X")
    if s == "block16":
        return "6X" if k96 else "4X"
    if s in ("1X", "2X", "4X"):
        return s
    raise DescriptorError("scale_vec", scale_vec, "one of 1X, 2X, 4X, block16, block32 "
                          "(9.7.16.10.9.1)", "instruction descriptor")


# --------------------------------------------------------------------------------------------
# Shared-memory descriptor (Tables 40, 41)
# --------------------------------------------------------------------------------------------
# Swizzling mode codes, bits 61-63 (Table 40); 3, 5, 7 are invalid.
SWIZZLE_CODES: dict[str, int] = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}
SWIZZLE_SPEC_NAMES = {"none": "No swizzling", "128B_base32B": "128-Byte with 32B atomic swizzling",
                      "128B": "128-Byte swizzling", "64B": "64-Byte swizzling",
                      "32B": "32-Byte swizzling"}
# Table 41: where the repeating pattern starts when the base offset is 0.
SWIZZLE_PATTERN_BYTES: dict[str, int] = {"128B": 1024, "64B": 512, "32B": 256}

_SMEM_FIELDS = (
    BitField("start_address", 0, 14, "Matrix start address (>> 4)"),
    BitField("lbo", 16, 14, "Leading dimension byte offset / absolute address (>> 4)"),
    BitField("sbo", 32, 14, "Stride dimension byte offset (>> 4)"),
    BitField("fixed_46", 46, 3, "Fixed constant value of 0b001"),
    BitField("base_offset", 49, 3, "Matrix base offset"),
    BitField("lbo_mode", 52, 1, "Leading dimension stride mode (0 relative, 1 absolute)"),
    BitField("fixed_53", 53, 8, "Fixed constant value of 0"),
    BitField("swizzle", 61, 3, "Swizzling mode"),
)
_SMEM_RESERVED = _reserved_mask(_SMEM_FIELDS, 64)      # bits 14-15, 30-31


def matrix_descriptor_encode(x: int) -> int:
    """Table 40: matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4."""
    return (x & 0x3FFFF) >> 4


class _Descriptor64:
    """encode / decode shared by the 64-bit descriptors: named bit-fields (`_FIELDS`) plus the
    reserved bits (`_RESERVED`), which decode keeps so that any value round-trips."""
    _FIELDS: tuple[BitField, ...] = ()
    _RESERVED = 0
    _NAME = ""
    _RESERVED_WHY = ""

    def encode(self) -> int:
        if self.reserved & ~self._RESERVED:
            raise DescriptorError("reserved", self.reserved, self._RESERVED_WHY, self._NAME)
        return _pack(self, self._FIELDS, self._NAME) | self.reserved

    @classmethod
    def decode(cls, value: int):
        value = int(value)
        if not 0 <= value < 1 << 64:
            raise DescriptorError("desc", value, f"a {cls._NAME} is a 64-bit value", cls._NAME)
        return cls(reserved=value & cls._RESERVED, **{f.name: f.get(value) for f in cls._FIELDS})


@dataclass(frozen=True)
class SmemDescriptor(_Descriptor64):
    """A shared-memory matrix descriptor (Table 40), raw fields (addresses and offsets >> 4)."""
    start_address: int = 0
    lbo: int = 0
    sbo: int = 0
    fixed_46: int = 0b001
    base_offset: int = 0
    lbo_mode: int = 0
    fixed_53: int = 0
    swizzle: int = 0
    reserved: int = 0

    _FIELDS, _RESERVED, _NAME = _SMEM_FIELDS, _SMEM_RESERVED, "shared memory descriptor"
    _RESERVED_WHY = "reserved bits of Table 40 are 14-15 and 30-31"

    @classmethod
    def make(cls, *, start_address: int, lbo: int = 16, sbo: int = 0, swizzle: str = "none",
             base_offset: int = 0, lbo_mode: str = "relative") -> SmemDescriptor:
        """From byte values. Start address, LBO and SBO must be 16-byte aligned (9.7.16.4.1) and
        below 2^18 (matrix-descriptor-encode keeps 18 bits)."""
        what = "shared memory descriptor"
        for field, v in (("start_address", start_address), ("lbo", lbo), ("sbo", sbo)):
            if v % 16:
                raise DescriptorError(field, v, "must be 16-byte aligned (9.7.16.4.1)", what)
            if not 0 <= v <= 0x3FFF0:
                raise DescriptorError(field, v, "matrix-descriptor-encode keeps address bits 4-17, "
                                      "so the value must be in 0..0x3fff0 (Table 40)", what)
        if swizzle not in SWIZZLE_CODES:
            raise DescriptorError("swizzle", swizzle, f"one of {', '.join(SWIZZLE_CODES)} "
                                  "(Table 40)", what)
        if lbo_mode not in ("relative", "absolute"):
            raise DescriptorError("lbo_mode", lbo_mode, "relative or absolute (Table 40, bit 52)",
                                  what)
        if not 0 <= base_offset <= 7:
            raise DescriptorError("base_offset", base_offset, "a 3-bit field (Table 40, bits 49-51)",
                                  what)
        return cls(start_address=matrix_descriptor_encode(start_address),
                   lbo=matrix_descriptor_encode(lbo), sbo=matrix_descriptor_encode(sbo),
                   base_offset=base_offset, lbo_mode=int(lbo_mode == "absolute"),
                   swizzle=SWIZZLE_CODES[swizzle])

    # ---- decoded values ------------------------------------------------------------------------
    @property
    def start_bytes(self) -> int:
        return self.start_address << 4

    @property
    def lbo_bytes(self) -> int:
        return self.lbo << 4

    @property
    def sbo_bytes(self) -> int:
        return self.sbo << 4

    @property
    def swizzle_name(self) -> str | None:
        return _name_of(SWIZZLE_CODES, self.swizzle)

    @property
    def lbo_mode_name(self) -> str:
        return "absolute" if self.lbo_mode else "relative"

    def advance(self, nbytes: int) -> SmemDescriptor:
        """The descriptor of the matrix `nbytes` further (CuTe's DescriptorIterator: adds
        nbytes >> 4 to the start-address field, e.g. to step along K)."""
        if nbytes % 16:
            raise DescriptorError("start_address", nbytes, "advance by a multiple of 16 bytes",
                                  "shared memory descriptor")
        return replace(self, start_address=(self.start_address + (nbytes >> 4)) & 0x3FFF)

    def fields_table(self) -> list[tuple[str, str, int, str]]:
        meaning = {
            "start_address": f"0x{self.start_bytes:05x} bytes",
            "lbo": (f"0x{self.lbo_bytes:05x} (absolute address)" if self.lbo_mode else
                    f"{self.lbo_bytes} bytes"),
            "sbo": f"{self.sbo_bytes} bytes",
            "fixed_46": "ok" if self.fixed_46 == 1 else "must be 0b001",
            "base_offset": str(self.base_offset),
            "lbo_mode": self.lbo_mode_name + (" offset" if not self.lbo_mode else " address"),
            "fixed_53": "ok" if self.fixed_53 == 0 else "must be 0",
            "swizzle": SWIZZLE_SPEC_NAMES.get(self.swizzle_name or "", "invalid (3, 5, 7)"),
        }
        rows = [(f.bits, f.spec, getattr(self, f.name), meaning[f.name]) for f in _SMEM_FIELDS]
        rows.append((_bit_list(_SMEM_RESERVED), "Unused (Table 40 lists no field)", self.reserved,
                     "0" if not self.reserved else f"bits {_bit_list(self.reserved)} set"))
        return rows

    # ---- validation ---------------------------------------------------------------------------
    def issues(self, *, target: str = "sm_100a", major: str | None = None) -> list[DescriptorError]:
        """Every reason this descriptor is illegal. `major` ("K" / "MN"), when known, checks the
        absolute-LBO restrictions that depend on the instruction descriptor's transpose bits."""
        what = "shared memory descriptor"
        out: list[DescriptorError] = []

        def err(field, value, why):
            out.append(DescriptorError(field, value, why, what))

        targets.check_target(target)
        if self.fixed_46 != 0b001:
            err("fixed_46", self.fixed_46, "bits 46-48 must hold the fixed constant 0b001 (Table 40)")
        if self.fixed_53:
            err("fixed_53", self.fixed_53, "bits 53-60 must hold the fixed constant 0 (Table 40)")
        if self.reserved:
            err("reserved", self.reserved, f"bits {_bit_list(self.reserved)} are outside every "
                "Table 40 field and should be 0")
        sw = self.swizzle_name
        if sw is None:
            err("swizzle", self.swizzle, "swizzling-mode values 3, 5 and 7 are invalid (Table 40)")
        if self.lbo_mode:
            src = "9.7.16.3.1.2.1"
            if not targets.supports(target, "smem_desc.lbo_absolute"):
                err("lbo_mode", 1, f"the absolute-address leading-dimension mode needs sm_103a, "
                    f"not {target} (9.7.16.4.1.1)")
            if sw is not None and sw != "128B":
                err("lbo_mode", 1, f"absolute-address mode supports only 128B swizzling with 16B "
                    f"atomicity, not {sw} ({src})")
            if self.base_offset:
                err("base_offset", self.base_offset, f"must be 0 in absolute-address mode ({src})")
            if major == "MN":
                err("lbo_mode", 1, "absolute-address mode supports only K-major: the transpose "
                    f"bits of the instruction descriptor must be 0 ({src})")
        return out

    def validate(self, **kw) -> SmemDescriptor:
        found = self.issues(**kw)
        if found:
            raise found[0]
        return self

    def to_json(self, **kw) -> dict:
        found = self.issues(**kw)
        return {
            "start_address": self.start_bytes, "lbo": self.lbo_bytes, "sbo": self.sbo_bytes,
            "base_offset": self.base_offset, "lbo_mode": self.lbo_mode_name,
            "swizzle": self.swizzle_name or f"invalid({self.swizzle})",
            "fixed_46": self.fixed_46, "fixed_53": self.fixed_53, "reserved": self.reserved,
            "value": f"0x{self.encode():016x}", "valid": not found,
            "errors": [str(e) for e in found],
        }


def base_offset_for(pattern_start: int, swizzle: str) -> int:
    """Table 41 and the formula below it: 0 when the swizzle pattern starts on its boundary
    (1024 / 512 / 256 bytes), else (pattern start addr >> 7) & 7."""
    size = SWIZZLE_PATTERN_BYTES.get(swizzle)
    if size is None or pattern_start % size == 0:
        return 0
    return (pattern_start >> 7) & 7


# --------------------------------------------------------------------------------------------
# Zero-column mask descriptor (Table 45)
# --------------------------------------------------------------------------------------------
_ZCOL_FIELDS = (
    BitField("sc0", 0, 8, "Start Count 0 (sc0)"),
    BitField("sc1", 8, 8, "Start Count 1 (sc1)"),
    BitField("sc2", 16, 8, "Start Count 2 (sc2)"),
    BitField("sc3", 24, 8, "Start Count 3 (sc3)"),
    BitField("fs0", 32, 1, "First Span 0 (fs0)"),
    BitField("fs1", 33, 1, "First Span 1 (fs1)"),
    BitField("fs2", 34, 1, "First Span 2 (fs2)"),
    BitField("fs3", 35, 1, "First Span 3 (fs3)"),
    BitField("non_zero_mask", 39, 1, "Non-Zero Mask"),
    BitField("skip_span", 40, 8, "Skip Span"),
    BitField("use_span", 48, 8, "Use Span"),
    BitField("column_shift", 56, 6, "Column Shift"),
)
_ZCOL_RESERVED = _reserved_mask(_ZCOL_FIELDS, 64)      # bits 36-38, 62-63
# Table 45, second table: the mask is made of 1, 2 or 4 sub-masks depending on M.
ZCOL_SUBMASKS: dict[int, int] = {128: 1, 64: 2, 32: 4}


@dataclass(frozen=True)
class ZeroColumnMaskDescriptor(_Descriptor64):
    """Zero-column mask descriptor (Table 45), raw fields.

    Mask semantics, fixed by the spec's four examples (and CuTe's MaskAndShiftB comments): bit 1
    zeroes a B column. Each sub-mask repeats (use_span+1) used columns (0) and (skip_span+1)
    zeroed columns (1); fs_i = 0 starts with the used span, 1 with the zeroed span; sc_i columns
    of that first span are skipped (the pattern starts sc_i columns into it). Table 45's own
    descriptions of Skip Span / Use Span are swapped relative to the examples; see
    docs/descriptors.md.
    """
    sc0: int = 0
    sc1: int = 0
    sc2: int = 0
    sc3: int = 0
    fs0: int = 0
    fs1: int = 0
    fs2: int = 0
    fs3: int = 0
    non_zero_mask: int = 0
    skip_span: int = 0
    use_span: int = 0
    column_shift: int = 0
    reserved: int = 0

    _FIELDS, _RESERVED, _NAME = _ZCOL_FIELDS, _ZCOL_RESERVED, "zero-column mask descriptor"
    _RESERVED_WHY = "reserved bits of Table 45 are 36-38 and 62-63"

    @classmethod
    def make(cls, *, start_count=(0, 0, 0, 0), first_span=(0, 0, 0, 0), non_zero_mask: bool = True,
             skip: int = 1, use: int = 1, shift: int = 0) -> ZeroColumnMaskDescriptor:
        """From counts: `skip` zeroed columns and `use` used columns per period (>= 1 each)."""
        what = "zero-column mask descriptor"
        for field, v in (("skip_span", skip), ("use_span", use)):
            if not 1 <= v <= 256:
                raise DescriptorError(field, v, "a span counts 1..256 columns (stored minus 1 in 8 "
                                      "bits, Table 45)", what)
        sc, fs = tuple(start_count), tuple(first_span)
        if len(sc) != 4 or len(fs) != 4:
            raise DescriptorError("start_count", sc, "give four start counts and four first "
                                  "spans (sub-masks 0-3)", what)
        return cls(*sc, *map(int, fs), non_zero_mask=int(non_zero_mask), skip_span=skip - 1,
                   use_span=use - 1, column_shift=shift)

    @property
    def start_counts(self) -> tuple[int, int, int, int]:
        return (self.sc0, self.sc1, self.sc2, self.sc3)

    @property
    def first_spans(self) -> tuple[int, int, int, int]:
        return (self.fs0, self.fs1, self.fs2, self.fs3)

    def fields_table(self) -> list[tuple[str, str, int, str]]:
        meaning = {f"sc{i}": f"skip {v} leading columns of sub-mask {i}"
                   for i, v in enumerate(self.start_counts)}
        meaning.update({f"fs{i}": ("starts with zeroed columns" if v else "starts with used columns")
                        for i, v in enumerate(self.first_spans)})
        meaning.update(non_zero_mask="generate the mask" if self.non_zero_mask else
                       "mask is all 0 (every column used)",
                       skip_span=f"{self.skip_span + 1} zeroed columns per period",
                       use_span=f"{self.use_span + 1} used columns per period",
                       column_shift=f"B columns start at {self.column_shift}")
        rows = [(f.bits, f.spec, getattr(self, f.name), meaning[f.name]) for f in _ZCOL_FIELDS]
        rows.append((_bit_list(_ZCOL_RESERVED), "Reserved (Table 45)", self.reserved,
                     "0" if not self.reserved else f"bits {_bit_list(self.reserved)} set"))
        return rows

    def issues(self, *, m: int = 128, n: int | None = None) -> list[DescriptorError]:
        what = "zero-column mask descriptor"
        out: list[DescriptorError] = []

        def err(field, value, why):
            out.append(DescriptorError(field, value, why, what))

        if m not in ZCOL_SUBMASKS:
            err("m", m, "the zero-column mask is defined for M = 128, 64, 32 (Table 45)")
            return out
        if self.reserved:
            err("reserved", self.reserved, f"reserved bits {_bit_list(self.reserved)} must be 0 "
                "(Table 45)")
        max_shift = 16 if m == 32 else 32
        if self.column_shift > max_shift:
            err("column_shift", self.column_shift, f"maximum shift amount is {max_shift} for "
                f"M = {m} (Table 45)")
        subs = ZCOL_SUBMASKS[m]
        if n is not None and (n <= 0 or n % subs):
            err("n", n, f"M = {m} splits the N-bit mask into {subs} sub-masks of N/{subs} bits "
                "(Table 45)")
        if self.non_zero_mask:
            for i in range(subs):
                first = (self.skip_span if self.first_spans[i] else self.use_span) + 1
                if self.start_counts[i] >= first:
                    err(f"sc{i}", self.start_counts[i], f"Start Count {i} skips columns of the "
                        f"first span, which holds only {first}; the spec does not define a start "
                        "count that reaches past it (Table 45)")
        return out

    def validate(self, **kw) -> ZeroColumnMaskDescriptor:
        found = self.issues(**kw)
        if found:
            raise found[0]
        return self

    def mask(self, m: int, n: int) -> np.ndarray:
        """The generated N-bit mask as a bool array of length N (True: column of B is zero)."""
        self.validate(m=m, n=n)
        if not self.non_zero_mask:
            return np.zeros(n, dtype=bool)
        subs = ZCOL_SUBMASKS[m]
        width = n // subs
        use, skip = self.use_span + 1, self.skip_span + 1
        period = use + skip
        j = np.arange(width)
        parts = []
        for i in range(subs):
            pos = (self.start_counts[i] + j) % period
            if self.first_spans[i]:        # zeroed span first
                parts.append(pos < skip)
            else:                           # used span first
                parts.append(pos >= use)
        return np.concatenate(parts)

    def mask_int(self, m: int, n: int) -> int:
        """The mask as an integer, column 0 in the least significant bit."""
        bits = self.mask(m, n)
        return int(sum(1 << int(i) for i in np.flatnonzero(bits)))

    def submask_ints(self, m: int, n: int) -> list[int]:
        subs = ZCOL_SUBMASKS[m]
        width = n // subs
        full = self.mask_int(m, n)
        return [(full >> (i * width)) & ((1 << width) - 1) for i in range(subs)]

    def to_json(self, *, m: int = 128, n: int | None = None) -> dict:
        found = self.issues(m=m, n=n)
        d = {
            "start_count": list(self.start_counts), "first_span": list(self.first_spans),
            "non_zero_mask": bool(self.non_zero_mask), "skip_span": self.skip_span + 1,
            "use_span": self.use_span + 1, "column_shift": self.column_shift,
            "reserved": self.reserved, "value": f"0x{self.encode():016x}", "m": m, "n": n,
            "valid": not found, "errors": [str(e) for e in found],
        }
        if n is not None and not found:
            d["mask"] = hex(self.mask_int(m, n))
            d["submasks"] = [hex(v) for v in self.submask_ints(m, n)]
        return d


def descriptor_fields(cls) -> list[str]:
    """Names of the raw fields of a descriptor dataclass (for tests and tools)."""
    return [f.name for f in fields(cls)]

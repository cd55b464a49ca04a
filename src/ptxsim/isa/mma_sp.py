"""Warp-level sparse MMA: `mma.sp` / `mma.sp::ordered_metadata` (PTX ISA 9.7.14.6).

    D = decompress(A, e, f) * B + C         one m16n8kK product per warp

The pure part, `mma_sp(form, a, b, c, e, selector, ...)`, takes each operand as registers
(nregs, W, 32) uint32 and returns D the same way; `execute_mma_sp(instruction, regs, target)` is
the handler `ptxsim.execute` dispatches to. The arithmetic is `ptxsim.numerics.mma_sparse`: per
output row, one fused dot product of the stored elements with the B rows the metadata selects
(measured on the H200: tests/isa/test_mma_sp_hw.py replays the recorded results).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxsim.errors import (IllegalInstructionError, OperandError, PtxValidationError,
                           SparsityMetadataError, UndefinedBehavior)
from ptxsim.isa import mma_common
from ptxsim.isa import mma_fragments as frag
from ptxsim.isa.mma_common import Note
from ptxsim.isa.targets import Arch, AtLeast, Family, Req, parse_version
from ptxsim.isa.targets import parse_target as _parse_target

# ------------------------------------------------------------------------------ legality table
# 9.7.14.6.3 "Syntax" blocks, "PTX ISA Notes" and "Target ISA Notes": the one table of mma.sp,
# read by form_of / MmaSpForm here and by the front-end validator (ptx/legality/mma_sp.py).
# Register counts and sparsity-selector ranges are the fragments' (mma_fragments.py, replayed on
# the H200; `shape_facts`). Each row checked against ptxas 13.0 (tests/ptx/ptxas_corpus.json,
# tests/test_legality_consistency.py).
BOTH = (".sp", ".sp::ordered_metadata")
ORDERED = (".sp::ordered_metadata",)
F8 = ("e4m3", "e5m2")
F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")


# every mma.sp: PTX ISA 7.1, sm_80 or higher; .sp::ordered_metadata: PTX ISA 8.5
BASE_NOTE = Note("mma.sp", (7, 1), "sm_80")
ORDERED_NOTE = Note("mma.sp::ordered_metadata", (8, 5))
_F8_NOTE = Note(".e4m3/.e5m2 mma.sp", (8, 4), "sm_89")
# ".f16 dtype/ctype with .e4m3/.e5m2 requires sm_120": ptxas 13.0 takes it on sm_120a/f and
# sm_121a/f but rejects plain sm_120 / sm_121 ("not supported on .target 'sm_120'").
_F8_F16_NOTE = Note(".f16 dtype/ctype with .e4m3/.e5m2", (8, 7), "sm_120f")


def _kind_note(kind: str, target: str = "sm_120f") -> Note:
    # ".kind ... requires sm_120a and supported on sm_120f or higher in the same family from
    # PTX ISA version 8.8"; ".kind::mxf4nvf4 and .kind::mxf4 are supported on sm_120a, sm_121a"
    return Note(f".kind::{kind}", (8, 7), target)


@dataclass(frozen=True)
class Legal:
    family: str
    shapes: tuple[int, ...]                 # K of m16n8kK
    ab_types: tuple[str, ...]               # every atype x btype combination from this set
    accum: tuple[tuple[str, str], ...]      # (dtype, ctype)
    variants: tuple[str, ...]
    notes: tuple[Note, ...] = ()            # besides BASE_NOTE (and ORDERED_NOTE)
    kind: str | None = None
    satfinite: bool = False                 # .satfinite allowed
    scales: tuple[tuple[str, str], ...] = ()  # (stype, scale_vec) for .block_scale kinds

    @property
    def target(self) -> str:
        """The strictest Target ISA note of the row (a key of REQUIREMENTS)."""
        return next((n.target for n in reversed(self.notes) if n.target), BASE_NOTE.target)


LEGAL: tuple[Legal, ...] = (
    Legal("f16", (16, 32), ("f16",), (("f16", "f16"), ("f32", "f32")), BOTH),
    Legal("bf16", (16, 32), ("bf16",), (("f32", "f32"),), BOTH),
    Legal("tf32", (8, 16), ("tf32",), (("f32", "f32"),), BOTH),
    Legal("f8", (64,), F8, (("f32", "f32"),), BOTH, (_F8_NOTE,)),
    # f16 accumulators with .e4m3/.e5m2: sm_120 (Target ISA Notes); ptxas 13.0 takes them with
    # ::ordered_metadata only, and rejects the m16n8k32 shape the notes mention for mma.sp.
    Legal("f8", (64,), F8, (("f16", "f16"),), ORDERED, (_F8_NOTE, _F8_F16_NOTE)),
    Legal("f8f6f4", (64,), F8F6F4, (("f16", "f16"), ("f32", "f32")), ORDERED,
          (_kind_note("f8f6f4"),), kind="f8f6f4"),
    # 9.7.14.3 Table 36 (valid .kind / .stype / .scale_vec_size)
    Legal("mxf8f6f4", (64,), F8F6F4, (("f32", "f32"),), ORDERED, (_kind_note("mxf8f6f4"),),
          kind="mxf8f6f4", scales=(("ue8m0", "1X"),)),
    Legal("mxf4", (128,), ("e2m1",), (("f32", "f32"),), ORDERED, (_kind_note("mxf4", "sm_120a"),),
          kind="mxf4", scales=(("ue8m0", "2X"),)),
    Legal("mxf4nvf4", (128,), ("e2m1",), (("f32", "f32"),), ORDERED,
          (_kind_note("mxf4nvf4", "sm_120a"),), kind="mxf4nvf4",
          scales=(("ue8m0", "2X"), ("ue4m3", "4X"), ("ue8m0", "4X"))),
    Legal("i8", (32, 64), ("u8", "s8"), (("s32", "s32"),), BOTH, satfinite=True),
    Legal("i4", (64, 128), ("u4", "s4"), (("s32", "s32"),), BOTH, satfinite=True),
)
# .scale_vec_size left out (9.7.14.6.3): mxf4 means 2X, mxf8f6f4 1X; mxf4nvf4 must say it
DEFAULT_SCALE_VEC = {"mxf4": "2X", "mxf8f6f4": "1X"}
BLOCK_SCALED_KINDS = tuple(r.kind for r in LEGAL if r.scales)
# (kind, stype, scale_vec) -> its own PTX ISA note
SCALE_NOTES = {("mxf4nvf4", "ue8m0", "4X"): Note(".scale_vec::4X with .ue8m0", (9, 1))}

# "requires sm_120a and supported on sm_120f or higher in the same family"; mxf4 / mxf4nvf4
# only on sm_120a, sm_121a.
REQUIREMENTS: dict[str, Req] = {
    "sm_80": Req(AtLeast(80)),
    "sm_89": Req(AtLeast(89)),
    "sm_120f": Req(Arch("sm_120a"), Family("sm_120f")),
    "sm_120a": Req(Arch("sm_120a"), Arch("sm_121a")),
}


def notes_of(row: Legal, ordered: bool, stype: str | None = None,
             scale_vec: str | None = None) -> tuple[Note, ...]:
    """Every PTX ISA / Target ISA note that applies to a form of `row`, in the spec's order."""
    extra = SCALE_NOTES.get((row.kind, stype, scale_vec))
    return ((BASE_NOTE,) + ((ORDERED_NOTE,) if ordered else ()) + row.notes
            + ((extra,) if extra else ()))


def shape_facts(k: int, atype: str, kind: str | None = None) -> tuple[int, int, range]:
    """Registers per thread of A and B, and the legal sparsity selectors, of m16n8kK with A/B
    elements `atype` (from the fragment layouts, 9.7.14.6.1)."""
    f = MmaSpForm(k=k, dtype="f32", atype=atype, btype=atype, ctype="f32", kind=kind)
    return f.a.nregs, f.b.nregs, f.selectors


# numerics engine parameters (ptxsim.numerics.mma): arithmetic profile per compute capability,
# kind per family.
def arch_profile(cc: int) -> str:
    if cc < 89:
        return "sm_80"
    if cc < 90:
        return "sm_89"
    if cc < 100:
        return "sm_90"
    if cc < 120:
        return "sm_100"
    return "sm_120"


NUMERICS_KIND = {"f16": "f16", "bf16": "f16", "tf32": "tf32", "f8": "fp8_sync",
                 "f8f6f4": "f8f6f4", "mxf8f6f4": "mxf8f6f4", "mxf4": "mxf4",
                 "mxf4nvf4": "mxf4nvf4", "i8": "i8", "i4": "i8"}

# register width of one A/B element: f8f6f4 kinds keep every type in an 8-bit container
# (e2m1 in bits [5:2], e3m2/e2m3 in [5:0]); mxf4/mxf4nvf4 pack two e2m1 per byte.
ELEMENT_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "e3m2": 8, "e2m3": 8,
                "e2m1": 8, "u8": 8, "s8": 8, "u4": 4, "s4": 4}
ACCUM_BITS = {"f16": 16, "f32": 32, "s32": 32}
# container -> element bits (9.7.14.6.3 Description, f8f6f4 kinds)
CONTAINER_FIELD = {"e2m1": (2, 0xF), "e3m2": (0, 0x3F), "e2m3": (0, 0x3F)}

def parse_target(target: str) -> tuple[int, str]:
    """'sm_120a' -> (120, 'a'), through ptxsim.isa.targets (TargetError is an OperandError)."""
    t = _parse_target(target)
    return t.sm, t.suffix


# ------------------------------------------------------------------------------------- form
@dataclass(frozen=True)
class MmaSpForm:
    k: int
    dtype: str
    atype: str
    btype: str
    ctype: str
    ordered: bool = False
    satfinite: bool = False
    kind: str | None = None        # None, "f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4"
    stype: str | None = None
    scale_vec: str | None = None   # "1X", "2X", "4X"

    @property
    def shape(self) -> str:
        return f"m16n8k{self.k}"

    @property
    def variant(self) -> str:
        return ".sp::ordered_metadata" if self.ordered else ".sp"

    @property
    def legal(self) -> Legal:
        for row in LEGAL:
            if (self.kind == row.kind and self.k in row.shapes and self.atype in row.ab_types
                    and self.btype in row.ab_types and (self.dtype, self.ctype) in row.accum
                    and self.variant in row.variants and (row.satfinite or not self.satfinite)
                    and (not row.scales or (self.stype, self.scale_vec) in row.scales)
                    and (row.scales or self.stype is None)):
                return row
        raise PtxValidationError(
            f"mma{self.variant}.{self.shape}{'.satfinite' if self.satfinite else ''}"
            f"{'.kind::' + self.kind if self.kind else ''}.{self.dtype}.{self.atype}.{self.btype}"
            f".{self.ctype}{'.' + self.stype if self.stype else ''}: no such form in the "
            "mma.sp syntax (PTX ISA 9.7.14.6.3)")

    @property
    def family(self) -> str:
        return self.legal.family

    @property
    def pattern(self) -> str:
        """Sparsity granularity (9.7.14.6.1): 1:2 tf32; pair-wise 4:8 for 4-bit integers and the
        packed e2m1 of mxf4/mxf4nvf4; 2:4 otherwise."""
        if self.atype == "tf32":
            return "1:2"
        if self.atype in ("u4", "s4") or self.kind in ("mxf4", "mxf4nvf4"):
            return "4:8"
        return "2:4"

    @property
    def element_bits(self) -> int:
        if self.kind in ("mxf4", "mxf4nvf4"):
            return 4
        return ELEMENT_BITS[self.atype]

    @property
    def a(self) -> frag.Fragment:
        return frag.a_fragment(self.k, self.element_bits)

    @property
    def b(self) -> frag.Fragment:
        return frag.b_fragment(self.k, self.element_bits)

    @property
    def c(self) -> frag.Fragment:
        return frag.c_fragment(ACCUM_BITS[self.ctype])

    @property
    def d(self) -> frag.Fragment:
        return frag.c_fragment(ACCUM_BITS[self.dtype])

    @property
    def metadata(self) -> frag.MetadataLayout:
        return frag.metadata_layout(self.k, self.pattern, self.element_bits)

    @property
    def selectors(self) -> range:
        """Legal sparsity selectors: one thread 0..3, a thread pair 0..1, all four 0
        (9.7.14.6.1)."""
        return range(4 // self.metadata.threads)

    @property
    def scale_count(self) -> int:
        return {"1X": 1, "2X": 2, "4X": 4}[self.scale_vec] if self.scale_vec else 0

    @property
    def notes(self) -> tuple[Note, ...]:
        return notes_of(self.legal, self.ordered, self.stype, self.scale_vec)

    def check_target(self, target: str) -> None:
        for note in self.notes:
            if note.target and not REQUIREMENTS[note.target].ok(_parse_target(target)):
                raise PtxValidationError(
                    f"mma{self.variant}.{self.shape} with .{self.atype}/.{self.btype}"
                    f"{' kind::' + self.kind if self.kind else ''} and .{self.dtype} accumulators"
                    f" requires {note.target}, not {target} ({note.what}: PTX ISA 9.7.14.6.3 "
                    "Target ISA Notes)")

    def check_version(self, ptx_version) -> None:
        """PTX ISA notes of 9.7.14.6.3 (None: the newest version, nothing to check)."""
        if ptx_version is None:
            return
        v = parse_version(ptx_version)
        for note in self.notes:
            if v < note.since:
                raise PtxValidationError(
                    f"{note.what} requires PTX ISA {note.since[0]}.{note.since[1]} or later, "
                    f"not {v[0]}.{v[1]} (PTX ISA 9.7.14.6.3 PTX ISA Notes)")

    def check_selector(self, selector: int) -> None:
        # FACTS §5 (measured on an H200; tests/data/hardware/mma_sp captures m70/m75/m148/m153): m16n8k32
        # .f32.f16.f16.f32 with selector 2 or 3 assembles and then faults with an
        # illegal-instruction error. ptxas rejects the same selectors with .f16 accumulators.
        if self.atype == "f16" and self.k == 32 and self.dtype == "f32" and selector in (2, 3):
            raise IllegalInstructionError(
                f"mma{self.variant}.m16n8k32.f32.f16.f16.f32 with sparsity selector {selector}: "
                "ptxas accepts it but the GPU faults with an illegal-instruction error (only 0 "
                "and 1 are meaningful for this shape, PTX ISA 9.7.14.6.1)")
        if selector not in self.selectors:
            raise PtxValidationError(
                f"sparsity selector {selector} out of range for mma{self.variant}.{self.shape}"
                f".{self.atype}: expected {self.selectors.start}..{self.selectors.stop - 1} "
                "(PTX ISA 9.7.14.6.1; ptxas rejects it)")


# --------------------------------------------------------------------------- decompression
def _first(mask: np.ndarray):
    w, m, u = (int(x[0]) for x in np.nonzero(mask))
    return w, m, u


def dense_columns(form: MmaSpForm, idx: np.ndarray, selector: int, check: bool = True) -> np.ndarray:
    """Metadata index fields (W, 16, units) -> dense column of every compressed element
    (W, 16, K/2). Raises SparsityMetadataError for what 9.7.14.6.1 calls undefined, unless
    `check` is False: then 2:4 / 4:8 indices are used as they are (repeated or decreasing), as
    the H200 does; tf32 fields other than 0b0100 / 0b1110 are always refused."""
    lanes = form.metadata.source_lanes(selector)

    def fail(mask, why):
        w, m, u = _first(mask)
        chunk = u if form.pattern == "1:2" else u // 2
        raise SparsityMetadataError(f"mma{form.variant}.{form.shape}: {why}", warp=w,
                                    lane=int(lanes[m, u]), row=m, chunk=chunk)

    if form.pattern == "1:2":
        bad = (idx != 0b0100) & (idx != 0b1110)
        if bad.any():            # always: the H200's result for other fields is not modelled
            w, m, u = _first(bad)
            fail(bad, f"tf32 metadata field {int(idx[w, m, u]):#06b} is not 0b0100 or 0b1110")
        pos = (idx == 0b1110).astype(np.int64)  # 9.7.14.6.1: 0b0100 -> element 0, 0b1110 -> 1
        return 2 * np.arange(form.k // 2) + pos
    i0, i1 = idx[..., 0::2], idx[..., 1::2]
    if check and (i0 == i1).any():
        fail(np.repeat(i0 == i1, 2, axis=-1), "both indices of a chunk are equal (metadata "
             "0b0000/0b0101/0b1010/0b1111 is undefined)")
    if check and form.ordered and (i0 > i1).any():
        fail(np.repeat(i0 > i1, 2, axis=-1), "indices not increasing from the LSB, which "
             ".sp::ordered_metadata leaves undefined")
    units = np.arange(idx.shape[-1])
    if form.pattern == "2:4":
        return 4 * (units // 2) + idx.astype(np.int64)
    # 4:8 pair-wise: unit u is the pair of compressed elements 2u, 2u+1
    pair_col = 8 * (units // 2) + 2 * idx.astype(np.int64)          # (W, 16, K/4)
    return (pair_col[..., :, None] + np.arange(2)).reshape(idx.shape[:-1] + (form.k // 2,))


def decompress(form: MmaSpForm, a_c: np.ndarray, idx: np.ndarray, selector: int) -> np.ndarray:
    """Compressed A (W, 16, K/2) element bits + metadata fields -> dense A (W, 16, K)."""
    cols = dense_columns(form, idx, selector)
    dense = np.zeros(a_c.shape[:-1] + (form.k,), dtype=np.uint32)
    np.put_along_axis(dense, cols, a_c, axis=-1)
    return dense


def element_bits(form: MmaSpForm, t: str, x: np.ndarray) -> np.ndarray:
    """Strip the 8-bit containers of the f8f6f4 kinds down to the element's own bits."""
    if form.kind in ("f8f6f4", "mxf8f6f4") and t in CONTAINER_FIELD:
        shift, mask = CONTAINER_FIELD[t]
        return (x >> np.uint32(shift)) & np.uint32(mask)
    return x


# ------------------------------------------------------------------------- block scaling
def scale_matrices(form: MmaSpForm, sa: np.ndarray, sb: np.ndarray, byte_a: int, thread_a: int,
                   byte_b: int, thread_b: int) -> tuple[np.ndarray, np.ndarray]:
    """scale-a-data / scale-b-data (W, 32) + selectors -> scale_A (W, 16, n), scale_B (W, n, 8).

    9.7.14.3: thread-id-a picks the thread pair (lanes 4g+2t, 4g+2t+1) of each quad; CuTe's
    SM120 SFALayout puts row g in the first, row g+8 in the second. thread-id-b picks lane
    4g+t, which holds column g (SFBLayout). byte-id picks byte b (1X), bytes b, b+1 (2X), all
    four (4X); Table 37 lists the legal values."""
    n = form.scale_count
    legal = {1: ((0, 1, 2, 3), (0, 1), (0, 1, 2, 3), (0, 1, 2, 3)),
             2: ((0, 2), (0, 1), (0, 2), (0, 1, 2, 3)),
             4: ((0,), (0, 1), (0,), (0, 1, 2, 3))}[n]          # Table 37
    for name, v, ok in zip(("byte-id-a", "thread-id-a", "byte-id-b", "thread-id-b"),
                           (byte_a, thread_a, byte_b, thread_b), legal):
        if v not in ok:
            raise UndefinedBehavior(f"{name} = {v} with .scale_vec::{form.scale_vec}: legal values "
                                    f"are {list(ok)} (PTX ISA 9.7.14.3, Table 37)")
    g = np.arange(8)
    shifts = 8 * (np.arange(n) + (byte_a if n < 4 else 0))
    lanes_a = np.stack([4 * g + 2 * thread_a, 4 * g + 2 * thread_a + 1])      # (2, 8) -> rows
    scale_a = (sa[:, lanes_a.reshape(-1), None] >> shifts.astype(np.uint32)) & np.uint32(0xFF)
    shifts_b = 8 * (np.arange(n) + (byte_b if n < 4 else 0))
    scale_b = (sb[:, 4 * g + thread_b, None] >> shifts_b.astype(np.uint32)) & np.uint32(0xFF)
    return scale_a, np.swapaxes(scale_b, 1, 2)                   # rows: g then g+8 -> 0..15


# ----------------------------------------------------------------------------- semantics
def _numerics_mma_sparse():
    from ptxsim import numerics
    return numerics.mma_sparse


UNDEFINED_METADATA = ("raise", "gather")


def mma_sp(form: MmaSpForm, a: np.ndarray, b: np.ndarray, c: np.ndarray, e: np.ndarray,
           selector: int, *, target: str = "sm_90a", scale=None, engine=None,
           undefined_metadata: str = "raise") -> np.ndarray:
    """One mma.sp per warp. a, b, c: registers (nregs, W, 32) uint32; e: (W, 32) uint32.
    scale: (scale_a_data (W,32), scale_b_data (W,32), byte_a, thread_a, byte_b, thread_b) for the
    block-scaled kinds. Returns D registers (nregs_d, W, 32) uint32.

    The arithmetic (measured on an H200, tests/isa/test_mma_sp_hw.py): each output is ONE fused
    dot product over the K/2 stored elements of its row of A times the rows of B the metadata
    selects, D[m,n] = fdpa_k(A_c[m,k] * B[col(m,k), n]) + C[m,n], with the engine's block of L
    terms counted in stored (compressed) elements. Pruned positions are never multiplied (a NaN or
    Inf in a B row the metadata skips does not reach D), so this is not the dense MMA of the
    decompressed A whenever K/2 > L or B holds Inf/NaN. Computed by `numerics.mma_sparse` (engine:
    a replacement with its signature, for tests).

    undefined_metadata: "raise" (default) raises SparsityMetadataError where 9.7.14.6.1 says
    undefined; "gather" uses the indices as given, which is what the H200 did for the integer
    forms (docs/mma-sp.md).
    """
    if undefined_metadata not in UNDEFINED_METADATA:
        raise OperandError(f"undefined_metadata must be one of {UNDEFINED_METADATA}, got "
                           f"{undefined_metadata!r}")
    form.check_target(target)
    form.check_selector(selector)
    cc, _ = parse_target(target)
    idx = form.metadata.unpack(e, selector)
    cols = dense_columns(form, idx, selector, check=undefined_metadata == "raise")   # (W,16,K/2)
    a_c = element_bits(form, form.atype, form.a.unpack(a))                          # (W,16,K/2)
    b_full = element_bits(form, form.btype, form.b.unpack(b))                       # (W,K,8)
    c_full = form.c.unpack(c)                                                       # (W,16,8)
    half = a_c.shape[2]
    # B rows chosen for each (row m, stored element k): (W, 16, K/2, 8)
    b_sel = np.take_along_axis(b_full[:, None, :, :], cols[..., None], axis=2)
    kw = dict(arch=arch_profile(cc), kind=NUMERICS_KIND[form.family], atype=form.atype,
              btype=form.btype, ctype=form.ctype, dtype=form.dtype)
    if form.satfinite:
        kw["satfinite"] = True
    if form.kind in BLOCK_SCALED_KINDS:
        if scale is None:
            raise OperandError(f"mma.sp .kind::{form.kind} needs scale-a-data / scale-b-data")
        sa, sb = scale_matrices(form, *scale)                        # (W,16,n), (W,n,8)
        # 9.7.14.3: scale j covers dense chunk j of K/n elements = stored elements j*K/2n...
        kw.update(scale_a=sa, scale_b=sb, scale_type=form.stype, block=half // form.scale_count)
    d = (engine or _numerics_mma_sparse())(a_c, b_sel, c_full, **kw)                # (W,16,8)
    return form.d.pack(d)


# ------------------------------------------------------------------- instruction -> form
TYPES = set(mma_common.TYPES) - {"f64", "b1"}


def form_of(instruction) -> MmaSpForm:
    """The MmaSpForm of a parsed `mma.sp...` Instruction (qualifiers in any order), read through
    the shared qualifier parser (isa.mma_common.parse)."""
    q = mma_common.parse(instruction)
    if q.sparse is None:
        raise PtxValidationError(f"'{q.text}' is not a sparse mma: expected exactly one of .sp / "
                                 ".sp::ordered_metadata")
    for flag, ok in ((".sync", q.sync), (".aligned", q.aligned), (".row", "row" in q.layouts),
                     (".col", "col" in q.layouts)):
        if not ok:
            raise PtxValidationError(f"mma.sp requires the {flag} qualifier (PTX ISA 9.7.14.6.3)")
    if q.layouts != ("row", "col"):
        # the syntax is `.row.col` (A row-major, B column-major); ptxas 13.0 rejects .col.row
        raise PtxValidationError("mma.sp layout must be .row.col, not .col.row (PTX ISA 9.7.14.6.3)")
    if (q.m, q.n) != (16, 8):
        raise PtxValidationError("mma.sp needs one .m16n8kK shape qualifier")
    if q.bitop or q.popc or any(t not in TYPES for t in q.types):
        raise PtxValidationError(f"'{q.text}': no such form in the mma.sp syntax (PTX ISA 9.7.14.6.3)")
    types = list(q.types)
    kind = q.kind
    stype = None
    if q.block_scale:
        if len(types) != 5:
            raise PtxValidationError("mma.sp .block_scale needs .dtype.atype.btype.ctype.stype")
        stype = types.pop()
    if len(types) != 4:
        raise PtxValidationError(f"mma.sp needs the four types .dtype.atype.btype.ctype, got "
                                 f"{['.' + t for t in types]}")
    if q.block_scale != (kind in BLOCK_SCALED_KINDS):
        raise PtxValidationError(".block_scale goes with .kind::mxf8f6f4 / mxf4 / mxf4nvf4 only")
    scale_vec = q.scale_vec
    if q.block_scale and scale_vec is None:
        # 9.7.14.6.3: mxf4 defaults to 2X, mxf8f6f4 to 1X; mxf4nvf4 must say it
        scale_vec = DEFAULT_SCALE_VEC.get(kind)
        if scale_vec is None:
            raise PtxValidationError(".kind::mxf4nvf4 requires an explicit .scale_vec_size")
    form = MmaSpForm(k=q.k, dtype=types[0], atype=types[1], btype=types[2], ctype=types[3],
                     ordered=q.sparse == ".sp::ordered_metadata", satfinite=q.satfinite,
                     kind=kind, stype=stype, scale_vec=scale_vec)
    form.legal     # raises for a form outside the syntax table
    return form


def _names(operand, what: str) -> list[str]:
    elements = getattr(operand, "elements", None)
    if elements is None:
        raise OperandError(f"mma.sp operand {what} must be a vector of registers {{...}}, "
                           f"got '{operand}'")
    names = []
    for el in elements:
        name = getattr(el, "name", None)
        if name is None:
            raise OperandError(f"mma.sp operand {what}: '{el}' is not a register")
        names.append(name)
    return names


def _uniform(regs, operand, what: str) -> int:
    """An immediate, or a register whose value is the same in every lane of a warp (the
    byte-id / thread-id selectors, .u16); returns the single value for all warps."""
    if hasattr(operand, "value") and not hasattr(operand, "name"):
        return int(operand.value)
    v = regs.read(operand.name) & 0xFFFF
    if not (v == v.reshape(-1)[0]).all():
        raise UndefinedBehavior(f"mma.sp {what} register {operand.name} differs between threads; "
                                "ptxsim needs one value per instruction")
    return int(v.reshape(-1)[0])


def execute_mma_sp(instruction, regs, target: str) -> dict[str, np.ndarray]:
    """Handler for opcode 'mma' with .sp / .sp::ordered_metadata (see ptxsim.isa.registry)."""
    form = form_of(instruction)
    ops = instruction.operands
    nops = 10 if form.kind in BLOCK_SCALED_KINDS else 6
    if len(ops) != nops:
        raise OperandError(f"mma{form.variant}.{form.shape} takes {nops} operands "
                           f"(d, a, b, c, e, f{', scale operands' if nops == 10 else ''}), got {len(ops)}")
    d_names, a_names, b_names, c_names = (_names(o, w) for o, w in zip(ops[:4], "dabc"))
    for names, fr, what in ((d_names, form.d, "d"), (a_names, form.a, "a"), (b_names, form.b, "b"),
                            (c_names, form.c, "c")):
        if len(names) != fr.nregs:
            raise OperandError(f"mma{form.variant}.{form.shape}.{form.atype}: operand {what} "
                               f"needs {fr.nregs} registers, got {len(names)}")
    e_name = getattr(ops[4], "name", None)
    if e_name is None:
        raise OperandError(f"mma.sp metadata operand e must be a register, got '{ops[4]}'")
    if not hasattr(ops[5], "value") or hasattr(ops[5], "name"):
        raise OperandError(f"mma.sp sparsity selector f must be an integer constant, got '{ops[5]}'")
    selector = int(ops[5].value)
    stack = lambda names: np.stack([regs.read(n).reshape(-1, frag.LANES) for n in names])
    scale = None
    if nops == 10:
        sel = []
        for op, what in ((ops[7], "a"), (ops[9], "b")):
            els = getattr(op, "elements", None)
            if els is None or len(els) != 2:
                raise OperandError(f"mma.sp scale selector for {what} must be "
                                   f"{{byte-id-{what}, thread-id-{what}}}, got '{op}'")
            sel += [_uniform(regs, els[0], f"byte-id-{what}"), _uniform(regs, els[1], f"thread-id-{what}")]
        sa = regs.read(ops[6].name).reshape(-1, frag.LANES)
        sb = regs.read(ops[8].name).reshape(-1, frag.LANES)
        scale = (sa, sb, sel[0], sel[1], sel[2], sel[3])
    d = mma_sp(form, stack(a_names), stack(b_names), stack(c_names),
               regs.read(e_name).reshape(-1, frag.LANES), selector, target=target, scale=scale)
    return {name: d[i].reshape(-1) for i, name in enumerate(d_names)}

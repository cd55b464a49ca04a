"""Dense warp-level MMA: `mma.sync.aligned` (PTX ISA 9.7.14.5).

    D = A * B + C         one mMnNkK product per warp (m8n8k4 .f16: one per quad-pair)

The pure part, `mma_sync(form, a, b, c, ...)`, takes each operand as registers (nregs, W, 32)
(uint32; uint64 for .f64) and returns D the same way; `execute_mma` is the handler of opcode
`mma` (dense here, `.sp` forms to isa.mma_sp). The arithmetic per family:

- f16 / bf16 / tf32 / fp8 / kind::* : `ptxsim.numerics` with the target's profile (the hardware
  model of MMA-Sim; sm_90 replayed bit for bit on H200 vectors, tests/isa/test_mma_sync_hw.py);
- m8n8k4 .f16 on sm_80+ : no tensor-core instruction; ptxas emits f32 FFMA chains, modelled as
  the SASS reads (`M8N8K4_ORDER`, measured on the H200);
- .f64 : DMMA, K fused multiply-adds in order, each rounded to nearest (H200);
- integers : exact products and sums, wrap or .satfinite clamp; .b1: popc of AND / XOR.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxsim.errors import OperandError, PtxValidationError, UnsupportedFeature
from ptxsim.isa import mma_common
from ptxsim.isa import mma_fragments as frag
from ptxsim.isa import mma_sp
from ptxsim.isa.floating import F64_DEFAULT_NAN, F64_QUIET, fma_f64
from ptxsim.isa.mma_common import Note
from ptxsim.isa.registry import register
from ptxsim.isa.targets import Arch, AtLeast, Family, Req, parse_target, parse_version
from ptxsim.numerics import mma_batch

S = "9.7.14.5.14"

# ------------------------------------------------------------------------------ legality table
# 9.7.14.5.14 "Syntax", "PTX ISA Notes" and "Target ISA Notes", one row per group of shapes that
# share their notes. Checked against ptxas 13.5 on every form the grammar can spell x 23 targets,
# and against the lowest PTX ISA version ptxas accepts on 7 targets
# (tests/data/ptx/mma_sync_ptxas.json, scripts/ptxas_mma_sync.py,
# tests/isa/test_mma_sync_legality.py). Where ptxas and the text differ the row follows ptxas
# and says so.
ALL_LAYOUTS = (("row", "row"), ("row", "col"), ("col", "row"), ("col", "col"))
ROW_COL = (("row", "col"),)
SAME_F = (("f16", "f16"), ("f32", "f32"))
F32 = (("f32", "f32"),)
S32 = (("s32", "s32"),)
F8 = ("e4m3", "e5m2")
F6F4 = ("e3m2", "e2m3", "e2m1")
F8F6F4 = F8 + F6F4


@dataclass(frozen=True)
class Dense:
    family: str                             # f16 bf16 tf32 f64 i8 i4 b1 f8 f8f6f4 mx...
    shapes: tuple[tuple[int, int, int], ...]
    ab_types: tuple[str, ...]               # every atype x btype from this set ...
    accum: tuple[tuple[str, str], ...]      # (dtype, ctype)
    notes: tuple[Note, ...]
    layouts: tuple[tuple[str, str], ...] = ROW_COL
    kind: str | None = None
    satfinite: bool = False
    bitop: str | None = None
    scales: tuple[tuple[str, str], ...] = ()     # (stype, scale_vec) of .block_scale
    needs: tuple[str, ...] = ()             # ... of which one of A/B must be among these
    block_scale: bool = False


def _n(what, since, target):
    return Note(what, since, target)


LEGAL: tuple[Dense, ...] = (
    # m8n8k4 .f16: every layout pair; .f16 D with .f32 C is refused (".dtype must be '.f32'
    # when .ctype is '.f32'"). The text says sm_70; ptxas 13.5 knows sm_75 as its oldest.
    Dense("f16", ((8, 8, 4),), ("f16",), (("f16", "f16"), ("f32", "f16"), ("f32", "f32")),
          (_n(".m8n8k4 .f16", (6, 4), "sm_70"),), layouts=ALL_LAYOUTS),
    Dense("f16", ((16, 8, 8),), ("f16",), SAME_F, (_n(".m16n8k8 .f16", (6, 5), "sm_75"),)),
    Dense("f16", ((16, 8, 16),), ("f16",), SAME_F, (_n(".m16n8k16 .f16", (7, 0), "sm_80"),)),
    Dense("bf16", ((16, 8, 8), (16, 8, 16)), ("bf16",), F32, (_n(".bf16", (7, 0), "sm_80"),)),
    Dense("tf32", ((16, 8, 4), (16, 8, 8)), ("tf32",), F32, (_n(".tf32", (7, 0), "sm_80"),)),
    Dense("f64", ((8, 8, 4),), ("f64",), (("f64", "f64"),), (_n(".m8n8k4 .f64", (7, 0), "sm_80"),)),
    Dense("f64", ((16, 8, 4), (16, 8, 8), (16, 8, 16)), ("f64",), (("f64", "f64"),),
          (_n(".m16n8k4/k8/k16 .f64", (7, 8), "sm_90"),)),
    Dense("i8", ((8, 8, 16),), ("u8", "s8"), S32, (_n(".m8n8k16 .u8/.s8", (6, 5), "sm_75"),),
          satfinite=True),
    Dense("i8", ((16, 8, 16), (16, 8, 32)), ("u8", "s8"), S32,
          (_n(".m16n8k16/k32 .u8/.s8", (7, 0), "sm_80"),), satfinite=True),
    Dense("i4", ((8, 8, 32),), ("u4", "s4"), S32, (_n(".m8n8k32 .u4/.s4", (6, 5), "sm_75"),),
          satfinite=True),
    Dense("i4", ((16, 8, 32), (16, 8, 64)), ("u4", "s4"), S32,
          (_n(".m16n8k32/k64 .u4/.s4", (7, 0), "sm_80"),), satfinite=True),
    # .b1 .xor: the text says PTX ISA 6.5 for m8n8k128; ptxas 13.5 wants 7.0 on sm_75
    Dense("b1", ((8, 8, 128),), ("b1",), S32, (_n(".m8n8k128 .b1 .xor", (7, 0), "sm_75"),),
          bitop="xor"),
    Dense("b1", ((16, 8, 128), (16, 8, 256)), ("b1",), S32,
          (_n(".m16n8k128/k256 .b1", (7, 0), "sm_80"),), bitop="xor"),
    Dense("b1", ((8, 8, 128), (16, 8, 128), (16, 8, 256)), ("b1",), S32,
          (_n(".b1 .and.popc", (7, 1), "sm_80"),), bitop="and"),
    Dense("f8", ((16, 8, 32),), F8, F32, (_n(".m16n8k32 .e4m3/.e5m2", (8, 4), "sm_89"),)),
    Dense("f8", ((16, 8, 32),), F8, (("f16", "f16"),),
          (_n(".f16 D with .e4m3/.e5m2", (8, 7), "sm_89"),)),
    Dense("f8", ((16, 8, 16),), F8, SAME_F, (_n(".m16n8k16 .e4m3/.e5m2", (8, 7), "sm_89"),)),
    # .kind::f8f6f4 (the text: m16n8k32, PTX ISA 8.7, sm_120a / sm_120f). ptxas 13.5 also takes
    # m16n8k16, and with .e4m3/.e5m2 only on every 'a'/'f' target of sm_100 and later, from
    # PTX ISA 8.6 on sm_100a (.f16 D and m16n8k16 from 8.7, as without a kind).
    Dense("f8f6f4", ((16, 8, 32),), F8, F32, (_n(".kind::f8f6f4", (8, 6), "kind_f8"),),
          kind="f8f6f4"),
    Dense("f8f6f4", ((16, 8, 32),), F8, (("f16", "f16"),),
          (_n(".kind::f8f6f4 with .f16 D", (8, 7), "kind_f8"),), kind="f8f6f4"),
    Dense("f8f6f4", ((16, 8, 16),), F8, SAME_F,
          (_n(".kind::f8f6f4 .m16n8k16", (8, 7), "kind_f8"),), kind="f8f6f4"),
    Dense("f8f6f4", ((16, 8, 16), (16, 8, 32)), F8F6F4, SAME_F,
          (_n(".kind::f8f6f4 with .e3m2/.e2m3/.e2m1", (8, 7), "sm_120f"),), kind="f8f6f4",
          needs=F6F4),
    # 9.7.14.3 Table 36 (valid .kind / .stype / .scale_vec_size), block scaling
    Dense("mxf8f6f4", ((16, 8, 32),), F8F6F4, F32, (_n(".kind::mxf8f6f4", (8, 7), "sm_120f"),),
          kind="mxf8f6f4", scales=(("ue8m0", "1X"),), block_scale=True),
    Dense("mxf4", ((16, 8, 64),), ("e2m1",), F32, (_n(".kind::mxf4", (8, 7), "sm_120f"),),
          kind="mxf4", scales=(("ue8m0", "2X"),), block_scale=True),
    Dense("mxf4nvf4", ((16, 8, 64),), ("e2m1",), F32, (_n(".kind::mxf4nvf4", (8, 7), "sm_120f"),),
          kind="mxf4nvf4", scales=(("ue8m0", "2X"), ("ue4m3", "4X"), ("ue8m0", "4X")),
          block_scale=True),
    # ptxas 13.5 also assembles .kind::mxf8f6f4 WITHOUT .block_scale, .e4m3/.e5m2 only, on the
    # kind::f8f6f4 targets -- outside the text; legal here, not executed (UnsupportedFeature)
    Dense("mxf8f6f4-unscaled", ((16, 8, 32),), F8, F32,
          (_n(".kind::mxf8f6f4 without .block_scale", (8, 6), "kind_f8"),), kind="mxf8f6f4"),
)
DEFAULT_SCALE_VEC = {"mxf4": "2X", "mxf8f6f4": "1X"}       # as for mma.sp (9.7.14.5.14)
BLOCK_SCALED_KINDS = ("mxf8f6f4", "mxf4", "mxf4nvf4")
SCALE_NOTES = {("mxf4nvf4", "ue8m0", "4X"): Note(".scale_vec::4X with .ue8m0", (9, 1))}

REQUIREMENTS: dict[str, Req] = {
    "sm_70": Req(AtLeast(70)), "sm_75": Req(AtLeast(75)), "sm_80": Req(AtLeast(80)),
    "sm_89": Req(AtLeast(89)), "sm_90": Req(AtLeast(90)),
    # ptxas 13.5: every 'a' / 'f' target from sm_100 on (none of the plain sm_100 ... sm_121)
    "kind_f8": Req(Arch("sm_100a"), Arch("sm_101a"), Arch("sm_120a"), Family("sm_100f"),
                   Family("sm_110f"), Family("sm_120f")),
    # "requires sm_120a and is supported on sm_120f or higher in the same family"
    "sm_120f": Req(Arch("sm_120a"), Family("sm_120f")),
}


# ------------------------------------------------------------------------------------- form
ELEMENT_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f64": 64, "e4m3": 8, "e5m2": 8, "e3m2": 8,
                "e2m3": 8, "e2m1": 8, "u8": 8, "s8": 8, "u4": 4, "s4": 4, "b1": 1}
ACCUM_BITS = {"f16": 16, "f32": 32, "s32": 32, "f64": 64}
# f8f6f4 kinds keep every type in an 8-bit container (9.7.14.5.14): e2m1 in bits [5:2], e3m2 /
# e2m3 in [5:0]; mxf4 / mxf4nvf4 pack two e2m1 per byte with no padding
CONTAINER_FIELD = {"e2m1": (2, 0xF), "e3m2": (0, 0x3F), "e2m3": (0, 0x3F)}


@dataclass(frozen=True)
class MmaForm:
    m: int
    n: int
    k: int
    dtype: str
    atype: str
    btype: str
    ctype: str
    alayout: str = "row"
    blayout: str = "col"
    kind: str | None = None
    satfinite: bool = False
    bitop: str | None = None
    block_scale: bool = False
    stype: str | None = None
    scale_vec: str | None = None

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    @property
    def text(self) -> str:
        kind = f".kind::{self.kind}" if self.kind else ""
        bs = ".block_scale" + (f".scale_vec::{self.scale_vec}" if self.scale_vec else "") \
            if self.block_scale else ""
        tail = f".{self.bitop}.popc" if self.bitop else ""
        st = f".{self.stype}" if self.stype else ""
        return (f"mma.sync.aligned.{self.shape}.{self.alayout}.{self.blayout}{kind}{bs}"
                f"{'.satfinite' if self.satfinite else ''}.{self.dtype}.{self.atype}"
                f".{self.btype}.{self.ctype}{st}{tail}")

    @property
    def legal(self) -> Dense:
        for row in LEGAL:
            if ((self.m, self.n, self.k) in row.shapes and self.kind == row.kind
                    and self.atype in row.ab_types and self.btype in row.ab_types
                    and (not row.needs or self.atype in row.needs or self.btype in row.needs)
                    and (self.dtype, self.ctype) in row.accum
                    and (self.alayout, self.blayout) in row.layouts
                    and (row.satfinite or not self.satfinite) and self.bitop == row.bitop
                    and self.block_scale == row.block_scale
                    and (not row.scales or (self.stype, self.scale_vec) in row.scales)
                    and (row.scales or self.stype is None)):
                return row
        raise PtxValidationError(f"{self.text}: no such form in the mma syntax (PTX ISA {S})")

    @property
    def family(self) -> str:
        return self.legal.family

    @property
    def quad_pair(self) -> bool:
        """m8n8k4 .f16: each quad-pair computes its own product (9.7.14.5.1)."""
        return (self.m, self.k) == (8, 4) and self.atype == "f16"

    @property
    def element_bits(self) -> int:
        return 4 if self.kind in ("mxf4", "mxf4nvf4") else ELEMENT_BITS[self.atype]

    @property
    def a(self) -> frag.Fragment:
        if self.quad_pair:
            return frag.m8n8k4_a(self.alayout)
        return frag.dense_a(self.m, self.k, self.element_bits)

    @property
    def b(self) -> frag.Fragment:
        if self.quad_pair:
            return frag.m8n8k4_b(self.blayout)
        return frag.dense_b(self.k, self.element_bits)

    def _accum(self, t: str) -> frag.Fragment:
        if self.quad_pair:
            return frag.m8n8k4_c(ACCUM_BITS[t])
        return frag.dense_c(self.m, ACCUM_BITS[t])

    @property
    def c(self) -> frag.Fragment:
        return self._accum(self.ctype)

    @property
    def d(self) -> frag.Fragment:
        return self._accum(self.dtype)

    @property
    def scale_count(self) -> int:
        return {"1X": 1, "2X": 2, "4X": 4}[self.scale_vec] if self.scale_vec else 0

    @property
    def notes(self) -> tuple[Note, ...]:
        extra = SCALE_NOTES.get((self.kind, self.stype, self.scale_vec))
        return self.legal.notes + ((extra,) if extra else ())

    def check_target(self, target: str) -> None:
        t = parse_target(target)
        for note in self.notes:
            if note.target and not REQUIREMENTS[note.target].ok(t):
                raise PtxValidationError(
                    f"{self.text} requires {REQUIREMENTS[note.target]}, not {target} "
                    f"({note.what}: PTX ISA {S} Target ISA Notes)")

    def check_version(self, ptx_version) -> None:
        """PTX ISA notes (None: the newest version, nothing to check)."""
        if ptx_version is None:
            return
        v = parse_version(ptx_version)
        for note in self.notes:
            if v < note.since:
                raise PtxValidationError(
                    f"{note.what} requires PTX ISA {note.since[0]}.{note.since[1]} or later, "
                    f"not {v[0]}.{v[1]} (PTX ISA {S} PTX ISA Notes)")


def forms(target: str | None = None) -> list[MmaForm]:
    """Every form of the syntax table (optionally: those legal on `target`), .scale_vec_size
    spelled out, .satfinite both ways where allowed."""
    import itertools
    out = []
    for row in LEGAL:
        for (m, n, k), (a, b), (d, c), lay, sat in itertools.product(
                row.shapes, itertools.product(row.ab_types, repeat=2), row.accum, row.layouts,
                (False, True) if row.satfinite else (False,)):
            if row.needs and a not in row.needs and b not in row.needs:
                continue
            for st, vec in (row.scales or ((None, None),)):
                f = MmaForm(m, n, k, d, a, b, c, *lay, kind=row.kind, satfinite=sat,
                            bitop=row.bitop, block_scale=row.block_scale, stype=st, scale_vec=vec)
                if target is not None:
                    try:
                        f.check_target(target)
                    except PtxValidationError:
                        continue
                out.append(f)
    return out


def form_of(instruction) -> MmaForm:
    """The MmaForm of a parsed dense `mma...` Instruction, through the shared qualifier parser
    (isa.mma_common.parse). Raises PtxValidationError for anything outside the syntax table."""
    q = mma_common.parse(instruction)
    if q.sparse is not None:
        raise PtxValidationError(f"'{q.text}' is a sparse mma (isa.mma_sp)")
    for flag, ok in ((".sync", q.sync), (".aligned", q.aligned)):
        if not ok:
            raise PtxValidationError(f"mma requires the {flag} qualifier (PTX ISA {S})")
    if len(q.layouts) != 2:
        raise PtxValidationError(f"'{q.text}': mma needs .alayout and .blayout (.row / .col) "
                                 f"(PTX ISA {S})")
    if q.bitop is not None and not q.popc:
        raise PtxValidationError(f"'{q.text}': single-bit mma needs .{q.bitop}.popc (PTX ISA {S})")
    if q.popc and q.bitop is None:
        raise PtxValidationError(f"'{q.text}': .popc needs .xor or .and (PTX ISA {S})")
    types = list(q.types)
    stype = None
    if q.block_scale:
        if len(types) != 5:
            raise PtxValidationError(f"'{q.text}': mma .block_scale needs .dtype.atype.btype"
                                     f".ctype.stype (PTX ISA {S})")
        stype = types.pop()
    if len(types) != 4:
        raise PtxValidationError(f"'{q.text}': mma needs the four types .dtype.atype.btype.ctype "
                                 f"(PTX ISA {S})")
    scale_vec = q.scale_vec
    if q.block_scale and scale_vec is None:
        scale_vec = DEFAULT_SCALE_VEC.get(q.kind)
        if scale_vec is None:
            raise PtxValidationError(f"'{q.text}': .kind::mxf4nvf4 requires an explicit "
                                     f".scale_vec_size (PTX ISA {S})")
    if q.scale_vec is not None and not q.block_scale:
        raise PtxValidationError(f"'{q.text}': .scale_vec_size needs .block_scale (PTX ISA {S})")
    form = MmaForm(q.m, q.n, q.k, *types, alayout=q.layouts[0], blayout=q.layouts[1],
                   kind=q.kind, satfinite=q.satfinite, bitop=q.bitop,
                   block_scale=q.block_scale, stype=stype, scale_vec=scale_vec)
    form.legal
    return form


# ----------------------------------------------------------------------------- semantics
def arch_profile(cc: int) -> str:
    """The numerics engine's arithmetic profile of a compute capability (sm_80 ... sm_120)."""
    for lo, name in ((120, "sm_120"), (100, "sm_100"), (90, "sm_90"), (89, "sm_89"),
                     (80, "sm_80")):
        if cc >= lo:
            return name
    raise UnsupportedFeature(f"the tensor-core arithmetic of sm_{cc} is not modelled (ptxsim's "
                             "numerics profiles start at sm_80)")


NUMERICS_KIND = {"f16": "f16", "bf16": "f16", "tf32": "tf32", "f8": "fp8_sync",
                 "f8f6f4": "f8f6f4", "mxf8f6f4": "mxf8f6f4", "mxf4": "mxf4",
                 "mxf4nvf4": "mxf4nvf4", "i8": "i8", "i4": "i8"}


def _strip(form: MmaForm, t: str, x: np.ndarray) -> np.ndarray:
    if form.kind in ("f8f6f4", "mxf8f6f4") and t in CONTAINER_FIELD:
        shift, mask = CONTAINER_FIELD[t]
        return (x >> np.uint32(shift)) & np.uint32(mask)
    return x


def mma_sync(form: MmaForm, a: np.ndarray, b: np.ndarray, c: np.ndarray, *,
             target: str = "sm_90a", scale=None) -> np.ndarray:
    """One mma per warp. a, b, c: registers (nregs, W, 32), uint32 (uint64 for .f64). scale:
    (scale_a_data (W,32), scale_b_data (W,32), byte_a, thread_a, byte_b, thread_b) for
    .block_scale. Returns D registers (nregs_d, W, 32)."""
    form.check_target(target)
    cc = parse_target(target).sm
    fam = form.family
    A = _strip(form, form.atype, form.a.unpack(a))          # (T, M, K)  T = W (W*4 quad-pairs)
    B = _strip(form, form.btype, form.b.unpack(b))          # (T, K, N)
    C = form.c.unpack(c)                                     # (T, M, N)
    if fam == "f64":
        D = dmma(A, B, C)
    elif fam == "b1":
        D = popc_mma(A, B, C, form.bitop)
    elif form.quad_pair and cc >= 80:
        D = m8n8k4_ffma(A, B, C, form)
    elif fam == "mxf8f6f4-unscaled":
        raise UnsupportedFeature(f"{form.text}: ptxas assembles .kind::mxf8f6f4 without "
                                 ".block_scale, but the PTX ISA gives it no semantics")
    else:
        kw = dict(arch=arch_profile(cc), kind=NUMERICS_KIND[fam], atype=form.atype,
                  btype=form.btype, ctype=form.ctype, dtype=form.dtype)
        if form.satfinite:
            kw["satfinite"] = True
        if form.block_scale:
            if scale is None:
                raise OperandError(f"{form.text} needs scale-a-data / scale-b-data")
            sa, sb = mma_sp.scale_matrices(form, *scale)        # (W,16,n), (W,n,8)
            kw.update(scale_a=sa, scale_b=sb, scale_type=form.stype,
                      block=form.k // form.scale_count)
        D = mma_batch(A, B, C, **kw)
    return form.d.pack(D)


# ---- .f64: DMMA ------------------------------------------------------------------------------
def dmma(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """f64 mma as the H200 computes it (tests/isa/test_mma_sync_hw.py): D = C, then for k = 0 ..
    K-1 in order D = fma(A[:, k], B[k, :], D) rounded to nearest. A NaN result is the first NaN
    among B[k, n], the running D, A[m, k] -- in that order, quiet or signalling alike (unlike the
    scalar f64 rule, which prefers a quiet NaN) -- with its quiet bit set; an invalid operation
    on non-NaN operands gives 0xFFF8000000000000."""
    T, M, K = A.shape
    N = B.shape[2]
    d = np.asarray(C, np.uint64).copy()
    nan = lambda x: (x & np.uint64(0x7FFFFFFFFFFFFFFF)) > np.uint64(0x7FF0000000000000)
    for k in range(K):
        a = np.broadcast_to(A[:, :, k, None], (T, M, N))
        b = np.broadcast_to(B[:, None, k, :], (T, M, N))
        r = fma_f64(a.view(np.float64), b.view(np.float64), d.view(np.float64)).view(np.uint64)
        first = np.where(nan(b), b, np.where(nan(d), d, np.where(nan(a), a,
                                                                  np.uint64(F64_DEFAULT_NAN))))
        d = np.where(nan(r), first | F64_QUIET, r).reshape(T, M, N)
    return d


# ---- .b1 --------------------------------------------------------------------------------------
def popc_mma(A: np.ndarray, B: np.ndarray, C: np.ndarray, bitop: str) -> np.ndarray:
    """D[m,n] = C[m,n] + popc(A row m OP B column n), 32-bit wrap (9.7.14.5.14 Description)."""
    a = A.astype(np.int64)
    b = B.astype(np.int64)
    both = np.einsum("tmk,tkn->tmn", a, b)
    if bitop == "and":
        cnt = both
    else:               # xor: |a| + |b| - 2|a and b|
        cnt = a.sum(axis=2)[:, :, None] + b.sum(axis=1)[:, None, :] - 2 * both
    return ((C.astype(np.int64) + cnt) & 0xFFFFFFFF).astype(np.uint32)


# ---- m8n8k4 .f16 on sm_80+: ptxas's FFMA expansion ----------------------------------------------
# The SASS of each form (hardware/mma_sync, sass.txt; measured on the H200): the four products
# a_k*b_k (exact in f32) are summed by FFMA / FADD in f32, round to nearest, in the order below;
# C (widened to f32 exactly) enters at `c_at` (an index into the sequence of partial results);
# an .f16 D is rounded once from f32 (F2FP, to nearest). `pairs`: ((k0, k1), (k2, k3)) summed
# pairwise, the pair sums added to C in that order; otherwise `chain`: one running sum from 0.
M8N8K4_ORDER = {
    "f32": dict(chain=(0, 1, 2, 3)),                 # D = C + (((p0 + p1) + p2) + p3)
    "f16": dict(pairs=((0, 1), (2, 3))),             # D = f16((C + (p0 + p1)) + (p2 + p3))
}


def m8n8k4_ffma(A, B, C, form: MmaForm) -> np.ndarray:
    """A (T, 8, 4) f16 bits, B (T, 4, 8), C (T, 8, 8) f16 or f32 bits -> D bits."""
    f16 = lambda x: x.astype(np.uint16).view(np.float16).astype(np.float32)
    a, b = f16(A), f16(B)
    c = f16(C) if form.ctype == "f16" else C.astype(np.uint32).view(np.float32)
    order = M8N8K4_ORDER[form.dtype]
    with np.errstate(over="ignore", invalid="ignore"):
        p = [a[:, :, k, None] * b[:, None, k, :] for k in range(4)]      # exact in f32
        if "chain" in order:
            s = np.zeros_like(c)
            for k in order["chain"]:
                s = p[k] + s
            d = c + s
        else:
            d = c
            for k0, k1 in order["pairs"]:
                d = d + (p[k0] + p[k1])
        if form.dtype == "f16":
            h = d.astype(np.float16)
            out = h.view(np.uint16).astype(np.uint32)
            out[np.isnan(h)] = 0x7FFF
            return out
        out = d.view(np.uint32).copy()
        out[np.isnan(d)] = 0x7FFFFFFF
        return out


# ------------------------------------------------------------------------ instruction handler
def _names(operand, what: str) -> list[str]:
    elements = getattr(operand, "elements", None)
    if elements is None:
        raise OperandError(f"mma operand {what} must be a vector of registers {{...}}, got "
                           f"'{operand}'")
    names = []
    for el in elements:
        name = getattr(el, "name", None)
        if name is None:
            raise OperandError(f"mma operand {what}: '{el}' is not a register")
        names.append(name)
    return names


def execute_mma_sync(instruction, regs, target: str) -> dict[str, np.ndarray]:
    """Handler of a dense `mma`: reads d/a/b/c (and the block-scale operands) from `regs`."""
    form = form_of(instruction)
    ops = instruction.operands
    nops = 8 if form.block_scale else 4
    if len(ops) != nops:
        raise OperandError(f"{form.text} takes {nops} operands, got {len(ops)}")
    names = [_names(o, w) for o, w in zip(ops[:4], "dabc")]
    for ns, fr, what in zip(names, (form.d, form.a, form.b, form.c), "dabc"):
        if len(ns) != fr.nregs:
            raise OperandError(f"{form.text}: operand {what} needs {fr.nregs} registers, got "
                               f"{len(ns)} (PTX ISA 9.7.14.5)")
    wide = np.uint64 if form.atype == "f64" else np.uint32
    stack = lambda ns: np.stack([np.asarray(regs.read(n)).astype(wide, copy=False)
                                 .reshape(-1, frag.LANES) for n in ns])
    scale = None
    if form.block_scale:
        sel = []
        for op, what in ((ops[5], "a"), (ops[7], "b")):
            els = getattr(op, "elements", None)
            if els is None or len(els) != 2:
                raise OperandError(f"mma scale selector for {what} must be {{byte-id-{what}, "
                                   f"thread-id-{what}}}, got '{op}'")
            sel += [mma_sp._uniform(regs, els[0], f"byte-id-{what}"),
                    mma_sp._uniform(regs, els[1], f"thread-id-{what}")]
        sa = regs.read(ops[4].name).reshape(-1, frag.LANES)
        sb = regs.read(ops[6].name).reshape(-1, frag.LANES)
        scale = (sa, sb, *sel)
    d = mma_sync(form, stack(names[1]), stack(names[2]), stack(names[3]), target=target,
                 scale=scale)
    return {name: d[i].reshape(-1) for i, name in enumerate(names[0])}


@register("mma")
def execute_mma(instruction, regs, target: str) -> dict[str, np.ndarray]:
    """Registry handler for opcode 'mma': the dense forms here, .sp / .sp::ordered_metadata in
    isa.mma_sp."""
    if any(q in mma_sp.BOTH for q in instruction.qualifiers):
        return mma_sp.execute_mma_sp(instruction, regs, target)
    return execute_mma_sync(instruction, regs, target)

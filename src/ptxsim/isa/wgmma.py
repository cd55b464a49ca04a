"""Warpgroup MMA: `wgmma.mma_async` (+ `.sp`) on sm_90a (PTX ISA 9.7.15).

    D (64 x N) = A (64 x K) * B (K x N) + scale-d * D        one product per warpgroup

A comes from shared memory (a matrix descriptor) or from registers (the mma A fragment of each
warp's 16 rows); B from shared memory. The descriptors (9.7.15.5.1) are the tcgen05 shared
memory descriptor's fields without the fixed bits 46-48 and with the swizzle in bits 62-63
(0 none, 1 128B, 2 64B, 3 32B); the canonical layouts and swizzles are tcgen05's
(`isa.smem_layout`). The arithmetic is the sm_90 numerics profile (the fp8 kinds: MMA-Sim's
Hopper wgmma row, F = 13, E8M13); the sparse forms follow the warp-level mma.sp model (one fused
dot product of the stored elements per output, numerics.mma_sparse) with the mma.sp metadata
layouts, per warp of 16 rows. All of it measured on the H200 (tests/isa/test_wgmma_hw.py).

`wgmma(form, ...)` is pure (numpy in, numpy out); the executor keeps the async groups
(wgmma.fence / commit_group / wait_group).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ptxsim.errors import OperandError, PtxValidationError
from ptxsim.isa import mma_fragments as frag
from ptxsim.isa import smem_layout
from ptxsim.isa.mma_sp import MmaSpForm, dense_columns
from ptxsim.isa.mma_sync import popc_mma
from ptxsim.isa.descriptors import SmemDescriptor
from ptxsim.isa.targets import Arch, Req, parse_target, parse_version
from ptxsim.numerics import mma_batch, mma_sparse

S = "9.7.15.5.2"
THREADS = 128

# ------------------------------------------------------------------------------ legality table
# 9.7.15.5.2 syntax: K per A/B type, the D types, N values; PTX ISA 8.0, sm_90a only. Checked
# against ptxas 13.5 (tests/isa/test_wgmma_legality.py, tests/data/ptx/wgmma_ptxas.json).
F8 = ("e4m3", "e5m2")
N_FLOAT = tuple(range(8, 257, 8))
N_INT = (8, 16, 24) + tuple(range(32, 257, 16))


@dataclass(frozen=True)
class Row:
    types: tuple[str, ...]          # every atype x btype from this set
    k: int
    dtypes: tuple[str, ...]
    ns: tuple[int, ...]
    trans: bool = False             # imm-trans-a / imm-trans-b operands
    scale: bool = True              # imm-scale-a / imm-scale-b operands
    satfinite: bool = False
    bitop: str | None = None
    same_ab: bool = True


LEGAL = (
    Row(("f16",), 16, ("f16", "f32"), N_FLOAT, trans=True),
    Row(("bf16",), 16, ("f32",), N_FLOAT, trans=True),
    Row(("tf32",), 8, ("f32",), N_FLOAT),
    Row(F8, 32, ("f16", "f32"), N_FLOAT, same_ab=False),
    Row(("s8", "u8"), 32, ("s32",), N_INT, scale=False, satfinite=True, same_ab=False),
    Row(("b1",), 256, ("s32",), N_INT, scale=False, bitop="and"),
)
TARGET = Req(Arch("sm_90a"))
SINCE = (8, 0)
SPARSE_SINCE = (8, 2)
MIXED_INT_SINCE = (8, 4)      # .s8 x .u8 / .u8 x .s8 (ptxas 13.5; the text says 8.0)


@dataclass(frozen=True)
class WgmmaForm:
    n: int
    k: int
    dtype: str
    atype: str
    btype: str
    sparse: bool = False
    satfinite: bool = False
    bitop: str | None = None

    @property
    def text(self) -> str:
        return (f"wgmma.mma_async{'.sp' if self.sparse else ''}.sync.aligned.m64n{self.n}k{self.k}"
                f"{'.satfinite' if self.satfinite else ''}.{self.dtype}.{self.atype}.{self.btype}"
                f"{'.' + self.bitop + '.popc' if self.bitop else ''}")

    @property
    def row_k(self) -> int:
        """K of the dense syntax row (a sparse form doubles it)."""
        return self.k // 2 if self.sparse else self.k

    @property
    def legal(self) -> Row:
        for row in LEGAL:
            if (self.atype in row.types and self.btype in row.types
                    and (not row.same_ab or self.atype == self.btype)
                    and self.row_k == row.k and self.dtype in row.dtypes and self.n in row.ns
                    and (row.satfinite or not self.satfinite) and self.bitop == row.bitop
                    and not (self.sparse and row.bitop)):
                return row
        raise PtxValidationError(f"{self.text}: no such form in the wgmma syntax (PTX ISA {S})")

    @property
    def element_bits(self) -> int:
        return {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8,
                "b1": 1}[self.atype]

    @property
    def a_cols(self) -> int:
        """K columns of A as stored (sparse: the compressed K/2)."""
        return self.k // 2 if self.sparse else self.k

    @property
    def a_fragment(self) -> frag.Fragment:
        """A in registers: each warp's 16 rows as the mma A fragment."""
        return frag.dense_a(16, self.a_cols, self.element_bits)

    @property
    def d_bits(self) -> int:
        return 16 if self.dtype == "f16" else 32

    @property
    def d_regs(self) -> int:
        return self.n * self.d_bits // 64

    def operand_count(self, a_regs: bool) -> int:
        row = self.legal
        n = 4 + (2 if self.sparse else 0)        # d, a, b, (meta, sel,) scale-d
        if row.scale:
            n += 2
        if row.trans:
            n += 1 if a_regs else 2
        return n

    def check(self, target: str, ptx_version=None) -> None:
        self.legal
        if not TARGET.ok(parse_target(target)):
            raise PtxValidationError(f"{self.text} requires sm_90a, not {target} (PTX ISA {S} "
                                     "Target ISA Notes)")
        if ptx_version is not None:
            since = SPARSE_SINCE if self.sparse else SINCE
            if self.atype in ("s8", "u8") and self.atype != self.btype:
                since = max(since, MIXED_INT_SINCE)
            if parse_version(ptx_version) < since:
                raise PtxValidationError(f"{self.text} requires PTX ISA {since[0]}.{since[1]}")


_SHAPE = re.compile(r"^\.m64n(\d+)k(\d+)$")


def form_of(instruction) -> WgmmaForm:
    quals = list(instruction.qualifiers)
    sparse = ".sp" in quals
    for flag in (".sync", ".aligned"):
        if flag not in quals:
            raise PtxValidationError(f"wgmma.mma_async requires {flag} (PTX ISA {S})")
    shapes = [m for q in quals if (m := _SHAPE.match(q))]
    if len(shapes) != 1:
        raise PtxValidationError(f"wgmma.mma_async needs one .m64nNkK shape (PTX ISA {S})")
    types = [q[1:] for q in quals if q[1:] in ("f16", "bf16", "tf32", "f32", "s32", "e4m3",
                                               "e5m2", "s8", "u8", "b1")]
    if len(types) != 3:
        raise PtxValidationError(f"wgmma.mma_async needs .dtype.atype.btype (PTX ISA {S})")
    bitop = "and" if ".and" in quals else ("xor" if ".xor" in quals else None)
    known = {".sp", ".sync", ".aligned", ".satfinite", ".and", ".xor", ".popc"}
    for q in quals:
        if q not in known and not _SHAPE.match(q) and q[1:] not in types:
            raise PtxValidationError(f"wgmma.mma_async: unknown qualifier {q} (PTX ISA {S})")
    if (bitop is None) != (".popc" not in quals):
        raise PtxValidationError(f"wgmma.mma_async .b1 needs .and.popc (PTX ISA {S})")
    n, k = (int(x) for x in shapes[0].groups())
    form = WgmmaForm(n, k, *types, sparse=sparse, satfinite=".satfinite" in quals, bitop=bitop)
    form.legal
    return form


# ------------------------------------------------------------------------------ descriptors
_SW90 = {0: "none", 1: "128B", 2: "64B", 3: "32B"}
_SW_CODE = {"none": 0, "128B": 2, "64B": 4, "32B": 6}       # tcgen05 field values (Table 40)


def descriptor(value: int) -> SmemDescriptor:
    """The sm_90 matrix descriptor (9.7.15.5.1): start >> 4 (bits 0-13), leading-dimension byte
    offset >> 4 (16-29), stride-dimension byte offset >> 4 (32-45), base offset (49-51), swizzle
    (62-63) -- as the equivalent tcgen05 SmemDescriptor."""
    v = int(value) & ((1 << 64) - 1)
    return SmemDescriptor(start_address=v & 0x3FFF, lbo=(v >> 16) & 0x3FFF,
                          sbo=(v >> 32) & 0x3FFF, base_offset=(v >> 49) & 7,
                          swizzle=_SW_CODE[_SW90[v >> 62]])


# ------------------------------------------------------------------------------ fragments
_tau = np.arange(THREADS)
_W, _G, _T = _tau // 32, (_tau % 32) // 4, _tau % 4


def d_index(form: WgmmaForm) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of every D register field, each (d_regs, 128, per): 32-bit D register i of
    thread tau = (g, 8(i//4) + 2t + i%2) or (g + 8, ...) as i//2 is even or odd; f16 register j
    holds row g + 8(j%2), columns 8(j//2) + 2t + {0, 1} (9.7.15.5.1; g = lane/4, t = lane%4,
    rows offset by 16 per warp)."""
    nr = form.d_regs
    i = np.arange(nr)[:, None, None]
    if form.d_bits == 32:
        row = 16 * _W[None, :, None] + _G[None, :, None] + 8 * ((i // 2) % 2)
        col = 8 * (i // 4) + 2 * _T[None, :, None] + i % 2
    else:
        s = np.arange(2)[None, None, :]
        row = 16 * _W[None, :, None] + _G[None, :, None] + 8 * (i % 2)
        col = 8 * (i // 2) + 2 * _T[None, :, None] + s
    shape = (nr, THREADS, 1 if form.d_bits == 32 else 2)
    return np.broadcast_to(row, shape), np.broadcast_to(col, shape)


def unpack_d(form: WgmmaForm, regs: np.ndarray) -> np.ndarray:
    """regs (d_regs, G, 128) -> D (G, 64, N) element bits."""
    row, col = d_index(form)
    regs = np.asarray(regs, np.uint32)
    out = np.zeros((regs.shape[1], 64, form.n), np.uint32)
    if form.d_bits == 32:
        out[:, row[..., 0], col[..., 0]] = np.moveaxis(regs, 1, 0)
    else:
        for h in (0, 1):
            out[:, row[..., h], col[..., h]] = np.moveaxis((regs >> np.uint32(16 * h)) & 0xFFFF, 1, 0)
    return out


def pack_d(form: WgmmaForm, d: np.ndarray) -> np.ndarray:
    row, col = d_index(form)
    d = np.asarray(d, np.uint32)
    if form.d_bits == 32:
        return np.ascontiguousarray(np.moveaxis(d[:, row[..., 0], col[..., 0]], 0, 1))
    lo = d[:, row[..., 0], col[..., 0]] & 0xFFFF
    hi = d[:, row[..., 1], col[..., 1]] & 0xFFFF
    return np.ascontiguousarray(np.moveaxis(lo | (hi << np.uint32(16)), 0, 1))


def a_from_registers(form: WgmmaForm, regs: np.ndarray) -> np.ndarray:
    """regs (4, G, 128) -> A (G, 64, a_cols): warp w's fragment is rows 16w..16w+15."""
    g = regs.shape[1]
    per_warp = np.asarray(regs, np.uint32).reshape(regs.shape[0], g * 4, 32)
    a = form.a_fragment.unpack(per_warp)                      # (G*4, 16, a_cols)
    return a.reshape(g, 64, form.a_cols)


# ------------------------------------------------------------------------------ semantics
_SMEM_FMT = {"f16": "f16", "bf16": "bf16", "tf32": "tf32", "e4m3": "e4m3", "e5m2": "e5m2",
             "s8": "e4m3", "u8": "e4m3", "b1": "e4m3"}      # 8-bit integers / b1 read as bytes
_SIGN = {"f16": 0x8000, "bf16": 0x8000, "tf32": 0x80000000, "e4m3": 0x80, "e5m2": 0x80}
NUMERICS_KIND = {"f16": "f16", "bf16": "f16", "tf32": "tf32", "e4m3": "f8f6f4", "e5m2": "f8f6f4",
                 "s8": "i8", "u8": "i8"}


def smem_operand(smem: np.ndarray, desc: int, fmt_type: str, rows: int, cols: int,
                 major: str) -> np.ndarray:
    """(rows, cols) element bits of an operand in `smem` (uint8, indexed by shared address);
    .b1 operands come back as bits, (rows, cols) with cols counted in bits."""
    d = descriptor(desc)
    if fmt_type == "b1":
        by = smem_layout.smem_to_matrix(smem, d, "e4m3", rows, cols // 8, major)
        bits = (by[..., None] >> np.arange(8, dtype=np.uint8)) & 1
        return bits.reshape(rows, cols).astype(np.uint32)
    return smem_layout.smem_to_matrix(smem, d, _SMEM_FMT[fmt_type], rows, cols,
                                      major).astype(np.uint32)


_BYTES: dict = {}


def operand_bytes(desc: int, fmt_type: str, rows: int, cols: int, major: str) -> np.ndarray:
    """The sorted shared-memory byte addresses `smem_operand` reads for the same arguments
    (read-only, memoised): what the sanitizer marks as read by the wgmma in flight."""
    key = (int(desc), fmt_type, rows, cols, major)
    got = _BYTES.get(key)
    if got is None:
        d = descriptor(desc)
        fmt, c = ("e4m3", cols // 8) if fmt_type == "b1" else (_SMEM_FMT[fmt_type], cols)
        packing = smem_layout.smem_packing(fmt)
        addr, _ = smem_layout.element_locations(d, packing, rows, c, major)
        nb = max(1, packing.bits // 8)
        got = np.unique(addr[..., None] + np.arange(nb))
        got.setflags(write=False)
        if len(_BYTES) >= 1024:
            _BYTES.clear()
        _BYTES[key] = got
    return got


def wgmma(form: WgmmaForm, d: np.ndarray, *, a=None, a_desc=None, b_desc=None, smem=None,
          scale_d=True, scale_a: int = 1, scale_b: int = 1, trans_a: int = 0, trans_b: int = 0,
          meta=None, selector: int = 0) -> np.ndarray:
    """One wgmma.mma_async per warpgroup, G warpgroups at once.

    d: D registers (d_regs, G, 128) uint32 (read when scale_d). a: A registers (4, G, 128), or
    a_desc: (G,) descriptors; b_desc (G,); smem: (G, bytes) uint8, each warpgroup's CTA shared
    memory indexed by shared address. scale_d: bool or (G,) bools. meta: (G, 128) metadata
    registers (sparse). Returns the new D registers."""
    row = form.legal
    d = np.asarray(d, np.uint32)
    g = d.shape[1]
    if scale_a not in (1, -1) or scale_b not in (1, -1):
        raise OperandError(f"{form.text}: imm-scale-a / imm-scale-b must be 1 or -1 (PTX ISA {S})")
    if (trans_a or trans_b) and not row.trans:
        raise OperandError(f"{form.text}: only .f16 / .bf16 take imm-trans (PTX ISA {S})")
    if a is not None:
        A = a_from_registers(form, a)
        if trans_a:
            raise OperandError(f"{form.text}: A in registers has no imm-trans-a (PTX ISA {S})")
    else:
        A = np.stack([smem_operand(smem[i], a_desc[i], form.atype, 64, form.a_cols,
                                   "MN" if trans_a else "K") for i in range(g)])
    B = np.stack([smem_operand(smem[i], b_desc[i], form.btype, form.n, form.k,
                               "MN" if trans_b else "K") for i in range(g)])     # (G, N, K)
    B = np.swapaxes(B, 1, 2)                                                     # (G, K, N)
    # imm-scale: -1 negates every element of A / B (9.7.15.5.2) -- a sign flip of the bits
    if scale_a == -1:
        A = A ^ np.uint32(_SIGN[form.atype])
    if scale_b == -1:
        B = B ^ np.uint32(_SIGN[form.btype])
    C = unpack_d(form, d)                                                        # (G, 64, N)
    sd = np.broadcast_to(np.asarray(scale_d, bool), (g,))
    C = np.where(sd[:, None, None], C, np.uint32(0))
    if form.atype == "b1":
        return pack_d(form, popc_mma(A, B, C, "and"))
    kw = dict(arch="sm_90", kind=NUMERICS_KIND[form.atype], atype=form.atype, btype=form.btype,
              ctype=form.dtype, dtype=form.dtype)
    if form.satfinite:
        kw["satfinite"] = True
    if not form.sparse:
        return pack_d(form, mma_batch(A, B, C, **kw))
    # sparse: per warp, the mma.sp metadata layout of its 16 rows (mma_fragments.metadata_layout)
    sp = MmaSpForm(k=form.k, dtype="f32", atype=form.atype, btype=form.atype, ctype="f32")
    e = np.asarray(meta, np.uint32).reshape(g * 4, 32)
    idx = sp.metadata.unpack(e, selector)                                   # (G*4, 16, units)
    cols = dense_columns(sp, idx, selector).reshape(g, 64, form.a_cols)     # dense column
    b_sel = np.take_along_axis(B[:, None, :, :], cols[..., None], axis=2)   # (G, 64, K/2, N)
    return pack_d(form, mma_sparse(A, b_sel, C, **kw))

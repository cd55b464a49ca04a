"""Shared-memory matrix layouts of tcgen05.mma operands: canonical layouts, the five swizzles,
and matrix <-> shared-memory bytes (PTX ISA 9.7.16.3, 9.7.16.10.3, 9.7.16.10.4, 9.7.16.10.6).

Conventions used by every function here:

- `smem` is the CTA's whole shared memory as a 1-D uint8 array, indexed by shared-memory byte
  address (the descriptor's start address is an absolute address).
- A matrix is indexed (mn, k): rows are the M (for A) or N (for B) dimension, columns are K.
  For B (K x N in the spec) the function therefore returns its transpose, N x K.
- `major` is "K" (no transpose bit) or "MN" (transpose bit set, 9.7.16.10.6).
- Elements are returned as raw bits (uint8 / uint16 / uint32), never as values.

Address of one element (units: bytes; T = elements per 16-byte chunk; W = swizzle width), read
off the CuTe canonical layouts of 9.7.16.3.3:

    K-major,  none   : start + (mn%8)*16 + (mn//8)*SBO + (k//T)*LBO
    K-major,  W-byte : start + (mn%8)*W  + (mn//8)*SBO + (k//T)*16
    MN-major, none   : start + (mn//T)*SBO + (k%8)*16 + (k//8)*LBO
    MN-major, W-byte : start + ((mn//T) % (W/16))*16 + (mn//T // (W/16))*LBO
                             + (k%A)*W + (k//A)*SBO          (A = 8 rows; 4 for 128B_base32B)

then the swizzle is applied to the absolute byte address (FACTS §3; CuTe's smem_ptr swizzle), and
the element sits at bit (j * bits) of its 16-byte chunk, j = k%T (K-major) or mn%T (MN-major).
"""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

import numpy as np

from ptxsim.errors import LayoutError
from ptxsim.isa.descriptors import SWIZZLE_PATTERN_BYTES, SmemDescriptor, base_offset_for
from ptxsim.types.formats import get_format

# Swizzle<B, M, S> of each mode (9.7.16.3.3 canonical-layout table; CuTe layout_type()): the
# address bits [M+S, M+S+B) are XORed into bits [M, M+B).
SWIZZLES: dict[str, tuple[int, int, int]] = {
    "none": (0, 4, 3), "32B": (1, 4, 3), "64B": (2, 4, 3), "128B": (3, 4, 3),
    "128B_base32B": (2, 5, 2),
}
# Width W in bytes of one swizzle-atom row, and rows per atom along the strided dimension
# (Table 53, in 128-bit elements: K-major 8xW/16, MN-major (W/16)x8, 128B-32B-atom 8x4).
SWIZZLE_WIDTH: dict[str, int] = {"none": 16, "32B": 32, "64B": 64, "128B": 128, "128B_base32B": 128}


def swizzle_address(addr, swizzle: str, base_offset: int = 0):
    """Apply a swizzling mode to absolute shared-memory byte addresses (numpy or int).

    With base offset b (Table 40 bits 49-51) the pattern is taken to start at row b of the
    128-byte rows, i.e. the XOR source is ((addr >> 7) - b); see docs/descriptors.md (inferred from
    the spec's formula base offset = (pattern start addr >> 7) & 7, not measured).
    """
    b, m, s = SWIZZLES[swizzle]
    if b == 0:
        return addr
    src = ((addr >> (m + s)) - base_offset) & ((1 << b) - 1)
    return addr ^ (src << m)


# ---------------------------------------------------------------------------------------------
# Element packing in shared memory (9.7.16.10.4)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Packing:
    """How elements of one format sit in shared memory.

    `bits`: bits per stored element. `layout_bits`: the element size the canonical layout counts
    (T = 128 // layout_bits elements per 16-byte chunk). Within a chunk the T elements are packed
    contiguously from bit 0 upward; bits beyond T * bits are padding.
    """
    fmt: str
    bits: int
    layout_bits: int

    @property
    def per_chunk(self) -> int:
        return 128 // self.layout_bits

    @property
    def dtype(self):
        return np.uint8 if self.bits <= 8 else np.uint16 if self.bits <= 16 else np.uint32


_F8F6F4_KINDS = ("f8f6f4", "mxf8f6f4")
_FP4_PACKED_KINDS = ("mxf4", "mxf4nvf4")


@functools.lru_cache(maxsize=256)     # pure in (fmt, kind), Packing is frozen; successes only
def smem_packing(fmt: str, kind: str | None = None) -> Packing:
    """The shared-memory packing of `fmt` as operand of `.kind::kind`.

    - 8/16/32-bit types: one element per 1/2/4 bytes (tf32 in a 32-bit container).
    - 4- and 6-bit types under f8f6f4 / mxf8f6f4: "contiguously packed along with padding"
      (9.7.16.10.4.4): each 16-byte chunk holds 16 elements packed in its first 8 (4-bit) or
      12 (6-bit) bytes, then 8 / 4 bytes of padding (CUDA driver API CU_TENSOR_MAP_DATA_TYPE_
      16U4_ALIGN16B / 16U6_ALIGN16B, which CUTLASS uses for these operands). The layout counts
      them as 8-bit elements.
    - e2m1 under mxf4 / mxf4nvf4: two elements per byte, no padding (9.7.16.10.4.6).
    """
    f = get_format(fmt)
    bits = f.storage_bits
    if bits in (8, 16, 32):
        return Packing(fmt, bits, bits)
    if bits in (4, 6):
        if kind in _F8F6F4_KINDS:
            return Packing(fmt, bits, 8)
        if kind in _FP4_PACKED_KINDS and bits == 4:
            return Packing(fmt, 4, 4)
        if kind is None:
            raise LayoutError(f"{fmt} is a {bits}-bit type whose shared-memory packing depends on "
                              "the MMA kind (9.7.16.10.4): pass kind='f8f6f4' / 'mxf8f6f4' (padded "
                              "to 16 elements per 16 bytes) or 'mxf4' / 'mxf4nvf4' (two per byte)")
        raise LayoutError(f"{fmt} cannot be an operand of .kind::{kind} (9.7.16.10.4)")
    raise LayoutError(f"{fmt} ({bits}-bit) is not a tcgen05.mma operand type")


# ---------------------------------------------------------------------------------------------
# Legal combinations (Table 52, Table 53, Table 49 notes, 9.7.16.3.1.2.1)
# ---------------------------------------------------------------------------------------------
def layout_issues(packing: Packing, major: str, swizzle: str | None, kind: str | None = None,
                  lbo_mode: int = 0) -> list[str]:
    """Reasons why `packing` cannot be read `major` with `swizzle` (empty when legal)."""
    out = []
    if major not in ("K", "MN"):
        return [f"major must be 'K' or 'MN', not {major!r}"]
    if swizzle not in SWIZZLES:
        return [f"swizzling mode {swizzle!r} is invalid (Table 40: values 3, 5, 7 are invalid)"]
    if major == "K" and swizzle == "128B_base32B":
        out.append("128B swizzling with 32B atomicity has no K-major atom (Table 53; CuTe "
                   "make_umma_desc: invalid for Major-K)")
    if major == "MN":
        if packing.bits in (4, 6):
            out.append(f"{packing.fmt} ({packing.bits}-bit) cannot be MN-major: only 8-, 16- and "
                       "32-bit types support transpose (Table 52)")
        elif packing.layout_bits == 32 and swizzle != "128B_base32B":
            out.append(f"32-bit {packing.fmt} MN-major needs 128B swizzling with 32B atomicity "
                       "(Table 52; Table 49 note on .kind::tf32)")
        elif packing.layout_bits in (8, 16) and swizzle == "128B_base32B":
            out.append(f"{packing.layout_bits}-bit MN-major cannot use 128B swizzling with 32B "
                       "atomicity (Table 52; Table 49 note)")
    if lbo_mode:
        if swizzle != "128B":
            out.append("absolute leading-dimension address mode supports only 128B swizzling "
                       "(9.7.16.3.1.2.1)")
        if major != "K":
            out.append("absolute leading-dimension address mode supports only K-major "
                       "(9.7.16.3.1.2.1)")
    return out


@functools.lru_cache(maxsize=256)    # pure in its (hashable, immutable) arguments; raises uncached
def _check_layout_once(packing: Packing, major: str, swizzle: str | None, kind: str | None,
                       lbo_mode: int) -> None:
    check_layout(packing, major, swizzle, kind, lbo_mode)


def check_layout(packing: Packing, major: str, swizzle: str | None, kind: str | None = None,
                 lbo_mode: int = 0) -> None:
    found = layout_issues(packing, major, swizzle, kind, lbo_mode)
    if found:
        raise LayoutError("; ".join(found))


# ---------------------------------------------------------------------------------------------
# Addresses
# ---------------------------------------------------------------------------------------------
def element_locations(desc: SmemDescriptor, packing: Packing, rows: int, cols: int,
                      major: str = "K") -> tuple[np.ndarray, np.ndarray]:
    """(byte address, bit offset within that byte) of every element (mn, k), each (rows, cols).

    The byte address is the first byte holding the element; the element occupies `packing.bits`
    bits from that bit offset upward (little-endian across bytes).
    """
    if rows <= 0 or cols <= 0:
        raise LayoutError(f"matrix shape must be positive, got {rows} x {cols}")
    swizzle = desc.swizzle_name
    check_layout(packing, major, swizzle, lbo_mode=desc.lbo_mode)
    t = packing.per_chunk
    w = SWIZZLE_WIDTH[swizzle]
    start, lbo, sbo = desc.start_bytes, desc.lbo_bytes, desc.sbo_bytes
    mn = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(cols, dtype=np.int64)[None, :]
    if major == "K":
        kc, j = k // t, k % t
        row = (mn % 8) * (16 if swizzle == "none" else w) + (mn // 8) * sbo
        if swizzle == "none":
            chunk = start + row + kc * lbo
        elif desc.lbo_mode:
            # sm_103a absolute mode (9.7.16.3.1.2): the chunks that would cross the 128-byte row
            # continue at the absolute address in LBO (inferred from CUTLASS SM103 mma_unpack,
            # which puts the next buffer's start address there).
            col = start % 128 + kc * 16
            if (col >= 256).any():
                raise LayoutError(f"K extent of {cols} elements needs more than the two 128-byte "
                                  "row pieces the absolute-address mode can describe")
            chunk = np.where(col < 128, start + row + kc * 16, lbo + row + (col - 128))
        else:
            chunk = start + row + kc * 16
    else:
        mc, j = mn // t, mn % t
        if swizzle == "none":
            chunk = start + mc * sbo + (k % 8) * 16 + (k // 8) * lbo
        else:
            per_row = w // 16                              # chunks per swizzle-atom row
            a = 4 if swizzle == "128B_base32B" else 8      # atom rows along K (Table 53)
            chunk = (start + (mc % per_row) * 16 + (mc // per_row) * lbo
                     + (k % a) * w + (k // a) * sbo)
    chunk = swizzle_address(chunk, swizzle, desc.base_offset)
    bit = j * packing.bits
    addr = chunk + bit // 8
    return np.broadcast_to(addr, (rows, cols)), np.broadcast_to(bit % 8, (rows, cols))


_NBYTES = {4: 1, 6: 2, 8: 1, 16: 2, 32: 4}
_TYPED = sys.byteorder == "little"      # word gathers read bytes in the host's order


def _gather_index(smem_size: int, addr: np.ndarray, nb: int) -> np.ndarray:
    idx = addr[..., None] + np.arange(nb)
    if addr.min() < 0 or idx.max() >= smem_size:
        bad = np.argwhere((addr < 0) | (addr + nb > smem_size))[0]
        raise LayoutError(f"element (mn={bad[0]}, k={bad[1]}) lies at shared-memory address "
                          f"0x{int(addr[tuple(bad)]):x}, outside the {smem_size}-byte array")
    return idx


def smem_to_matrix(smem: np.ndarray, desc: SmemDescriptor | int, fmt: str, rows: int, cols: int,
                   major: str = "K", *, kind: str | None = None) -> np.ndarray:
    """The (rows x cols) matrix of element bits that `desc` describes in `smem`.

    `fmt`: element format name ("bf16", "tf32", "e4m3", "e2m1", ...); `kind`: the MMA kind, needed
    for 4/6-bit types (packing differs between f8f6f4/mxf8f6f4 and mxf4/mxf4nvf4); `major`:
    "K" or "MN". Returns uint8 / uint16 / uint32 (tf32: the full 32-bit container).
    """
    if not isinstance(desc, SmemDescriptor):
        desc = SmemDescriptor.decode(desc)
    smem = np.asarray(smem)
    if smem.dtype != np.uint8 or smem.ndim != 1:
        raise LayoutError(f"smem must be a 1-D uint8 array, got {smem.dtype} with shape {smem.shape}")
    idx, shift, bits, dtype, elem = _gather_plan(desc, fmt, kind, rows, cols, major, smem.size)
    if elem is not None and _TYPED and smem.flags.c_contiguous:
        # whole, aligned elements: one gather of `dtype` words (same bits as the byte path)
        nb = np.dtype(dtype).itemsize
        return smem[:smem.size - smem.size % nb].view(dtype)[elem]
    raw = smem[idx].astype(np.uint64)
    word = raw[..., 0].copy()
    for i in range(1, idx.shape[-1]):
        word |= raw[..., i] << np.uint64(8 * i)
    word = (word >> shift) & np.uint64((1 << bits) - 1)
    return word.astype(dtype)


# The gather plan (byte indices and bit shifts) of a descriptor is a pure function of the
# descriptor's bit-fields, the format, kind, shape, major-ness and the shared-memory size, and a
# kernel reuses a handful of descriptors thousands of times: memoised, successes only (an illegal
# descriptor raises again every time). The cached arrays are read-only.
_PLAN_CACHE: dict = {}
_PLAN_CACHE_MAX = 4096


def _gather_plan(desc: SmemDescriptor, fmt: str, kind: str | None, rows: int, cols: int,
                 major: str, smem_size: int):
    key = (desc, fmt, kind, rows, cols, major, smem_size)
    plan = _PLAN_CACHE.get(key)
    if plan is None:
        desc.validate(target="sm_103a" if desc.lbo_mode else "sm_100a", major=major)
        packing = smem_packing(fmt, kind)
        addr, shift = element_locations(desc, packing, rows, cols, major)
        nb = _NBYTES[packing.bits]
        idx = np.ascontiguousarray(_gather_index(smem_size, addr, nb))
        shift = shift.astype(np.uint64)
        # every element a whole, aligned little-endian word of its container (8/16/32-bit
        # formats): element index = byte address / width, no shifting or masking
        elem = None
        if (packing.bits == 8 * nb == 8 * np.dtype(packing.dtype).itemsize
                and not shift.any() and not (addr % nb).any()):
            elem = np.ascontiguousarray(addr // nb)
            elem.setflags(write=False)
        idx.setflags(write=False)
        shift.setflags(write=False)
        plan = (idx, shift, packing.bits, packing.dtype, elem)
        if len(_PLAN_CACHE) >= _PLAN_CACHE_MAX:
            _PLAN_CACHE.clear()
        _PLAN_CACHE[key] = plan
    return plan


def matrix_to_smem(matrix: np.ndarray, smem: np.ndarray, desc: SmemDescriptor | int, fmt: str,
                   major: str = "K", *, kind: str | None = None) -> np.ndarray:
    """Write the element bits of `matrix` (rows x cols, indexed (mn, k)) into `smem` (in place)
    where `desc` says the tensor core reads them; return `smem`. Padding bits are left as they
    are. Raises LayoutError if two elements would share a location (a descriptor whose strides
    overlap) or an element falls outside `smem`."""
    if not isinstance(desc, SmemDescriptor):
        desc = SmemDescriptor.decode(desc)
    desc.validate(target="sm_103a" if desc.lbo_mode else "sm_100a", major=major)
    if not isinstance(smem, np.ndarray) or smem.dtype != np.uint8 or smem.ndim != 1:
        raise LayoutError("smem must be a writable 1-D uint8 numpy array")
    packing = smem_packing(fmt, kind)
    m = np.asarray(matrix)
    if m.ndim != 2:
        raise LayoutError(f"matrix must be 2-D (mn, k), got shape {m.shape}")
    if m.dtype.kind not in "ui":
        raise LayoutError(f"matrix must hold element bits as unsigned integers, got {m.dtype}")
    values = m.astype(np.uint64)
    if (m < 0).any() or (values >> np.uint64(packing.bits)).any():
        raise LayoutError(f"matrix values must fit in {packing.bits} bits for {fmt}")
    rows, cols = m.shape
    addr, shift = element_locations(desc, packing, rows, cols, major)
    bitpos = addr.astype(np.int64) * 8 + shift
    uniq, counts = np.unique(bitpos, return_counts=True)
    if uniq.size != bitpos.size:
        dup = uniq[counts > 1][0]
        where = np.argwhere(bitpos == dup)[:2]
        raise LayoutError(f"elements (mn, k) = {tuple(where[0])} and {tuple(where[1])} map to the "
                          f"same shared-memory location 0x{dup // 8:x} bit {dup % 8}: the "
                          "descriptor's strides overlap for this shape")
    nb = _NBYTES[packing.bits]
    idx = _gather_index(smem.size, addr, nb)
    sh = shift.astype(np.uint64)
    field_mask = np.uint64((1 << packing.bits) - 1) << sh
    shifted = values << sh
    for i in range(nb):
        byte_mask = ((field_mask >> np.uint64(8 * i)) & np.uint64(0xFF)).astype(np.uint8)
        byte_val = ((shifted >> np.uint64(8 * i)) & np.uint64(0xFF)).astype(np.uint8)
        flat = idx[..., i].ravel()
        np.bitwise_and.at(smem, flat, ~byte_mask.ravel())
        np.bitwise_or.at(smem, flat, byte_val.ravel())
    return smem


def operand_plan(desc: SmemDescriptor | int, idesc, operand: str, rows: int | None,
                 smem_size: int):
    """The gather plan `read_operand` uses for the A / B operand that `desc` describes
    (validated as it validates): (byte index (rows, cols, nb), bit shift, bits, dtype, element
    index (rows, cols) of whole aligned elements or None). Memoised, read-only arrays."""
    if operand not in ("A", "B"):
        raise LayoutError(f"operand must be 'A' or 'B', not {operand!r}")
    if not isinstance(desc, SmemDescriptor):
        desc = SmemDescriptor.decode(desc)
    fmt = idesc.atype_name if operand == "A" else idesc.btype_name
    if fmt is None:
        raise LayoutError(f"the instruction descriptor has no valid {operand} type code")
    major = "MN" if (idesc.transpose_a if operand == "A" else idesc.transpose_b) else "K"
    packing = smem_packing(fmt, idesc.kind)
    _check_layout_once(packing, major, desc.swizzle_name, idesc.kind, desc.lbo_mode)
    cols = idesc.k // 2 if (operand == "A" and idesc.sparse) else idesc.k
    if rows is None:
        rows = idesc.m if operand == "A" else idesc.n
    return _gather_plan(desc, fmt, idesc.kind, rows, cols, major, smem_size)


def gather_operands(smem: np.ndarray, which: np.ndarray, plan) -> np.ndarray:
    """The operand matrices a plan (`operand_plan`) describes in several CTAs' shared memory at
    once: smem (n, size) uint8, which (B,) the row of each; returns (B, rows, cols) element
    bits, entry b equal to `smem_to_matrix(smem[which[b]], ...)`."""
    idx, shift, bits, dtype, elem = plan
    which = np.asarray(which, np.int64)
    if elem is not None and _TYPED and smem.flags.c_contiguous and smem.shape[1] % 8 == 0:
        nb = np.dtype(dtype).itemsize
        words = smem.view(dtype)
        return np.take(words.reshape(-1), which[:, None, None] * words.shape[1] + elem[None])
    raw = smem[which[:, None, None, None], idx[None]].astype(np.uint64)
    word = raw[..., 0].copy()
    for i in range(1, idx.shape[-1]):
        word |= raw[..., i] << np.uint64(8 * i)
    word = (word >> shift) & np.uint64((1 << bits) - 1)
    return word.astype(dtype)


def read_operand(smem: np.ndarray, desc: SmemDescriptor | int, idesc, operand: str = "A", *,
                 rows: int | None = None) -> np.ndarray:
    """The A (rows x K) or B (rows x K, i.e. B transposed) operand of one tcgen05.mma, as element
    bits, taking format, kind, major-ness and K from the instruction descriptor `idesc`
    (descriptors.InstrDescriptor). `rows` defaults to M (A) or N (B); the caller passes the
    per-CTA extent for .cta_group::2. A sparse A is read compressed: K/2 columns.
    """
    if operand not in ("A", "B"):
        raise LayoutError(f"operand must be 'A' or 'B', not {operand!r}")
    if not isinstance(desc, SmemDescriptor):
        desc = SmemDescriptor.decode(desc)
    fmt = idesc.atype_name if operand == "A" else idesc.btype_name
    if fmt is None:
        raise LayoutError(f"the instruction descriptor has no valid {operand} type code")
    major = "MN" if (idesc.transpose_a if operand == "A" else idesc.transpose_b) else "K"
    packing = smem_packing(fmt, idesc.kind)
    _check_layout_once(packing, major, desc.swizzle_name, idesc.kind, desc.lbo_mode)
    cols = idesc.k // 2 if (operand == "A" and idesc.sparse) else idesc.k
    if rows is None:
        rows = idesc.m if operand == "A" else idesc.n
    return smem_to_matrix(smem, desc, fmt, rows, cols, major, kind=idesc.kind)


# ---------------------------------------------------------------------------------------------
# Canonical compact layouts (the spec's Figures 188-192 conventions)
# ---------------------------------------------------------------------------------------------
def canonical_descriptor(fmt: str, rows: int, cols: int, major: str, swizzle: str, *,
                         start: int = 0, kind: str | None = None) -> SmemDescriptor:
    """A descriptor for a compactly packed (rows x cols) operand starting at `start`, with LBO and
    SBO chosen as in the spec's examples (Figures 188-192):

      K-major none: SBO = 128 (next 8 rows), LBO = 128 * ceil(rows/8) (next 16 bytes of K)
      K-major W   : SBO = 8*W; LBO unused (encoded 1); K must fit in one W-byte row
      MN-major none: SBO = 128 (next T rows), LBO = 128 * ceil(rows/T) (next 8 K)
      MN-major W  : LBO = atom bytes (next W bytes of MN), SBO = atom bytes * MN atoms
    """
    packing = smem_packing(fmt, kind)
    check_layout(packing, major, swizzle)
    t = packing.per_chunk
    w = SWIZZLE_WIDTH[swizzle]
    if major == "K":
        if swizzle == "none":
            sbo, lbo = 128, 128 * -(-rows // 8)
        else:
            kbytes = -(-cols // t) * 16
            if kbytes > w:
                raise LayoutError(f"a K-major {swizzle} row holds {w} bytes of K; {cols} {fmt} "
                                  f"elements take {kbytes} (step the descriptor along K instead)")
            sbo, lbo = 8 * w, 16
    else:
        if swizzle == "none":
            sbo, lbo = 128, 128 * -(-rows // t)
        else:
            a = 4 if swizzle == "128B_base32B" else 8
            atom = a * w
            mn_atoms = -(-rows // (t * w // 16))
            lbo, sbo = atom, atom * mn_atoms
    return SmemDescriptor.make(start_address=start, lbo=lbo, sbo=sbo, swizzle=swizzle,
                               base_offset=base_offset_for(start, swizzle))


_BYTES_CACHE: dict = {}


def operand_bytes(desc: SmemDescriptor | int, idesc, operand: str = "A", *,
                  rows: int | None = None, smem_size: int | None = None) -> np.ndarray:
    """The sorted shared-memory byte addresses `read_operand` reads for the same arguments (the
    bytes of every element, padding bits included), read-only and memoised: what the
    sanitizer marks as read by the asynchronous proxy while a tcgen05.mma is in flight."""
    if not isinstance(desc, SmemDescriptor):
        desc = SmemDescriptor.decode(desc)
    fmt = idesc.atype_name if operand == "A" else idesc.btype_name
    if fmt is None:
        raise LayoutError(f"the instruction descriptor has no valid {operand} type code")
    major = "MN" if (idesc.transpose_a if operand == "A" else idesc.transpose_b) else "K"
    cols = idesc.k // 2 if (operand == "A" and idesc.sparse) else idesc.k
    if rows is None:
        rows = idesc.m if operand == "A" else idesc.n
    key = (desc, fmt, idesc.kind, rows, cols, major, smem_size)
    got = _BYTES_CACHE.get(key)
    if got is None:
        packing = smem_packing(fmt, idesc.kind)
        _check_layout_once(packing, major, desc.swizzle_name, idesc.kind, desc.lbo_mode)
        addr, _ = element_locations(desc, packing, rows, cols, major)
        nb = _NBYTES[packing.bits]
        got = np.unique(addr[..., None] + np.arange(nb))
        if smem_size is not None and got.size and (got[0] < 0 or got[-1] >= smem_size):
            raise LayoutError(f"{operand} operand reaches shared-memory byte {int(got[-1])}, "
                              f"outside the {smem_size}-byte array")
        got.setflags(write=False)
        if len(_BYTES_CACHE) >= 1024:
            _BYTES_CACHE.clear()
        _BYTES_CACHE[key] = got
    return got


def footprint(desc: SmemDescriptor, fmt: str, rows: int, cols: int, major: str = "K", *,
              kind: str | None = None) -> int:
    """One past the highest shared-memory byte address the matrix touches (chunk granular)."""
    packing = smem_packing(fmt, kind)
    addr, _ = element_locations(desc, packing, rows, cols, major)
    return int((addr.max() | 15) + 1)


__all__ = ["SWIZZLES", "SWIZZLE_WIDTH", "SWIZZLE_PATTERN_BYTES", "Packing", "smem_packing",
           "swizzle_address", "layout_issues", "check_layout", "element_locations",
           "smem_to_matrix", "matrix_to_smem", "read_operand", "operand_plan", "gather_operands",
           "operand_bytes",
           "canonical_descriptor", "footprint"]

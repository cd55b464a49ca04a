"""Tensor maps (CUtensorMap) and the tensor / bulk copies of the asynchronous proxy.

`TensorMap.encode_tiled` mirrors the CUDA driver's cuTensorMapEncodeTiled: the same parameters,
checked against the same documented requirements (cuda.h 13.0, the comment above
cuTensorMapEncodeTiled; each check below quotes its rule). Dimension 0 is the innermost
(contiguous) one, as in the driver; `global_strides` are in bytes and omit dimension 0.

`to_bytes()` / `from_bytes()` are the driver's own 128-byte format (machine/tensormap_bytes.py,
learned on an H200), so the executor keeps maps in param / const / global memory as a GPU does,
and device code that builds or edits maps (tensormap.replace, copies of words) is seen exactly.

Tile-mode copies (PTX 9.7.9.25 cp.async.bulk.tensor, 5.5 "Tensors"): the box starts at the
tensor coordinates, holds ceil(boxDim[i] / elementStrides[i]) elements along dimension i
(elementStrides[0] is ignored without interleave: "TMA doesn't support the stride for dimension
zero"), element j of dimension i at coordinate c[i] + j * elementStrides[i]. In shared memory the
box is dense, dimension 0 fastest, starting at the destination address; the swizzle then permutes
16-byte chunks by absolute shared-memory address bits, exactly as `isa.smem_layout.
swizzle_address` does for tcgen05 operands (cuda.h: 128B swizzle "smem[y][x] <-> smem[y][(y % 8)
^ x]" over int4 chunks of 128-byte rows, 1024-byte aligned). Out-of-bound elements are filled
with zero (or NaN with CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) on loads and skipped on
stores; the complete-tx byte count is always the full box.

The packed sub-byte types (16U4_ALIGN8B / 16U4_ALIGN16B / 16U6_ALIGN16B; PTX .b4x16 / .b4x16_p64 /
.b6x16_p32, .b6p2x16 for stores; `PACKED` below) move bytes through two uint8 views of the map
(`_views`: the packed global bytes, and 8 or 16 shared-memory bytes per 16 elements), padding
loads (`_expand`) and packing .b6p2x16 stores (`_compress`); `check_packed_copy` holds the PTX
ISA's restrictions on them (9.7.9.25.5.1). Their complete-tx counts the packed bytes.
"""
from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass, replace as _dc_replace

import numpy as np

from ptxsim.errors import (IllegalInstructionError, MemoryAccessError, OperandError,
                           TensorCopyError, TensorMapError, UndefinedBehavior,
                           UnsupportedFeature)
from ptxsim.isa.smem_layout import swizzle_address
from ptxsim.machine import tensormap_bytes
from ptxsim.machine.memory import GlobalMemory

# CUtensorMapDataType (cuda.h): name -> (enum value, element bytes, floating point?)
DATA_TYPES: dict[str, tuple[int, int, bool]] = {
    "uint8": (0, 1, False), "uint16": (1, 2, False), "uint32": (2, 4, False),
    "int32": (3, 4, False), "uint64": (4, 8, False), "int64": (5, 8, False),
    "float16": (6, 2, True), "float32": (7, 4, True), "float64": (8, 8, True),
    "bfloat16": (9, 2, True), "float32_ftz": (10, 4, True), "tfloat32": (11, 4, True),
    "tfloat32_ftz": (12, 4, True),
    # packed sub-byte types: 16 x U4 / U6 per 8 or 16 bytes (PACKED below)
    "16u4_align8b": (13, 0, False), "16u4_align16b": (14, 0, False),
    "16u6_align16b": (15, 0, False),
}
# The packed sub-byte types (PTX ISA 5.5.1.1.1 "Padding and alignment of the sub-byte types";
# cuda.h CUtensorMapDataType): name -> (bits of one element, shared-memory bytes of 16 elements).
# In global memory the elements are packed contiguously, element j of a 16-element group at bits
# [bits*j, bits*(j+1)) of its 8 / 12 bytes (little endian). A load (.b4x16 / .b4x16_p64 /
# .b6x16_p32) copies each group's bytes to shared memory as they are, .b4x16 without padding,
# .b4x16_p64 / .b6x16_p32 followed by 8 / 4 bytes of padding ("un-initialized": ptxsim writes
# zeros there). A store through a 16U6_ALIGN16B map is .b6p2x16 (the same map code, 5.5.1.1.1):
# 16 shared-memory bytes, each holding one element in its low 6 bits, packed into 12. A store
# through a 16U4_ALIGN16B map does not exist (9.7.9.25.5.1, restriction 2; cuda.h "Load only").
PACKED: dict[str, tuple[int, int]] = {
    "16u4_align8b": (4, 8), "16u4_align16b": (4, 16), "16u6_align16b": (6, 16)}
PTX_TYPE = {"16u4_align8b": ".b4x16", "16u4_align16b": ".b4x16_p64",
            "16u6_align16b": ".b6x16_p32"}
_PADDED = ("16u4_align16b", "16u6_align16b")
# cuda.h (cuTensorMapEncodeTiled / Im2col): "When the tensorDataType is 16U6_ALIGN16B, only the
# following swizzle modes are supported: NONE, 128B, 128B_ATOM_32B (Load & Store), 128B_ATOM_64B
# (Store only)"; 16U4_ALIGN16B: "NONE, 128B, 128B_ATOM_32B (Load only)"
ENCODE_SWIZZLES = {"16u6_align16b": ("none", "128B", "128B_atom_32B", "128B_atom_64B"),
                   "16u4_align16b": ("none", "128B", "128B_atom_32B")}
INTERLEAVES = {"none": 0, "16B": 1, "32B": 2}
SWIZZLES = {"none": 0, "32B": 1, "64B": 2, "128B": 3, "128B_atom_32B": 4,
            "128B_atom_32B_flip_8B": 5, "128B_atom_64B": 6}
SWIZZLE_SPAN = {"none": None, "32B": 32, "64B": 64, "128B": 128, "128B_atom_32B": 128,
                "128B_atom_32B_flip_8B": 128, "128B_atom_64B": 128}
# the shared-memory swizzle each mode applies, by isa.smem_layout name (same address function
# as the tcgen05 smem descriptors: CuTe Swizzle<3,4,3>, <2,4,3>, <1,4,3>, <2,5,2>)
_SMEM_SWIZZLE = {"none": "none", "32B": "32B", "64B": "64B", "128B": "128B",
                 "128B_atom_32B": "128B_base32B"}
# the modes TMA copies model: those above and the 128B swizzle with 64-byte atomicity, PTX ISA
# 5.5.7 ("the 64-byte of data is kept intact": 64-byte chunk x of 128-byte line y at x ^ (y % 2),
# i.e. address bit 7 XORed into bit 6; CuTe Swizzle<1,6,1>). 128B_ATOM_32B_FLIP_8B is not modelled.
_TMA_SWIZZLES = tuple(_SMEM_SWIZZLE) + ("128B_atom_64B",)


def tma_swizzle(addr, swizzle: str):
    """The shared-memory byte address a TMA copy with `swizzle` uses for box byte `addr` (absolute
    addresses, numpy or int)."""
    if swizzle == "128B_atom_64B":
        return addr ^ (((addr >> 7) & 1) << 6)
    return swizzle_address(addr, _SMEM_SWIZZLE[swizzle])


L2_PROMOTIONS = {"none": 0, "64B": 1, "128B": 2, "256B": 3}
OOB_FILLS = {"none": 0, "nan_request_zero_fma": 1}
# NaN OOB fill: the driver says only "a special NaN constant". Measured on an H200 (sm_90a):
# the 16-bit pattern 0x7FF7 repeated, i.e. f16/bf16 0x7FF7 and f32 0x7FF77FF7
# (tests/machine/test_tma_hardware.py cases 9-11)
OOB_NAN_PATTERN = np.array([0xF7, 0x7F], np.uint8)

_NUMPY_TO_TMA = {"uint8": "uint8", "int8": "uint8", "uint16": "uint16", "int16": "uint16",
                 "uint32": "uint32", "int32": "int32", "uint64": "uint64", "int64": "int64",
                 "float16": "float16", "float32": "float32", "float64": "float64",
                 "bfloat16": "bfloat16", "float8_e4m3fn": "uint8", "float8_e5m2": "uint8"}

SIZE = 128           # sizeof(CUtensorMap)
MAX_BOX_BYTES = 228 * 1024   # measured on the H200 (tests/cuda/test_tensormap_driver.py)
ALIGN = 64           # "tensorMap address must be aligned to 64 bytes"


def _enum(table: dict, value, field: str, prefix: str) -> str:
    """Accept 'none', 'CU_TENSOR_MAP_SWIZZLE_128B', or the enum integer."""
    if isinstance(value, (int, np.integer)):
        for k, v in table.items():
            if v == value:
                return k
    elif isinstance(value, str):
        v = value.removeprefix(prefix)
        for k in table:
            if k.lower() == v.lower():
                return k
    raise TensorMapError(field, value, f"not one of {', '.join(table)}")


def _ints(seq, n: int, what: str) -> tuple[int, ...]:
    v = tuple(int(x) for x in list(seq)[:n])
    if len(v) < n:
        raise TensorMapError(what, seq, f"needs {n} entries")
    return v


def _rank_dims_strides(rank, global_dim, global_strides):
    rank = int(rank)
    if not 1 <= rank <= 5:
        raise TensorMapError("tensorRank", rank, "must be 1 .. 5")
    return (rank, _ints(global_dim, rank, "globalDim"),
            _ints(global_strides if global_strides is not None else [], rank - 1,
                  "globalStrides"))


def _dtype(dtype) -> str:
    return _enum({k: v[0] for k, v in DATA_TYPES.items()}, dtype, "tensorDataType",
                 "CU_TENSOR_MAP_DATA_TYPE_")


def _modes(interleave, swizzle, l2_promotion, oob_fill):
    return (_enum(INTERLEAVES, interleave, "interleave", "CU_TENSOR_MAP_INTERLEAVE_"),
            _enum(SWIZZLES, swizzle, "swizzle", "CU_TENSOR_MAP_SWIZZLE_"),
            _enum(L2_PROMOTIONS, l2_promotion, "l2Promotion", "CU_TENSOR_MAP_L2_PROMOTION_L2_"),
            _enum(OOB_FILLS, oob_fill, "oobFill", "CU_TENSOR_MAP_FLOAT_OOB_FILL_"))


def _packed_bytes(dtype: str, n: int):
    """Bytes n elements take in global memory (16 packed values per 8 bytes for 16U4_ALIGN8B,
    per 16 bytes for the 16-byte-aligned packed types)."""
    esize = DATA_TYPES[dtype][1]
    if esize:
        return n * esize
    return n / 2 if dtype == "16u4_align8b" else n


@dataclass(frozen=True)
class TensorMap:
    dtype: str
    global_address: object            # int device address, or an array bound at launch
    global_dim: tuple[int, ...]
    global_strides: tuple[int, ...]   # bytes, dimensions 1 .. rank-1
    box_dim: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: str = "none"
    swizzle: str = "none"
    l2_promotion: str = "none"
    oob_fill: str = "none"
    # cuTensorMapEncodeIm2col maps (mode "im2col"): box_dim is empty; the pixel box corners
    # (rank - 2 offsets each), channels per pixel and pixels per column describe the box
    mode: str = "tiled"
    lower_corner: tuple[int, ...] = ()
    upper_corner: tuple[int, ...] = ()
    channels_per_pixel: int = 0
    pixels_per_column: int = 0

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def encode_tiled(cls, dtype, rank: int, global_address, global_dim, global_strides, box_dim,
                     element_strides=None, interleave="none", swizzle="none",
                     l2_promotion="none", oob_fill="none", *, cc=(10, 0)) -> "TensorMap":
        """cuTensorMapEncodeTiled(tensorDataType, tensorRank, globalAddress, globalDim,
        globalStrides, boxDim, elementStrides, interleave, swizzle, l2Promotion, oobFill) on a
        device of compute capability `cc`: the arrays are read for `tensorRank` entries, as the
        driver reads them; what the driver refuses raises TensorMapError."""
        rank, dims, strides = _rank_dims_strides(rank, global_dim, global_strides)
        box = _ints(box_dim, rank, "boxDim")
        es = _ints(element_strides if element_strides is not None else [1] * rank, rank,
                   "elementStrides")
        tm = cls(_dtype(dtype), global_address, dims, strides, box, es,
                 *_modes(interleave, swizzle, l2_promotion, oob_fill))
        tm.validate(cc)
        return tm

    @classmethod
    def encode_im2col(cls, dtype, rank: int, global_address, global_dim, global_strides,
                      lower_corner, upper_corner, channels_per_pixel: int,
                      pixels_per_column: int, element_strides=None, interleave="none",
                      swizzle="none", l2_promotion="none", oob_fill="none", *,
                      cc=(10, 0)) -> "TensorMap":
        """cuTensorMapEncodeIm2col: a map of the im2col mode (the bytes and the decoding are the
        driver's; TMA .im2col loads through it: machine/tma_modes.py)."""
        rank, dims, strides = _rank_dims_strides(rank, global_dim, global_strides)
        if rank < 3:
            raise TensorMapError("tensorRank", rank, "must be 3, 4 or 5 for im2col")
        lo = tuple(int(x) for x in list(lower_corner)[:rank - 2])
        up = tuple(int(x) for x in list(upper_corner)[:rank - 2])
        es = _ints(element_strides if element_strides is not None else [1] * rank, rank,
                   "elementStrides")
        tm = cls(_dtype(dtype), global_address, dims, strides, (), es,
                 *_modes(interleave, swizzle, l2_promotion, oob_fill), mode="im2col",
                 lower_corner=lo, upper_corner=up, channels_per_pixel=int(channels_per_pixel),
                 pixels_per_column=int(pixels_per_column))
        tm.validate(cc)
        return tm

    @classmethod
    def for_array(cls, array, box, *, swizzle="none", oob_fill="none", element_strides=None,
                  dtype=None, l2_promotion="none") -> "TensorMap":
        """Convenience: a C-ordered numpy array / tensor of shape (..., d1, d0) becomes a tensor
        map with globalDim = (d0, d1, ...) and byte strides from the array; `box` is given in
        the same innermost-first order as the driver's boxDim."""
        a = array.numpy() if type(array).__module__.startswith("torch") else np.asarray(array)
        name = dtype or _NUMPY_TO_TMA.get(a.dtype.name)
        if name is None:
            raise TensorMapError("tensorDataType", a.dtype.name, "no CUtensorMapDataType for "
                                 "this numpy dtype; pass dtype=")
        dims = tuple(reversed(a.shape))
        strides = tuple(reversed(a.strides))[1:]
        return cls.encode_tiled(name, a.ndim, array, dims, strides, box, element_strides,
                                "none", swizzle, l2_promotion, oob_fill)

    def validate(self, cc=(10, 0)) -> None:
        """What cuTensorMapEncodeTiled / Im2col refuse (cuda.h 13.0, each rule quoted at its
        check; the decisions agree with the H200's driver on the recorded sweep,
        tests/cuda/test_tensormap_driver.py) on a device of compute capability `cc`."""
        r = self.rank
        code, esize, is_float = DATA_TYPES[self.dtype]
        im2col = self.mode == "im2col"
        if tuple(cc) < (10, 0) and code >= 13:
            # measured: the sm_90 driver refuses the packed 16U4 / 16U6 types
            raise TensorMapError("tensorDataType", self.dtype, "packed types need sm_100")
        if tuple(cc) < (10, 0) and SWIZZLES[self.swizzle] >= 4:
            raise TensorMapError("swizzle", self.swizzle, "the 128B_ATOM swizzles need sm_100")
        # "tensorRank must be non-zero and less than or equal to ... 5. If interleave is not
        #  NONE, then tensorRank must additionally be greater than or equal to 3."
        if not (3 if im2col else 1) <= r <= 5:
            raise TensorMapError("tensorRank", r, "must be 3 .. 5" if im2col else "must be 1 .. 5")
        if self.interleave != "none" and r < 3:
            raise TensorMapError("tensorRank", r, "must be >= 3 with interleave")
        for name, seq, n in (("globalStrides", self.global_strides, r - 1),
                             ("boxDim", self.box_dim, 0 if im2col else r),
                             ("elementStrides", self.element_strides, r)):
            if len(seq) != n:
                raise TensorMapError(name, seq, f"needs {n} entries for rank {r}")
        packed16 = self.dtype in ("16u4_align16b", "16u6_align16b")
        # "globalAddress ... must be 16 byte aligned ... 32 byte aligned" with INTERLEAVE_32B
        # or the 16-byte-aligned packed types
        if isinstance(self.global_address, (int, np.integer)):
            al = 32 if self.interleave == "32B" or packed16 else 16
            if self.global_address % al:
                raise TensorMapError("globalAddress", hex(self.global_address),
                                     f"must be {al}-byte aligned")
        # "globalDim ... must be non-zero and less than or equal to 2^32"; packed types: dim 0 a
        # multiple of 128 (16B-aligned types) or 2 (16U4_ALIGN8B)
        for i, d in enumerate(self.global_dim):
            if not 1 <= d <= 2**32:
                raise TensorMapError(f"globalDim[{i}]", d, "must be 1 .. 2^32")
        if packed16 and self.global_dim[0] % 128:
            raise TensorMapError("globalDim[0]", self.global_dim[0], "must be a multiple of 128")
        if self.dtype == "16u4_align8b" and self.global_dim[0] % 2:
            raise TensorMapError("globalDim[0]", self.global_dim[0], "must be a multiple of 2")
        # "globalStrides ... must be a multiple of 16 and less than 2^40" (32 with INTERLEAVE_32B
        # and the 16-byte-aligned packed types)
        m = 32 if self.interleave == "32B" or packed16 else 16
        for i, s in enumerate(self.global_strides):
            if s % m or not 0 <= s < 2**40:
                raise TensorMapError(f"globalStrides[{i}]", s,
                                     f"must be a multiple of {m} and less than 2^40")
        # "boxDim ... must be non-zero and less than or equal to 256"; "{ boxDim[0] *
        # elementSizeInBytes } must be a multiple of 16 bytes" (measured: with interleave too);
        # the 16-byte-aligned packed types: boxDim[0] must be 128
        for i, b in enumerate(self.box_dim):
            if not 1 <= b <= 256:
                raise TensorMapError(f"boxDim[{i}]", b, "must be 1 .. 256")
        inner = self.channels_per_pixel if im2col else self.box_dim[0]
        inner_bytes = _packed_bytes(self.dtype, inner)
        if inner_bytes % 16:     # measured: channelsPerPixel x element size for im2col too
            raise TensorMapError("channelsPerPixel" if im2col else "boxDim[0]", inner,
                                 f"{'channelsPerPixel' if im2col else 'boxDim[0]'} x element "
                                 f"size = {inner_bytes} bytes must be a multiple of 16")
        if packed16 and inner != 128:
            raise TensorMapError("channelsPerPixel" if im2col else "boxDim[0]", inner,
                                 "must be 128 for the 16-byte-aligned packed types")
        # "elementStrides ... must be non-zero and less than or equal to 8"
        for i, e in enumerate(self.element_strides):
            if not 1 <= e <= 8:
                raise TensorMapError(f"elementStrides[{i}]", e, "must be 1 .. 8")
        if im2col:
            self._validate_im2col()
        # "When interleave is NONE and swizzle is not NONE, the bounding box inner dimension ...
        #  must be less than or equal to the swizzle size."
        span = SWIZZLE_SPAN[self.swizzle]
        if self.interleave == "none" and span and inner_bytes > span:
            raise TensorMapError("channelsPerPixel" if im2col else "boxDim[0]", inner,
                                 f"inner box of {inner_bytes} bytes exceeds the {span}-byte "
                                 f"swizzle span of {self.swizzle}")
        # cuda.h: "When interleave is INTERLEAVE_32B, swizzle must be SWIZZLE_32B" -- not
        # enforced: the H200's driver encodes INTERLEAVE_32B with every swizzle (recorded sweep)
        # measured: the box may not exceed 228 KiB (233,472 bytes, the shared memory of an SM),
        # counted as the driver's box-byte word: prod(floor(box / element stride)) x size
        nbytes = (self.channels_per_pixel * self.pixels_per_column if im2col else
                  math.prod(b // e for b, e in zip(self.box_dim, self.element_strides)))
        nbytes = _packed_bytes(self.dtype, nbytes)
        if nbytes > MAX_BOX_BYTES:
            raise TensorMapError("boxDim", self.box_dim or (self.channels_per_pixel,
                                                           self.pixels_per_column),
                                 f"the box holds {int(nbytes)} bytes, more than the "
                                 f"{MAX_BOX_BYTES} the driver allows")
        if self.dtype == "16u6_align16b" and self.interleave != "none":
            raise TensorMapError("interleave", self.interleave, "16U6_ALIGN16B needs NONE")
        if self.swizzle not in ENCODE_SWIZZLES.get(self.dtype, (self.swizzle,)):
            raise TensorMapError("swizzle", self.swizzle, f"{self.dtype.upper()} supports only "
                                 f"{', '.join(ENCODE_SWIZZLES[self.dtype])} (cuda.h)")
        # "FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA can only be used when tensorDataType represents
        #  a floating-point data type"
        if self.oob_fill != "none" and not is_float:
            raise TensorMapError("oobFill", self.oob_fill, "NaN fill needs a floating-point type")

    def _validate_im2col(self) -> None:
        # "pixelBoxLowerCorner / UpperCorner ...: rank 3: one signed offset within [-32768,
        #  32767]; rank 4: two within [-128, 127]; rank 5: three within [-16, 15]"
        n = {3: 16, 4: 8, 5: 5}[self.rank]
        lo, hi = -(1 << n - 1), (1 << n - 1) - 1
        for name, seq in (("pixelBoxLowerCorner", self.lower_corner),
                          ("pixelBoxUpperCorner", self.upper_corner)):
            if len(seq) != self.rank - 2:
                raise TensorMapError(name, seq, f"needs {self.rank - 2} offsets")
            for i, v in enumerate(seq):
                if not lo <= v <= hi:
                    raise TensorMapError(f"{name}[{i}]", v, f"must be in [{lo}, {hi}]")
        # "channelsPerPixel ... must be less than or equal to 256"; "pixelsPerColumn ... must
        #  be less than or equal to 1024"
        if not 1 <= self.channels_per_pixel <= 256:
            raise TensorMapError("channelsPerPixel", self.channels_per_pixel, "must be 1 .. 256")
        if not 1 <= self.pixels_per_column <= 1024:
            raise TensorMapError("pixelsPerColumn", self.pixels_per_column, "must be 1 .. 1024")
        # "The bounding box specified by pixelBoxLowerCorner and pixelBoxUpperCorner must have
        #  non-zero area": measured (all 1,200 recorded im2col calls) as
        #  int32(dim + upper) > lower for each spatial dimension -- the upper corner's
        #  coordinate dim + upper wraps as a 32-bit signed integer (a dimension of 2^31 with
        #  upper >= 0 is refused, 2^32 - 1 with upper >= 1 wraps back to a small count) -- where
        #  the spatial dimensions are 1 .. rank-2 without interleave and 0 .. rank-3 with
        #  interleave (NC/8HWC8: the channel chunk is the 16 / 32-byte element, dimension 0 is W)
        first = 0 if self.interleave != "none" else 1
        for i, (lo, up) in enumerate(zip(self.lower_corner, self.upper_corner)):
            top = (self.global_dim[first + i] + up) & 0xFFFFFFFF
            top -= (top >> 31) << 32
            if top <= lo:
                raise TensorMapError("pixelBoxUpperCorner", self.upper_corner,
                                     f"spatial dimension {first + i}: the upper corner "
                                     f"(globalDim + upper = {top} as a 32-bit signed integer) "
                                     f"is not past the lower corner ({lo})")

    # -- derived sizes ---------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.global_dim)

    @property
    def element_bytes(self) -> int:
        return DATA_TYPES[self.dtype][1]

    @property
    def box_elements(self) -> tuple[int, ...]:
        """Elements the box holds along each dimension: ceil(boxDim / elementStrides), with
        elementStrides[0] ignored without interleave."""
        es = self.effective_element_strides
        return tuple(math.ceil(b / e) for b, e in zip(self.box_dim, es))

    @property
    def effective_element_strides(self) -> tuple[int, ...]:
        es = list(self.element_strides)
        if self.interleave == "none":
            es[0] = 1
        return tuple(es)

    @property
    def element_bits(self) -> int:
        """Bits of one element in global memory (4 or 6 for the packed types)."""
        p = PACKED.get(self.dtype)
        return p[0] if p else 8 * self.element_bytes

    @property
    def box_bytes(self) -> int:
        """The bytes of the box in global memory, which a load's complete-tx counts (PTX ISA
        9.7.9.25.5.2: "the amount of data copied in bytes"); for the packed types the packed
        bytes, without the shared-memory padding (the count Triton's and CuTe DSL's expect-tx
        of 16U4_ALIGN16B / 16U6_ALIGN16B boxes use: block_scaled_matmul's 34,304 bytes, CuTe's
        size_in_bytes(Float4E2M1FN / Float6E2M3FN, smem layout))."""
        return math.prod(self.box_elements) * self.element_bits // 8

    # -- binding and binary form -----------------------------------------------------------------
    def bind(self, gmem: GlobalMemory, name: str | None = None) -> "TensorMap":
        """Map an array-valued globalAddress into `gmem` (once) and return the bound map."""
        a = self.global_address
        if isinstance(a, (int, np.integer)):
            return self
        try:
            addr = gmem.address_of(a)
        except OperandError:
            addr = gmem.map(a, name)
        tm = _dc_replace(self, global_address=int(addr))
        tm.validate()
        return tm

    def to_bytes(self) -> bytes:
        """The 128-byte CUtensorMap exactly as the CUDA driver encodes it (machine/
        tensormap_bytes.py: byte-identical to the H200 driver on the recorded sweep)."""
        if not isinstance(self.global_address, (int, np.integer)):
            raise OperandError("bind the tensor map to global memory (TensorMap.bind) before "
                               "encoding it")
        esize = DATA_TYPES[self.dtype][1] or (0.5 if self.dtype == "16u4_align8b" else 1)
        blob = tensormap_bytes.encode(
            mode=int(self.mode == "im2col"), dtype=self.dtype, rank=self.rank,
            address=int(self.global_address) % 2**64, dims=self.global_dim,
            strides=self.global_strides, box=self.box_dim, estr=self.element_strides,
            interleave=INTERLEAVES[self.interleave], swizzle=SWIZZLES[self.swizzle],
            l2=L2_PROMOTIONS[self.l2_promotion], oob=OOB_FILLS[self.oob_fill],
            element_bytes=1, lower=self.lower_corner, upper=self.upper_corner,
            channels=self.channels_per_pixel, pixels=self.pixels_per_column)
        # the driver's box-byte word (16) counts element bytes; recomputed with the true size
        words = list(struct.unpack("<32I", blob))
        words[16] = int(words[16] * esize) & 0xFFFFFFFF
        return struct.pack("<32I", *words)

    @classmethod
    def from_bytes(cls, blob) -> "TensorMap":
        blob = bytes(np.asarray(blob, np.uint8).tobytes() if not isinstance(blob, bytes)
                     else blob)
        # memoised by the 128 bytes (the map is frozen: equal bytes, equal map); successes only
        tm = _DECODED.get((cls, blob))
        if tm is None:
            tm = cls._decode(blob)
            if len(_DECODED) >= 1024:
                _DECODED.clear()
            _DECODED[(cls, blob)] = tm
        return tm

    @classmethod
    def _decode(cls, blob: bytes) -> "TensorMap":
        """The map the TMA unit sees in these bytes (any bytes decode; element type codes
        without a CUtensorMapDataType are undefined)."""
        if len(blob) != SIZE:
            raise OperandError(f"a tensor map is {SIZE} bytes, not {len(blob)}")
        f = tensormap_bytes.decode(blob)
        if f["dtype"] is None:
            raise UndefinedBehavior(f"the tensor map's element type field holds code "
                                    f"{f['code'][0]} (tf32 bit {f['code'][1]}), which is no "
                                    "CUtensorMapDataType: the map is garbage")
        inv = lambda t, v: next(k for k, x in t.items() if x == v)  # noqa: E731
        common = dict(dtype=f["dtype"], global_address=f["address"], global_dim=f["dims"],
                      global_strides=f["strides"], element_strides=f["estr"],
                      interleave=inv(INTERLEAVES, f["interleave"]) if f["interleave"] < 3
                      else "none", swizzle=inv(SWIZZLES, f["swizzle"]),
                      l2_promotion=inv(L2_PROMOTIONS, f["l2"]),
                      oob_fill=inv(OOB_FILLS, f["oob"]))
        if f["interleave"] == 3:
            raise UndefinedBehavior("the tensor map's interleave field holds 3, which is no "
                                    "CUtensorMapInterleave: the map is garbage")
        if f["mode"] == 0:
            return cls(box_dim=f["box"], **common)
        return cls(box_dim=(), mode="im2col", lower_corner=f["lower"], upper_corner=f["upper"],
                   channels_per_pixel=f["channels"], pixels_per_column=f["pixels"], **common)

    def replaced(self, field: str, value, ordinal: int | None = None) -> "TensorMap":
        """tensormap.replace.tile.<field>: the map with one field changed (natural values:
        dims and strides as numbers, modes by name). Re-validated like the driver would."""
        scalar = {"global_address": "global_address", "elemtype": "dtype",
                  "interleave_layout": "interleave", "swizzle_mode": "swizzle",
                  "fill_mode": "oob_fill"}
        vector = {"global_dim": "global_dim", "global_stride": "global_strides",
                  "box_dim": "box_dim", "element_stride": "element_strides"}
        if field in scalar:
            tm = _dc_replace(self, **{scalar[field]: value})
        elif field in vector:
            seq = list(getattr(self, vector[field]))
            if ordinal is None or not 0 <= ordinal < len(seq):
                raise OperandError(f"tensormap.replace.{field}: ordinal {ordinal} outside "
                                   f"0..{len(seq) - 1}")
            seq[ordinal] = int(value)
            tm = _dc_replace(self, **{vector[field]: tuple(seq)})
        elif field == "rank":
            r = int(value)
            grow = lambda seq, n, v: tuple(list(seq)[:n] + [v] * (n - len(seq)))  # noqa: E731
            tm = _dc_replace(self, global_dim=grow(self.global_dim, r, 1),
                             global_strides=grow(self.global_strides, r - 1,
                                                 self.global_strides[-1] if self.global_strides
                                                 else 16),
                             box_dim=grow(self.box_dim, r, 1),
                             element_strides=grow(self.element_strides, r, 1))
        else:
            raise OperandError(f"tensormap.replace: unknown field '{field}'")
        tm.validate()
        return tm

    # -- element addressing ----------------------------------------------------------------------
    def box_coordinates(self, coords) -> np.ndarray:
        """(rank, N) global coordinates of the N box elements in shared-memory order
        (dimension 0 fastest)."""
        c = [int(x) for x in coords]
        if len(c) != self.rank:
            raise OperandError(f"{len(c)} tensor coordinates for a rank-{self.rank} tensor map")
        es = self.effective_element_strides
        axes = [c[i] + es[i] * np.arange(n, dtype=np.int64)
                for i, n in enumerate(self.box_elements)]
        grids = np.meshgrid(*axes[::-1], indexing="ij")     # outermost first = C order
        return np.stack([g.ravel() for g in grids[::-1]])

    def _check_copy(self, coords) -> list[int]:
        if self.interleave != "none":
            raise UnsupportedFeature(f"tensor maps with interleave {self.interleave}")
        if self.swizzle not in _TMA_SWIZZLES:
            raise UnsupportedFeature(f"swizzle mode {self.swizzle} (its shared-memory pattern is "
                                     "not established)")
        if not self.element_bytes:     # the copies take packed maps apart first (_views)
            raise UnsupportedFeature(f"packed tensor-map type {self.dtype} on this path")
        if not isinstance(self.global_address, (int, np.integer)):
            raise OperandError("tensor map not bound to global memory")
        c = [int(x) for x in coords]
        if len(c) != self.rank:
            raise OperandError(f"{len(c)} tensor coordinates for a rank-{self.rank} tensor map")
        if (c[0] * self.element_bytes) % 16:
            # measured on an H200 (sm_90a): a box whose first element is not 16-byte aligned in
            # global memory stops the kernel with "an illegal instruction was encountered"
            raise IllegalInstructionError(f"cp.async.bulk.tensor: inner coordinate {c[0]} x "
                            f"{self.element_bytes} bytes is not a multiple of 16; the TMA unit "
                            "faults (illegal instruction, measured on sm_90a)")
        return c

    @property
    def smem_row_pitch(self) -> int:
        """Bytes between successive box rows (dimension-0 runs) in shared memory: the inner box
        bytes without swizzle; the whole swizzle span with one, the row padded (measured on an
        H200, tests/machine/test_tma_hardware.py cases 6-7)."""
        span = SWIZZLE_SPAN[self.swizzle]
        return span if span else self.smem_row_bytes

    @property
    def smem_row_bytes(self) -> int:
        """Shared-memory bytes of one box row before any swizzle padding (the packed types: 8
        bytes per 16 elements for 16U4_ALIGN8B, 16 for the 16-byte-aligned ones)."""
        p = PACKED.get(self.dtype)
        n0 = self.channels_per_pixel if self.mode == "im2col" else self.box_elements[0]
        return n0 * p[1] // 16 if p else n0 * self.element_bytes

    @property
    def smem_footprint(self) -> int:
        """Shared-memory bytes the box covers (>= box_bytes when rows are padded)."""
        return math.prod(self.box_elements[1:]) * self.smem_row_pitch


def _check_smem_window(smem: np.ndarray, start: int, nbytes: int, align: int, what: str):
    if start % align:
        raise MemoryAccessError(f"{what}: shared-memory address must be {align}-byte aligned",
                                address=start, space="shared::cta")
    if start < 0 or start + nbytes > smem.size:
        raise MemoryAccessError(f"{what}: {nbytes} bytes at {start:#x} leave the CTA's "
                                f"{smem.size} bytes of shared memory", address=start,
                                space="shared::cta")


_DECODED: dict = {}          # (class, 128 bytes) -> TensorMap (TensorMap.from_bytes)


# -------------------------------------------------------------------------------------------------
# Packed sub-byte types: byte views of the map, the padding, the legality of a copy
# -------------------------------------------------------------------------------------------------
def _views(tmap: TensorMap) -> tuple[TensorMap, TensorMap]:
    """(global view, shared view) of a map: for a packed type two uint8 maps whose dimension 0
    counts bytes, the global view's the packed bytes (elements x bits / 8), the shared view's
    the bytes in shared memory (16 elements per 8 or 16 bytes); the map itself twice otherwise.
    The copies move bytes through these views; `_expand` / `_compress` convert between the two
    where they differ. Dimension-0 counts of a legal map are whole bytes (check_packed_copy)."""
    if tmap.dtype not in PACKED:
        return tmap, tmap
    if not isinstance(tmap.global_address, (int, np.integer)):
        raise OperandError("tensor map not bound to global memory")
    return _packed_views(tmap)


@functools.lru_cache(maxsize=512)
def _packed_views(tmap: TensorMap) -> tuple[TensorMap, TensorMap]:
    bits, per16 = PACKED[tmap.dtype]
    im2col = tmap.mode == "im2col"
    inner = tmap.channels_per_pixel if im2col else tmap.box_dim[0]

    def view(num: int, den: int) -> TensorMap:
        kw = dict(dtype="uint8", oob_fill="none",
                  global_dim=(tmap.global_dim[0] * num // den,) + tuple(tmap.global_dim[1:]))
        if im2col:
            kw["channels_per_pixel"] = inner * num // den
        else:
            kw["box_dim"] = (inner * num // den,) + tuple(tmap.box_dim[1:])
        return _dc_replace(tmap, **kw)
    return view(bits, 8), view(per16, 16)


def _global_coords(tmap: TensorMap, coords) -> np.ndarray:
    """Coordinates (..., rank) in the global view: dimension 0 in packed bytes."""
    c = np.array(coords, np.int64)
    p = PACKED.get(tmap.dtype)
    if p is not None:
        c[..., 0] = c[..., 0] * p[0] // 8
    return c


def _expand(tmap: TensorMap, data: np.ndarray) -> np.ndarray:
    """Global bytes (..., n) of a load -> its shared-memory bytes: for .b4x16_p64 / .b6x16_p32
    each 8 / 12-byte group followed by 8 / 4 bytes of padding (zeros; the PTX ISA: "the padded
    region that gets added is un-initialized"), else unchanged."""
    if tmap.dtype not in _PADDED:
        return data
    g = 2 * PACKED[tmap.dtype][0]                       # 8 or 12 bytes per 16 elements
    d = data.reshape(data.shape[:-1] + (-1, g))
    out = np.zeros(d.shape[:-1] + (16,), np.uint8)
    out[..., :g] = d
    return out.reshape(data.shape[:-1] + (-1,))


def _compress(tmap: TensorMap, data: np.ndarray) -> np.ndarray:
    """Shared-memory bytes (..., n) of a store -> the global bytes: .b6p2x16 (16U6_ALIGN16B)
    keeps the low 6 bits of each byte, element j of a 16-byte group at bits [6j, 6j + 6) of 12
    bytes (the 2 padding bits of each byte discarded, 5.5.1.1.1); else unchanged."""
    if tmap.dtype != "16u6_align16b":
        return data
    v = (data.reshape(data.shape[:-1] + (-1, 4)) & 0x3F).astype(np.uint32)
    w = v[..., 0] | v[..., 1] << 6 | v[..., 2] << 12 | v[..., 3] << 18
    out = np.stack([w & 0xFF, w >> 8 & 0xFF, w >> 16], axis=-1).astype(np.uint8)
    return out.reshape(data.shape[:-1] + (-1,))


_RULE = "PTX ISA 9.7.9.25.5.1 (restrictions on tensor copies of sub-byte types)"
# 9.7.9.25.5.1, restriction 9: .b4x16_p64 / .b6x16_p32 / .b6p2x16 support no swizzle or the
# 128B swizzle with any swizzle atomicity but 32B with 8B flip; the .b6p2x16 stores of sm_103a
# also the 64B swizzle (16B atomicity)
_PADDED_SWIZZLES = ("none", "128B", "128B_atom_32B", "128B_atom_64B")


def check_packed_copy(tmap: TensorMap, coords=None, *, store: bool = False,
                      target: str | None = None, reduce: bool = False,
                      what: str = "cp.async.bulk.tensor") -> None:
    """The PTX ISA's restrictions on tensor copies of the packed sub-byte types (9.7.9.25.5.1,
    each rule cited by number; sm_100f's values, the sm_103a .b6p2x16 store exceptions where
    `target` says sm_103a), for the boxes at `coords` ((..., rank) or None): TensorCopyError
    naming the rule. A first coordinate that leaves a 16U4_ALIGN8B box not 16-byte aligned is
    the IllegalInstructionError of every other type (5.5.3.1; measured for those on an H200).
    Maps of other types pass."""
    if tmap.dtype not in PACKED:
        return
    u6 = tmap.dtype == "16u6_align16b"
    name = ".b6p2x16" if (store and u6) else PTX_TYPE[tmap.dtype]
    head = f"{what} through a {tmap.dtype.upper()} ({name}) tensor map"
    if reduce:
        raise TensorCopyError(f"cp.reduce.async.bulk.tensor through a {tmap.dtype.upper()} "
                              f"({name}) tensor map: tensor reductions do not support the "
                              f"sub-byte types ({_RULE}, restriction 1)")
    if not store and target and str(target).startswith("sm_120"):
        raise TensorCopyError(f"{head} on {target}: loads of the sub-byte types do not exist on "
                              f"sm_120a ({_RULE}, restriction 3)")
    if tmap.oob_fill != "none":
        raise TensorCopyError(f"{head}: the OOB-NaN fill mode does not support the sub-byte "
                              f"types ({_RULE}, restriction 4)")
    c0 = None if coords is None else np.asarray(coords, np.int64).reshape(-1, tmap.rank)[:, 0]
    if tmap.dtype == "16u4_align8b":
        if tmap.global_dim[0] % 2 or (tmap.mode == "tiled" and tmap.box_dim[0] % 32):
            raise TensorCopyError(f"{head}: globalDim[0] = {tmap.global_dim[0]} / boxDim[0] = "
                                  f"{tmap.box_dim[0] if tmap.box_dim else None} do not make "
                                  "whole 16-byte rows of 4-bit elements (cuda.h)")
        if c0 is not None and (c0 % 32).any():
            bad = int(c0[np.argmax(c0 % 32 != 0)])
            raise IllegalInstructionError(
                f"{head}: inner coordinate {bad} x 4 bits is not a multiple of 16 bytes (the "
                "bounding box address must be 16-byte aligned, PTX ISA 5.5.3.1); the TMA unit "
                "faults (illegal instruction, as measured for the other types on sm_90a)")
        return
    if store and not u6:
        raise TensorCopyError(f"{head}: stores (.global.shared::cta) do not support "
                              f".b4x16_p64 ({_RULE}, restriction 2; cuda.h: 16U4_ALIGN16B "
                              "is load only)")
    sm103 = store and u6 and target is not None and str(target).startswith("sm_103")
    unit = 64 if sm103 else 128                         # elements: 48 / 96 bytes of 6-bit ones
    inner = tmap.channels_per_pixel if tmap.mode == "im2col" else tmap.box_dim[0]
    if inner not in ((64, 128) if sm103 else (128,)):
        gb = tmap.element_bits * inner / 8
        raise TensorCopyError(f"{head}: Box-Size[0] is {inner} elements ({gb:g} bytes); it must "
                              f"be exactly {'48 or 96' if sm103 else 96 if u6 else 64} bytes "
                              f"({'64 or ' if sm103 else ''}128 elements) ({_RULE}, "
                              f"restriction 5{'; sm_103a .b6p2x16 stores' if sm103 else ''})")
    if tmap.global_dim[0] % unit:
        raise TensorCopyError(f"{head}: Tensor-Size[0] = {tmap.global_dim[0]} elements is not a "
                              f"multiple of {unit} ({unit * tmap.element_bits // 8} bytes; "
                              f"{_RULE}, restriction 6)")
    if c0 is not None and (c0 % unit).any():
        bad = int(c0[np.argmax(c0 % unit != 0)])
        raise TensorCopyError(f"{head}: the first tensor coordinate {bad} is not a multiple of "
                              f"{unit} ({_RULE}, restriction 7)")
    al = 16 if sm103 else 32
    if isinstance(tmap.global_address, (int, np.integer)) and tmap.global_address % al:
        raise TensorCopyError(f"{head}: the global address {int(tmap.global_address):#x} is not "
                              f"{al}-byte aligned ({_RULE}, restriction 8)")
    for i, st in enumerate(tmap.global_strides):
        if st % al:
            raise TensorCopyError(f"{head}: the tensor stride of dimension {i + 1} ({st} bytes) "
                                  f"is not {al}-byte aligned ({_RULE}, restriction 8)")
    if tmap.swizzle not in _PADDED_SWIZZLES + (("64B",) if sm103 else ()):
        raise TensorCopyError(f"{head}: swizzle {tmap.swizzle} is not supported; these types "
                              f"take no swizzle or the 128B swizzle with 16B / 32B / 64B "
                              f"atomicity ({_RULE}, restriction 9)")


def _row_plan(tmap: TensorMap, coords, gmem: GlobalMemory):
    """Row-granular plan of a tile copy; rows are the box's dimension-0 runs in shared-memory
    order. Returns (valid (R, n0) bool, row byte offset in its buffer (R,), buffer per row (R,),
    inner byte offsets (n0,) relative to the row), read-only arrays. Memoised per global memory
    (`GlobalMemory.plans`, emptied whenever a buffer is mapped) by (map, coordinates); only
    successful plans are kept, so every error is raised again."""
    c = tmap._check_copy(coords)
    key = (tmap, tuple(c))
    plan = gmem.plans.get(key)
    if plan is None:
        plan = _make_row_plan(tmap, c, gmem)
        for a in plan:
            a.setflags(write=False)
        if len(gmem.plans) >= 4096:
            gmem.plans.clear()
        gmem.plans[key] = plan
    return plan


def _make_row_plan(tmap: TensorMap, c, gmem: GlobalMemory):
    e, n = tmap.element_bytes, tmap.box_elements
    es = tmap.effective_element_strides
    inner = c[0] + np.arange(n[0], dtype=np.int64)
    inner_ok = (inner >= 0) & (inner < tmap.global_dim[0])
    if tmap.rank > 1:
        axes = [c[i] + es[i] * np.arange(n[i], dtype=np.int64) for i in range(1, tmap.rank)]
        grids = np.meshgrid(*axes[::-1], indexing="ij")
        outer = np.stack([g.ravel() for g in grids[::-1]])              # (rank-1, R)
        dims = np.array(tmap.global_dim[1:], np.int64)[:, None]
        row_ok = ((outer >= 0) & (outer < dims)).all(axis=0)
        strides = np.array(tmap.global_strides, np.int64)[:, None]
        row_addr = int(tmap.global_address) + (outer * strides).sum(axis=0)
    else:
        row_ok = np.ones(1, bool)
        row_addr = np.array([int(tmap.global_address)], np.int64)
    valid = row_ok[:, None] & inner_ok[None, :]
    buf = np.zeros(row_addr.size, np.int64)
    off = np.zeros(row_addr.size, np.int64)
    if valid.any():
        lo, hi = inner[inner_ok][0] * e, (inner[inner_ok][-1] + 1) * e - 1
        b_first, _ = gmem.locate((row_addr[row_ok] + lo).astype(np.uint64), 1)
        b_last, _ = gmem.locate((row_addr[row_ok] + hi).astype(np.uint64), 1)
        if (b_first != b_last).any():
            bad = row_addr[row_ok][np.argmax(b_first != b_last)] + hi
            raise MemoryAccessError("a box row of cp.async.bulk.tensor spans two global buffers: "
                                    f"{gmem.describe(int(bad))}", address=int(bad),
                                    space="global")
        buf[row_ok] = b_first
        bases = np.array([b.base for b in gmem.buffers], np.int64)
        off[row_ok] = row_addr[row_ok] - bases[b_first]
    return valid, off, buf, inner * e


def _gather_index(off, inner_bytes, e):
    return (off[:, None] + inner_bytes[None, :])[:, :, None] + np.arange(e)


def _chunk_index(tmap: TensorMap, start: int, rows: int) -> np.ndarray:
    """16-byte chunk numbers (rows, K) of the box in shared memory, swizzled (memoised: a pure
    function of the map's box / swizzle and the offset; a read-only array)."""
    return _chunk_index_of(tmap, int(start), int(rows))


@functools.lru_cache(maxsize=1024)
def _chunk_index_of(tmap: TensorMap, start: int, rows: int) -> np.ndarray:
    out = _make_chunk_index(tmap, start, rows)
    out.setflags(write=False)
    return out


def _make_chunk_index(tmap: TensorMap, start: int, rows: int) -> np.ndarray:
    k = tmap.smem_row_bytes // 16
    lin = start + np.arange(rows)[:, None] * tmap.smem_row_pitch + 16 * np.arange(k)[None, :]
    return tma_swizzle(lin, tmap.swizzle) // 16


def tile_global_rows(tmap: TensorMap, coords, gmem: GlobalMemory):
    """(sorted start addresses, byte lengths) of the in-bound global-memory runs a tile copy of
    `tmap` at `coords` touches (one per box row): what the sanitizer marks while a tile store
    is in flight."""
    g, _ = _views(tmap)
    valid, off, buf, inner_bytes = _row_plan(g, _global_coords(tmap, coords), gmem)
    rows = valid.any(axis=1)
    if not rows.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    first = valid[rows].argmax(axis=1)
    count = valid[rows].sum(axis=1)
    bases = np.array([b.base for b in gmem.buffers], np.int64)[buf[rows]]
    starts = bases + off[rows] + inner_bytes[first]
    lens = count * g.element_bytes
    order = np.argsort(starts)
    return starts[order], lens[order]


def tiles_global_rows(tmap: TensorMap, coords):
    """(copy index, start address, byte length) of the in-bound global-memory runs (one per box
    row) of tile copies of `tmap` at `coords` (B, rank), as _box_gather walks them: what the
    sanitizer marks while tile stores are in flight."""
    coords = _global_coords(tmap, np.asarray(coords, np.int64).reshape(-1, tmap.rank))
    tmap, _ = _views(tmap)
    e, n = tmap.element_bytes, tmap.box_elements
    B = coords.shape[0]
    inner = coords[:, :1] + np.arange(n[0], dtype=np.int64)
    ok = (inner >= 0) & (inner < tmap.global_dim[0])                          # (B, n0)
    first, count = ok.argmax(axis=1), ok.sum(axis=1)
    if tmap.rank > 1:
        outer = coords[:, 1:, None] + _outer_grid(tmap)[None]                 # (B, r-1, R)
        dims = np.array(tmap.global_dim[1:], np.int64)[None, :, None]
        row_ok = ((outer >= 0) & (outer < dims)).all(axis=1)                  # (B, R)
        strides = np.array(tmap.global_strides, np.int64)[None, :, None]
        row_addr = int(tmap.global_address) + (outer * strides).sum(axis=1)    # (B, R)
    else:
        row_ok = np.ones((B, 1), bool)
        row_addr = np.full((B, 1), int(tmap.global_address), np.int64)
    b, r = np.nonzero(row_ok & (count > 0)[:, None])
    start = row_addr[b, r] + (coords[b, 0] + first[b]) * e
    return b, start, count[b] * e


def tile_smem_chunks(tmap: TensorMap, start: int) -> np.ndarray:
    """The 16-byte shared-memory chunk numbers a tile copy of `tmap` at shared offset `start`
    writes (load) or reads (store), flattened, read-only: what the sanitizer marks while the
    copy is in flight."""
    _, tmap = _views(tmap)
    rows = math.prod(tmap.box_elements[1:]) if tmap.rank > 1 else 1
    return _chunk_index(tmap, start, rows).reshape(-1)


def _chunks(smem: np.ndarray) -> np.ndarray:
    return smem[: smem.size // 16 * 16].reshape(-1, 16)


def tma_load_tile(tmap: TensorMap, coords, gmem: GlobalMemory, smem: np.ndarray,
                  dst: int) -> int:
    """cp.async.bulk.tensor.Nd.shared::cluster.global.tile: copy the box at `coords` into one
    CTA's shared memory `smem` (1-D uint8) at offset `dst`. Returns the complete-tx bytes."""
    check_packed_copy(tmap, [coords] if len(coords) == tmap.rank else None)
    g, sv = _views(tmap)
    # PTX 9.7.9.25: the shared-memory destination must be 128-byte aligned
    _check_smem_window(smem, dst, sv.smem_footprint, 128, "cp.async.bulk.tensor")
    valid, off, buf, inner_bytes = _row_plan(g, _global_coords(tmap, coords), gmem)
    e = g.element_bytes
    rows, n0 = valid.shape
    if valid.all() and (buf == buf[0]).all():       # the whole box inside one buffer
        data = gmem.buffers[buf[0]].u8[(off + inner_bytes[0])[:, None] + np.arange(n0 * e)]
    else:
        idx = _gather_index(off, inner_bytes, e)
        data = np.empty(idx.shape, np.uint8)
        for b in np.unique(buf[valid.any(axis=1)]):
            sel = (buf == b)[:, None] & valid
            data[sel] = gmem.buffers[b].u8[idx[sel]]
        data[~valid] = (np.resize(OOB_NAN_PATTERN, e) if tmap.oob_fill == "nan_request_zero_fma"
                        else 0)
    data = _expand(tmap, data.reshape(rows, -1))
    _chunks(smem)[_chunk_index(sv, dst, rows)] = data.reshape(rows, -1, 16)
    return tmap.box_bytes


def tma_store_tile(tmap: TensorMap, coords, gmem: GlobalMemory, smem: np.ndarray,
                   src: int) -> int:
    """cp.async.bulk.tensor.Nd.global.shared::cta.tile: write the box from shared memory at `src`
    to global memory at `coords`; out-of-bound elements are not written."""
    check_packed_copy(tmap, [coords] if len(coords) == tmap.rank else None, store=True)
    g, sv = _views(tmap)
    _check_smem_window(smem, src, sv.smem_footprint, 128, "cp.async.bulk.tensor")
    if min(int(c) for c in coords) < 0:
        # measured on an H200 (sm_90a): a tile store with any negative coordinate stops the
        # kernel with "an illegal instruction was encountered" (boxes beyond the far edge are
        # fine and clipped); tests/machine/test_tma_hardware.py
        raise IllegalInstructionError(f"cp.async.bulk.tensor store at coordinates "
                                      f"{tuple(int(c) for c in coords)}: a negative coordinate "
                                      "faults (illegal instruction, measured on sm_90a)")
    valid, off, buf, inner_bytes = _row_plan(g, _global_coords(tmap, coords), gmem)
    e = g.element_bytes
    rows, n0 = valid.shape
    data = _chunks(smem)[_chunk_index(sv, src, rows)].reshape(rows, -1)
    data = _compress(tmap, data).reshape(rows, n0, e)
    if valid.all() and (buf == buf[0]).all():
        gmem.buffers[buf[0]].u8[(off + inner_bytes[0])[:, None] + np.arange(n0 * e)] = \
            data.reshape(rows, -1)
        return tmap.box_bytes
    idx = _gather_index(off, inner_bytes, e)
    for b in np.unique(buf[valid.any(axis=1)]):
        sel = (buf == b)[:, None] & valid
        gmem.buffers[b].u8[idx[sel]] = data[sel]
    return tmap.box_bytes


# -------------------------------------------------------------------------------------------------
# Many boxes of one map at once (the TMA copies one scheduler step issues, in issue order)
# -------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _outer_grid(tmap: TensorMap) -> np.ndarray:
    """(rank-1, R) element offsets along dimensions 1.. of the box's rows, in shared-memory
    order (dimension 1 fastest), before adding the coordinates: as _make_row_plan orders them."""
    es, n = tmap.effective_element_strides, tmap.box_elements
    axes = [es[i] * np.arange(n[i], dtype=np.int64) for i in range(1, tmap.rank)]
    grids = np.meshgrid(*axes[::-1], indexing="ij")
    out = np.stack([g.ravel() for g in grids[::-1]])
    out.setflags(write=False)
    return out


class _Rows:
    """Byte index (B, R, W) of whole rows, W consecutive bytes from each `start` (B, R), built
    only when asked for (`full`): the word gather / scatter needs the starts alone."""

    def __init__(self, start: np.ndarray, width: int):
        self.start, self.width = start, width
        self.shape = start.shape + (width,)

    def full(self) -> np.ndarray:
        return self.start[:, :, None] + np.arange(self.width)


def _box_gather(tmap: TensorMap, coords: np.ndarray, gmem: GlobalMemory):
    """For B boxes (coords (B, rank) int64): (buffer, byte index (B, R, n0*e), valid (B, R,
    n0*e)) when every in-bound element lies in one buffer, else None. The index of an
    out-of-bound element is 0 (masked by valid). With every element in bounds the index is a
    `_Rows` (row starts; valid None)."""
    e, n = tmap.element_bytes, tmap.box_elements
    B = coords.shape[0]
    inner = coords[:, :1] + np.arange(n[0], dtype=np.int64)                   # (B, n0)
    inner_ok = (inner >= 0) & (inner < tmap.global_dim[0])
    if tmap.rank > 1:
        outer = coords[:, 1:, None] + _outer_grid(tmap)[None]                 # (B, r-1, R)
        dims = np.array(tmap.global_dim[1:], np.int64)[None, :, None]
        row_ok = ((outer >= 0) & (outer < dims)).all(axis=1)                  # (B, R)
        strides = np.array(tmap.global_strides, np.int64)[None, :, None]
        row_addr = int(tmap.global_address) + (outer * strides).sum(axis=1)    # (B, R)
    else:
        row_ok = np.ones((B, 1), bool)
        row_addr = np.full((B, 1), int(tmap.global_address), np.int64)
    if row_ok.all() and inner_ok.all():
        # every element in bounds: each row is one run of n0 * e bytes
        start = row_addr + coords[:, :1] * e                                  # (B, R)
        lo, hi = int(start.min()), int(start.max()) + n[0] * e - 1
        buf, base = _one_buffer(gmem, lo, hi)
        if buf is None:
            return None
        return buf, _Rows(start - base, n[0] * e), None
    valid = row_ok[:, :, None] & inner_ok[:, None, :]                         # (B, R, n0)
    if not valid.any():
        return None
    first = row_addr[:, :, None] + inner[:, None, :] * e                       # (B, R, n0)
    buf, base = _one_buffer(gmem, int(first[valid].min()), int(first[valid].max()) + e - 1)
    if buf is None:
        return None
    idx = (np.where(valid, first - base, 0)[..., None] + np.arange(e)).reshape(B, -1, n[0] * e)
    return buf, idx, np.repeat(valid, e, axis=2)


def _word_index(rows: _Rows):
    """Index of 8-byte words (B, R, W / 8) of whole rows, or None when they are not aligned."""
    if rows.width % 8 or (rows.start % 8).any():
        return None
    return (rows.start // 8)[..., None] + np.arange(rows.width // 8)


def _words(buf) -> np.ndarray:
    return buf.u8[:buf.u8.size // 8 * 8].view(np.uint64)


def _gather_rows(buf, rows: _Rows) -> np.ndarray:
    """buf.u8[rows.full()] (each row W consecutive bytes), as 8-byte words when the rows are
    word aligned (a gather of W / 8 elements instead of W)."""
    w = _word_index(rows)
    if w is not None:
        return _words(buf)[w].view(np.uint8).reshape(rows.shape)
    return buf.u8[rows.full()]


def _scatter_rows(buf, rows: _Rows, data: np.ndarray) -> None:
    """buf.u8[rows.full()] = data (B, R, W), by words when aligned (later rows win, as in the
    byte scatter: numpy assigns repeated indices in order)."""
    w = _word_index(rows)
    if w is not None:
        _words(buf)[w] = np.ascontiguousarray(data).view(np.uint64).reshape(w.shape)
    else:
        buf.u8[rows.full()] = data


def _one_buffer(gmem: GlobalMemory, lo: int, hi: int):
    """(buffer, its base address) holding bytes lo .. hi, or (None, None) when they lie in two
    (an address in no buffer raises MemoryAccessError, as the per-box copy would)."""
    b_lo, off_lo = gmem.locate(np.array([lo], np.uint64), 1)
    b_hi, _ = gmem.locate(np.array([hi], np.uint64), 1)
    if b_lo[0] != b_hi[0]:
        return None, None
    return gmem.buffers[int(b_lo[0])], lo - int(off_lo[0])


def _last_of_each(*keys) -> np.ndarray:
    """Positions of the last occurrence of each distinct row of `keys` (arrays with one row
    per copy), in order: copies issued again with the same operands are one copy (the source
    does not change between them), placed at their last issue."""
    n = len(keys[0])
    rec = np.concatenate([np.asarray(k).astype(np.int64).reshape(n, -1) for k in keys], axis=1)
    if n <= 1:
        return np.arange(n)
    if (rec == rec[:1]).all():
        return np.array([n - 1])
    _, last = np.unique(rec[::-1], axis=0, return_index=True)
    return np.sort(n - 1 - last)


def _box_chunks(tmap: TensorMap, shared, ctas: np.ndarray, offs: np.ndarray) -> np.ndarray:
    """16-byte chunk numbers (B, rows, K) in shared.data viewed as (-1, 16) of each box."""
    _, tmap = _views(tmap)
    rows = math.prod(tmap.box_elements[1:])
    per_cta = shared.data.shape[1] // 16
    u, inv = np.unique(offs, return_inverse=True)
    if u.size <= 4:                              # the usual case: memoised per offset
        local = np.stack([_chunk_index(tmap, int(o), rows) for o in u.tolist()])[inv.reshape(-1)]
    else:                                        # many offsets: one vectorised swizzle
        k = tmap.smem_row_bytes // 16
        lin = (offs[:, None, None] + (np.arange(rows)[:, None] * tmap.smem_row_pitch
                                      + 16 * np.arange(k)[None, :])[None])
        local = tma_swizzle(lin, tmap.swizzle) // 16
    return ctas[:, None, None] * per_cta + local


def _tiles_ok(tmap: TensorMap, coords: np.ndarray, shared, offs: np.ndarray) -> bool:
    """The conditions under which the batched copies give the per-box results: every per-box
    check passes (else the per-box copy raises it, in order) and the boxes are whole chunks.
    `tmap` / `coords`: the global view (`_views`, `_global_coords`); `sv` the shared view."""
    try:
        tmap._check_copy(coords[0])
    except Exception:          # noqa: BLE001 -- the per-box path raises it
        return False
    e = tmap.element_bytes
    return bool(coords.shape[1] == tmap.rank and not ((coords[:, 0] * e) % 16).any()
                and (tmap.box_elements[0] * e) % 16 == 0)


def _smem_ok(sv: TensorMap, shared, offs: np.ndarray) -> bool:
    fp = sv.smem_footprint
    return bool(shared.data.shape[1] % 16 == 0 and not (offs % 128).any() and (offs >= 0).all()
                and (offs + fp <= shared.data.shape[1]).all())


def _checked(tmap: TensorMap, coords: np.ndarray, store: bool) -> bool:
    """check_packed_copy of every box; False where it raises (the per-box path raises it)."""
    try:
        check_packed_copy(tmap, coords, store=store)
    except Exception:          # noqa: BLE001
        return False
    return True


def tma_load_tiles(tmap: TensorMap, coords, gmem: GlobalMemory, shared, ctas, offs) -> None:
    """`tma_load_tile` of B boxes of one map (coords (B, rank)) into the shared memory of CTAs
    `ctas` at offsets `offs`, in that order: one gather from global memory and one scatter into
    shared memory (shared: machine.memory.SharedMemory) when every box passes its checks and
    its in-bound elements lie in one buffer; else box by box."""
    coords = np.asarray(coords, np.int64).reshape(len(ctas), -1)
    ctas, offs = np.asarray(ctas, np.int64), np.asarray(offs, np.int64)
    keep = _last_of_each(coords, ctas, offs)
    coords, ctas, offs = coords[keep], ctas[keep], offs[keep]
    g, sv = _views(tmap)
    gc = _global_coords(tmap, coords)
    plan = None
    if _checked(tmap, coords, False) and _tiles_ok(g, gc, shared, offs) and \
            _smem_ok(sv, shared, offs):
        plan = _box_gather(g, gc, gmem)
    if plan is None:
        for c, cta, off in zip(coords.tolist(), ctas.tolist(), offs.tolist()):
            tma_load_tile(tmap, c, gmem, shared.cta_view(cta), off)
        return
    buf, idx, valid = plan
    data = _gather_rows(buf, idx) if isinstance(idx, _Rows) else buf.u8[idx]
    e = g.element_bytes
    if valid is not None and not valid.all():
        fill = (np.resize(OOB_NAN_PATTERN, e) if tmap.oob_fill == "nan_request_zero_fma"
                else np.zeros(e, np.uint8))
        data = np.where(valid, data, np.resize(fill, data.shape[-1])[None, None, :])
    B, R = idx.shape[:2]
    shared.data.reshape(-1, 16)[_box_chunks(sv, shared, ctas, offs)] = \
        _expand(tmap, data).reshape(B, R, -1, 16)


def tma_store_tiles(tmap: TensorMap, coords, gmem: GlobalMemory, shared, ctas, offs) -> None:
    """`tma_store_tile` of B boxes (coords (B, rank)) from the shared memory of CTAs `ctas` at
    offsets `offs`, in that order (a later box's bytes win where boxes overlap, as when stored
    one after the other); box by box unless every box passes its checks and lies in one
    buffer."""
    coords = np.asarray(coords, np.int64).reshape(len(ctas), -1)
    ctas, offs = np.asarray(ctas, np.int64), np.asarray(offs, np.int64)
    keep = _last_of_each(coords, ctas, offs)
    coords, ctas, offs = coords[keep], ctas[keep], offs[keep]
    g, sv = _views(tmap)
    gc = _global_coords(tmap, coords)
    plan = None
    if _checked(tmap, coords, True) and _tiles_ok(g, gc, shared, offs) and \
            _smem_ok(sv, shared, offs) and (coords >= 0).all():
        plan = _box_gather(g, gc, gmem)
    if plan is None:
        for c, cta, off in zip(coords.tolist(), ctas.tolist(), offs.tolist()):
            tma_store_tile(tmap, c, gmem, shared.cta_view(cta), off)
        return
    buf, idx, valid = plan
    B, R = idx.shape[:2]
    data = shared.data.reshape(-1, 16)[_box_chunks(sv, shared, ctas, offs)].reshape(B, R, -1)
    data = _compress(tmap, data)
    if isinstance(idx, _Rows):
        _scatter_rows(buf, idx, data)
    elif valid is None or valid.all():
        buf.u8[idx] = data
    else:
        buf.u8[idx[valid]] = data[valid]


# -------------------------------------------------------------------------------------------------
# cp.async.bulk (non-tensor) and multicast
# -------------------------------------------------------------------------------------------------
def _bulk_checks(size: int, *addrs):
    # PTX 9.7.9.24 cp.async.bulk: "size ... multiple of 16"; addresses 16-byte aligned
    if size <= 0 or size % 16:
        raise OperandError(f"cp.async.bulk size {size} must be a positive multiple of 16")
    for a in addrs:
        if a % 16:
            raise MemoryAccessError("cp.async.bulk address not 16-byte aligned", address=a)


def bulk_global_to_shared(gmem: GlobalMemory, src: int, smem: np.ndarray, dst: int,
                          size: int) -> int:
    """cp.async.bulk.shared::cta/cluster.global: `size` bytes; returns complete-tx bytes."""
    _bulk_checks(size, src, dst)
    _check_smem_window(smem, dst, size, 16, "cp.async.bulk")
    smem[dst:dst + size] = gmem.read_block(src, size)
    return size


def bulk_shared_to_global(smem: np.ndarray, src: int, gmem: GlobalMemory, dst: int,
                          size: int) -> int:
    """cp.async.bulk.global.shared::cta (bulk_group completion)."""
    _bulk_checks(size, src, dst)
    _check_smem_window(smem, src, size, 16, "cp.async.bulk")
    gmem.write_block(dst, smem[src:src + size])
    return size


def bulk_shared_to_shared(src_smem: np.ndarray, src: int, dst_smem: np.ndarray, dst: int,
                          size: int) -> int:
    """cp.async.bulk.shared::cluster.shared::cta: CTA-to-CTA copy inside a cluster."""
    _bulk_checks(size, src, dst)
    _check_smem_window(src_smem, src, size, 16, "cp.async.bulk")
    _check_smem_window(dst_smem, dst, size, 16, "cp.async.bulk")
    dst_smem[dst:dst + size] = src_smem[src:src + size]
    return size


def multicast_ranks(cta_mask: int, cluster_size: int) -> list[int]:
    """Destination %cluster_ctarank values of a 16-bit ctaMask (PTX 9.7.9.25: bit i = rank i).
    A bit naming a CTA outside the cluster is undefined."""
    if not 0 <= cta_mask < 1 << 16:
        raise OperandError(f"ctaMask {cta_mask:#x} is not a 16-bit value")
    if cta_mask >> cluster_size:
        raise UndefinedBehavior(f"ctaMask {cta_mask:#06x} names CTA ranks beyond the cluster of "
                                f"{cluster_size}")
    return [r for r in range(cluster_size) if cta_mask >> r & 1]


# -------------------------------------------------------------------------------------------------
# Issuing a TMA load into the asynchronous proxy (destination CTAs and mbarrier signals)
# -------------------------------------------------------------------------------------------------
def tma_load_targets(cta: int, dst_cta: int, mbar_cta: int, cluster_size: int,
                     cta_mask: int | None = None, cta_group: int = 1) -> list[tuple[int, int]]:
    """(destination CTA, CTA whose mbarrier gets the complete-tx) for each copy of a
    cp.async.bulk.tensor load, CTA numbers as in SharedMemory (cluster-consecutive).
    PTX 9.7.9.25: without multicast the data goes to `dst_cta` (the CTA the shared::cluster
    destination names) and the signal to `mbar_cta`. With .multicast::cluster the data goes to
    the same offset in every CTA of `cta_mask`; with .cta_group::1 the signal goes to the same
    mbarrier offset in each destination CTA, with .cta_group::2 to the destination CTA or its
    peer, whichever has the %cluster_ctarank parity of the CTA holding `mbar`."""
    if cta_mask is None:
        return [(dst_cta, mbar_cta)]
    first = cta - cta % cluster_size
    out = []
    for r in multicast_ranks(cta_mask, cluster_size):
        if cta_group == 1:
            out.append((first + r, first + r))
        elif cta_group == 2:
            out.append((first + r, first + ((r & ~1) | (mbar_cta % cluster_size & 1))))
        else:
            raise OperandError(f".cta_group::{cta_group} does not exist (1 or 2)")
    return out


def issue_tma_load(proxy, issuer, tmap: TensorMap, coords, memory, mbarriers, *, cta: int,
                   dst, mbar, cta_mask: int | None = None, cta_group: int = 1,
                   what: str = "cp.async.bulk.tensor"):
    """Queue one cp.async.bulk.tensor tile load on `proxy` (machine.async_proxy.AsyncProxy):
    at completion every destination CTA's shared memory receives the box and its mbarrier a
    complete-tx of the box bytes. `dst` and `mbar` are shared::cluster addresses of the
    executing CTA `cta` (its own shared::cta addresses are among them: machine/memory.py)."""
    shared = memory.shared
    (dcta,), (doff,) = shared.resolve_cluster([dst], [cta])
    (mcta,), (moff,) = shared.resolve_cluster([mbar], [cta])
    if cta_mask is not None and cta_group == 1 and mcta != dcta:
        raise UndefinedBehavior("cp.async.bulk.tensor .cta_group::1: the mbarrier must be in the "
                                "same CTA as the shared-memory destination")
    targets = tma_load_targets(cta, int(dcta), int(mcta), shared.cluster_size, cta_mask,
                               cta_group)
    ops = []
    for data_cta, sig_cta in targets:
        ops.append(proxy.issue(
            issuer, "bulk",
            perform=lambda c=data_cta: tma_load_tile(tmap, coords, memory.global_,
                                                     shared.cta_view(c), int(doff)),
            signal=lambda c=sig_cta: mbarriers.complete_tx(c, int(moff), tmap.box_bytes),
            what=what))
    return ops


# -------------------------------------------------------------------------------------------------
# The driver entry points on bytes (ptxsim.cuda): cuTensorMapEncodeTiled / Im2col, ReplaceAddress
# -------------------------------------------------------------------------------------------------
def encode_tiled_bytes(dtype, rank, global_address, global_dim, global_strides, box_dim,
                       element_strides, interleave, swizzle, l2_promotion, oob_fill,
                       cc=(10, 0)) -> bytes:
    """cuTensorMapEncodeTiled: the 128-byte CUtensorMap (TensorMapError where the driver
    returns CUDA_ERROR_INVALID_VALUE)."""
    return TensorMap.encode_tiled(dtype, rank, int(global_address), global_dim, global_strides,
                                  box_dim, element_strides, interleave, swizzle, l2_promotion,
                                  oob_fill, cc=cc).to_bytes()


def encode_im2col_bytes(dtype, rank, global_address, global_dim, global_strides, lower_corner,
                        upper_corner, channels_per_pixel, pixels_per_column, element_strides,
                        interleave, swizzle, l2_promotion, oob_fill, cc=(10, 0)) -> bytes:
    """cuTensorMapEncodeIm2col: the 128-byte CUtensorMap."""
    return TensorMap.encode_im2col(dtype, rank, int(global_address), global_dim, global_strides,
                                   lower_corner, upper_corner, channels_per_pixel,
                                   pixels_per_column, element_strides, interleave, swizzle,
                                   l2_promotion, oob_fill, cc=cc).to_bytes()


def replace_address_bytes(blob: bytes, global_address: int) -> bytes:
    """cuTensorMapReplaceAddress on the 128 bytes (the address rules of the encoder apply)."""
    tm = TensorMap.from_bytes(blob)
    _dc_replace(tm, global_address=int(global_address)).validate()
    return tensormap_bytes.replace(blob, "global_address", int(global_address))


def replace_field(blob: bytes, field: str, value: int, ordinal: int | None = None) -> bytes:
    """tensormap.replace.tile.<field> [addr], {ord,} new_val on the 128 bytes in memory: the
    bits an H200 writes (tensormap_bytes.replace; 3,843 recorded replaces), whatever the block
    held before (a zeroed block included); swizzle_atomicity (sm_100 only) into ptxsim's own
    bits (tensormap_bytes). Codes no measurement places raise UnsupportedFeature: swizzle_mode 4
    (96B, sm_100 only)."""
    if field == "swizzle_mode" and value == 4:
        raise UnsupportedFeature("tensormap.replace.swizzle_mode code 4 (96B swizzle): its bits "
                                 "in the map are not known (sm_100 only; not measured)")
    try:
        return tensormap_bytes.replace(bytes(blob), field, int(value), ordinal)
    except KeyError:
        raise OperandError(f"tensormap.replace.{field}: new_val {value} is not a valid code "
                           "(PTX ISA, tensormap new_val validity)") from None

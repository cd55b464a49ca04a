"""The kernel-parameter image of a launch (PTX 5.1.6.1): `pack_params` lays out the launch
arguments (arrays mapped into global memory, tensor maps, scalars, bytes) at their declared sizes
and alignments. Above `memory` and `tensormap`, which it uses."""
from __future__ import annotations

import numpy as np

from ptxsim.errors import OperandError
from ptxsim.machine.memory import GlobalMemory
from ptxsim.machine.tensormap import TensorMap


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def pack_params(decls, values, gmem: GlobalMemory) -> tuple[bytes, list[int]]:
    """Kernel-parameter space image (PTX 5.1.6.1): `decls` = [(size, align)] per declared .param
    in order (e.g. `.param .u64 p` -> (8, 8); `.param .align 64 .b8 tmap[128]` -> (128, 64)),
    `values` the launch arguments. Arrays / CPU tensors are mapped into `gmem` (once) and passed
    as their device address; a `TensorMap` is bound and stored as its 128-byte image (a
    __grid_constant__ CUtensorMap needs a 128-byte, 64-byte aligned parameter); ints wrap to the
    parameter's width; floats become f16 / f32 / f64 by size; bytes are copied. Returns
    (image, offsets)."""
    if len(decls) != len(values):
        raise OperandError(f"the kernel declares {len(decls)} parameters, {len(values)} given")
    out, offsets = bytearray(), []
    for i, ((size, align), v) in enumerate(zip(decls, values)):
        off = _align(len(out), align)
        out += bytes(off - len(out))
        if isinstance(v, TensorMap):
            if size != 128 or align < 64:
                raise OperandError(f"parameter {i}: a tensor map needs a 128-byte parameter "
                                   f"aligned to 64 bytes, the kernel declares {size} bytes "
                                   f"aligned to {align}")
            raw = v.bind(gmem).to_bytes()
        elif isinstance(v, np.ndarray) or type(v).__module__.startswith("torch"):
            if isinstance(v, np.ndarray) and v.ndim == 0:
                raw = v.tobytes()
            else:
                if size != 8:
                    raise OperandError(f"parameter {i}: an array is passed as a 64-bit pointer, "
                                       f"the kernel declares {size} bytes")
                try:
                    ptr = gmem.address_of(v)
                except OperandError:
                    ptr = gmem.map(v, f"param{i}")
                raw = int(ptr).to_bytes(8, "little")
        elif isinstance(v, (bool, int, np.integer)):
            raw = (int(v) % (1 << 8 * size)).to_bytes(size, "little")
        elif isinstance(v, (float, np.floating)):
            if size not in (2, 4, 8):
                raise OperandError(f"parameter {i}: a float for a {size}-byte parameter")
            raw = np.array(v, {2: "<f2", 4: "<f4", 8: "<f8"}[size]).tobytes()
        elif isinstance(v, (bytes, bytearray)):
            raw = bytes(v)
        else:
            raise OperandError(f"parameter {i}: cannot pass a {type(v).__name__}")
        if len(raw) != size:
            raise OperandError(f"parameter {i}: {len(raw)} bytes given for a {size}-byte "
                               "parameter")
        offsets.append(off)
        out += raw
    return bytes(out), offsets


def param_offsets(decls) -> tuple[list[int], int]:
    """Offsets of the declared parameters [(size, align)] in the parameter space (each at its
    alignment, in order) and the total size: the layout cuLaunchKernel's kernelParams fill."""
    offsets, end = [], 0
    for size, align in decls:
        off = _align(end, align)
        offsets.append(off)
        end = off + size
    return offsets, end

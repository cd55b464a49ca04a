"""The one validation layer for what a user hands to ptxsim: launch geometry, target, options,
and the kernel arguments checked against the `.entry` signature (count, width, signedness,
float vs integer, pointers and the arrays behind them, tensor maps, aggregates).

Every problem raises a named error of `ptxsim.errors` that says where (the parameter's name and
position, the option) and what was expected. `check_launch` returns the arguments normalised to
exactly what the parameter holds (a Python float for an `.f32` parameter becomes `np.float32`,
so that nothing downstream guesses the width), never a silently different value.

PTX ISA 5.1.6.1 (kernel parameters) and the CUDA launch rules (cuLaunchKernel) are the sources:
an integer parameter takes an integer that fits its type, a float parameter a real number
(converted as C++ converts a double argument to a float parameter, overflow refused), a pointer
parameter (`.u64`/`.b64`/`.s64`, `.ptr`) an array or CPU tensor; .maxntid / .reqntid /
.reqnctapercluster bound the launch as CUDA does (cudaErrorInvalidValue beyond them).
"""
from __future__ import annotations

import numbers

import numpy as np

from ptxsim.errors import InputError, LaunchConfigError, OperandError, TargetError
from ptxsim.isa.targets import PTXAS_TARGETS, parse_target

MAX_DYNAMIC_SHARED = 232448          # sm_100: 227 KB per CTA, static + dynamic (opt-in)

_INT_RANGES = {
    ".u8": (0, 2**8 - 1), ".u16": (0, 2**16 - 1), ".u32": (0, 2**32 - 1), ".u64": (0, 2**64 - 1),
    ".s8": (-2**7, 2**7 - 1), ".s16": (-2**15, 2**15 - 1), ".s32": (-2**31, 2**31 - 1),
    ".s64": (-2**63, 2**63 - 1),
    # bit types hold either reading of the bits
    ".b8": (-2**7, 2**8 - 1), ".b16": (-2**15, 2**16 - 1), ".b32": (-2**31, 2**32 - 1),
    ".b64": (-2**63, 2**64 - 1), ".pred": (0, 1),
}
_FLOAT_TYPES = {".f16": np.float16, ".f32": np.float32, ".f64": np.float64,
                ".bf16": None}
_SIZES = {".b8": 1, ".u8": 1, ".s8": 1, ".b16": 2, ".u16": 2, ".s16": 2, ".f16": 2, ".bf16": 2,
          ".b32": 4, ".u32": 4, ".s32": 4, ".f32": 4, ".b64": 8, ".u64": 8, ".s64": 8,
          ".f64": 8, ".pred": 1, ".b128": 16}


# ------------------------------------------------------------------------------ simple values
def check_target(target, where: str = "target") -> str:
    """A `.target` name ptxas 13.5 knows (sm_90a, sm_100a, sm_100f, sm_120a, ...)."""
    if not isinstance(target, str):
        raise TargetError(f"{where} must be a target name such as 'sm_100a', not "
                          f"{type(target).__name__}")
    try:
        t = parse_target(target)                 # TargetError for anything but sm_NN[a|f]
    except TargetError:
        raise TargetError(f"{where} '{target}' is not a GPU target name (expected sm_<NN>[a|f], "
                          "e.g. sm_90a, sm_100a, sm_100f, sm_120a)") from None
    if t.name not in PTXAS_TARGETS:
        raise TargetError(f"{where} '{target}' is not a GPU target ptxas knows (e.g. sm_90a, "
                          "sm_100a, sm_100f, sm_103a, sm_120a)")
    return t.name


def check_int(value, where: str, lo: int | None = None, hi: int | None = None) -> int:
    """An integer (not a bool, not a float, not a string) in [lo, hi]."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise InputError(f"{where} must be an integer, got {value!r} ({type(value).__name__})")
    v = int(value)
    if lo is not None and v < lo:
        raise InputError(f"{where} must be at least {lo}, got {v}")
    if hi is not None and v > hi:
        raise InputError(f"{where} must be at most {hi}, got {v}")
    return v


def dim3(value, what: str) -> tuple[int, int, int]:
    """A grid / block / cluster shape: a positive integer or 1 to 3 of them."""
    if isinstance(value, (bool, np.bool_)):
        raise LaunchConfigError(f"{what} must be a positive integer or a tuple of 1 to 3 of them, "
                                f"got {value!r}")
    if isinstance(value, (numbers.Integral, np.integer)):
        value = (value,)
    if isinstance(value, np.ndarray):
        value = tuple(value.tolist())
    if not isinstance(value, (tuple, list)):
        raise LaunchConfigError(f"{what} must be a positive integer or a tuple of 1 to 3 of them, "
                                f"got {value!r} ({type(value).__name__})")
    if not 1 <= len(value) <= 3:
        raise LaunchConfigError(f"{what} must have 1 to 3 dimensions, got {len(value)}")
    out = []
    for k, x in enumerate(value):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Integral, np.integer)):
            raise LaunchConfigError(f"{what}.{'xyz'[k]} must be an integer, got {x!r} "
                                    f"({type(x).__name__})")
        if int(x) < 1:
            raise LaunchConfigError(f"{what}.{'xyz'[k]} = {int(x)}: every dimension must be at "
                                    "least 1")
        out.append(int(x))
    return tuple(out + [1] * (3 - len(out)))


# ------------------------------------------------------------------------------- the launch
def check_launch(fn, grid, block, cluster, args, target, dynamic_shared, options: dict):
    """Validate one launch of the kernel `fn` (a parsed ptxsim.ptx.Function). Returns
    (grid, block, cluster, args, target, dynamic_shared) normalised."""
    target = check_target(target)
    g, b = dim3(grid, "grid"), dim3(block, "block")
    c = None if cluster is None else dim3(cluster, "cluster")
    dyn = check_int(dynamic_shared, "dynamic_shared", 0, MAX_DYNAMIC_SHARED)
    for name in ("step_limit", "max_resident_ctas"):
        if options.get(name) is not None:
            check_int(options[name], name, 1)
    if "progress" in options and not isinstance(options["progress"], (bool, np.bool_)):
        raise InputError(f"progress must be True or False, got {options['progress']!r}")
    _directive_limits(fn, b, c)
    if isinstance(args, (str, bytes)) or not hasattr(args, "__len__"):
        raise OperandError(f"args must be a list or tuple with one value per parameter of "
                           f"{fn.name}, got {type(args).__name__}")
    args = list(args)
    if len(args) != len(fn.params):
        sig = ", ".join(f"{p.type or ''} {p.name}".strip() for p in fn.params) or "no parameters"
        raise OperandError(f"{fn.name} takes {len(fn.params)} arguments ({sig}), "
                           f"{len(args)} given")
    out = [check_arg(p, i, v, fn.name) for i, (p, v) in enumerate(zip(fn.params, args))]
    return g, b, c, out, target, dyn


def _directive_limits(fn, block, cluster) -> None:
    """Performance-tuning directives the launch must respect (PTX ISA 11.4; CUDA refuses the
    launch: cudaErrorInvalidValue / CUDA_ERROR_INVALID_VALUE)."""
    d = fn.directives
    threads = block[0] * block[1] * block[2]
    if ".maxntid" in d and d[".maxntid"]:
        m = tuple(d[".maxntid"]) + (1,) * (3 - len(d[".maxntid"]))
        limit = m[0] * m[1] * m[2]
        if threads > limit:
            raise LaunchConfigError(f"block {block} has {threads} threads; {fn.name} declares "
                                    f".maxntid {', '.join(map(str, d['.maxntid']))} ({limit} at "
                                    "most)")
    if ".reqntid" in d and d[".reqntid"]:
        r = tuple(d[".reqntid"]) + (1,) * (3 - len(d[".reqntid"]))
        if tuple(block) != r:
            raise LaunchConfigError(f"block {block}: {fn.name} declares .reqntid "
                                    f"{', '.join(map(str, d['.reqntid']))}; the launch must use "
                                    "exactly that block shape")
    if cluster is not None and ".reqnctapercluster" in d and d[".reqnctapercluster"]:
        r = tuple(d[".reqnctapercluster"]) + (1,) * (3 - len(d[".reqnctapercluster"]))
        if tuple(cluster) != r:
            raise LaunchConfigError(f"cluster {cluster}: {fn.name} declares .reqnctapercluster "
                                    f"{', '.join(map(str, d['.reqnctapercluster']))}")


def _param_size(p) -> int:
    n = _SIZES.get(p.type or ".b8", 1)
    for d in p.dims:
        n *= int(d or 0)
    return n


def check_arg(p, i: int, v, kernel: str = "kernel"):
    """One argument against its `.param` declaration; returns the value to pack."""
    from ptxsim.machine.tensormap import TensorMap      # noqa: PLC0415 (machine-internal)
    where = f"argument {i} ({p.name}, .param {p.type or ''}{''.join(f'[{d}]' for d in p.dims)})"
    size = _param_size(p)
    is_pointer = size == 8 and not p.dims and p.type in (".u64", ".b64", ".s64")
    if isinstance(v, TensorMap):
        if size != 128:
            raise OperandError(f"{where}: a tensor map needs a 128-byte parameter "
                               f"(.param .align 64 .b8 name[128]); {kernel} declares {size} bytes")
        return v
    if type(v).__module__.startswith("torch"):
        if not is_pointer:
            raise OperandError(f"{where}: a tensor is passed as a 64-bit pointer; this parameter "
                               f"is {size} bytes")
        return v
    if isinstance(v, np.ndarray) and v.ndim > 0:
        if not is_pointer:
            raise OperandError(f"{where}: an array is passed as a 64-bit pointer (.u64 / .b64); "
                               f"this parameter is {size} bytes")
        return check_array(v, where)
    if isinstance(v, np.ndarray):                 # a 0-d array: its scalar
        v = v[()]
    if isinstance(v, (bytes, bytearray, memoryview)):
        v = bytes(v)
        if len(v) != size:
            raise OperandError(f"{where}: {len(v)} bytes given for a {size}-byte parameter")
        return v
    if p.dims:
        raise OperandError(f"{where}: an aggregate parameter of {size} bytes takes bytes (or a "
                           f"TensorMap), got {type(v).__name__}")
    t = p.type or ".b8"
    if isinstance(v, (bool, np.bool_, numbers.Integral, np.integer)) and not isinstance(v, float):
        if t in _FLOAT_TYPES:
            return _float_arg(t, v, where)
        lo, hi = _INT_RANGES.get(t, (None, None))
        if lo is None:
            raise OperandError(f"{where}: cannot pass an integer to a {t} parameter")
        if not lo <= int(v) <= hi:
            raise OperandError(f"{where}: {int(v)} does not fit a {t} parameter "
                               f"(range {lo} .. {hi})")
        return int(v)
    if isinstance(v, (float, np.floating, numbers.Real)) and not isinstance(v, numbers.Integral):
        if t not in _FLOAT_TYPES:
            raise OperandError(f"{where}: {v!r} is a floating-point value and the parameter is an "
                               f"integer ({t}); pass an int")
        return _float_arg(t, v, where)
    raise OperandError(f"{where}: cannot pass a {type(v).__name__} (expected "
                       f"{'an array, a tensor or an int' if is_pointer else 'a number'})")


def _float_arg(t: str, v, where: str):
    if t == ".bf16":                               # round to nearest even, as a cast does
        import ml_dtypes
        x = float(v)
        with np.errstate(over="ignore"):
            y = np.array(x, ml_dtypes.bfloat16)
        if np.isinf(y.astype(np.float32)) and not np.isinf(x):
            raise OperandError(f"{where}: {v!r} overflows a .bf16 parameter")
        return y.view(np.uint16)[()]
    ft = _FLOAT_TYPES[t]
    x = float(v)
    with np.errstate(over="ignore"):
        y = ft(x)
    if np.isinf(y) and not np.isinf(x):
        raise OperandError(f"{where}: {v!r} overflows a {t} parameter")
    return y


def check_array(a: np.ndarray, where: str) -> np.ndarray:
    """An array a kernel can read and write through a pointer."""
    if a.dtype.hasobject:
        raise OperandError(f"{where}: an array of Python objects (dtype {a.dtype}) has no device "
                           "representation; use a numeric dtype")
    if a.dtype.byteorder == ">" or (a.dtype.fields and any(
            f[0].byteorder == ">" for f in a.dtype.fields.values())):
        raise OperandError(f"{where}: a big-endian array ({a.dtype}) would be read as "
                           "little-endian by the GPU; pass a.astype(a.dtype.newbyteorder('<')) "
                           "and read the result from that array")
    if a.size == 0:
        raise OperandError(f"{where}: an empty array has no device memory to point to")
    if not a.flags.c_contiguous:
        raise OperandError(f"{where}: a non-contiguous array cannot be one global buffer; pass "
                           "np.ascontiguousarray(a) and read the result from that copy")
    if not a.flags.writeable:
        raise OperandError(f"{where}: a read-only array cannot be a global buffer (the kernel "
                           "may write it); pass a writable copy")
    return a


__all__ = ["check_target", "check_int", "dim3", "check_launch", "check_arg", "check_array",
           "MAX_DYNAMIC_SHARED"]

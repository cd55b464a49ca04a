"""Launch-argument specs, as `ptxsim run --arg` and farm specs write them (`parse_arg`):
  FILE.npy                 a numpy array (global buffer, passed as its address)
  zeros:DTYPE:N[xM...]     a generated zero array, e.g. zeros:float32:1024 or zeros:uint16:128x64
                           (numpy dtypes and ml_dtypes' bfloat16, float8_e4m3fn, ...)
  rand:DTYPE:N[xM...]      uniform random values in [0, 1) (integers: 0..99), from `rng`
  TYPE:VALUE               a scalar, TYPE one of i8 i16 i32 i64 u8 u16 u32 u64 f16 f32 f64
  bytes:N                  N zero bytes (an aggregate .param such as a CuTe kernel object)
"""
from __future__ import annotations

from pathlib import Path

import ml_dtypes  # noqa: F401 (registers bfloat16, float8_e4m3fn, ... as numpy dtype names)
import numpy as np

from ptxsim.errors import InputError, LaunchConfigError

MAX_ARRAY_BYTES = 1 << 34              # 16 GiB: a larger generated argument is refused


def _ml(dt: np.dtype) -> bool:
    """An ml_dtypes element type (bfloat16, float8_e4m3fn, float4_e2m1fn, int4 ...)."""
    return dt.kind == "V" and dt.name.startswith(("bfloat", "float", "int", "uint"))


SCALARS = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
           "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16,
           "f32": np.float32, "f64": np.float64}


def read_text(path, option: str) -> str:
    """A PTX file as text (UTF-8), or an InputError naming the option and the problem."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{option}: no such file '{path}'") from None
    except IsADirectoryError:
        raise InputError(f"{option}: '{path}' is a directory, not a PTX file") from None
    except PermissionError:
        raise InputError(f"{option}: '{path}' cannot be read (permission denied)") from None
    except OSError as exc:
        raise InputError(f"{option}: '{path}' cannot be read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{option}: '{path}' is not UTF-8 text (byte {data[exc.start]:#04x} at "
                         f"offset {exc.start}); PTX is ASCII") from None


def dims(text, option: str):
    """'4', '4,2', '4x2x1' -> a tuple of positive ints (None stays None)."""
    if text is None:
        return None
    parts = str(text).replace("x", ",").split(",")
    out = []
    for p in parts:
        p = p.strip()
        if not p.isdigit():
            raise LaunchConfigError(f"{option} {text!r}: expected positive integers like 4 or "
                                    "4,2,1")
        if int(p) < 1:
            raise LaunchConfigError(f"{option} {text!r}: every dimension must be at least 1")
        out.append(int(p))
    if not 1 <= len(out) <= 3:
        raise LaunchConfigError(f"{option} {text!r}: 1 to 3 dimensions")
    return tuple(out)


def _dtype(name: str, spec: str) -> np.dtype:
    try:
        dt = np.dtype(name)
    except TypeError:
        raise InputError(f"--arg {spec}: '{name}' is not a numpy dtype (e.g. float32, uint16, "
                         "bfloat16)") from None
    if _ml(dt):
        return dt
    if dt.hasobject or dt.kind not in "biuf" or dt.itemsize == 0:
        raise InputError(f"--arg {spec}: dtype {dt} has no device representation; use a "
                         "numeric dtype such as float32, int32, uint8")
    return dt.newbyteorder("=") if dt.byteorder not in ("=", "|") else dt


def _shape(text: str, spec: str) -> tuple:
    parts = text.split("x")
    if not text or not all(p.isdigit() for p in parts):
        raise InputError(f"--arg {spec}: shape {text!r} must be positive integers N[xM...]")
    shp = tuple(int(p) for p in parts)
    if min(shp) < 1:
        raise InputError(f"--arg {spec}: every dimension of the shape must be at least 1")
    return shp


def parse_arg(spec, rng) -> object:
    """One `--arg` spec -> a value for `ptxsim.launch` (see `ptxsim run --help`)."""
    if not isinstance(spec, str) or not spec:
        raise InputError("--arg: empty argument spec")
    if spec.endswith(".npy"):
        return load_npy(spec)
    kind, _, rest = spec.partition(":")
    if kind in ("zeros", "rand"):
        dt_name, sep, shape = rest.partition(":")
        if not sep:
            raise InputError(f"--arg {spec}: expected {kind}:DTYPE:N[xM...]")
        dtype, shp = _dtype(dt_name, spec), _shape(shape, spec)
        nbytes = int(np.prod(shp, dtype=object)) * dtype.itemsize
        if nbytes > MAX_ARRAY_BYTES:
            raise InputError(f"--arg {spec}: {nbytes} bytes is more than the "
                             f"{MAX_ARRAY_BYTES >> 30} GiB ptxsim allocates for one argument")
        try:
            if kind == "zeros":
                return np.zeros(shp, dtype)
            if dtype.kind == "f" or _ml(dtype):
                return rng.random(shp).astype(dtype)
            if dtype.kind == "b":
                return rng.random(shp) < 0.5
            return rng.integers(0, min(100, np.iinfo(dtype).max) + 1, shp).astype(dtype)
        except MemoryError:
            raise InputError(f"--arg {spec}: not enough memory for {nbytes} bytes") from None
    if kind == "bytes":
        if not rest.isdigit() or int(rest) < 1:
            raise InputError(f"--arg {spec}: bytes:N needs a positive byte count")
        if int(rest) > 1 << 20:
            raise InputError(f"--arg {spec}: a parameter of more than 1 MiB (.param space is "
                             "4 KiB per kernel on sm_70+)")
        return bytes(int(rest))
    if kind in SCALARS:
        t = SCALARS[kind]
        if np.dtype(t).kind == "f":
            try:
                x = float(rest)
            except ValueError:
                raise InputError(f"--arg {spec}: '{rest}' is not a number") from None
            with np.errstate(over="ignore"):
                y = t(x)
            if np.isinf(y) and not np.isinf(x):
                raise InputError(f"--arg {spec}: {rest} overflows {kind}")
            return y
        try:
            v = int(rest, 0)
        except ValueError:
            raise InputError(f"--arg {spec}: '{rest}' is not an integer") from None
        info = np.iinfo(t)
        if not info.min <= v <= info.max:
            raise InputError(f"--arg {spec}: {v} is outside the range of {kind} "
                             f"({info.min} .. {info.max})")
        return t(v)
    raise InputError(f"--arg {spec}: not a .npy file, zeros:/rand:DTYPE:SHAPE, bytes:N or "
                     f"TYPE:VALUE with TYPE in {', '.join(SCALARS)}")


def load_npy(path: str):
    """An argument array from a .npy file: native byte order, C-contiguous, writable (a copy
    the kernel may write; --out saves it)."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except FileNotFoundError:
        raise InputError(f"--arg {path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"--arg {path}: is a directory") from None
    except OSError as exc:
        raise InputError(f"--arg {path}: cannot be read ({exc.strerror or exc})") from None
    if magic != b"\x93NUMPY":
        raise InputError(f"--arg {path}: not a valid .npy file (no NumPy header)")
    try:
        a = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"--arg {path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"--arg {path}: is a directory") from None
    except PermissionError:
        raise InputError(f"--arg {path}: cannot be read (permission denied)") from None
    except ValueError as exc:
        why = "it holds Python objects" if "pickle" in str(exc) else "not a valid .npy file"
        raise InputError(f"--arg {path}: cannot load ({why})") from None
    except (OSError, EOFError) as exc:
        raise InputError(f"--arg {path}: cannot load (not a valid .npy file: "
                         f"{getattr(exc, 'strerror', None) or exc})") from None
    if not isinstance(a, np.ndarray):
        raise InputError(f"--arg {path}: holds a {type(a).__name__}, not an array")
    if a.dtype.hasobject or (a.dtype.kind not in "biuf" and not _ml(a.dtype)):
        raise InputError(f"--arg {path}: dtype {a.dtype} has no device representation")
    if a.ndim == 0:
        return a[()]
    if a.size == 0:
        raise InputError(f"--arg {path}: the array is empty")
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("="))          # the GPU is little-endian
    return np.ascontiguousarray(a).copy()



"""Launch-argument specs, as `ptxsim run --arg` and farm specs write them (`parse_arg`):
  FILE.npy                 a numpy array (global buffer, passed as its address)
  zeros:DTYPE:N[xM...]     a generated zero array, e.g. zeros:float32:1024 or zeros:uint16:128x64
                           (numpy dtypes and ml_dtypes' bfloat16, float8_e4m3fn, ...)
  rand:DTYPE:N[xM...]      uniform random values in [0, 1) (integers: 0..99), from `rng`
  TYPE:VALUE               a scalar, TYPE one of i8 i16 i32 i64 u8 u16 u32 u64 f16 f32 f64
  bytes:N                  N zero bytes (an aggregate .param such as a CuTe kernel object)
"""
from __future__ import annotations

import ml_dtypes  # noqa: F401 (registers bfloat16, float8_e4m3fn, ... as numpy dtype names)
import numpy as np

from ptxsim.errors import OperandError

SCALARS = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
           "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16,
           "f32": np.float32, "f64": np.float64}


def parse_arg(spec: str, rng) -> object:
    if spec.endswith(".npy"):
        try:
            return np.load(spec)
        except OSError as exc:
            raise OperandError(f"--arg {spec}: cannot read ({exc})") from None
    kind, _, rest = spec.partition(":")
    if kind in ("zeros", "rand"):
        dt, _, shape = rest.partition(":")
        try:
            dtype = np.dtype(dt)
            shp = tuple(int(x) for x in shape.split("x"))
        except (TypeError, ValueError):
            raise OperandError(f"--arg {spec}: expected {kind}:DTYPE:N[xM...]") from None
        if kind == "zeros":
            return np.zeros(shp, dtype)
        if dtype.kind == "f" or dtype.name.startswith(("bfloat", "float")):
            return rng.random(shp).astype(dtype)
        return rng.integers(0, 100, shp).astype(dtype)
    if kind == "bytes":
        return bytes(int(rest))
    if kind in SCALARS:
        t = SCALARS[kind]
        try:
            return t(float(rest)) if np.dtype(t).kind == "f" else t(int(rest, 0))
        except ValueError:
            raise OperandError(f"--arg {spec}: '{rest}' is not a {kind} value") from None
    raise OperandError(f"--arg {spec}: not a .npy file, zeros:/rand:DTYPE:SHAPE, bytes:N or "
                       f"TYPE:VALUE with TYPE in {', '.join(SCALARS)}")

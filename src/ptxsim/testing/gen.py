"""Deterministic input generators for hardware captures and their replay.

The capture programs (hardware/) and the replay tests draw their inputs from here, so recorded vector
files store only outputs plus a checksum of the inputs. Everything is a counter-based hash
(splitmix64, Steele, Lea & Flood 2014), vectorised in numpy: the stream for (seed, stream id) is
``splitmix64(seed ^ stream_id * GOLDEN + i)`` for i = 0, 1, 2, ...; nothing depends on numpy's
RNG versions.
"""
from __future__ import annotations

import hashlib
import zlib

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser applied to (x + golden) elementwise (uint64, wrapping)."""
    z = np.asarray(x, dtype=np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def stream_key(name: str) -> int:
    """A 64-bit stream id derived from a name (crc32 of two halves; stable across Python runs)."""
    b = name.encode()
    return (zlib.crc32(b) << 32) | zlib.crc32(b[::-1] + b"#")


class Stream:
    """A named deterministic stream of uint64 words; every draw advances the counter."""

    def __init__(self, seed: int, name: str):
        with np.errstate(over="ignore"):
            self.base = np.uint64(seed & 0xFFFFFFFFFFFFFFFF) ^ (np.uint64(stream_key(name)) * _GOLDEN)
        self.counter = 0

    def u64(self, n: int) -> np.ndarray:
        with np.errstate(over="ignore"):
            idx = self.base + np.arange(self.counter, self.counter + n, dtype=np.uint64)
            out = splitmix64(idx)
        self.counter += n
        return out

    def u32(self, n: int) -> np.ndarray:
        return (self.u64(n) >> np.uint64(32)).astype(np.uint32)

    def below(self, n: int, bound: int) -> np.ndarray:
        """n integers uniform in [0, bound) (multiply-shift, bias < 2^-32)."""
        return ((self.u64(n) >> np.uint64(32)) * np.uint64(bound) >> np.uint64(32)).astype(np.int64)

    def choice(self, n: int, values) -> np.ndarray:
        values = np.asarray(values)
        return values[self.below(n, len(values))]


def checksum(*arrays: np.ndarray) -> str:
    """sha256 (hex, first 16 digits) of the arrays' little-endian bytes, in order."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype.str).encode() + str(a.shape).encode())
        h.update(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes())
    return h.hexdigest()[:16]

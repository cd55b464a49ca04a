"""The 'binary' ptxsim's Triton compiler hands Triton to cache for a kernel: a header line, what
ptxas reported (JSON: n_regs, n_spills), the PTX text."""
from __future__ import annotations

import json

MAGIC = b"PTXSIM-TRITON 1\n"


def pack(ptx: str, info: dict) -> bytes:
    """The 'binary' Triton caches for a kernel: a header line, what ptxas said (JSON), the PTX."""
    return MAGIC + json.dumps(info).encode() + b"\n" + ptx.encode()


def unpack(binary: bytes) -> tuple[str, dict]:
    if not binary.startswith(MAGIC):
        return binary.decode(), {}
    head, _, ptx = binary[len(MAGIC):].partition(b"\n")
    return ptx.decode(), json.loads(head)

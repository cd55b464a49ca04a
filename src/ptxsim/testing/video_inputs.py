"""Operand sets for the video-instruction captures (hardware/video/video_*.py) and their replay.

``video_operands()`` returns the four registers every captured video kernel reads: a, b, c and
the prior value of d (the kernel loads d before the instruction, so a merge into the old d rather
than into c would show). The same 1024 rows are used for every variant:

- rows 0..575: a and b from a grid of 24 word-level edge values (every ordered pair), c and d
  drawn from the same edges / random;
- rows 576..831: every byte independently an edge byte or random (byte/half boundary mixes);
- rows 832..1023: uniformly random words.
"""
from __future__ import annotations

import numpy as np

from ptxsim.testing.gen import Stream, checksum

N_TRIPLES = 1024
SEED = 0x5EED_71DE

# word-level edge values: 0, 1, -1, INT_MAX/MIN, byte and half-word boundaries, shift counts
WORD_EDGES = np.array([
    0x00000000, 0x00000001, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x0000007F, 0x00000080,
    0x000000FF, 0x00007FFF, 0x00008000, 0x0000FFFF, 0x7F7F7F7F, 0x80808080, 0xFFFF0000,
    0x7FFF8000, 0x8000FFFF, 0x0000001F, 0x00000020, 0x00000021, 0x20211F00, 0x01FF8021,
    0xFF7F0180, 0x12345678, 0xFEDCBA98], dtype=np.uint32)
BYTE_EDGES = np.array([0x00, 0x01, 0x7F, 0x80, 0xFF, 0xFE, 0x81, 0x1F, 0x20, 0x21], dtype=np.uint32)


def video_operands(n: int = N_TRIPLES, seed: int = SEED) -> dict[str, np.ndarray]:
    """{'a','b','c','d'} -> uint32 arrays of shape (n,), deterministic in (n, seed)."""
    s = Stream(seed, "video-operands")
    e = len(WORD_EDGES)
    grid = e * e
    n_grid = min(grid, n)
    n_bytes = min(256, n - n_grid)
    n_rand = n - n_grid - n_bytes
    out = {}
    ia = np.arange(n_grid) // e
    ib = np.arange(n_grid) % e
    a = [WORD_EDGES[ia]]
    b = [WORD_EDGES[ib]]
    # byte-mix rows
    def bytemix(k):
        pick = s.below(4 * k, 2).reshape(k, 4)
        edge = s.choice(4 * k, BYTE_EDGES).reshape(k, 4)
        rnd = (s.u32(4 * k) & 0xFF).reshape(k, 4)
        by = np.where(pick == 1, edge, rnd).astype(np.uint32)
        return (by[:, 0] | by[:, 1] << 8 | by[:, 2] << 16 | by[:, 3] << 24).astype(np.uint32)
    a.append(bytemix(n_bytes))
    b.append(bytemix(n_bytes))
    a.append(s.u32(n_rand))
    b.append(s.u32(n_rand))
    out["a"] = np.concatenate(a).astype(np.uint32)
    out["b"] = np.concatenate(b).astype(np.uint32)
    for r in ("c", "d"):
        pick = s.below(n, 3)
        out[r] = np.where(pick == 0, s.choice(n, WORD_EDGES),
                          np.where(pick == 1, bytemix(n), s.u32(n))).astype(np.uint32)
    return out


def video_operands_checksum(ops: dict[str, np.ndarray]) -> str:
    return checksum(*(ops[k] for k in "abcd"))

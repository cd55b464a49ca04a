"""ldmatrix / stmatrix .m8n8 .b16 (9.7.14.5.15-16): the warp's fragment layout over shared
memory, one vectorised load / store per matrix.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import UndefinedBehavior, UnsupportedFeature
from ptxsim.machine.grid import WARP_SIZE
from ptxsim.machine.handlers.common import space_of, warps_of


# ----------------------------------------------------------------------- ldmatrix / stmatrix
def _matrix_shape(inst):
    shape = next((q[1:] for q in inst.qualifiers if q in (".m8n8", ".m16n16", ".m8n16",
                                                          ".m16n8")), None)
    if shape != "m8n8" or not inst.has(".b16"):
        raise UnsupportedFeature(f"{inst.mnemonic}: only .m8n8 .b16 is modelled")
    n = int(next(q[2:] for q in inst.qualifiers if q in (".x1", ".x2", ".x4")))
    return n, inst.has(".trans")


def _ldmatrix(wave, inst):
    """ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 (9.7.14.5.15): thread 8i+r gives the
    address of row r of matrix i; thread t receives in register i the elements
    (row t/4, cols 2(t%4), 2(t%4)+1) of matrix i (.trans: the transposed matrix)."""
    n, trans = _matrix_shape(inst)
    dst, a = inst.operands
    space = space_of(inst, "generic")

    def run(idx):
        warps, _ = warps_of(idx)
        full = (warps[:, None] * WARP_SIZE + np.arange(WARP_SIZE)).reshape(-1)
        if not np.array_equal(np.sort(idx), full):
            raise UndefinedBehavior(f"line {inst.loc.line}: ldmatrix.sync.aligned executed by "
                                    "part of a warp")
        W = warps.size
        addr = wave.addr(a, full).reshape(W, WARP_SIZE)
        rows = np.zeros((W, n, 8, 8), np.uint16)            # [warp, matrix, row, col]
        for i in range(n):
            ra = addr[:, 8 * i:8 * i + 8].reshape(-1)
            th = full.reshape(W, WARP_SIZE)[:, 8 * i:8 * i + 8].reshape(-1)
            v = _load16(wave, space, ra, th)
            rows[:, i] = v.reshape(W, 8, 8)
        if trans:
            rows = rows.transpose(0, 1, 3, 2)
        lane = np.arange(WARP_SIZE)
        r, c = lane // 4, 2 * (lane % 4)
        lo = rows[:, :, r, c].astype(np.uint32)              # (W, n, 32)
        hi = rows[:, :, r, c + 1].astype(np.uint32)
        val = lo | (hi << 16)
        for i, e in enumerate(dst.elements):
            wave.write(e, full, val[:, i, :].reshape(-1))
        wave.advance(idx)
    return run


def _load16(wave, space, addr, th):
    """8 consecutive b16 per address (one 16-byte row)."""
    raw = wave.memory.load_bytes(space, addr, 16, thread=th)        # (k, 16) bytes
    return raw.view("<u2").reshape(-1, 8)


def _stmatrix(wave, inst):
    """stmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 [a], {r...} (9.7.14.5.16): the
    inverse of ldmatrix's fragment layout."""
    n, trans = _matrix_shape(inst)
    a, src = inst.operands
    space = space_of(inst, "generic")

    def run(idx):
        warps, _ = warps_of(idx)
        full = (warps[:, None] * WARP_SIZE + np.arange(WARP_SIZE)).reshape(-1)
        W = warps.size
        vals = np.stack([wave.read(e, full, 32).astype(np.uint32).reshape(W, WARP_SIZE)
                         for e in src.elements], 1)            # (W, n, 32)
        lane = np.arange(WARP_SIZE)
        r, c = lane // 4, 2 * (lane % 4)
        rows = np.zeros((W, n, 8, 8), np.uint16)
        rows[:, :, r, c] = (vals & 0xFFFF).astype(np.uint16)
        rows[:, :, r, c + 1] = (vals >> 16).astype(np.uint16)
        if trans:
            rows = rows.transpose(0, 1, 3, 2)
        addr = wave.addr(a, full).reshape(W, WARP_SIZE)
        for i in range(n):
            ra = addr[:, 8 * i:8 * i + 8].reshape(-1)
            th = full.reshape(W, WARP_SIZE)[:, 8 * i:8 * i + 8].reshape(-1)
            data = np.ascontiguousarray(rows[:, i]).reshape(-1, 8).view("<u4")  # (k, 4)
            wave.memory.store(space, ra, data, 4, vec=4, thread=th)
        wave.advance(idx)
    return run

"""ldmatrix / stmatrix (PTX ISA 9.7.14.5.15-16): the lanes' row addresses through `isa.matrix`
(fragment layout, alignment), one vectorised 16-bit gather / scatter per instruction for .m8n8
.b16; the 8-bit shapes of sm_100a+ (.m16n16 / .m8n16 ldmatrix, .m16n8 stmatrix) read / write
whole 16-byte rows and rearrange them with isa.matrix.gather_bytes / scatter_bytes. movmatrix is a
registered isa family (isa.matrix). wgmma: handlers/wgmma.py.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import UndefinedBehavior
from ptxsim.isa import matrix as mx
from ptxsim.machine.grid import WARP_SIZE
from ptxsim.machine.handlers.common import san_shared, space_of, warps_of


def _whole_warps(inst, idx):
    warps, _ = warps_of(idx)
    full = (warps[:, None] * WARP_SIZE + np.arange(WARP_SIZE)).reshape(-1)
    if not np.array_equal(np.sort(idx), full):
        raise UndefinedBehavior(f"line {inst.loc.line}: {inst.opcode}.sync.aligned executed by "
                                "part of a warp")
    return warps.size, full


def _element_addresses(wave, form, a, full, W):
    """(num, W, 32, 2) addresses of each lane's two halves, and the thread that supplies each
    one's row address (lane 8j + r of its warp; for the sanitizer's reports)."""
    addr = wave.addr(a, full).reshape(W, WARP_SIZE)
    ea = mx.element_addresses(form, addr)
    lane = np.arange(WARP_SIZE)[:, None]
    row = np.broadcast_to(lane // 4, (WARP_SIZE, 2)) if not form.trans else \
        2 * (lane % 4) + np.arange(2)
    base = full.reshape(W, WARP_SIZE)[:, 0]
    th = (base[None, :, None, None] + 8 * np.arange(form.num)[:, None, None, None]
          + row[None, None, :, :])
    return ea, np.broadcast_to(th, ea.shape)


def _byte_rows(wave, form, a, full, W):
    """(W, R) 16-byte row addresses of an 8-bit shape and the thread that gives each."""
    addr = wave.addr(a, full).reshape(W, WARP_SIZE)
    rows = mx.byte_row_addresses(form, addr)
    th = full.reshape(W, WARP_SIZE)[:, :rows.shape[1]]
    return rows, th


def _ldmatrix_bytes(wave, inst, form, dst, a, space):
    def run(idx):
        W, full = _whole_warps(inst, idx)
        rows, th = _byte_rows(wave, form, a, full, W)
        raw = wave.memory.load_bytes(space, rows.reshape(-1), 4, vec=4, thread=th.reshape(-1))
        if wave.san is not None and wave.san.enabled:
            san_shared(wave, inst, space, rows.reshape(-1), th.reshape(-1), 16, False)
        val = mx.gather_bytes(form, raw.reshape(W, rows.shape[1], 16))    # (nregs, W, 32)
        for i, e in enumerate(dst.elements):
            wave.write(e, full, val[i].reshape(-1))
        wave.advance(idx)
    return run


def _stmatrix_bytes(wave, inst, form, a, src, space):
    def run(idx):
        W, full = _whole_warps(inst, idx)
        vals = np.stack([wave.read(e, full, 32).astype(np.uint32).reshape(W, WARP_SIZE)
                         for e in src.elements])                    # (num, W, 32)
        rows, th = _byte_rows(wave, form, a, full, W)
        data = mx.scatter_bytes(form, vals).reshape(-1, 16)
        wave.memory.store(space, rows.reshape(-1), data.view("<u4"), 4, vec=4,
                          thread=th.reshape(-1))
        if wave.san is not None and wave.san.enabled:
            san_shared(wave, inst, space, rows.reshape(-1), th.reshape(-1), 16, True)
        wave.advance(idx)
    return run


def _ldmatrix(wave, inst):
    """ldmatrix.sync.aligned.m8n8.xN{.trans}{.ss}.b16 r, [p] (isa.matrix); the 8-bit shapes."""
    form = mx.form_of(inst)
    dst, a = inst.operands
    space = space_of(inst, "generic")
    if mx.is_byte_form(form):      # target / .version notes of the sm_100a+ shapes (isa.matrix)
        mx.check(form, wave.launch.target, getattr(wave.launch, "ptx_version", None))
        return _ldmatrix_bytes(wave, inst, form, dst, a, space)

    def run(idx):
        W, full = _whole_warps(inst, idx)
        ea, th = _element_addresses(wave, form, a, full, W)
        raw = wave.memory.load_bytes(space, ea.reshape(-1), 2, thread=th.reshape(-1))
        if wave.san is not None and wave.san.enabled:
            san_shared(wave, inst, space, ea.reshape(-1), th.reshape(-1), 2, False)
        v = raw.view("<u2").reshape(ea.shape)
        val = mx.pack_halves(v[..., 0], v[..., 1])          # (num, W, 32)
        for i, e in enumerate(dst.elements):
            wave.write(e, full, val[i].reshape(-1))
        wave.advance(idx)
    return run


def _stmatrix(wave, inst):
    """stmatrix.sync.aligned.m8n8.xN{.trans}{.ss}.b16 [p], r (isa.matrix); .m16n8 .b8."""
    form = mx.form_of(inst)
    a, src = inst.operands
    space = space_of(inst, "generic")
    if mx.is_byte_form(form):
        mx.check(form, wave.launch.target, getattr(wave.launch, "ptx_version", None))
        return _stmatrix_bytes(wave, inst, form, a, src, space)

    def run(idx):
        W, full = _whole_warps(inst, idx)
        vals = np.stack([wave.read(e, full, 32).astype(np.uint32).reshape(W, WARP_SIZE)
                         for e in src.elements])                    # (num, W, 32)
        ea, th = _element_addresses(wave, form, a, full, W)
        halves = np.stack([vals & 0xFFFF, vals >> 16], axis=-1).astype(np.uint16)
        wave.memory.store(space, ea.reshape(-1), halves.reshape(-1, 1), 2,
                          thread=th.reshape(-1))
        if wave.san is not None and wave.san.enabled:
            san_shared(wave, inst, space, ea.reshape(-1), th.reshape(-1), 2, True)
        wave.advance(idx)
    return run

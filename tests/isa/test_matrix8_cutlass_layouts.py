"""isa.matrix's 8-bit ldmatrix / stmatrix layouts against the thread-value layouts CUTLASS states
for its sm_100 copy atoms (include/cute/atom/copy_traits_sm100.hpp, CUTLASS 4.x; the (shape,
stride) pairs below are transcribed from it as data: a source (thread, value) and a destination
(thread, value) with the same reference bit hold the same datum). For ldmatrix the source thread
gives a 16-byte row (value = bit of the row), the destination is the registers (value = bit,
32 per register); stmatrix the other way round. SM100_U8x8_LDSM_T / U8x16_LDSM_T shuffle bytes
after the instruction (copy_sm100.hpp): dst0 = (a.x, a.y, b.x, b.y), dst1 = (a.z, a.w, b.z, b.w)
of the instruction's registers a, b. The widened forms (SU4 / SU6 -> DU8x16) state the layout
in bytes of the widened row: value bit 8e + i of a row is bit i of element e."""
from __future__ import annotations

import numpy as np
import pytest

from ptxsim.isa import matrix as mx
from ptxsim.ptx import parse_instruction


def _flat(shape, stride):
    if isinstance(shape, tuple):
        out = []
        for s, d in zip(shape, stride):
            out += _flat(s, d)
        return out
    return [(shape, stride)]


def _eval(shape, stride, i):
    """CuTe's layout function for a 1-D index i (colexicographic over the flattened modes)."""
    r = 0
    for s, d in _flat(shape, stride):
        r += (i % s) * d
        i //= s
    return r


def _size(shape):
    return int(np.prod([s for s, _ in _flat(shape, shape)]))


def layout(thr, thr_stride, val, val_stride):
    """(threads, values) -> reference bit."""
    nt, nv = _size(thr), _size(val)
    return np.array([[_eval(thr, thr_stride, t) + _eval(val, val_stride, v) for v in range(nv)]
                     for t in range(nt)])


# name: (instruction, registers, Src (thr shape, stride, val shape, stride), Dst (...), shuffle)
ATOMS = {
    "SM100_U8x8_LDSM_T": ("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8", 2,
                          ((2, 2, 4, 2), (128, 1024, 256, 0), 128, 1),
                          ((4, 8), (256, 8), (8, 2, 2, 2), (1, 128, 64, 1024)), True),
    "SM100_U8x16_LDSM_T": ("ldmatrix.sync.aligned.m16n16.x2.trans.shared.b8", 4,
                           ((2, 2, 4, 2), (128, 1024, 256, 2048), 128, 1),
                           ((4, 8), (256, 8), (8, 2, 2, 4), (1, 128, 64, 1024)), True),
    "SM100_SU4_DU8x16_x1_LDSM_N": ("ldmatrix.sync.aligned.m8n16.x1.shared.b8x16.b4x16_p64", 1,
                                   ((8, 4), (128, 0), 128, 1), (32, 32, 32, 1), False),
    "SM100_SU6_DU8x16_x2_LDSM_N": ("ldmatrix.sync.aligned.m8n16.x2.shared.b8x16.b6x16_p32", 2,
                                   ((16, 2), (128, 0), 128, 1),
                                   (32, 32, (32, 2), (1, 1024)), False),
    "SM100_SU4_DU8x16_x4_LDSM_N": ("ldmatrix.sync.aligned.m8n16.x4.shared.b8x16.b4x16_p64", 4,
                                   (32, 128, 128, 1), (32, 32, (32, 4), (1, 1024)), False),
    "SM100_U8x4_STSM_T": ("stmatrix.sync.aligned.m16n8.x1.trans.shared.b8", 1,
                          ((4, 8), (256, 8), (8, 2, 2), (1, 128, 64)),
                          ((8, 4), (128, 0), 128, 1), False),
    "SM100_U8x8_STSM_T": ("stmatrix.sync.aligned.m16n8.x2.trans.shared.b8", 2,
                          ((4, 8), (256, 8), (8, 2, 2, 2), (1, 128, 64, 1024)),
                          ((16, 2), (128, 0), 128, 1), False),
    "SM100_U8x16_STSM_T": ("stmatrix.sync.aligned.m16n8.x4.trans.shared.b8", 4,
                           ((4, 8), (256, 8), (8, 2, 2, 4), (1, 128, 64, 1024)),
                           (32, 128, 128, 1), False),
}


def _operands(name, n):
    regs = "{" + ", ".join(f"%r{i}" for i in range(n)) + "}"
    return f"{regs}, [%r9];" if name.startswith("ld") else f"[%r9], {regs};"


@pytest.mark.parametrize("atom", sorted(ATOMS))
def test_layout_agrees_with_cutlass(atom):
    text, nregs, src, dst, shuffle = ATOMS[atom]
    form = mx.form_of(parse_instruction(f"{text} {_operands(text, nregs)}"))
    rows = form.rows * form.num
    # one datum per row element: row r, byte b (widened forms: element b) -> value r * 16 + b + 1
    if text.startswith("ldmatrix"):
        mem_bits = layout(*src)                 # (thread, bit of its row) -> ref bit
        reg_bits = layout(*dst)                 # (thread, register bit) -> ref bit
    else:
        reg_bits = layout(*src)
        mem_bits = layout(*dst)
    where = {}                                  # ref bit -> (row, byte) of the first thread
    for t in range(min(rows, mem_bits.shape[0])):
        for v in range(0, 128, 8):
            where.setdefault(int(mem_bits[t, v]), (t, v // 8))
    want = np.zeros((nregs, 32, 4), np.int64)   # (register, lane, byte) -> row * 16 + byte + 1
    for t in range(32):
        for v in range(0, 32 * nregs, 8):
            r, b = where[int(reg_bits[t, v])]
            want[v // 32, t, (v % 32) // 8] = r * 16 + b + 1
    if shuffle:                                 # undo CUTLASS's byte shuffle -> instruction regs
        raw = np.empty_like(want)
        for j in range(nregs // 2):
            d0, d1 = want[2 * j], want[2 * j + 1]
            raw[2 * j] = np.stack([d0[:, 0], d0[:, 1], d1[:, 0], d1[:, 1]], axis=1)
            raw[2 * j + 1] = np.stack([d0[:, 2], d0[:, 3], d1[:, 2], d1[:, 3]], axis=1)
        want = raw
    ri, ci = mx.byte_map(form)                  # ptxsim: (register, lane, byte) -> (row, byte)
    got = ri * 16 + ci + 1
    assert np.array_equal(got, want), np.argwhere(got != want)[:5].tolist()

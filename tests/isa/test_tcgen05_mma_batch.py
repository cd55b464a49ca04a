"""tcgen05_mma_batch: several tcgen05.mma of independent CTAs read together, their numerics
batched (numerics.mma_batch), each D written by its own finish().  Oracle: the same
instructions run one at a time by tcgen05_mma on identical copies of the CTAs, whose results
test_tcgen05_mma_gemm.py checks against numerics.mma / MMA-Sim; and, independently, numerics.mma
on the logical matrices staged here."""
from __future__ import annotations

import numpy as np
import pytest

from test_tcgen05_mma_kit import InstrDescriptor, gen_bits, new_cta, read_d, stage

from ptxsim import numerics
from ptxsim.errors import PtxsimError
from ptxsim.isa.tcgen05_mma import Tcgen05Mma, tcgen05_mma, tcgen05_mma_batch

M, N = 128, 64
FORMS = [("f16", "bf16", "f32", 16), ("f8f6f4", "e4m3", "f32", 32), ("f16", "f16", "f16", 16)]


def _cta(seed, kind, t, dt, K, enable):
    """One CTA with A, B staged and (for enable) a random accumulator already in D."""
    rng = np.random.default_rng(seed)
    cta, base = new_cta()
    A, B = gen_bits(rng, t, (M, K)), gen_bits(rng, t, (N, K))
    da, db = stage(cta.smem, A, t, kind, 0), stage(cta.smem, B, t, kind, 32768)
    c = gen_bits(rng, dt, (M, N)) if enable else np.zeros((M, N), np.uint16 if dt == "f16"
                                                          else np.uint32)
    cta.tmem.cells[:M, base & 0xFFFF:(base & 0xFFFF) + N] = c.astype(np.uint32)
    idesc = InstrDescriptor.make(kind, m=M, n=N, atype=t, btype=t, dtype=dt).encode()
    ops = dict(d_tmem=base, a_desc=da.encode(), b_desc=db.encode(), idesc=idesc,
               enable_input_d=enable)
    return cta, base, ops, (A, B, c)


def _calls(seeds_forms):
    out = []
    for seed, (kind, t, dt, K), enable in seeds_forms:
        cta, base, ops, logical = _cta(seed, kind, t, dt, K, enable)
        out.append((cta, Tcgen05Mma(kind), ops, base, dt, logical, kind, t))
    return out


SPEC = [(s, FORMS[s % 3], s % 2 == 0) for s in range(7)]      # two forms share batches


def test_batch_equals_one_at_a_time_and_numerics():
    batched, alone = _calls(SPEC), _calls(SPEC)
    finish = tcgen05_mma_batch([(cta, m, ops) for cta, m, ops, *_ in batched])
    for f in reversed(finish):                   # any order
        f()
    for (cta, m, ops, *_), in zip(alone):
        tcgen05_mma(cta, m, **ops)
    for (cb, _, _, base, dt, (A, B, c), kind, t), (ca, *_) in zip(batched, alone):
        got = read_d(cb, base, M, N, dt == "f16")
        assert (got == read_d(ca, base, M, N, dt == "f16")).all()
        want = numerics.mma(A, B.T, c, arch="sm_100", kind=kind, atype=t, btype=t, ctype=dt,
                            dtype=dt)
        assert (got == want).all()


def test_nothing_written_before_finish():
    calls = _calls(SPEC[:3])
    before = [cta.tmem.cells.copy() for cta, *_ in calls]
    finish = tcgen05_mma_batch([(cta, m, ops) for cta, m, ops, *_ in calls])
    assert all((cta.tmem.cells == b).all() for (cta, *_), b in zip(calls, before))
    finish[1]()
    assert (calls[0][0].tmem.cells == before[0]).all()
    assert not (calls[1][0].tmem.cells == before[1]).all()


def test_an_illegal_instruction_in_a_batch_raises_from_its_own_finish():
    calls = _calls(SPEC[:3])
    bad = dict(calls[1][2], idesc=calls[1][2]["idesc"] | (1 << 31))   # reserved idesc bit 31
    with pytest.raises(PtxsimError) as alone:
        tcgen05_mma(calls[1][0], calls[1][1], **bad)
    ref = _calls(SPEC[:3])
    finish = tcgen05_mma_batch([(cta, m, ops if i != 1 else bad)
                                for i, (cta, m, ops, *_) in enumerate(calls)])
    finish[0]()
    with pytest.raises(type(alone.value)):
        finish[1]()
    finish[2]()
    for i in (0, 2):
        tcgen05_mma(ref[i][0], ref[i][1], **ref[i][2])
        assert (calls[i][0].tmem.cells == ref[i][0].tmem.cells).all()

"""clusterlaunchcontrol.try_cancel / query_cancel (9.7.12.x): cancel a cluster that has not
started (a later wave of the launch) and read the response.
"""
from __future__ import annotations

import numpy as np

from ptxsim.machine import poison
from ptxsim.machine.handlers.common import byte_words, san_async, shared_target


# ----------------------------------------------------------------------- clusterlaunchcontrol
# ptxsim's 16-byte response (opaque in the ISA): word 0 = 1 when a cluster was canceled, words
# 1..3 = %ctaid.x/.y/.z of the canceled cluster's first CTA.
def _clc_try_cancel(wave, inst):
    """clusterlaunchcontrol.try_cancel.async{.shared::cta}.mbarrier::complete_tx::bytes
    {.multicast::cluster::all}.b128 [addr], [mbar] (9.7.12.x): cancels the next cluster that has
    not started (a later wave of this launch, in launch order) — or fails when all have started
    — and writes the response asynchronously, complete-tx 16 bytes on mbar (each CTA of the
    cluster with .multicast::cluster::all)."""
    mc = inst.has(".multicast::cluster::all")
    ops = inst.operands
    cs = wave.launch.geometry.cluster_size
    text = f"line {inst.loc.line}: {inst}"

    def run(idx):
        idx = np.array(idx, np.int64)
        cta, off = shared_target(wave, inst, ops[0], idx)
        _, moff = shared_target(wave, inst, ops[1], idx)
        cta, off = np.asarray(cta, np.int64), np.asarray(off, np.int64)
        moff = np.asarray(moff, np.int64)
        # each thread's request cancels the next cluster not started, in thread order; once
        # every cluster has started the rest fail
        resp = np.zeros((idx.size, 4), np.uint32)
        for k in range(idx.size):
            got = wave.launch.try_cancel()
            if got is None:
                break
            resp[k] = (1,) + got
        if mc:                                            # every CTA of the cluster, rank order
            member = np.repeat(np.arange(idx.size), cs)
            tgt = (cta - cta % cs)[member] + np.tile(np.arange(cs), idx.size)
        else:
            member, tgt = np.arange(idx.size), cta
        S = wave.memory.shared.data.shape[1]
        at = (tgt * S + off[member])[:, None] + np.arange(16)
        data = resp[member].view(np.uint8).reshape(-1, 16)
        sig_c, sig_o = tgt, moff[member]            # the mbarrier in each CTA written

        def perform():
            wave.memory.shared.data.reshape(-1)[at] = data

        def signal():
            wave.mbar.complete_tx(sig_c, sig_o, 16)
        san = wave.san
        if san is not None and san.enabled:
            perform, signal = san_async(san, inst, "clc", "bulk", idx[member], perform, signal,
                                        wwords=byte_words(san, tgt, off[member], 16),
                                        mbar=(sig_c, sig_o))
        wave.proxy.issue(int(idx[0]), "bulk", perform=perform, signal=signal, what=text,
                         threads=idx)
        wave.advance(idx)
    return run


def _clc_query(wave, inst):
    """clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, handle;
    ...get_first_ctaid.v4.b32.b128 {x, y, z, _}, handle; ...get_first_ctaid::{x,y,z}.b32.b128
    d, handle. The ctaid of a failed request is undefined: poison (machine/poison.py)."""
    ops = inst.operands
    dst, handle = ops[0], ops[1]
    is_canceled = inst.has(".is_canceled")
    dim = inst.value(".get_first_ctaid")                 # "x" / "y" / "z", or None (.v4)

    def run(idx):
        h = wave.reg(handle.name)[idx]                     # (n, 2) uint64
        words = np.stack([h[:, 0] & np.uint64(0xFFFFFFFF), h[:, 0] >> np.uint64(32),
                          h[:, 1] & np.uint64(0xFFFFFFFF), h[:, 1] >> np.uint64(32)], 1)
        ok = words[:, 0] != 0
        if is_canceled:
            wave.write(dst, idx, ok)
        else:
            if dim is not None:
                wave.write(dst, idx, words[:, 1 + "xyz".index(dim)].astype(np.uint32))
            else:
                for k, e in enumerate(dst.elements[:3]):
                    wave.write(e, idx, words[:, 1 + k].astype(np.uint32))
            if not ok.all():
                # the ctaid of a failed request is undefined (9.7.12.2): poison, an error only
                # where it is used (machine/poison.py)
                poison.produce(wave, dst, np.asarray(idx)[~ok], inst,
                               "get_first_ctaid of a response whose try_cancel failed")
        wave.advance(idx)
    return run

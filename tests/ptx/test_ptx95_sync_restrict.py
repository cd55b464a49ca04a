"""Two PTX ISA 9.5 spellings ptxas 13.5 accepts on sm_90+ whose ISA text ptxsim does not have:
`cp.async.bulk.wait_group.sync_restrict::proxy::async N` (not with .read) and
`fence.alias.sync_restrict::read.release.sys` (that one spelling). ptxsim check agrees with ptxas
on the spellings around them; the executor runs the first as `cp.async.bulk.wait_group N` (every
bulk group but the N newest complete: the strongest reading) and the second as a no-op, like
every fence (docs/reach.md)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ptxsim.machine.coverage import unexecutable
from ptxsim.machine.executor import launch
from ptxsim.ptx import parse_module, validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import ptxas135  # noqa: E402

SPELLINGS = ["cp.async.bulk.wait_group.sync_restrict::proxy::async 0;",
             "cp.async.bulk.wait_group.read.sync_restrict::proxy::async 1;",
             "fence.alias.sync_restrict::read.release.sys;",
             "fence.alias.sync_restrict::read.release.gpu;",
             "fence.alias.sync_restrict::read.acquire.sys;",
             "fence.alias.release.sys;"]


def _module(inst, version, target):
    return (f".version {version}\n.target {target}\n.address_size 64\n.visible .entry k()\n{{\n"
            f"  {inst}\n  ret;\n}}\n")


def test_check_agrees_with_ptxas():
    ptxas135.need()
    wrong, accepted = [], 0
    for inst in SPELLINGS:
        for version, target in (("9.5", "sm_90a"), ("9.4", "sm_90a"), ("9.5", "sm_80"),
                                ("9.5", "sm_100a")):
            ptx = _module(inst, version, target)
            ok, msg = ptxas135.verdict(ptx, target)
            m = parse_module(ptx)
            mine = not any(d.severity == "error" for d in validate(m))
            accepted += ok
            if ok != mine or (ok and unexecutable(m)):
                wrong.append((inst, version, target, ok, mine, msg[:70]))
    assert not wrong, wrong
    assert accepted == 4


KERNEL = """.version 9.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 dst, .param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  .reg .pred %p;
  .shared .align 128 .b8 buf[128];
  ld.param.u64 %rd1, [dst];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p, %r1, 0;
  @%p bra END;
  mov.u32 %r2, 0x5A5A5A5A;
  st.shared.v4.u32 [buf], {%r2, %r2, %r2, %r2};
  fence.proxy.async.shared::cta;
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [buf], 16;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.sync_restrict::proxy::async 0;
  fence.alias.sync_restrict::read.release.sys;
  ld.global.u32 %r3, [%rd1];
  st.global.u32 [%rd2], %r3;
END:
  ret;
}
"""


def test_wait_group_sync_restrict_completes_the_bulk_store():
    dst, out = np.zeros(4, np.uint32), np.zeros(1, np.uint32)
    launch(KERNEL, "k", 1, 32, args=[dst, out], target="sm_90a")
    assert out[0] == 0x5A5A5A5A and (dst == 0x5A5A5A5A).all()


def test_kernel_accepted_by_ptxas():
    ok, msg = ptxas135.verdict(KERNEL, "sm_90a")
    assert ok, msg

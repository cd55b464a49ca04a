"""What real kernels rely on where the PTX ISA says "undefined", done as the hardware does, with a
SpecDeviationWarning: ThunderKittens' B200 GEMM passes a generic address (cvta.shared) to
tcgen05.alloc.shared::cta. The kernel is accepted by ptxas 13.5 for sm_100a (checked when ptxas
is on this machine)."""
import os
import shutil
import subprocess

import numpy as np
import pytest

from ptxsim.errors import SpecDeviationWarning
from ptxsim.machine.executor import launch

GENERIC_ALLOC = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .shared .align 4 .u32 slot;
    mov.u32 %r1, slot;
    cvt.u64.u32 %rd1, %r1;
    cvta.shared.u64 %rd2, %rd1;
    tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%rd2], 64;
    bar.sync 0;
    ld.shared.u32 %r2, [slot];
    ld.param.u64 %rd3, [out];
    st.global.u32 [%rd3], %r2;
    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 64;
    tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
    ret;
}
"""


def test_ptxas_accepts_it(tmp_path):
    ptxas = shutil.which("ptxas") or next(
        (p for p in ["/work/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas"]
         if os.path.exists(p)), None)
    if ptxas is None:
        pytest.skip("ptxas is not on this machine")
    (tmp_path / "k.ptx").write_text(GENERIC_ALLOC)
    r = subprocess.run([ptxas, "-arch=sm_100a", str(tmp_path / "k.ptx"), "-o",
                        str(tmp_path / "k.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_generic_address_for_a_shared_cta_operand_uses_its_low_32_bits():
    out = np.full(1, 0xFFFFFFFF, np.uint32)
    with pytest.warns(SpecDeviationWarning, match="low 32 bits"):
        launch(GENERIC_ALLOC, "k", 1, 32, args=[out])
    assert out[0] == 0                       # the allocation (lane 0, column 0) was stored

"""tcgen05.mma reached from PTX text: the front end's parsed instruction + the issuing thread's
registers (the executor's path) gives the same D as the direct call."""
from __future__ import annotations

import numpy as np
import pytest

from test_tcgen05_mma_kit import InstrDescriptor, gen_bits, new_cta, read_d, stage

parser = pytest.importorskip("ptxsim.ptx.parser", reason="needs branch front")

from ptxsim.errors import OperandError  # noqa: E402
from ptxsim.isa import sparsity  # noqa: E402
from ptxsim.isa.tcgen05_mma import execute_parsed, tcgen05_mma  # noqa: E402
from ptxsim.isa.tmem import tmem_address  # noqa: E402


def _setup(seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    cta, base = new_cta()
    A = gen_bits(rng, "bf16", (128, 16))
    B = gen_bits(rng, "bf16", (64, 32 if sparse else 16))
    regs = {"%r1": base, "%rd1": stage(cta.smem, A, "bf16", "f16", 0).encode(),
            "%rd2": stage(cta.smem, B, "bf16", "f16", 16384).encode(),
            "%r4": InstrDescriptor.make("f16", m=128, n=64, atype="bf16", btype="bf16",
                                        sparse=sparse).encode(),
            "%p1": 1, "%r5": tmem_address(0, 400)}
    regs.update({f"%r{8 + i}": 0 for i in range(4)})
    regs["%r8"] = 0b10                                            # lane 1 disabled
    return cta, base, regs


@pytest.mark.parametrize("text,kw", [
    ("tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r4, %p1;", {}),
    ("tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r4, {%r8, %r9, %r10, %r11}, %p1, 3;",
     dict(disable_output_lane=np.array([2, 0, 0, 0], np.uint32), scale_input_d=3)),
    ("tcgen05.mma.cta_group::1.kind::f16.collector::a::fill [%r1], %rd1, %rd2, %r4, !%p1;",
     dict(collector="a::fill", enable_input_d=False)),
])
def test_parsed_equals_direct(text, kw):
    inst = parser.parse_instruction(text)
    cta, base, regs = _setup()
    cta.tmem.cells[:128, base:base + 64] = 0x3F800000                 # D = 1.0
    execute_parsed(cta, inst, regs.__getitem__)
    got = read_d(cta, base, 128, 64)
    cta2, base2, regs2 = _setup()
    cta2.tmem.cells[:128, base2:base2 + 64] = 0x3F800000
    tcgen05_mma(cta2, kind="f16", d_tmem=base2, a_desc=regs2["%rd1"], b_desc=regs2["%rd2"],
                idesc=regs2["%r4"], **{"enable_input_d": True, **kw})
    np.testing.assert_array_equal(got, read_d(cta2, base2, 128, 64))


def test_parsed_sparse_and_errors():
    cta, base, regs = _setup(sparse=True)
    sparsity.write_metadata(cta.tmem.cells, 0, 400, np.full((128, 8), 0b0100, np.uint8), "f16")
    execute_parsed(cta, parser.parse_instruction(
        "tcgen05.mma.sp.cta_group::1.kind::f16 [%r1], %rd1, %rd2, [%r5], %r4, %p1;"),
        regs.__getitem__)
    with pytest.raises(OperandError, match="too many|at least"):
        execute_parsed(cta, parser.parse_instruction(
            "tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r4;"), regs.__getitem__)


class _Regs:
    """A register file with 64-bit registers (ptxsim.execute's RegisterFile holds 32-bit only)."""

    def __init__(self, regs, warps=1):
        self.warps = warps
        self._r = {k: np.full(32 * warps, v, np.uint64) for k, v in regs.items()}

    def read(self, name):
        return self._r[name]


def test_registry_handler_one_mma_per_issuing_thread():
    from ptxsim.isa import registry
    from ptxsim.isa.tcgen05_mma import handle_instruction
    registry._load()
    assert registry.handler_for("tcgen05.mma") is handle_instruction
    assert registry.mode_of("tcgen05.mma") == ("handler", True)
    cta, base, regs = _setup()
    cta.tmem.cells[:128, base:base + 64] = 0x3F800000              # D = 1.0
    r = _Regs(regs)
    r._r["%p2"] = (np.arange(32) == 5).astype(np.uint64)            # only thread 5 issues
    inst = parser.parse_instruction("@%p2 tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, "
                                    "%r4, %p1;")
    assert handle_instruction(inst, r, "sm_100a", state=cta) == {}
    once = read_d(cta, base, 128, 64)
    cta2, base2, _ = _setup()
    cta2.tmem.cells[:128, base2:base2 + 64] = 0x3F800000
    for _ in range(2):                                               # two issuing threads
        tcgen05_mma(cta2, kind="f16", d_tmem=base2, a_desc=regs["%rd1"], b_desc=regs["%rd2"],
                    idesc=regs["%r4"])
    r._r["%p2"] = (np.arange(32) < 2).astype(np.uint64)
    cta3, base3, _ = _setup()
    cta3.tmem.cells[:128, base3:base3 + 64] = 0x3F800000
    handle_instruction(inst, r, "sm_100a", state=cta3)
    np.testing.assert_array_equal(read_d(cta3, base3, 128, 64), read_d(cta2, base2, 128, 64))
    assert (once != read_d(cta3, base3, 128, 64)).any()
    with pytest.raises(OperandError, match="CTA state"):
        handle_instruction(inst, r, "sm_100a", state=None)

"""Block-scoped .reg declarations (PTX ISA 11.1): a register declared in a nested { } block is
local to it. Verdicts are ptxas 13.5's (-arch=sm_90a), each noted; the kernel's expected output
is derived by hand in the PTX file's header."""
from pathlib import Path

import numpy as np
import pytest

import ptxsim
from ptxsim.ptx import errors_of, parse_module, validate

DATA = Path(__file__).parents[1] / "data/ptx/handwritten/scoped_regs.ptx"

HEAD = """.version 9.0
.target sm_90a
.address_size 64
.visible .entry k()
{
.reg .b32 %r<4>;
"""


def verdict(body: str):
    return [d.message for d in errors_of(validate(parse_module(HEAD + body + "\nret;\n}\n")))]


@pytest.mark.parametrize("body, expect", [
    # ptxas 13.5 accepts: the same name with another type in a sibling block
    ("{ .reg .f32 t; mov.f32 t, 0f3F800000; }\n{ .reg .b16 t; mov.b16 t, 1; }", None),
    # ptxas 13.5 accepts: a nested block shadows an outer register with another type
    ("{ .reg .f32 %r1; mov.f32 %r1, 0f3F800000; }", None),
    # ptxas 13.5: "Unknown symbol 't'" -- used outside the block that declares it
    ("{ .reg .f32 t; mov.f32 t, 0f3F800000; }\nmov.f32 t, 0f3F800000;", "'t' is not declared in this scope"),
    # ptxas 13.5: "Duplicate definition of variable '%r3'" -- inside %r<4> of the same scope
    (".reg .b32 %r3;", "duplicate definition"),
    # ptxas 13.5: "Duplicate definition of variable '%r<'" -- a second %r<N> range
    (".reg .b32 %r<2>;", "duplicate definition"),
    # ptxas 13.5 accepts %r5 next to %r<4> (which declares %r0..%r3)
    (".reg .b32 %r5;", None),
])
def test_scope_verdicts(body, expect):
    msgs = verdict(body)
    if expect is None:
        assert msgs == []
    else:
        assert any(expect in m for m in msgs), msgs


def test_kernel_with_sibling_blocks_runs_each_block_with_its_own_types():
    text = DATA.read_text()
    assert errors_of(validate(parse_module(text))) == []
    out = np.zeros(4, np.uint32)
    ptxsim.launch(text, "scoped", 1, 32, args=[out], target="sm_90a")
    # f32 1.5 + 1.5 = 3.0 (0x40400000); the 16-bit a; the low word of the 64-bit a1; the outer %r4
    assert out.tolist() == [0x40400000, 0xFFFF, 2, 7]

"""The fast paths of the front end (issue #20 speed work) give what the general paths give.

* Flat `{int, int, ...}` initializers (nvcc's 10^5-element curand tables) are read in one step:
  the values, written out by hand from PTX ISA 4.5.1 (decimal; a leading 0 is octal, 0x hex),
  and the lark reference parser agree.
* The cyclic garbage collector is paused during parse / validate / the coverage pass and left
  as it was found, also when the pass raises.
"""
import gc

import pytest

from ptxsim.errors import PtxSyntaxError
from ptxsim.machine.coverage import unexecutable
from ptxsim.ptx import lark_parser, parse_module, validate

HEAD = ".version 8.8\n.target sm_100a\n.address_size 64\n"

CASES = [
    # initializer text, values by hand
    ("{202, 29, 180, 50}", [202, 29, 180, 50]),
    ("{ 1 ,2,\n  3 }", [1, 2, 3]),
    ("{-5, 0, -0, 7}", [-5, 0, 0, 7]),
    ("{1, 010, 3}", [1, 8, 3]),                 # 010 is octal: the general path
    ("{1, 0x10, 3}", [1, 16, 3]),
    ("{1, 2U, 3}", [1, 2, 3]),
    ("{{1, 2}, {3, 4}}", [[1, 2], [3, 4]]),     # nested: the inner lists take the fast path
    ("{0}", [0]),
]


@pytest.mark.parametrize("init,values", CASES)
def test_flat_initializer(init, values):
    n = len(values) * (len(values[0]) if isinstance(values[0], list) else 1)
    dims = f"[{len(values)}][{len(values[0])}]" if isinstance(values[0], list) else f"[{n}]"
    text = HEAD + f".global .align 4 .s32 tab{dims} = {init};\n"
    m = parse_module(text)
    assert m.variables[0].init == values
    if len(values) > 1:
        # (the lark reference reads a one-element `{0}` as the scalar 0, before and after
        # this work; the scanner keeps the list)
        assert lark_parser.parse_module(text).variables == m.variables


def test_big_flat_initializer():
    vals = [(i * 7919) % 256 for i in range(100_000)]
    text = HEAD + f".global .align 4 .b8 t[{len(vals)}] = {{{', '.join(map(str, vals))}}};\n"
    assert parse_module(text).variables[0].init == vals


def test_malformed_initializer_still_located():
    with pytest.raises(PtxSyntaxError) as e:
        parse_module(HEAD + ".global .s32 t[3] = {1, 2,, 3};\n")
    assert e.value.line == 4


KERNEL = HEAD + """.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    { .reg .pred q; setp.eq.u32 q, %r1, 0; }
    add.s32 %r2, %r1, 1;
    st.global.u32 [%rd1], %r2;
    ret;
}
"""


@pytest.mark.parametrize("enabled", [True, False])
def test_gc_state_restored(enabled):
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        m = parse_module(KERNEL)
        assert gc.isenabled() == enabled
        assert validate(m) == []
        assert gc.isenabled() == enabled
        assert unexecutable(m) == []
        assert gc.isenabled() == enabled
        with pytest.raises(PtxSyntaxError):
            parse_module(KERNEL.replace("ret;", "ret"))
        assert gc.isenabled() == enabled
    finally:
        gc.enable() if was else gc.disable()

"""PTX ISA versions 9.2-9.5 in the front end (issue #18): ptxas 13.5 knows .version 1.0-9.5;
modules of each parse, validate without errors and run; 9.6 is refused by ptxas."""
import sys
from pathlib import Path

import numpy as np
import pytest

from ptxsim.machine.executor import launch
from ptxsim.ptx import parse_module, validate

sys.path.insert(0, str(Path(__file__).parents[1]))
import ptxas135  # noqa: E402

K = """.version {v}
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    add.u32 %r2, %r1, 7;
    st.global.u32 [%rd1], %r2;
    ret;
}}
"""


@pytest.mark.parametrize("v", ["9.2", "9.3", "9.4", "9.5"])
def test_newer_versions_parse_validate_and_run(v):
    ok, msg = ptxas135.verdict(K.format(v=v))
    assert ok, msg
    m = parse_module(K.format(v=v))
    assert m.version == v
    assert not [d for d in validate(m) if d.severity == "error"]
    out = np.zeros(1, np.uint32)
    launch(K.format(v=v), "k", 1, 1, args=[out])
    assert out[0] == 7


def test_ptxas_13_5_stops_at_9_5():
    ok, msg = ptxas135.verdict(K.format(v="9.6"))
    assert not ok and "9.5" in msg

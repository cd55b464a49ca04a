"""tensormap.replace in a kernel: a grid-constant tensor map copied to global memory, its
global_address replaced, then used by a TMA load (hand-written PTX; ptxas 13.0 accepts it)."""
import dataclasses
import numpy as np
import pytest

from ptxsim.errors import UnsupportedFeature
from ptxsim.machine.executor import launch
from ptxsim.machine.tensormap import TensorMap

COPY = "\n".join(f"    ld.param.v4.b32 {{%r3, %r4, %r5, %r6}}, [tmap+{16 * k}];\n"
                 f"    st.global.v4.b32 [%rd1+{16 * k}], {{%r3, %r4, %r5, %r6}};" for k in range(8))
OUT = "\n".join(f"    ld.shared.v4.b32 {{%r3, %r4, %r5, %r6}}, [tile+{16 * k}];\n"
                f"    st.global.v4.b32 [%rd5+{16 * k}], {{%r3, %r4, %r5, %r6}};"
                for k in range(32))
PTX = f""".version 8.8
.target sm_100a
.address_size 64
.visible .entry tm_replace(.param .align 64 .b8 tmap[128], .param .u64 scratch,
                           .param .u64 other, .param .u64 out)
{{
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    .shared .align 128 .b8 tile[512];
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_done;
    ld.param.u64 %rd1, [scratch];
    ld.param.u64 %rd2, [other];
    ld.param.u64 %rd5, [out];
{COPY}
    tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd2;
    fence.proxy.tensormap::generic.release.gpu;
    mbarrier.init.shared::cta.b64 [bar], 1;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 512;
    mov.u32 %r7, 0;
    cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [tile], [%rd1, {{%r7, %r7}}], [bar];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $L_wait;
{OUT}
$L_done:
    ret;
}}
"""


def test_replaced_global_address_redirects_the_tma_load():
    first = np.arange(128, dtype=np.float32).reshape(8, 16)
    other = -np.arange(128, dtype=np.float32).reshape(8, 16) - 1
    tm = TensorMap.for_array(first, (16, 8))           # box = the whole 8 x 16 f32 tensor
    scratch = np.zeros(128, np.uint8)
    out = np.zeros((8, 16), np.float32)
    launch(PTX, "tm_replace", 1, 32, args=[tm, scratch, other, out])
    assert np.array_equal(out, other)                  # not `first`: the address was replaced


def test_swizzle_atomicity_makes_the_128B_atom_swizzles():
    """tensormap.replace.swizzle_atomicity 1 / 2 / 3 on a 128B-swizzled map gives the map that
    cuTensorMapEncodeTiled writes for CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B / _32B_FLIP_8B / _64B
    (the PTX ISA's split of the CUtensorMapSwizzle enum into mode 3 + atomicity), byte for byte,
    and a map read back from either decodes to that swizzle; atomicity 0 gives 128B back."""
    from ptxsim.machine.tensormap import replace_field
    a = np.zeros((8, 64), np.float32)
    base = TensorMap.for_array(a, (32, 8), swizzle="128B")
    blob = dataclasses.replace(base, global_address=0x10000).to_bytes()
    for code, name in ((1, "128B_atom_32B"), (2, "128B_atom_32B_flip_8B"), (3, "128B_atom_64B")):
        atom = replace_field(blob, "swizzle_atomicity", code)
        direct = TensorMap.for_array(a, (32, 8), swizzle=name)
        direct = dataclasses.replace(direct, global_address=0x10000).to_bytes()
        assert atom == direct
        assert TensorMap.from_bytes(atom).swizzle == name
        assert replace_field(atom, "swizzle_atomicity", 0) == blob

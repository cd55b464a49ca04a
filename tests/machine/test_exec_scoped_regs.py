"""`.reg` declared in a nested { } block is local to it (PTX ISA 5.1.1 scope): sibling blocks may
declare the same name with another type, and an inner block shadows an outer name (Triton's
inline-asm upcasts depend on it: the sm_90a dot_scaled e4m3 x e2m1 kernel declares `a<2>` as
.f16 in one block and `a<14>` as .b32 in another). Values by hand."""
import numpy as np

from ptxsim.machine.executor import launch

PTX = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %p;
  .reg .b32 a0;
  ld.param.u64 %p, [out];
  mov.b32 a0, 7;
  {
    .reg .f16 a<2>;
    .reg .b16 h;
    mov.b32 {a0, a1}, 0x40003C00;     // a0 = 1.0, a1 = 2.0 (f16, 16-bit registers)
    add.f16 h, a0, a1;                // 3.0 = 0x4200
    cvt.u32.u16 %r0, h;
  }
  {
    .reg .b32 a<14>;
    mov.b32 a13, 0xFFFFFFFF;          // a full 32-bit value: a 16-bit a0 would truncate it
    mov.b32 a0, a13;
    mov.b32 %r1, a0;
  }
  mov.b32 %r2, a0;                    // the outer a0: untouched by the blocks
  st.global.v4.u32 [%p], {%r0, %r1, %r2, %r2};
  ret;
}
"""


def test_sibling_blocks_and_shadowing():
    out = np.zeros(4, np.uint32)
    launch(PTX, "k", 1, 1, args=[out], target="sm_90a")
    assert out.tolist() == [0x4200, 0xFFFFFFFF, 7, 7]

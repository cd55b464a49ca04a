"""The kernels of the tma_modes capture (probe.py runs them on an sm_90a GPU; ptxsim's tests run
the same text, tests/machine/test_exec_tma_modes.py). Each is a PTX body after `head(target)`.

REDUCE(op): 32 threads stage 512 bytes of `src` in shared memory, thread 0 issues
    cp.reduce.async.bulk.global.shared::cta.bulk_group.<op> [dst], [buf], 512.
The tensor maps are in global memory (`tmap` points to the 128 bytes).
TENSOR_REDUCE(op): 128 threads stage 8 KB of `src` (the swizzled box image), thread 0 issues
    cp.reduce.async.bulk.tensor.2d.global.shared::cta.<op>.tile.bulk_group at (c0, c1).
IM2COL: thread 0 issues a 4-D .im2col load of `nbytes` at (c, w, h, n) with offsets (ow, oh);
    the CTA copies the first 8 KB of shared memory to `out`.
"""


def head(target: str = "sm_90a", version: str | None = None) -> str:
    version = version or ("8.0" if target == "sm_90a" else "8.6")
    return f".version {version}\n.target {target}\n.address_size 64\n"


REDUCE = """.visible .entry k(.param .u64 dst, .param .u64 src)
{{
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    .reg .pred %p<2>;
    .shared .align 128 .b8 buf[512];
    ld.param.u64 %rd1, [dst];
    ld.param.u64 %rd2, [src];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.v4.u32 {{%r2, %r3, %r4, %r5}}, [%rd4];
    mov.u32 %r0, buf;
    cvt.u64.u32 %rd5, %r0;
    add.s64 %rd6, %rd5, %rd3;
    cvt.u32.u64 %r0, %rd6;
    st.shared.v4.u32 [%r0], {{%r2, %r3, %r4, %r5}};
    fence.proxy.async.shared::cta;
    bar.sync 0;
    setp.eq.u32 %p1, %r1, 0;
    @!%p1 bra $L_end;
    cp.reduce.async.bulk.global.shared::cta.bulk_group.{op} [%rd1], [buf], 512;
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
$L_end:
    ret;
}}
"""

TENSOR_REDUCE = """.visible .entry k(.param .u64 tmap, .param .u64 src, .param .u32 c0,
                  .param .u32 c1)
{{
    .reg .b32 %r<10>;
    .reg .b64 %rd<8>;
    .reg .pred %p<2>;
    .shared .align 1024 .b8 buf[8192];
    ld.param.u64 %rd1, [src];
    ld.param.u32 %r6, [c0];
    ld.param.u32 %r7, [c1];
    mov.u32 %r1, %tid.x;
    mov.u32 %r0, buf;
$L_copy:
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.v4.u32 {{%r2, %r3, %r4, %r5}}, [%rd4];
    shl.b32 %r8, %r1, 4;
    add.u32 %r8, %r8, %r0;
    st.shared.v4.u32 [%r8], {{%r2, %r3, %r4, %r5}};
    add.u32 %r1, %r1, 128;
    setp.lt.u32 %p1, %r1, 512;
    @%p1 bra $L_copy;
    fence.proxy.async.shared::cta;
    bar.sync 0;
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @!%p1 bra $L_end;
    ld.param.u64 %rd5, [tmap];
    cp.reduce.async.bulk.tensor.2d.global.shared::cta.{op}.tile.bulk_group [%rd5, {{%r6, %r7}}], [buf];
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
$L_end:
    ret;
}}
"""

IM2COL = """.visible .entry k(.param .u64 tmap, .param .u64 out, .param .u32 c,
                  .param .u32 w, .param .u32 h, .param .u32 n, .param .u32 ow, .param .u32 oh,
                  .param .u32 nbytes)
{
    .reg .b32 %r<16>;
    .reg .b16 %hs<2>;
    .reg .b64 %rd<6>;
    .reg .pred %p<3>;
    .shared .align 1024 .b8 buf[8192];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r2, [c];
    ld.param.u32 %r3, [w];
    ld.param.u32 %r4, [h];
    ld.param.u32 %r5, [n];
    ld.param.u32 %r6, [ow];
    ld.param.u32 %r7, [oh];
    ld.param.u32 %r12, [nbytes];
    cvt.u16.u32 %hs0, %r6;
    cvt.u16.u32 %hs1, %r7;
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], 1;
    bar.sync 0;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], %r12;
    ld.param.u64 %rd4, [tmap];
    @%p1 cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [buf], [%rd4, {%r2, %r3, %r4, %r5}], [bar], {%hs0, %hs1};
    mov.u32 %r8, 0;
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], %r8;
    @!%p2 bra $L_wait;
    mov.u32 %r9, %r1;
$L_copy:
    mov.u32 %r8, buf;
    shl.b32 %r10, %r9, 4;
    add.u32 %r8, %r8, %r10;
    ld.shared.v4.u32 {%r10, %r11, %r13, %r14}, [%r8];
    mul.wide.u32 %rd2, %r9, 16;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v4.u32 [%rd3], {%r10, %r11, %r13, %r14};
    add.u32 %r9, %r9, 32;
    setp.lt.u32 %p2, %r9, 512;
    @%p2 bra $L_copy;
    ret;
}
"""

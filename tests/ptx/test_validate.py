"""Validator: each expectation is read off the PTX ISA text (section cited) or, where marked,
off ptxas 13.0's answer; none comes from running ptxsim."""
import pytest

from ptxsim.ptx import errors_of, parse_instruction, parse_module, validate

OK = None


def check(text, target="sm_100a", version="9.0"):
    return validate(parse_instruction(text), target=target, ptx_version=version)


CASES = [
    # 9.7.16.7.1: nCols in [32, 512], a power of 2; .sync .aligned mandatory
    ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [a], 32", OK),
    ("tcgen05.alloc.cta_group::2.sync.aligned.b32 [a], 512", OK),
    ("tcgen05.alloc.cta_group::1.sync.aligned.b32 [a], 1024", "range [32, 512]"),
    ("tcgen05.alloc.cta_group::1.sync.aligned.b32 [a], 96", "power of 2"),
    ("tcgen05.alloc.cta_group::1.aligned.b32 [a], 32", "requires a .sync"),
    ("tcgen05.alloc.sync.aligned.b32 [a], 32", "requires a .cta_group"),
    ("tcgen05.dealloc.cta_group::1.sync.aligned.b32 t, 128", OK),
    ("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned", OK),
    # 9.7.16.8.3, Table 47: regs = num x {1 (.32x32b), 2 (.16x128b), 4 (.16x256b)}, <= 128
    ("tcgen05.ld.sync.aligned.32x32b.x2.b32 {r0, r1}, [t]", OK),
    ("tcgen05.ld.sync.aligned.16x128b.x4.b32 {r0, r1, r2, r3, r4, r5, r6, r7}, [t]", OK),
    ("tcgen05.ld.sync.aligned.16x256b.x1.b32 {r0, r1, r2}, [t]", "vector of 4"),
    ("tcgen05.ld.sync.aligned.16x256b.x64.b32 {r0}, [t]", "Table 47"),
    ("tcgen05.ld.sync.aligned.16x32bx2.x1.b32 {r0}, [t], 16", OK),
    ("tcgen05.ld.sync.aligned.16x32bx2.x1.b32 {r0}, [t]", "takes 3 operands"),
    ("tcgen05.st.sync.aligned.16x64b.x4.b32 [t], {r0, r1, r2, r3}", OK),
    ("tcgen05.st.sync.aligned.16x128b.x1.unpack::16b.b32 [t], {r0, r1}", OK),
    ("tcgen05.ld.sync.aligned.32x32b.x1.unpack::16b.b32 {r0}, [t]", "not valid for tcgen05.ld"),
    # tcgen05.ld.red: sm_101a / sm_103f / sm_110f families only, .num >= .x2
    ("tcgen05.ld.red.sync.aligned.32x32b.x2.min.f32 {r0, r1}, v, [t]", "not supported on .target sm_100a"),
    ("tcgen05.wait::ld.sync.aligned", OK),
    ("tcgen05.wait::mma.sync.aligned", "not valid"),
    # 9.7.16.9.2: .64x128b needs .warpx2::*, .32x128b needs .warpx4; others take none
    ("tcgen05.cp.cta_group::1.64x128b.warpx2::02_13 [t], s", OK),
    ("tcgen05.cp.cta_group::1.warpx4.32x128b [t], s", OK),
    ("tcgen05.cp.cta_group::1.64x128b [t], s", "requires multicast"),
    ("tcgen05.cp.cta_group::1.128x256b.warpx4 [t], s", "not allowed with shape"),
    ("tcgen05.cp.cta_group::2.128x128b.b8x16.b6x16_p32 [t], s", OK),
    ("tcgen05.cp.cta_group::2.128x128b.b6x16_p32 [t], s", "both .dst_fmt and .src_fmt"),
    ("tcgen05.shift.cta_group::1.down [t]", OK),
    ("tcgen05.fence::after_thread_sync", OK),
    ("tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [m]", OK),
    ("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [m], mask", OK),
    ("tcgen05.commit.cta_group::1.mbarrier::arrive::one.multicast::cluster.b64 [m]", "takes 2 operands"),
    # 9.7.16.10.9.1 and Table 54
    ("tcgen05.mma.cta_group::1.kind::tf32 [d], a, b, i, {m0, m1, m2, m3}, p", OK),
    ("tcgen05.mma.cta_group::2.kind::f16 [d], a, b, i, {m0, m1, m2, m3, m4, m5, m6, m7}, p, 15", OK),
    ("tcgen05.mma.cta_group::2.kind::f16 [d], a, b, i, {m0, m1, m2, m3}, p", "vector of 8"),
    ("tcgen05.mma.cta_group::1.kind::f16 [d], a, b, i, p, 16", "out of range [0, 15]"),
    ("tcgen05.mma.cta_group::1.kind::f8f6f4 [d], a, b, i, p, 1", "only valid with .kind::f16 and .kind::tf32"),
    ("tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale [d], [a], b, i, [sa], [sb], p", OK),
    # the spec's own example omits .block_scale; ptxas 13.0 also says ".block_scale modifier required"
    ("tcgen05.mma.cta_group::1.kind::mxf8f6f4 [d], [a], b, i, [sa], [sb], p", "requires .block_scale"),
    ("tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::2X [d], a, b, i, [sa], [sb], p", "Table 54"),
    ("tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale [d], a, b, i, [sa], [sb], p", "explicit .scale_vectorsize"),
    ("tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16 [d], a, b, i, [sa], [sb], p", OK),
    ("tcgen05.mma.cta_group::1.kind::f16.ashift.collector::a::fill [d], [a], b, i, p", "cannot be combined with .ashift"),
    ("tcgen05.mma.cta_group::1.kind::f16.ashift [d], a, b, i, p", "Tensor Memory"),
    ("tcgen05.mma.sp.cta_group::1.kind::f16 [d], a, b, [m], i, p", OK),
    ("tcgen05.mma.ws.cta_group::1.kind::i8.collector::b2::use [d], [a], b, i, p", OK),
    ("tcgen05.mma.ws.sp.cta_group::1.kind::tf32.collector::b1::fill [d], [a], b, [m], i, p", OK),
    ("tcgen05.mma.ws.cta_group::2.kind::f16 [d], a, b, i, p", "not valid for tcgen05.mma.ws"),
    ("tcgen05.mma.ws.cta_group::1.kind::f16 [d], a, b, i, p, z", OK),
    # 9.7.14.6.3 mma.sp (fragment sizes derived in mma_sp.py: A 16xK/2, B Kx8 over 32 threads)
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
     "{d0, d1, d2, d3}, {a0, a1}, {b0, b1}, {c0, c1, c2, c3}, e, 0x1", OK),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 "
     "{d0, d1, d2, d3}, {a0, a1}, {b0, b1, b2, b3}, {c0, c1, c2, c3}, e, 0", "vector of 4"),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f16.f16.f16.f32 "
     "{d0, d1}, {a0, a1}, {b0, b1}, {c0, c1, c2, c3}, e, 0", "must be the same as .ctype"),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
     "{d0, d1, d2, d3}, {a0, a1}, {b0, b1}, {c0, c1, c2, c3}, e, 4", "out of range [0, 3]"),
    # ptxas 13.0: selector [0..0] for 8-bit A
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.satfinite.s32.s8.s8.s32 "
     "{d0, d1, d2, d3}, {a0, a1, a2, a3}, {b0, b1, b2, b3}, {c0, c1, c2, c3}, e, 1", "out of range [0, 0]"),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k16.col.row.f32.f16.f16.f32 "
     "{d0, d1, d2, d3}, {a0, a1}, {b0, b1}, {c0, c1, c2, c3}, e, 0", ".row.col"),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f32.e3m2.e2m3.f32 "
     "{d0, d1, d2, d3}, {a0, a1, a2, a3}, {b0, b1, b2, b3}, {c0, c1, c2, c3}, e, 0", "sm_120a"),
    # 9.7.18 video
    ("vadd.s32.u32.s32.sat.add r1, r2.b0, r3.h1, r4", OK),
    ("vadd.u32.u32.u32 r1.h1, r2, r3, r4", OK),
    ("vadd.u32.u32.u32 r1, r2.b4, r3", "selector '.b4'"),
    ("vshl.u32.u32.s32.clamp r1, r2, r3", "requires .btype .u32"),
    ("vshr.u32.u32.u32 r1, r2, r3", "requires a .mode"),
    ("vmad.s32.s32.u32.po r1, -r2, r3, r4", "may not be negated"),
    ("vmad.s32.s32.s32 r1, -r2, r3, -r4", "either the product"),
    ("vmad.s32.s32.s32 r1, -r2, -r3, -r4", OK),
    ("vset.u32.s32.ne r1, r2, r3", OK),
    ("vadd2.u32.u32.u32.add r1.h0, r2.h10, r3.h32, r4", OK),
    ("vadd2.u32.u32.u32 r1.h2, r2, r3, r4", "selector '.h2'"),
    ("vmax4.s32.u32.s32 r1.b31, r2.b3210, r3.b7654, r4", OK),
    ("vmax4.s32.u32.s32 r1, r2.b8765, r3, r4", "selector '.b8765'"),
    ("vadd4.u32.u32.u32.sat.add r1, r2, r3, r4", ".sat and .add"),
    # 9.7.17 stack, 9.7.19 misc
    ("stacksave.u64 rd", OK),
    ("alloca.u32 ptr, size, 8", OK),
    ("alloca.u32 ptr, size, 12", "power of 2"),
    ("alloca.u32 ptr, size, 16777216", "2^23"),
    ("brkpt", OK),
    ("nanosleep.u32 100", OK),
    ("pmevent 15", OK),
    ("pmevent 16", "out of range [0, 15]"),
    ("pmevent.mask 0xffff", OK),
    ("setmaxnreg.inc.sync.aligned.u32 240", OK),
    ("setmaxnreg.dec.sync.aligned.u32 20", "multiple of 8 in [24, 256]"),
    ("setmaxnreg.dec.sync.aligned.u32 100", "multiple of 8"),
    ("trap", OK),
    # base instructions (their syntax lines: ptx/legality/base_forms.py)
    ("ld.global.v4.b32 {r0, r1, r2, r3}, [p+16]", OK),
    ("ld.global.v4.b32 {r0, r1}, [p+16]", "vector of 4"),
    # wgmma (isa.wgmma's table, docs/mma-sync.md): sm_90a only, 64 D registers for N = 128
    ("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {f0}, a, b, p, 1, 1, 0, 1",
     "requires sm_90a"),
    ("frobnicate.u32 r1, r2", "not a PTX instruction"),
    ("add.u32 r1, r2", "takes 3 operands"),
]


def test_wgmma_on_its_target():
    d = "{" + ", ".join(f"f{i}" for i in range(64)) + "}"
    ok = f"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {d}, a, b, p, 1, 1, 0, 1"
    assert errors_of(check(ok, target="sm_90a", version="8.0")) == []
    short = "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {f0}, a, b, p, 1, 1, 0, 1"
    assert any("64 registers" in e.message for e in errors_of(check(short, "sm_90a", "8.0")))


@pytest.mark.parametrize("text, expect", CASES)
def test_spec_tables(text, expect):
    errs = errors_of(check(text))
    if expect is None:
        assert errs == [], [str(e) for e in errs]
    else:
        assert errs, f"expected an error containing {expect!r}"
        assert any(expect in e.message for e in errs), [e.message for e in errs]


TARGETS = [
    # "Supported on sm_100a, sm_101a (sm_110a), sm_100f+ / sm_110f+ families from PTX ISA 8.8"
    ("tcgen05.fence::before_thread_sync", "sm_100a", "8.6", True),
    ("tcgen05.fence::before_thread_sync", "sm_100a", "8.5", False),
    ("tcgen05.fence::before_thread_sync", "sm_103a", "8.8", True),
    ("tcgen05.fence::before_thread_sync", "sm_100f", "8.8", True),
    ("tcgen05.fence::before_thread_sync", "sm_110f", "9.0", True),
    ("tcgen05.fence::before_thread_sync", "sm_120a", "9.0", False),
    ("tcgen05.fence::before_thread_sync", "sm_90a", "9.0", False),
    ("tcgen05.fence::before_thread_sync", "sm_100", "9.0", False),
    # .kind::i8: sm_100a, sm_101a, sm_110a only
    ("tcgen05.mma.cta_group::1.kind::i8 [d], a, b, i, p", "sm_100a", "9.0", True),
    ("tcgen05.mma.cta_group::1.kind::i8 [d], a, b, i, p", "sm_103a", "9.0", False),
    ("tcgen05.mma.cta_group::1.kind::i8 [d], a, b, i, p", "sm_100f", "9.0", False),
    # tcgen05.shift: sm_100a, sm_101a, sm_103a, sm_110a (no family targets)
    ("tcgen05.shift.cta_group::1.down [t]", "sm_103a", "9.0", True),
    ("tcgen05.shift.cta_group::1.down [t]", "sm_100f", "9.0", False),
    # .kind::mxf4nvf4 from PTX 8.7; .block16/.block32 from 8.8
    ("tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X [d], a, b, i, [x], [y], p", "sm_100a", "8.6", False),
    ("tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X [d], a, b, i, [x], [y], p", "sm_100a", "8.7", True),
    ("tcgen05.mma.cta_group::1.kind::mxf4.block_scale.block32 [d], a, b, i, [x], [y], p", "sm_100a", "8.7", False),
    ("tcgen05.mma.cta_group::1.kind::mxf4.block_scale.block32 [d], a, b, i, [x], [y], p", "sm_100a", "8.8", True),
    # setmaxnreg: sm_90a, sm_100a, sm_120a, families from 8.8; not plain sm_90
    ("setmaxnreg.inc.sync.aligned.u32 64", "sm_90a", "8.0", True),
    ("setmaxnreg.inc.sync.aligned.u32 64", "sm_90", "8.0", False),
    ("setmaxnreg.inc.sync.aligned.u32 64", "sm_121a", "9.0", True),
    # mma.sp: sm_80+; .e4m3 needs sm_89; ::ordered_metadata from PTX 8.5
    ("mma.sp.sync.aligned.m16n8k64.row.col.f32.e4m3.e4m3.f32 {d0, d1, d2, d3}, {a0, a1, a2, a3}, "
     "{b0, b1, b2, b3}, {c0, c1, c2, c3}, e, 0", "sm_80", "8.4", False),
    ("mma.sp.sync.aligned.m16n8k64.row.col.f32.e4m3.e4m3.f32 {d0, d1, d2, d3}, {a0, a1, a2, a3}, "
     "{b0, b1, b2, b3}, {c0, c1, c2, c3}, e, 0", "sm_89", "8.4", True),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {d0, d1, d2, d3}, "
     "{a0, a1}, {b0, b1}, {c0, c1, c2, c3}, e, 0", "sm_80", "8.4", False),
    ("nanosleep.u32 5", "sm_70", "6.3", True),
    ("nanosleep.u32 5", "sm_70", "6.2", False),
    ("stacksave.u32 r", "sm_52", "7.3", True),
]


@pytest.mark.parametrize("text, target, version, ok", TARGETS)
def test_target_and_version_notes(text, target, version, ok):
    assert (errors_of(check(text, target, version)) == []) == ok


def test_mma_sp_advisory_is_a_warning():
    d = check("mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {d0, d1, d2, d3}, {a0, a1}, "
              "{b0, b1}, {c0, c1, c2, c3}, e, 0")
    assert [x.severity for x in d] == ["warning"] and "ordered_metadata" in d[0].message


KERNEL = """.version {v}
.target {t}
.address_size 64
.visible .entry k()
{{
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<4>;
\t.reg .pred %p<2>;
{body}
\tret;
}}
"""


def module(body, t="sm_100a", v="9.0"):
    return parse_module(KERNEL.format(body=body, t=t, v=v), "k.ptx")


def test_module_rules():
    d = errors_of(validate(module("\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;\n"
                                  "\ttcgen05.mma.cta_group::2.kind::f16 [%r1], %rd1, %rd2, %r3, %p1;")))
    assert len(d) == 1 and "same .cta_group" in d[0].message and d[0].loc.line == 10
    d = errors_of(validate(module("\tbra NOWHERE;")))
    assert "not a label in scope" in d[0].message and (d[0].loc.line, d[0].loc.col) == (9, 2)
    d = errors_of(validate(module("\tadd.s32 %r1, %q1, 1;")))
    assert "'%q1' is not declared" in d[0].message
    # register widths are checked where declared: a-desc is 64-bit, idesc 32-bit (ptxas agrees)
    d = errors_of(validate(module("\ttcgen05.mma.cta_group::1.kind::f16 [%r1], %r1, %rd2, %r3, %p1;")))
    assert "64-bit register" in d[0].message
    d = errors_of(validate(module("\ttcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r3, %r4;")))
    assert "predicate" in d[0].message
    # labels in a sibling scope are not visible
    d = errors_of(validate(module("\t{\n\tL1:\n\tret;\n\t}\n\t{\n\tbra L1;\n\t}")))
    assert "not a label in scope" in d[0].message


def test_module_target_and_version():
    assert errors_of(validate(module("\ttrap;", "sm_100a", "8.5")))[0].message.startswith(
        ".target sm_100a requires PTX ISA version 8.6")
    d = validate(module("\ttrap;", "sm_100a", "8.6"), target="sm_103a")
    assert "cannot be compiled for sm_103a" in errors_of(d)[0].message
    assert errors_of(validate(module("\ttrap;", "sm_100f", "8.8"), target="sm_103a")) == []
    assert errors_of(validate(module("\ttrap;", "sm_90", "8.0"), target="sm_100a")) == []


def test_single_instruction_register_types():
    i = parse_instruction("tcgen05.cp.cta_group::1.128x256b [t], s")
    assert errors_of(validate(i)) == []                                  # widths unknown
    assert errors_of(validate(i, registers={"s": ".b64", "t": ".b32"})) == []
    e = errors_of(validate(i, registers={"s": ".b32"}))
    assert "64-bit register" in e[0].message                             # s-desc is 64-bit

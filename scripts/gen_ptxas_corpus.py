"""Generate the single-instruction ptxas corpus and record ptxas 13.0's verdict on each case.

Cases are built systematically from ptxsim's legality tables (src/ptxsim/ptx/legality/*):
every valid combination a table row describes (or a regular sample of it), plus deliberate
mutations (a qualifier dropped, a conflicting one added, a bad immediate, a wrong vector size,
an operand of the wrong kind, a target or PTX version that lacks the feature). Each case is one
kernel; ptxas's exit status is the oracle.

    PYTHONPATH=src python scripts/gen_ptxas_corpus.py [tests/data/ptx/ptxas_corpus.json]

Needs ptxas (13.0 was used: `ptxas --version`). The test suite never runs ptxas: it compares
ptxsim's verdict with the verdicts recorded here (tests/ptx/test_ptxas_corpus.py).
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ptxsim.ptx.legality import mma_sp, tcgen05, video

KERNEL = """.version {version}
.target {target}
.address_size 64

.visible .entry corpus_kernel()
{{
\t.reg .b32 %r<300>;
\t.reg .b64 %rd<20>;
\t.reg .pred %p<8>;
\t.reg .b16 %rs<8>;
\t{instruction}
\tret;
}}
"""

TARGET_VERSION = {"sm_100a": "9.0", "sm_100f": "9.0", "sm_103a": "9.0", "sm_103f": "9.0",
                  "sm_110a": "9.0", "sm_110f": "9.0", "sm_120a": "9.0", "sm_121a": "9.0",
                  "sm_120f": "9.0", "sm_90a": "9.0", "sm_90": "9.0", "sm_89": "9.0", "sm_80": "9.0",
                  "sm_100": "9.0"}


def vec(n: int, start: int = 10) -> str:
    return "{" + ", ".join(f"%r{start + k}" for k in range(n)) + "}"


cases: list[dict] = []


def add(family: str, inst: str, target: str = "sm_100a", version: str | None = None, why: str = ""):
    cases.append({"family": family, "instruction": inst, "target": target,
                  "version": version or TARGET_VERSION[target], "intent": why})


# ------------------------------------------------------------------------------ tcgen05
def gen_tcgen05():
    F = "tcgen05"
    for g in ("::1", "::2"):
        for n in (32, 64, 128, 256, 512, 0, 16, 48, 96, 1024):
            add(F, f"tcgen05.alloc.cta_group{g}.sync.aligned.shared::cta.b32 [%r1], {n};", why=f"nCols={n}")
        for n in (32, 96, 512, 640):
            add(F, f"tcgen05.dealloc.cta_group{g}.sync.aligned.b32 %r1, {n};", why=f"nCols={n}")
        add(F, f"tcgen05.alloc.cta_group{g}.sync.aligned.b32 [%rd1], %r2;")
        add(F, f"tcgen05.relinquish_alloc_permit.cta_group{g}.sync.aligned;")
    add(F, "tcgen05.alloc.sync.aligned.shared::cta.b32 [%r1], 32;", why="missing .cta_group")
    add(F, "tcgen05.alloc.cta_group::1.aligned.shared::cta.b32 [%r1], 32;", why="missing .sync")
    add(F, "tcgen05.alloc.cta_group::1.sync.shared::cta.b32 [%r1], 32;", why="missing .aligned")
    add(F, "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta [%r1], 32;", why="missing .b32")
    add(F, "tcgen05.alloc.cta_group::1.cta_group::2.sync.aligned.b32 [%r1], 32;", why="two cta_group")
    add(F, "tcgen05.alloc.cta_group::3.sync.aligned.b32 [%r1], 32;", why="bad cta_group")
    add(F, "tcgen05.alloc.aligned.sync.b32.cta_group::1 [%r1], 32;", why="reordered")
    add(F, "tcgen05.alloc.cta_group::1.sync.aligned.b32 %r1, 32;", why="dst not address")
    add(F, "tcgen05.dealloc.cta_group::1.sync.aligned.b32 [%r1], 32;", why="taddr is address")
    add(F, "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned %r1;", why="operand")
    for t in ("sm_100f", "sm_103a", "sm_110a", "sm_110f", "sm_120a", "sm_90a", "sm_100"):
        add(F, "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;", t, why="target")
    add(F, "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;", "sm_100a", "8.5", "version")
    add(F, "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;", "sm_100a", "8.6", "version")

    # ld / st: every .shape x .num (Table 47/48)
    for shape, num in itertools.product(tcgen05.SHAPES_LDST, tcgen05.NUMS):
        n = tcgen05.NUMS[num] * tcgen05.SHAPES_LDST[shape]
        split = ", 16" if shape == ".16x32bx2" else ""
        v = vec(min(n, 128))
        add(F, f"tcgen05.ld.sync.aligned{shape}{num}.b32 {v}, [%r1]{split};", why=f"regs={n}")
        if num in (".x1", ".x4", ".x32", ".x128"):
            add(F, f"tcgen05.st.sync.aligned{shape}{num}.b32 [%r1]{split}, {v};", why=f"regs={n}")
        if num in (".x2",):
            add(F, f"tcgen05.ld.sync.aligned{shape}{num}.pack::16b.b32 {v}, [%r1]{split};")
            add(F, f"tcgen05.st.sync.aligned{shape}{num}.unpack::16b.b32 [%r1]{split}, {v};")
            add(F, f"tcgen05.ld.sync.aligned{shape}{num}.b32 {vec(n + 1)}, [%r1]{split};", why="vector too long")
    add(F, "tcgen05.ld.sync.aligned.16x32bx2.x1.b32 {%r10}, [%r1];", why="missing immHalfSplitoff")
    add(F, "tcgen05.ld.sync.aligned.16x32bx2.x1.b32 {%r10}, [%r1], %r2;", why="register immHalfSplitoff")
    add(F, "tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r10}, [%r1], 16;", why="immHalfSplitoff on 32x32b")
    add(F, "tcgen05.ld.sync.aligned.32x32b.x1.b32 %r10, [%r1];", why="scalar r")
    add(F, "tcgen05.ld.sync.aligned.32x32b.x1.pack::16b.unpack::16b.b32 {%r10}, [%r1];", why="unpack on ld")
    add(F, "tcgen05.st.sync.aligned.32x32b.x1.pack::16b.b32 [%r1], {%r10};", why="pack on st")
    add(F, "tcgen05.ld.sync.aligned.32x32b.16x64b.x1.b32 {%r10}, [%r1];", why="two shapes")
    add(F, "tcgen05.ld.sync.aligned.32x32b.x1.x2.b32 {%r10}, [%r1];", why="two nums")
    add(F, "tcgen05.ld.sync.aligned.32x64b.x1.b32 {%r10}, [%r1];", why="bad shape")
    add(F, "tcgen05.ld.sync.aligned.32x32b.x3.b32 {%r10, %r11, %r12}, [%r1];", why="bad num")
    add(F, "tcgen05.ld.sync.aligned.32x32b.x1.u32 {%r10}, [%r1];", why="type .u32")
    add(F, "tcgen05.ld.aligned.32x32b.x1.b32 {%r10}, [%r1];", why="missing .sync")
    # ld.red (PTX 8.8; sm_101a/sm_103f/sm_110f families)
    for t in ("sm_103a", "sm_110a", "sm_100a", "sm_100f", "sm_103f", "sm_110f"):
        add(F, "tcgen05.ld.red.sync.aligned.32x32b.x2.min.f32 {%r10, %r11}, %r2, [%r1];", t, why="ld.red target")
    for red in (".min.abs.NaN.f32", ".max.u32", ".max.s32", ".min.abs.u32", ".max", ".add.f32"):
        add(F, f"tcgen05.ld.red.sync.aligned.32x32b.x4{red} {vec(4)}, %r2, [%r1];", "sm_103a", why="redop/type")
    add(F, "tcgen05.ld.red.sync.aligned.16x32bx2.x8.u32.max {%r10, %r11, %r12, %r13, %r14, %r15, %r16, %r17}, %r2, [%r1], 16;",
        "sm_103a", why="spec example")
    add(F, "tcgen05.ld.red.sync.aligned.32x32b.x1.min.f32 {%r10}, %r2, [%r1];", "sm_103a", why=".x1 with .red")
    add(F, "tcgen05.ld.red.sync.aligned.16x64b.x2.min.f32 {%r10, %r11}, %r2, [%r1];", "sm_103a", why="shape with .red")
    # wait
    for w in ("::ld", "::st"):
        add(F, f"tcgen05.wait{w}.sync.aligned;")
    add(F, "tcgen05.wait::mma.sync.aligned;", why="bad wait op")
    add(F, "tcgen05.wait::ld.sync;", why="missing .aligned")
    # cp: every shape x multicast (+ decompression on a sample)
    for shape, mc in itertools.product(tcgen05.CP_SHAPES.split(), ("", ".warpx2::02_13", ".warpx2::01_23", ".warpx4")):
        for g in ("::1", "::2"):
            add(F, f"tcgen05.cp.cta_group{g}{shape}{mc} [%r1], %rd1;")
    for fmt in (".b8x16.b6x16_p32", ".b8x16.b4x16_p64", ".b6x16_p32", ".b8x16", ".b6x16_p32.b8x16"):
        add(F, f"tcgen05.cp.cta_group::1.128x256b{fmt} [%r1], %rd1;", why="decompression")
    add(F, "tcgen05.cp.cta_group::1.warpx4.32x128b [%r1], %rd1;", why="reordered")
    add(F, "tcgen05.cp.cta_group::1.128x256b [%r1], %r2;", why="32-bit s-desc")
    add(F, "tcgen05.cp.128x256b [%r1], %rd1;", why="missing cta_group")
    # shift (sm_100a, sm_101a/110a, sm_103a, sm_110a only)
    for t in ("sm_100a", "sm_103a", "sm_110a", "sm_100f", "sm_110f", "sm_103f"):
        add(F, "tcgen05.shift.cta_group::1.down [%r1];", t, why="shift target")
    add(F, "tcgen05.shift.down.cta_group::2 [%r1];")
    add(F, "tcgen05.shift.cta_group::1 [%r1];", why="missing .down")
    add(F, "tcgen05.shift.cta_group::1.up [%r1];", why=".up")
    # fence / commit
    for f in ("::before_thread_sync", "::after_thread_sync", "::before", "::acquire"):
        add(F, f"tcgen05.fence{f};")
    for g in ("::1", "::2"):
        add(F, f"tcgen05.commit.cta_group{g}.mbarrier::arrive::one.b64 [%r1];")
        add(F, f"tcgen05.commit.cta_group{g}.mbarrier::arrive::one.shared::cluster.b64 [%rd1];")
        add(F, f"tcgen05.commit.cta_group{g}.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%r1], %rs1;")
    add(F, "tcgen05.commit.cta_group::1.mbarrier::arrive::one.multicast::cluster.b64 [%r1];", why="missing ctaMask")
    add(F, "tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [%r1], %rs1;", why="ctaMask w/o multicast")
    add(F, "tcgen05.commit.cta_group::1.mbarrier::arrive::one.multicast::cluster.b64 [%r1], %r2;", why="32-bit ctaMask")
    add(F, "tcgen05.commit.cta_group::1.b64 [%r1];", why="missing completion mechanism")
    add(F, "tcgen05.commit.cta_group::1.mbarrier::arrive::one.b32 [%r1];", why=".b32")


def gen_mma():
    F = "tcgen05.mma"
    nonbs = (".kind::f16", ".kind::tf32", ".kind::f8f6f4", ".kind::i8")
    for sp, g, kind in itertools.product(("", ".sp"), ("::1", "::2"), nonbs):
        meta = ", [%r5]" if sp else ""
        lanes = vec(8 if g == "::2" else 4, 20)
        base = f"tcgen05.mma{sp}.cta_group{g}{kind}"
        add(F, f"{base} [%r1], %rd1, %rd2{meta}, %r3, %p1;")
        add(F, f"{base} [%r1], [%r2], %rd2{meta}, %r3, {lanes}, %p1;")
        add(F, f"{base} [%r1], %rd1, %rd2{meta}, %r3, %p1, 3;", why="scale-input-d")
        add(F, f"{base} [%r1], %rd1, %rd2{meta}, %r3, {vec(4 if g == '::2' else 8, 20)}, %p1;", why="lane vector size")
        if g == "::1":
            add(F, f"{base}.collector::a::fill [%r1], %rd1, %rd2{meta}, %r3, %p1;")
            add(F, f"{base}.ashift.collector::a::lastuse [%r1], [%r2], %rd2{meta}, %r3, %p1;")
            add(F, f"{base}.ashift.collector::a::use [%r1], [%r2], %rd2{meta}, %r3, %p1;", why="ashift+use")
            add(F, f"{base}.ashift [%r1], %rd1, %rd2{meta}, %r3, %p1;", why="ashift with a-desc")
            add(F, f"{base}.block_scale [%r1], %rd1, %rd2{meta}, %r3, [%r6], [%r7], %p1;", why="block_scale on non-mx kind")
    for sp, g, kind in itertools.product(("", ".sp"), ("::1", "::2"), sorted(tcgen05.SCALE_VECTORSIZE)):
        meta = ", [%r5]" if sp else ""
        for svs in ("", ".scale_vec::1X", ".scale_vec::2X", ".scale_vec::4X", ".block16", ".block32"):
            add(F, f"tcgen05.mma{sp}.cta_group{g}{kind}.block_scale{svs} [%r1], %rd1, %rd2{meta}, %r3, [%r6], [%r7], %p1;",
                why="Table 54")
        add(F, f"tcgen05.mma{sp}.cta_group{g}{kind}.block_scale.block32.collector::a::use [%r1], [%r2], %rd2{meta}, %r3, [%r6], [%r7], %p1;")
        add(F, f"tcgen05.mma{sp}.cta_group{g}{kind} [%r1], %rd1, %rd2{meta}, %r3, [%r6], [%r7], %p1;", why="missing block_scale")
    # .ws / .ws.sp
    for sp, kind in itertools.product(("", ".sp"), nonbs + (".kind::mxf8f6f4",)):
        meta = ", [%r5]" if sp else ""
        add(F, f"tcgen05.mma.ws{sp}.cta_group::1{kind} [%r1], %rd1, %rd2{meta}, %r3, %p1;")
        add(F, f"tcgen05.mma.ws{sp}.cta_group::1{kind}.collector::b2::use [%r1], [%r2], %rd2{meta}, %r3, %p1, %rd4;")
    add(F, "tcgen05.mma.ws.cta_group::2.kind::f16 [%r1], %rd1, %rd2, %r3, %p1;", why="ws with ::2")
    add(F, "tcgen05.mma.ws.cta_group::1.kind::f16.collector::a::fill [%r1], %rd1, %rd2, %r3, %p1;", why="ws with collector::a")
    add(F, "tcgen05.mma.cta_group::1.kind::f16.collector::b0::fill [%r1], %rd1, %rd2, %r3, %p1;", why="collector::b w/o ws")
    add(F, "tcgen05.mma.ws.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r3, {%r20, %r21, %r22, %r23}, %p1;", why="lanes on ws")
    # operands
    add(F, "tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r3, %p1, 16;", why="scale-input-d 16")
    add(F, "tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r3, %p1, %r4;", why="register scale-input-d")
    add(F, "tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %rd3, %p1;", why="64-bit idesc")
    add(F, "tcgen05.mma.cta_group::1.kind::f16 [%r1], %r1, %rd2, %r3, %p1;", why="32-bit a-desc")
    add(F, "tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r3, %r4;", why="32-bit enable-input-d")
    add(F, "tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r3;", why="missing enable-input-d")
    add(F, "tcgen05.mma.cta_group::1.kind::f16 %r1, %rd1, %rd2, %r3, %p1;", why="d not address")
    add(F, "tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, 0x10, 1;", why="immediate idesc / enable")
    add(F, "tcgen05.mma.kind::f16.cta_group::1 [%r1], %rd1, %rd2, %r3, !%p1;", why="reordered, negated")
    add(F, "tcgen05.mma.cta_group::1.kind::f32 [%r1], %rd1, %rd2, %r3, %p1;", why="bad kind")
    add(F, "tcgen05.mma.cta_group::1 [%r1], %rd1, %rd2, %r3, %p1;", why="missing kind")
    # targets / versions
    for t in ("sm_100f", "sm_103a", "sm_110a", "sm_110f", "sm_120a", "sm_90a"):
        for kind in (".kind::f16", ".kind::i8"):
            add(F, f"tcgen05.mma.cta_group::1{kind} [%r1], %rd1, %rd2, %r3, %p1;", t, why="target")
        add(F, "tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r3, %p1, 2;", t, why="scale-input-d target")
        for svs in (".scale_vec::2X", ".block32"):
            add(F, f"tcgen05.mma.cta_group::1.kind::mxf4.block_scale{svs} [%r1], %rd1, %rd2, %r3, [%r6], [%r7], %p1;", t)
            add(F, f"tcgen05.mma.sp.cta_group::1.kind::mxf4nvf4.block_scale{svs} [%r1], %rd1, %rd2, [%r5], %r3, [%r6], [%r7], %p1;", t)
    for v in ("8.6", "8.7", "8.8"):
        add(F, "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X [%r1], %rd1, %rd2, %r3, [%r6], [%r7], %p1;", "sm_100a", v)
        add(F, "tcgen05.mma.cta_group::1.kind::mxf4.block_scale.block32 [%r1], %rd1, %rd2, %r3, [%r6], [%r7], %p1;", "sm_100a", v)


def gen_mma_sp():
    F = "mma.sp"
    for row in mma_sp.ROWS:
        shape, ds, as_, bs, cs, spv, kind, na, nb, fmax = row
        for d, a, b in itertools.islice(itertools.product(sorted(ds), sorted(as_), sorted(bs)), 3):
            c = d
            nd = 2 if d == ".f16" else 4
            for sv in sorted(mma_sp.SP):
                blk = ""
                extra = ""
                if kind in mma_sp.SCALE:
                    svs = next(iter(sorted(k for k in mma_sp.SCALE[kind] if k)), "")
                    st = sorted(mma_sp.SCALE[kind][svs or None])[0]
                    blk = f".block_scale{svs}"
                    extra = ", %r30, {0, 1}, %r31, {2, 3}"
                    types = f"{d}{a}{b}{c}.{st[1:]}"
                else:
                    types = f"{d}{a}{b}{c}"
                sat = ".satfinite" if d == ".s32" else ""
                inst = (f"mma{sv}.sync.aligned{shape}.row.col{sat}{kind or ''}{blk}{types} {vec(nd, 10)}, "
                        f"{vec(na, 20)}, {vec(nb, 30)}, {vec(nd, 10)}, %r40, 1{extra};")
                for sel in (fmax, fmax + 1):
                    add(F, inst.replace(", %r40, 1", f", %r40, {sel}"), "sm_120a", why=f"selector {sel}")
                for t in ("sm_100a", "sm_120a", "sm_80", "sm_89", "sm_90a", "sm_121a"):
                    if t in ("sm_80", "sm_89", "sm_90a") and (kind or a not in (".f16", ".bf16", ".e4m3")):
                        continue
                    add(F, inst, t, why="table row")
    # mutations on the f16 / bf16 / int rows
    D, A2, B2, A4 = vec(4, 10), vec(2, 20), vec(2, 30), vec(4, 20)
    base = "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    for sel in (0, 3, 4, -1):
        add(F, f"{base} {D}, {A2}, {B2}, {D}, %r40, {sel};", why=f"selector {sel}")
    add(F, f"{base} {D}, {A2}, {B2}, {D}, %r40, %r41;", why="register selector")
    add(F, f"{base} {D}, {A4}, {B2}, {D}, %r40, 0;", why="A vector size")
    add(F, f"{base} {D}, {A2}, {B2}, {D}, %r40;", why="missing selector")
    add(F, "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f16.f16.f16.f32 {%r10, %r11}, "
        f"{A2}, {B2}, {D}, %r40, 0;", why="dtype != ctype")
    add(F, "mma.sp::ordered_metadata.sync.aligned.m16n8k16.col.row.f32.f16.f16.f32 "
        f"{D}, {A2}, {B2}, {D}, %r40, 0;", why="col.row")
    add(F, "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.tf32.tf32.f32 "
        f"{D}, {A4}, {vec(4, 30)}, {D}, %r40, 0;", why="tf32 k32")
    add(F, "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32.satfinite "
        f"{D}, {A4}, {vec(4, 30)}, {D}, %r40, 0;", why="satfinite on float")
    add(F, "mma.sp::ordered_metadata.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        f"{D}, {A2}, {B2}, {D}, %r40, 0;", why="missing .sync")
    add(F, "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 "
        f"{D}, {A2}, {B2}, {D}, %r40, 0;", why="int no satfinite")
    add(F, "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.s32.s8.s4.s32 "
        f"{D}, {A2}, {B2}, {D}, %r40, 0;", why="s8 x s4")
    add(F, "mma.sp.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f32.e3m2.e2m3.f32 "
        f"{D}, {A4}, {vec(4, 30)}, {D}, %r40, 0;", "sm_120a", why="f8f6f4 with .sp")
    add(F, "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.kind::mxf4nvf4.block_scale.f32.e2m1.e2m1.f32.ue8m0 "
        f"{D}, {A4}, {vec(4, 30)}, {D}, %r40, 0, %r50, {{0, 0}}, %r51, {{0, 0}};", "sm_120a", why="mxf4nvf4 no svs")
    add(F, "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3 "
        f"{D}, {A4}, {vec(4, 30)}, {D}, %r40, 0, %r50, {{0, 0}}, %r51, {{0, 0}};", "sm_120a")
    add(F, "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.kind::mxf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue8m0 "
        f"{D}, {A4}, {vec(4, 30)}, {D}, %r40, 0, %r50, {{0, 0}}, %r51, {{0, 0}};", "sm_120a", why="mxf4 4X")
    for v in ("8.4", "8.5"):
        add(F, f"{base} {D}, {A2}, {B2}, {D}, %r40, 0;", "sm_80", v, why="ordered_metadata version")


def gen_video():
    F = "video"
    for op in sorted(video.SCALAR_OPS):
        add(F, f"{op}.u32.u32.u32 %r1, %r2, %r3;")
        add(F, f"{op}.s32.u32.s32.sat %r1, %r2.b1, %r3.h0;")
        add(F, f"{op}.u32.s32.s32.sat.add %r1, %r2, %r3, %r4;")
        add(F, f"{op}.s32.s32.s32.max %r1, %r2.b3, %r3.b2, %r4;")
        add(F, f"{op}.u32.u32.u32 %r1.h1, %r2, %r3, %r4;")
        add(F, f"{op}.u32.u32.u32 %r1, %r2, %r3, %r4;", why="c without op2/dsel")
        add(F, f"{op}.u32.u32.u32 %r1, %r2.b4, %r3;", why="bad selector")
        add(F, f"{op}.u32.u32 %r1, %r2, %r3;", why="two types")
        add(F, f"{op}.u32.u32.u32.add %r1, %r2, %r3;", why="op2 without c")
    for op in sorted(video.SHIFT_OPS):
        for mode in (".clamp", ".wrap"):
            add(F, f"{op}.u32.s32.u32{mode} %r1, %r2, %r3;")
            add(F, f"{op}.s32.u32.u32{mode}.min %r1, %r2.h1, %r3, %r4;")
        add(F, f"{op}.u32.u32.s32.clamp %r1, %r2, %r3;", why="btype s32")
        add(F, f"{op}.u32.u32.u32 %r1, %r2, %r3;", why="missing mode")
    add(F, "vmad.s32.s32.u32 %r1, -%r2, %r3.h1, -%r4;")
    add(F, "vmad.u32.u32.u32.po.sat.shr7 %r1, %r2, %r3, %r4;")
    add(F, "vmad.u32.u32.u32.po %r1, -%r2, %r3, %r4;", why="negation with .po")
    add(F, "vmad.s32.s32.s32.shr15 %r1, %r2.b0, %r3.b1, %r4;")
    add(F, "vmad.s32.s32.s32.shr8 %r1, %r2, %r3, %r4;", why="bad scale")
    for cmp in sorted(video.CMP):
        add(F, f"vset.u32.s32{cmp} %r1, %r2, %r3;")
    add(F, "vset.s32.s32.lt.add %r1, %r2.b0, %r3.b1, %r4;")
    add(F, "vset.s32.s32.lt %r1.b2, %r2, %r3, %r4;")
    add(F, "vset.s32.s32 %r1, %r2, %r3;", why="missing cmp")
    for op in sorted(video.SIMD2_OPS) + ["vset2.lt"]:
        name, _, cmp = op.partition(".")
        types = ".u32.s32" if name.startswith("vset") else ".u32.s32.s32"
        cmp = "." + cmp if cmp else ""
        add(F, f"{name}{types}{cmp} %r1, %r2, %r3, %r4;")
        add(F, f"{name}{types}{cmp}.add %r1.h0, %r2.h10, %r3.h32, %r4;")
        add(F, f"{name}{types}{cmp} %r1.h10, %r2.h03, %r3.h21, %r4;")
        add(F, f"{name}{types}{cmp} %r1.h2, %r2, %r3, %r4;", why="bad mask")
        add(F, f"{name}{types}{cmp} %r1, %r2.h4, %r3, %r4;", why="bad asel")
        add(F, f"{name}{types}{cmp} %r1, %r2, %r3;", why="missing c")
    for op in sorted(video.SIMD4_OPS) + ["vset4.ge"]:
        name, _, cmp = op.partition(".")
        types = ".u32.s32" if name.startswith("vset") else ".s32.u32.s32"
        cmp = "." + cmp if cmp else ""
        add(F, f"{name}{types}{cmp} %r1, %r2, %r3, %r4;")
        add(F, f"{name}{types}{cmp}.add %r1.b210, %r2.b7654, %r3.b0123, %r4;")
        add(F, f"{name}{types}{cmp} %r1.b31, %r2.b3210, %r3.b7654, %r4;")
        add(F, f"{name}{types}{cmp} %r1.b01, %r2, %r3, %r4;", why="bad mask")
        add(F, f"{name}{types}{cmp} %r1, %r2.b8765, %r3, %r4;", why="bad asel")
    add(F, "vadd4.u32.u32.u32.sat.add %r1, %r2, %r3, %r4;", why="sat and add")


def gen_stack_misc():
    F = "stack/misc"
    for t in (".u32", ".u64"):
        r = "%r1" if t == ".u32" else "%rd1"
        r2 = "%r2" if t == ".u32" else "%rd2"
        add(F, f"stacksave{t} {r};")
        add(F, f"stackrestore{t} {r};")
        add(F, f"alloca{t} {r}, {r2};")
        for align in (8, 16, 3, 1 << 23, 1 << 24):
            add(F, f"alloca{t} {r}, {r2}, {align};", why=f"immAlign {align}")
    add(F, "stacksave.u64 %r1;", why="32-bit reg for u64")
    add(F, "stacksave.b32 %r1;", why="type b32")
    add(F, "stacksave %r1;", why="missing type")
    add(F, "alloca.u32 %r1, 64;", why="immediate size")
    add(F, "alloca %r1, %r2, 8;", why="spec example without type")
    add(F, "stacksave.u32 %r1;", "sm_100a", "7.2", why="version")
    add(F, "brkpt;")
    add(F, "brkpt %r1;", why="operand")
    add(F, "trap;")
    add(F, "trap.uni;", why="qualifier")
    for t in ("%r1", "100", "0"):
        add(F, f"nanosleep.u32 {t};")
    add(F, "nanosleep %r1;", why="missing type")
    add(F, "nanosleep.u64 %rd1;", why="u64")
    add(F, "nanosleep.u32 %r1;", "sm_100a", "6.2", why="version")
    for a in (0, 15, 16):
        add(F, f"pmevent {a};", why=f"event {a}")
    for a in (0, 0xFFFF, 0x10000):
        add(F, f"pmevent.mask {a};", why=f"mask {a}")
    add(F, "pmevent %r1;", why="register")
    for n in (24, 32, 240, 256, 16, 264, 100, 25):
        add(F, f"setmaxnreg.inc.sync.aligned.u32 {n};", why=f"count {n}")
    add(F, "setmaxnreg.dec.sync.aligned.u32 %r1;", why="register count")
    add(F, "setmaxnreg.inc.aligned.u32 32;", why="missing .sync")
    add(F, "setmaxnreg.sync.aligned.u32 32;", why="missing action")
    for t in ("sm_90a", "sm_90", "sm_100f", "sm_103a", "sm_110f", "sm_120a", "sm_120f", "sm_121a", "sm_80", "sm_100"):
        add(F, "setmaxnreg.dec.sync.aligned.u32 64;", t, why="target")


def run_ptxas(case: dict) -> dict:
    text = KERNEL.format(**case)
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as fh:
        fh.write(text)
        path = fh.name
    try:
        p = subprocess.run(["ptxas", f"-arch={case['target']}", path, "-o", os.devnull],
                           capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    msgs = [ln.split(";", 1)[-1].strip() for ln in p.stderr.splitlines()
            if "error" in ln or "warning" in ln or "Advisory" in ln]
    return dict(case, ptx=text, ptxas_ok=p.returncode == 0, ptxas_messages=msgs[:4])


def main(out: Path) -> None:
    gen_tcgen05()
    gen_mma()
    gen_mma_sp()
    gen_video()
    gen_stack_misc()
    seen, uniq = set(), []
    for c in cases:
        key = (c["instruction"], c["target"], c["version"])
        if key not in seen:
            seen.add(key)
            uniq.append(c)
    ver = subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    with ThreadPoolExecutor(max_workers=2) as ex:
        results = list(ex.map(run_ptxas, uniq))
    for k, r in enumerate(results):
        r["id"] = k
    out.write_text(json.dumps({"ptxas": ver, "cases": results}, indent=1) + "\n")
    ok = sum(r["ptxas_ok"] for r in results)
    print(f"{len(results)} cases, ptxas accepts {ok}, rejects {len(results) - ok} -> {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/ptx/ptxas_corpus.json"))

"""The 8-bit ldmatrix / stmatrix shapes of sm_100a+ (PTX ISA 9.7.14.5.15-16) run in a launched
kernel. Expected registers are derived by hand from the ISA text ("each thread loads 4
consecutive columns across 2 rows" for .m16n16, "4 consecutive columns" for .m8n16, "each
thread provides four elements e0..e3, LSB first" for .m16n8; .trans: a stored row is a column of
the logical matrix) with the row / fragment order of the mma 8-bit operand fragments
(9.7.14.5.x m16n8k32: row groupID (+8), columns 4 * threadID_in_group (+k)); the 4/6-bit
elements from the .b4x16_p64 / .b6x16_p32 packing the text defines (16 elements then 64 / 32
bits of padding) and CUTLASS's note that ldmatrix puts an fp4 value in the low bits of its byte.
No value here comes from ptxsim.isa.matrix."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ptxsim.errors import PtxValidationError, UndefinedBehavior
from ptxsim.machine.executor import launch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import ptxas135 as p135  # noqa: E402

RNG = np.random.default_rng(18)


def kernel(inst: str, nregs: int, store: bool = False, target="sm_100a", lane_row=None):
    """One warp: copy 1024 input bytes to shared memory, give lane l the row address
    `lane_row(l) * 16` (default l * 16; a permutation shows that each lane's own address is
    used), run `inst`, write the registers (ldmatrix) or the shared bytes (stmatrix) out."""
    regs = ", ".join(f"%v{i}" for i in range(nregs))
    perm = "mul.lo.u32 %rowi, %t, 7;\n  and.b32 %rowi, %rowi, 31;" if lane_row == "perm" \
        else "mov.u32 %rowi, %t;"
    body_ld = f"""
  {inst.format(regs="{" + regs + "}", addr="[%sa]")}
""" + "\n".join(f"  st.global.u32 [%go+{4 * 32 * i}], %v{i};" for i in range(nregs))
    body_st = "\n".join(f"  ld.global.u32 %v{i}, [%gi+{4 * 32 * i}];" for i in range(nregs)) + f"""
  {inst.format(regs="{" + regs + "}", addr="[%sa]")}
  bar.warp.sync -1;
  mov.u32 %k, 0;
OUT:
  shl.b32 %off, %k, 7;
  add.u32 %off, %off, %t4;
  cvt.u64.u32 %o64, %off;
  add.u64 %p, %outp, %o64;
  add.u32 %sb, %sbase, %off;
  ld.shared.u32 %w, [%sb];
  st.global.u32 [%p], %w;
  add.u32 %k, %k, 1;
  setp.lt.u32 %q, %k, 8;
  @%q bra OUT;"""
    return f""".version 8.7
.target {target}
.address_size 64
.visible .entry k(.param .u64 in, .param .u64 out)
{{
  .shared .align 16 .b8 buf[1024];
  .reg .b32 %t, %t4, %i, %w, %rowi, %sa, %sbase, %sb, %off, %k, %v<8>;
  .reg .b64 %inp, %outp, %a64, %p, %o64, %gi, %go;
  .reg .pred %q;
  ld.param.u64 %inp, [in];
  ld.param.u64 %outp, [out];
  mov.u32 %t, %tid.x;
  shl.b32 %t4, %t, 2;
  mov.u32 %sbase, buf;
  mov.u32 %i, 0;
COPY:
  shl.b32 %off, %i, 7;
  add.u32 %off, %off, %t4;
  cvt.u64.u32 %o64, %off;
  add.u64 %p, %inp, %o64;
  ld.global.u32 %w, [%p];
  add.u32 %sb, %sbase, %off;
  st.shared.u32 [%sb], %w;
  add.u32 %i, %i, 1;
  setp.lt.u32 %q, %i, 8;
  @%q bra COPY;
  bar.warp.sync -1;
  {perm}
  shl.b32 %rowi, %rowi, 4;
  add.u32 %sa, %sbase, %rowi;
  cvt.u64.u32 %o64, %t4;
  add.u64 %gi, %inp, %o64;
  add.u64 %go, %outp, %o64;
{body_st if store else body_ld}
  ret;
}}
"""


def run(inst, nregs, data: np.ndarray, store=False, **kw):
    out = np.zeros(256, np.uint32)
    launch(kernel(inst, nregs, store, **kw), "k", 1, 32, args=[data.view(np.uint32).copy(), out],
           target=kw.get("target", "sm_100a"))
    return out


def lane_regs(out, nregs):
    """out words -> (nregs, 32, 4) bytes: register i of lane l, byte k (LSB first)."""
    return out[:32 * nregs].view(np.uint8).reshape(nregs, 32, 4)


def rows_by_lane(smem: np.ndarray, perm: bool) -> np.ndarray:
    """(32, 16): the 16-byte row each lane addresses."""
    idx = (np.arange(32) * 7) % 32 if perm else np.arange(32)
    return smem.reshape(64, 16)[idx]


@pytest.mark.parametrize("num", [1, 2])
@pytest.mark.parametrize("perm", [False, True])
def test_ldmatrix_m16n16_trans_b8(num, perm):
    smem = RNG.integers(0, 256, 1024, dtype=np.uint8)
    out = run("ldmatrix.sync.aligned.m16n16.x%d.trans.shared.b8 {regs}, {addr};" % num, 2 * num,
              smem, lane_row="perm" if perm else None)
    got = lane_regs(out, 2 * num)
    rows = rows_by_lane(smem, perm)
    for j in range(num):
        # the stored rows of matrix j (lanes 16j..16j+15) are the columns of logical L
        L = rows[16 * j:16 * j + 16].T                       # L[row, col] = stored[col][row]
        for lane in range(32):
            g, t = lane // 4, lane % 4
            for r in range(2):
                want = L[g + 8 * r, 4 * t:4 * t + 4]
                assert np.array_equal(got[2 * j + r, lane], want), (j, lane, r)


def pack4(vals: np.ndarray) -> np.ndarray:
    """(16,) 4-bit values -> the 16-byte .b4x16_p64 row (element e at bits [4e, 4e+4))."""
    row = np.zeros(16, np.uint8)
    for e, v in enumerate(vals):
        row[e // 2] |= int(v) << (4 * (e % 2))
    row[8:] = 0xA5                                           # padding: must not show up
    return row


def pack6(vals: np.ndarray) -> np.ndarray:
    """(16,) 6-bit values -> the 16-byte .b6x16_p32 row (element e at bits [6e, 6e+6))."""
    bits = sum(int(v) << (6 * e) for e, v in enumerate(vals))
    row = np.frombuffer(bits.to_bytes(12, "little"), np.uint8).copy()
    return np.concatenate([row, np.full(4, 0x5A, np.uint8)])


@pytest.mark.parametrize("src,width,pack", [("b4x16_p64", 4, pack4), ("b6x16_p32", 6, pack6)])
@pytest.mark.parametrize("num", [1, 2, 4])
def test_ldmatrix_m8n16_widened(src, width, pack, num):
    logical = RNG.integers(0, 1 << width, (64, 16))
    smem = np.concatenate([pack(v) for v in logical])
    out = run(f"ldmatrix.sync.aligned.m8n16.x{num}.shared::cta.b8x16.{src} {{regs}}, {{addr}};",
              num, smem)
    got = lane_regs(out, num)
    for j in range(num):
        for lane in range(32):
            want = logical[8 * j + lane // 4, 4 * (lane % 4):4 * (lane % 4) + 4]
            assert np.array_equal(got[j, lane], want), (j, lane)


@pytest.mark.parametrize("src,width,pack", [("b4x16_p64", 4, pack4), ("b6x16_p32", 6, pack6)])
def test_ldmatrix_m16n16_trans_widened(src, width, pack):
    logical = RNG.integers(0, 1 << width, (64, 16))          # stored row i, element e
    smem = np.concatenate([pack(v) for v in logical])
    out = run(f"ldmatrix.sync.aligned.m16n16.x2.trans.shared.b8x16.{src} {{regs}}, {{addr}};", 4, smem)
    got = lane_regs(out, 4)
    for j in range(2):
        L = logical[16 * j:16 * j + 16].T
        for lane in range(32):
            for r in range(2):
                want = L[lane // 4 + 8 * r, 4 * (lane % 4):4 * (lane % 4) + 4]
                assert np.array_equal(got[2 * j + r, lane], want)


@pytest.mark.parametrize("num", [1, 2, 4])
def test_stmatrix_m16n8_trans_b8(num):
    regs = RNG.integers(0, 2 ** 32, 32 * 8, dtype=np.uint64).astype(np.uint32)
    data = np.zeros(1024, np.uint8)
    data[:regs.size * 4] = regs.view(np.uint8)
    out = run(f"stmatrix.sync.aligned.m16n8.x{num}.trans.shared.b8 {{addr}}, {{regs}};", num,
              data, store=True)
    smem = out.view(np.uint8).reshape(64, 16)
    byte = regs[:32 * num].view(np.uint8).reshape(num, 32, 4)
    for j in range(num):
        # logical 16x8 matrix of register j: e0 (g, 2t), e1 (g, 2t+1), e2 (g+8, 2t), e3 (g+8, 2t+1)
        M = np.zeros((16, 8), np.uint8)
        for lane in range(32):
            g, t = lane // 4, lane % 4
            M[g, 2 * t], M[g, 2 * t + 1] = byte[j, lane, 0], byte[j, lane, 1]
            M[g + 8, 2 * t], M[g + 8, 2 * t + 1] = byte[j, lane, 2], byte[j, lane, 3]
        # .trans: the row lane 8j + c addresses holds column c
        assert np.array_equal(smem[8 * j:8 * j + 8], M.T), j
    assert np.array_equal(smem.reshape(-1)[128 * num:], data[128 * num:])   # untouched


def test_stmatrix_then_ldmatrix_round_trip_of_the_cutlass_pairing():
    """CUTLASS pairs stmatrix.m16n8.x2.trans with ldmatrix.m16n16.x1.trans (copy_sm100.hpp
    SM100_U8x8_LDSM_T): after its byte shuffle, dst0 = (a.x, a.y, b.x, b.y) and dst1 = (a.z, a.w,
    b.z, b.w) of the ldmatrix registers a, b are the stmatrix.x2 source registers, and the
    ldmatrix lane t's row sits at reference row (t&1) + 8((t>>1)&1) + 2((t>>2)&3) of the stmatrix
    (copy_traits_sm100.hpp SrcLayout strides 128, 1024, 256 bits): stmatrix row p holds the
    ldmatrix row (p&1) + 2(p>>3) + 4((p>>1)&3)."""
    smem = RNG.integers(0, 256, 1024, dtype=np.uint8)
    out = run("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {regs}, {addr};", 2, smem)
    a = lane_regs(out, 2)
    shuffled = np.stack([np.concatenate([a[0, :, :2], a[1, :, :2]], axis=1),
                         np.concatenate([a[0, :, 2:], a[1, :, 2:]], axis=1)])  # (2, 32, 4)
    data = np.zeros(1024, np.uint8)
    data[:256] = shuffled.reshape(-1)
    back = run("stmatrix.sync.aligned.m16n8.x2.trans.shared.b8 {addr}, {regs};", 2, data,
               store=True)
    back = back.view(np.uint8)[:256].reshape(16, 16)
    p = np.arange(16)
    assert np.array_equal(back, smem[:256].reshape(16, 16)[(p & 1) + 2 * (p >> 3) + 4 * ((p >> 1) & 3)])


def test_misaligned_row_and_old_target_are_named():
    smem = np.zeros(1024, np.uint8)
    bad = kernel("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {regs}, {addr};", 2)
    bad = bad.replace("add.u32 %sa, %sbase, %rowi;", "add.u32 %sa, %sbase, %rowi;\n  add.u32 %sa, %sa, 8;")
    with pytest.raises(UndefinedBehavior, match="16-byte aligned"):
        launch(bad, "k", 1, 32, args=[smem.view(np.uint32).copy(), np.zeros(256, np.uint32)],
               target="sm_100a")
    with pytest.raises(PtxValidationError):
        run("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {regs}, {addr};", 2, smem,
            target="sm_90a")


# --------------------------------------------------------------- legality: ptxsim check = ptxas
def _module(inst: str, target: str, version: str) -> str:
    return (f".version {version}\n.target {target}\n.address_size 64\n"
            ".visible .entry k()\n{\n  .reg .b32 %r<9>;\n  .reg .b64 %rd<2>;\n"
            + "".join(f"  mov.u32 %r{i}, {i};\n" for i in range(8))
            + "  mov.u32 %r8, %tid.x;\n  shl.b32 %r8, %r8, 4;\n  mov.u64 %rd1, 0;\n  " + inst + "\n  ret;\n}\n")


def _spellings():
    out = []
    for num in (1, 2, 4):
        for trans in ("", ".trans"):
            for ss, a in (("", "[%rd1]"), (".shared::cta", "[%r8]")):
                n16 = ", ".join(f"%r{i}" for i in range(2 * num))
                n8 = ", ".join(f"%r{i}" for i in range(num))
                out.append(f"ldmatrix.sync.aligned.m16n16.x{num}{trans}{ss}.b8 {{{n16}}}, {a};")
                out.append(f"ldmatrix.sync.aligned.m16n16.x{num}{trans}{ss}.b8x16.b6x16_p32 "
                           f"{{{n16}}}, {a};")
                out.append(f"ldmatrix.sync.aligned.m8n16.x{num}{trans}{ss}.b8x16.b4x16_p64 "
                           f"{{{n8}}}, {a};")
                out.append(f"stmatrix.sync.aligned.m16n8.x{num}{trans}{ss}.b8 {a}, {{{n8}}};")
    out.append("ldmatrix.sync.aligned.m16n16.x1.trans.b8 {%r0}, [%rd1];")       # count
    out.append("stmatrix.sync.aligned.m16n8.x2.trans.b8 [%rd1], {%r0};")
    return out


def test_ptxsim_check_agrees_with_ptxas_on_the_8_bit_shapes():
    """All spellings in one module per target / PTX version: the lines ptxas 13.5 refuses are the
    lines ptxsim's validator refuses, and the executor runs every accepted one."""
    import re

    from ptxsim.machine.coverage import unexecutable
    from ptxsim.ptx import parse_module, validate
    p135.need()
    spellings = _spellings()
    accepted = 0
    for target, version in (("sm_100a", "8.6"), ("sm_120a", "8.7"), ("sm_90a", "8.7"),
                            ("sm_103a", "8.8")):
        ptx = _module("\n  ".join(spellings), target, version)
        _, msg = p135.verdict(ptx, target)
        theirs = {int(n) for n in re.findall(r"line (\d+); error", msg)}
        m = parse_module(ptx)
        mine = {d.loc.line for d in validate(m) if d.severity == "error"}
        assert mine == theirs, (target, version, sorted(mine ^ theirs))
        first = ptx.split("\n").index("  " + spellings[0]) + 1
        ok = [t for i, t in enumerate(spellings) if first + i not in theirs]
        accepted += len(ok)
        if ok:
            assert not unexecutable(parse_module(_module("\n  ".join(ok), target, version)))
    assert accepted == 3 * 20              # 20 spellings on each of sm_100a, sm_120a, sm_103a


@pytest.mark.parametrize("name", ["ld16", "ld8n16", "st"])
def test_test_kernels_are_accepted_by_ptxas(name):
    inst = {"ld16": ("ldmatrix.sync.aligned.m16n16.x2.trans.shared.b8x16.b6x16_p32 {regs}, "
                     "{addr};", 4, False),
            "ld8n16": ("ldmatrix.sync.aligned.m8n16.x4.shared::cta.b8x16.b4x16_p64 {regs}, "
                       "{addr};", 4, False),
            "st": ("stmatrix.sync.aligned.m16n8.x4.trans.shared.b8 {addr}, {regs};", 4, True)}[name]
    ok, msg = p135.verdict(kernel(*inst, lane_row="perm"), "sm_100a")
    assert ok, msg

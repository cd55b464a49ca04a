"""PTX of the poison-value probes (one module, .version 8.0 so that every ptxas from 12.9 on
assembles it) and their inputs.

Integer division by zero (PTX ISA 9.7.1.8 / 9.7.1.9: "unspecified, machine-specific value"):
  divrem_{div,rem}_{u16,s16,u32,s32,u64,s64}   one instruction per kernel
  pair_{u16,...,s64}                          div and rem of the same operands in one kernel (a
                                              compiler may derive one from the other)
  triton_tile                                 the instruction sequence of Triton 3.9's
                                              simple_persistent_kernel (test_matmul.py) that
                                              divides by a group size of 0 after the last tile
Each thread t loads its operands from in[t] (a, b as two u64 words), writes its results as
zero-extended u64 words to out[t * 2 + k]. Nothing is constant-folded (operands come from memory).

mapa outside the cluster (9.7.9.21: the result for a rank outside the cluster is not defined):
  mapa_probe   .reqnctapercluster 2; thread t asks `mapa` for rank t (0..31) of two shared
               addresses (buf, buf + 0x120) in the .shared::cluster u32 form and the generic u64
               form; writes (u32, u32, u64, u64) per thread and CTA.

cp.async whose source is not read (9.7.9.23: src-size "the size of the data in bytes to be copied
from src", the rest zero-filled; ignore-src "the data from the source location src should be
ignored completely"):
  cpasync_probe(out, src, mode)   4 threads each copy 16 bytes (mode 0: src-size 0, .cg, 16;
               mode 1: src-size 0, .ca, 4 bytes; mode 2: ignore-src true, .cg, 16; mode 3: src-size
               16, .cg, 16 — the control, which must fault for an unmapped src) into shared memory
               pre-filled with 0xAB, waits, stores the 64 shared bytes to out.
"""
from __future__ import annotations

import numpy as np

TYPES = ("u16", "s16", "u32", "s32", "u64", "s64")
BITS = {"u16": 16, "s16": 16, "u32": 32, "s32": 32, "u64": 64, "s64": 64}
ROWS = 256            # threads of each division probe: 128 with a zero divisor, 128 controls


def _reg(t: str) -> str:
    return {16: ".b16", 32: ".b32", 64: ".b64"}[BITS[t]]


def _load_ab(t: str) -> list[str]:
    """a -> %a, b -> %b of type t, from in[tid] (two u64 words)."""
    L = ["  mov.u32 %t0, %tid.x;", "  mov.u32 %t1, %ctaid.x;", "  mov.u32 %t2, %ntid.x;",
         "  mad.lo.u32 %t0, %t1, %t2, %t0;",
         "  ld.param.u64 %p0, [pin];", "  ld.param.u64 %p1, [pout];",
         "  cvta.to.global.u64 %p0, %p0;", "  cvta.to.global.u64 %p1, %p1;",
         "  mul.wide.u32 %p2, %t0, 16;", "  add.u64 %p0, %p0, %p2;", "  add.u64 %p1, %p1, %p2;",
         "  ld.global.u64 %w0, [%p0];", "  ld.global.u64 %w1, [%p0+8];"]
    n = BITS[t]
    if n == 64:
        L += ["  mov.b64 %a, %w0;", "  mov.b64 %b, %w1;"]
    else:
        L += [f"  cvt.u{n}.u64 %a, %w0;", f"  cvt.u{n}.u64 %b, %w1;"]
    return L


def _store(regs: list[str], t: str) -> list[str]:
    n = BITS[t]
    L = []
    for k, r in enumerate(regs):
        if n == 64:
            L.append(f"  mov.b64 %w2, {r};")
        else:
            L.append(f"  cvt.u64.u{n} %w2, {r};")
        L.append(f"  st.global.u64 [%p1+{8 * k}], %w2;")
    return L


def _head(name: str) -> list[str]:
    return [f".visible .entry {name}(.param .u64 pin, .param .u64 pout)", "{",
            "  .reg .b32 %t<4>;", "  .reg .b64 %p<4>;", "  .reg .b64 %w<4>;"]


def divrem(op: str, t: str) -> str:
    r = _reg(t)
    L = _head(f"divrem_{op}_{t}") + [f"  .reg {r} %a, %b, %d;"] + _load_ab(t)
    L += [f"  {op}.{t} %d, %a, %b;"] + _store(["%d"], t) + ["  ret;", "}"]
    return "\n".join(L)


def pair(t: str) -> str:
    r = _reg(t)
    L = _head(f"pair_{t}") + [f"  .reg {r} %a, %b, %q, %m;"] + _load_ab(t)
    L += [f"  div.{t} %q, %a, %b;", f"  rem.{t} %m, %a, %b;"] + _store(["%q", "%m"], t)
    return "\n".join(L + ["  ret;", "}"])


def triton_tile() -> str:
    """simple_persistent_kernel's tile coordinates (Triton 3.9 sm_90a PTX, lines 336-351 of the
    32x32x32 variant): group_id = tile_id / num_pid_in_group; group_size_m = min(num_pid_m -
    group_id * 8, 8); pid_m part = tile_id % group_size_m; pid_n = (tile_id - group_id *
    num_pid_in_group) / group_size_m. in[t] = (tile_id | num_pid_m << 32, num_pid_in_group);
    out = (group_size_m, rem, div)."""
    L = _head("triton_tile") + ["  .reg .b32 %r<12>;"] + _load_ab("u64")[:-2] + [
        "  cvt.u32.u64 %r1, %w0;", "  shr.u64 %w0, %w0, 32;", "  cvt.u32.u64 %r2, %w0;",
        "  cvt.u32.u64 %r3, %w1;",
        "  div.s32 %r4, %r1, %r3;", "  shl.b32 %r5, %r4, 3;", "  sub.s32 %r6, %r2, %r5;",
        "  min.s32 %r7, %r6, 8;", "  rem.s32 %r8, %r1, %r7;", "  mul.lo.s32 %r9, %r4, %r3;",
        "  sub.s32 %r10, %r1, %r9;", "  div.s32 %r11, %r10, %r7;"]
    L += [x for k, r in enumerate(("%r7", "%r8", "%r11"))
          for x in (f"  cvt.u64.u32 %w2, {r};", f"  st.global.u64 [%p1+{8 * k}], %w2;")]
    return "\n".join(L + ["  ret;", "}"])


MAPA = """
.visible .entry mapa_probe(.param .u64 pout) .explicitcluster .reqnctapercluster 2, 1, 1
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<10>;
  .shared .align 16 .b8 buf[512];
  ld.param.u64 %rd0, [pout];
  cvta.to.global.u64 %rd0, %rd0;
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %cluster_ctarank;
  mad.lo.u32 %r2, %r1, 32, %r0;
  mul.wide.u32 %rd1, %r2, 24;
  add.u64 %rd0, %rd0, %rd1;
  mov.u32 %r3, buf;
  add.u32 %r4, %r3, 0x120;
  mapa.shared::cluster.u32 %r5, %r3, %r0;
  mapa.shared::cluster.u32 %r6, %r4, %r0;
  cvta.shared.u64 %rd2, buf;
  add.u64 %rd3, %rd2, 0x120;
  mapa.u64 %rd4, %rd2, %r0;
  mapa.u64 %rd5, %rd3, %r0;
  st.global.u32 [%rd0], %r5;
  st.global.u32 [%rd0+4], %r6;
  st.global.u64 [%rd0+8], %rd4;
  st.global.u64 [%rd0+16], %rd5;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  ret;
}
"""

CPASYNC = """
.visible .entry cpasync_probe(.param .u64 pout, .param .u64 psrc, .param .u32 mode)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<6>;
  .reg .pred %p<6>;
  .shared .align 16 .b8 sbuf[64];
  ld.param.u64 %rd0, [pout];
  ld.param.u64 %rd1, [psrc];
  ld.param.u32 %r0, [mode];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, sbuf;
  shl.b32 %r3, %r1, 4;
  add.u32 %r2, %r2, %r3;
  mov.u32 %r4, 0xABABABAB;
  st.shared.v4.u32 [%r2], {%r4, %r4, %r4, %r4};
  bar.sync 0;
  mov.u32 %r5, 0;
  mov.u32 %r6, 16;
  setp.eq.u32 %p0, %r0, 0;
  setp.eq.u32 %p1, %r0, 1;
  setp.eq.u32 %p2, %r0, 2;
  setp.eq.u32 %p3, %r0, 3;
  setp.eq.u32 %p4, %r5, 0;
  @%p0 cp.async.cg.shared.global [%r2], [%rd1], 16, %r5;
  @%p1 cp.async.ca.shared.global [%r2], [%rd1], 4, %r5;
  @%p2 cp.async.cg.shared.global [%r2], [%rd1], 16, %p4;
  @%p3 cp.async.cg.shared.global [%r2], [%rd1], 16, %r6;
  cp.async.commit_group;
  cp.async.wait_all;
  bar.sync 0;
  ld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [%r2];
  cvta.to.global.u64 %rd0, %rd0;
  mul.wide.u32 %rd2, %r1, 16;
  add.u64 %rd0, %rd0, %rd2;
  st.global.v4.u32 [%rd0], {%r4, %r5, %r6, %r7};
  ret;
}
"""

# the addresses the cp.async probe names as its (unread) source: null, the all-ones bits of a
# zero-divisor rem scaled into an address (0xffffffff * 2 + base of nothing), an unmapped high
# address
WILD = np.array([0, 0xFFFFFFFFFFFFFFF0, 0x00007FF0DEAD0000], np.uint64)


def module() -> str:
    parts = [".version 8.0", ".target sm_90a", ".address_size 64", ""]
    parts += [divrem(op, t) for op in ("div", "rem") for t in TYPES]
    parts += [pair(t) for t in TYPES]
    parts += [triton_tile(), MAPA, CPASYNC]
    return "\n\n".join(parts) + "\n"


def division_names() -> list[str]:
    return ([f"divrem_{op}_{t}" for op in ("div", "rem") for t in TYPES] +
            [f"pair_{t}" for t in TYPES] + ["triton_tile"])


def _splitmix(x: np.ndarray) -> np.ndarray:
    x = (x + np.uint64(0x9E3779B97F4A7C15)).astype(np.uint64)
    z = x
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


EDGES = np.array([0, 1, 2, 3, 7, 8, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
                  0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF,
                  0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFF80000000,
                  0xFFFFFFFFFFFF8000, 0xFFFFFFFFFFFFFF80, 0x123456789ABCDEF0], np.uint64)


def division_inputs() -> np.ndarray:
    """(ROWS, 2) uint64: rows 0..127 (a, 0) with edge-case and pseudo-random dividends; rows
    128..255 (a, b) pseudo-random with b != 0 (controls), a few with b = -1 / 1."""
    with np.errstate(over="ignore"):
        rnd = _splitmix(np.arange(3 * ROWS, dtype=np.uint64))
    out = np.zeros((ROWS, 2), np.uint64)
    h = ROWS // 2
    out[:EDGES.size, 0] = EDGES
    out[EDGES.size:h, 0] = rnd[EDGES.size:h]
    out[h:, 0] = rnd[ROWS:ROWS + h]
    b = rnd[2 * ROWS:2 * ROWS + h]
    # small divisors too (the random 64-bit ones truncate to small 16-bit values only by luck)
    b[::4] = b[::4] & np.uint64(0xFF)
    b[b == 0] = 3
    b[1] = 0xFFFFFFFFFFFFFFFF
    b[2] = 1
    out[h:, 1] = b
    out[h, 0] = 0x8000000000000000                  # INT_MIN / -1 style rows
    out[h + 1, 0] = 0x8000000000000000
    return out


def triton_tile_inputs() -> np.ndarray:
    """(ROWS, 2) uint64 for triton_tile: num_pid_m = 32 (M / 32), num_pid_in_group = 8 * 16
    (N / 32), tile_id 0..255: from tile 256 / 8 * ... on, group_size_m is 0."""
    tile = np.arange(ROWS, dtype=np.uint64) * np.uint64(3)         # reaches past the last tile
    num_pid_m = np.uint64(32)
    return np.stack([tile | (num_pid_m << np.uint64(32)), np.full(ROWS, 8 * 16, np.uint64)], 1)

"""Deterministic operands for the base-instruction sweep (hw5).

`operands(form)` -> {register: bits} with 1024 operand sets (32 warps), numpy only, from the
splitmix64 counter hash of `ptxsim.testing.gen` (stream = SEED + instruction text + register), so
the capture and the replay regenerate identical inputs; the vector file stores their checksum.

Per register, each row draws a category from its value kind:
- floats (f16/bf16/f32/f64; x2 types lane-wise): 30% edge values (±0, ±1, min/max normal,
  smallest/largest subnormal, ±Inf, qNaN, qNaN/sNaN with payloads, 1+ulp, half-ulp of 1, integer
  rounding ties 0.5/1.5/2.5, destination overflow edges 65504/65520/448/464/57344/61440/2^31/2^63
  ...), 20% near 1 (exponent bias±8), 15% ties (near 1 with a mantissa ending in 100..0 at a random
  position: a tie for every narrower destination), 10% tiny (subnormal / near min normal),
  10% huge (near max), 15% raw bits.  Rows 16k+1: b = a, 16k+2: b = -a, 16k+3: b = a + 1 ulp
  (for the second operand of the same kind).
- integers: 35% edges (0, ±1, ±2, INT_MIN/MAX(±1), byte/half/24-bit boundaries), 35% raw,
  15% small (|x| <= 300), 15% random bit length; rows 16k+1/2: b = a / b = -a.
- shift (counts / positions): 50% {0,1,7,8,15,16,17,23,24,31,32,33,63,64,65,127,128,255,256,
  2^31, 2^32-1}, 35% 0..70, 15% raw.  div: divisors are never 0 except rows 4k of warp 31.
- warp kinds: lane (0..40), clamp (warp-uniform c from segment masks), wpred (per warp: all true,
  all false, random, all but one), wval/wval64 (per warp: one value, a pool of 2-3, or distinct,
  with INT_MIN/MAX).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np



def _load_gen():
    """ptxsim.testing.gen by file path (no package import: the device has no built ptxsim)."""
    import importlib.util
    here = Path(__file__).resolve()
    for p in (here.parents[2] / "src" / "ptxsim" / "testing" / "gen.py", here.parent / "gen.py"):
        if p.exists():
            spec = importlib.util.spec_from_file_location("_ptxsim_gen", p)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
    raise ImportError("ptxsim/testing/gen.py not found")


_gen = _load_gen()
Stream, checksum = _gen.Stream, _gen.checksum

SEED = 0x5EED_BA5E
N = 1024
FMT = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}
_NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
EDGE_REALS = [0.0, 1.0, 2.0, 1.5, 0.5, 2.5, 3.5, 0.75, 127.5, 128.5, 255.5, 256.0, 32767.5, 65535.5,
              65504.0, 65519.0, 65520.0, 65536.0, 448.0, 464.0, 480.0, 57344.0, 61440.0, 2.0 ** 31,
              2.0 ** 31 - 1, 2.0 ** 32, 4294967295.0, 2.0 ** 63, 2.0 ** 64, 2.0 ** -14, 2.0 ** -24,
              2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -126, 2.0 ** -149, 2.0 ** -150, 2.0 ** -133,
              3.3895313892515355e38, 3.4028234663852886e38, 1.0e-40, 2.0 ** 127, 2.0 ** 128 * (1 - 2 ** -25)]


def _float_edges(t):
    e, m = FMT[t]
    bias, emax = (1 << (e - 1)) - 1, (1 << e) - 1
    f = lambda ex, man: (ex << m) | man  # noqa: E731
    ed = [0, 1, (1 << m) - 1, f(1, 0), f(bias, 0), f(bias, 1), f(emax - 1, (1 << m) - 1), f(emax, 0),
          f(emax, 1 << (m - 1)), f(emax, (1 << (m - 1)) | 5), f(emax, 1), f(emax, 0x15 & ((1 << m) - 1) or 1),
          f(max(bias - m - 1, 1), 0), f(max(bias - m - 1, 1), 1 << (m - 1)), f(bias, (1 << m) - 1)]
    for r in EDGE_REALS:
        with np.errstate(over="ignore"):
            if t == "bf16":
                v = int(np.float32(r).view(np.uint32)) >> 16
            else:
                v = int(np.array(r, dtype=_NP[t]).view({"f16": np.uint16, "f32": np.uint32,
                                                          "f64": np.uint64}[t]))
        ed.append(v)
    s = 1 << (e + m)
    return np.array(sorted(set(ed) | {x | s for x in ed}), dtype=np.uint64)


def _int_edges(w):
    vals = [0, 1, 2, 3, -1, -2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFF,
            0x800000, 0xFFFFFF, 0x1000000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32,
            (1 << 63) - 1, 1 << 63, -0x80, -0x8000, -0x80000000, 0x01010101, 0x80808080, 0x7F7F7F7F]
    mask = (1 << w) - 1
    top = 1 << (w - 1)
    vals += [top, top - 1, top + 1, mask - 1]
    return np.array(sorted({v & mask for v in vals}), dtype=np.uint64)


SHIFT_EDGES = np.array([0, 1, 7, 8, 15, 16, 17, 23, 24, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256,
                        1 << 31, 0xFFFFFFFF], dtype=np.uint64)
CLAMPS = np.array([0x1F, 0x0, 0x1C1F, 0x181F, 0x101F, 0x0F, 0x07, 0x1F1F, 0x1E1F, 0x1F00, 0x3],
                  dtype=np.uint64)


def _cat(st, probs):
    u = st.below(N, 1000)
    return np.searchsorted(np.cumsum(np.array(probs) * 1000), u, side="right")


def _float_scalar(st, t):
    e, m = FMT[t]
    bias, emax = (1 << (e - 1)) - 1, (1 << e) - 1
    M = np.uint64((1 << m) - 1)
    cat = _cat(st, [0.30, 0.20, 0.15, 0.10, 0.10, 0.15])
    edges = st.choice(N, _float_edges(t))
    sign = (st.u64(N) & np.uint64(1)) << np.uint64(e + m)
    man = st.u64(N) & M
    near = (st.below(N, 17).astype(np.uint64) + np.uint64(bias - 8)) << np.uint64(m)
    k = st.below(N, m).astype(np.uint64) + np.uint64(1)       # tie position
    tie_man = (man & ~((np.uint64(1) << k) - np.uint64(1))) | (np.uint64(1) << (k - np.uint64(1)))
    tiny = st.below(N, 9).astype(np.uint64) << np.uint64(m)
    huge = (np.uint64(emax - 9) + st.below(N, 9).astype(np.uint64)) << np.uint64(m)
    raw = st.u64(N) & np.uint64((1 << (e + m + 1)) - 1)
    out = np.select([cat == 0, cat == 1, cat == 2, cat == 3, cat == 4],
                    [edges, sign | near | man, sign | near | tie_man, sign | tiny | man,
                     sign | huge | man], raw)
    return out


def _int_scalar(st, w, signed):
    mask = np.uint64((1 << w) - 1) if w < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    cat = _cat(st, [0.35, 0.35, 0.15, 0.15])
    edges = st.choice(N, _int_edges(w))
    raw = st.u64(N) & mask
    small = (st.below(N, 601) - 300).astype(np.int64).astype(np.uint64) & mask
    nb = st.below(N, w).astype(np.uint64) + np.uint64(1)
    with np.errstate(over="ignore"):
        bl = st.u64(N) & ((np.uint64(1) << nb) - np.uint64(1)) if w < 64 else st.u64(N) >> (np.uint64(64) - nb)
    return np.select([cat == 0, cat == 1, cat == 2], [edges, raw, small], bl & mask)


def scalar(st, kind):
    if kind in FMT:
        return _float_scalar(st, kind)
    if kind in ("f16x2", "bf16x2"):
        h = kind[:-2]
        return _float_scalar(st, h) | (_float_scalar(st, h) << np.uint64(16))
    if kind in ("u16", "s16", "u32", "s32", "u64", "s64"):
        return _int_scalar(st, int(kind[1:]), kind[0] == "s")
    if kind in ("u16x2", "s16x2"):
        return _int_scalar(st, 16, True) | (_int_scalar(st, 16, True) << np.uint64(16))
    if kind == "shift":
        cat = _cat(st, [0.5, 0.35])
        return np.select([cat == 0, cat == 1], [st.choice(N, SHIFT_EDGES), st.below(N, 71).astype(np.uint64)],
                         st.u64(N) & np.uint64(0xFFFFFFFF))
    if kind == "fnsoff":
        cat = _cat(st, [0.6, 0.2])
        return np.select([cat == 0, cat == 1], [(st.below(N, 71) - 35).astype(np.int64).astype(np.uint64),
                                                st.choice(N, SHIFT_EDGES)],
                         st.u64(N)) & np.uint64(0xFFFFFFFF)
    if kind in ("e4m3x2", "e5m2x2"):
        eb = np.array([0, 0x80, 0x7F, 0xFF, 0x7E, 0xFE, 0x01, 0x81, 0x7C, 0x7D, 0xFC, 0x3C, 0x38, 0x07, 0x04, 0x03],
                      dtype=np.uint64)
        lo = np.where(st.below(N, 2) == 0, st.choice(N, eb), st.u64(N) & np.uint64(0xFF))
        hi = np.where(st.below(N, 2) == 0, st.choice(N, eb), st.u64(N) & np.uint64(0xFF))
        return lo | (hi << np.uint64(8))
    if kind == "pred":
        return st.u64(N) & np.uint64(1)
    if kind == "lane":
        return np.where(st.below(N, 8) == 0, st.u64(N) & np.uint64(0xFFFFFFFF), st.below(N, 41).astype(np.uint64))
    if kind == "clamp":
        return np.repeat(st.choice(32, CLAMPS), 32)
    if kind == "wpred":
        w = np.arange(N) // 32
        r = st.u64(N) & np.uint64(1)
        one = (np.arange(N) % 32) == (w * 7 % 32)
        return np.select([w % 4 == 0, w % 4 == 1, w % 4 == 2], [np.ones(N), np.zeros(N), r],
                         (~one).astype(np.uint64)).astype(np.uint64)
    if kind in ("wval", "wval64"):
        w64 = kind == "wval64"
        mask = np.uint64(0xFFFFFFFFFFFFFFFF if w64 else 0xFFFFFFFF)
        pool = _int_scalar(st, 64 if w64 else 32, True) & mask
        w = np.arange(N) // 32
        lane = np.arange(N) % 32
        pick = np.select([w % 4 == 0, w % 4 == 1, w % 4 == 2], [w * 32, w * 32 + lane % 2, w * 32 + st.below(N, 3)],
                         np.arange(N))
        v = pool[pick]
        if w64:   # pairs differing only in the high word
            v = np.where((w % 8 == 5) & (lane % 2 == 1), v ^ np.uint64(1 << 40), v)
        return v
    raise KeyError(kind)


def operands(form: dict) -> dict[str, np.ndarray]:
    """{register: uint64 bits (N,)} for the form's input registers (pred: 0/1)."""
    text = form["instruction"]
    out = {}
    first_of = {}
    op = text.split(".")[0].split()[0]
    for i, n in enumerate(form["inputs"]):
        rt, kind = form["regs"][n]
        st = Stream(SEED, text + "|" + n)
        v = scalar(st, kind)
        if kind in first_of and kind not in ("pred", "shift", "lane", "clamp"):
            a = out[first_of[kind]]
            r = np.arange(N) % 16
            if kind in FMT or kind.endswith("x2") and kind[:-2] in FMT:
                e, m = FMT.get(kind, FMT.get(kind[:-2], (5, 10)))
                sb = np.uint64(1 << (e + m))
                if kind.endswith("x2"):
                    sb = sb | (sb << np.uint64(16))
                v = np.select([r == 1, r == 2, r == 3], [a, a ^ sb, a + np.uint64(1)], v)
            else:
                width = {"u16": 16, "s16": 16, "u64": 64, "s64": 64}.get(kind, 32)
                mask = np.uint64((1 << width) - 1) if width < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
                with np.errstate(over="ignore"):
                    v = np.select([r == 1, r == 2], [a, (np.uint64(0) - a) & mask], v)
        first_of.setdefault(kind, n)
        if op in ("div", "rem") and i == 1:
            wid = rt == ".b64" and 64 or (16 if rt == ".b16" else 32)
            v = np.where(v == 0, np.uint64(1), v)
            rows = np.arange(N)
            v = np.where((rows >= N - 32) & (rows % 4 == 0), np.uint64(0), v)
        w = {".b16": 16, ".b32": 32, ".b64": 64, ".pred": 1}[rt]
        out[n] = v & (np.uint64((1 << w) - 1) if w < 64 else np.uint64(0xFFFFFFFFFFFFFFFF))
    return out


def device_rows(form: dict, ops: dict) -> np.ndarray:
    """The [row][thread] uint32 array the kernel loads (64-bit registers: low row, high row)."""
    rows = []
    for n in form["inputs"]:
        v = ops[n]
        rows.append((v & np.uint64(0xFFFFFFFF)).astype(np.uint32))
        if form["regs"][n][0] == ".b64":
            rows.append((v >> np.uint64(32)).astype(np.uint32))
    return np.stack(rows) if rows else np.zeros((0, N), np.uint32)


def replay_registers(form: dict, ops: dict) -> dict:
    """The registers as ptxsim.execute takes them (.b16 uint16, .b32 uint32, .b64 uint64, .pred bool)."""
    dt = {".b16": np.uint16, ".b32": np.uint32, ".b64": np.uint64, ".pred": np.bool_}
    regs = {n: (ops[n] != 0) if form["regs"][n][0] == ".pred" else ops[n].astype(dt[form["regs"][n][0]])
            for n in form["inputs"]}
    for n in form["outputs"]:   # destinations as declared in the kernel (their register width)
        regs.setdefault(n, np.zeros(N, dt[form["regs"][n][0]]))
    return regs


def inputs_checksum(form: dict) -> str:
    return checksum(device_rows(form, operands(form)))

"""`vprintf`, the CUDA system call behind device `printf` (CUDA C++ Programming Guide, "Formatted
Output"; PTX ISA 9.7.8.4 for the call): `call (ret), vprintf, (fmt, args)` with `fmt` a generic
address of the NUL-terminated format string and `args` a generic address of the argument buffer
the compiler fills: every argument at its natural alignment, `char`/`short`/`int` as 4 bytes,
`long`/`long long`/pointers as 8, `float` promoted to an 8-byte `double` (nvcc 13.0 output,
tests/machine/data/exec/gaps.ptx: `st.local.v2.u32 [%rd4], {%r1, %r2}; st.local.f64 [%rd4+8],
%fd1; st.local.u32 [%rd4+16], %r3; st.local.u64 [%rd4+24], %rd6` for `"%d %d %f %x %s"`).

The return value is the number of arguments the format consumed (the Guide: "printf() returns
the number of arguments parsed"). Output: each executing thread's text, in thread order within
one call (lanes ascending, warps, CTAs) and calls in execution order — the GPU keeps a warp's
lines in lane order and leaves the order between warps unspecified. The lines are written to
sys.stdout and kept on the launch as `launch.printf`, a list of `PrintfLine(ctaid, tid, text)`.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import numpy as np

from ptxsim.errors import DeviceAssertion, OperandError, UnsupportedFeature
from ptxsim.machine.handlers.common import callparam
from ptxsim.ptx.instruction import Address

MAX_STRING = 1 << 16

# %[flags][width][.precision][length]conversion (C11 7.21.6.1)
SPEC = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d*))?"
                  r"(?P<len>hh|h|ll|l|L|z|j|t)?(?P<conv>[diouxXcsfFeEgGaApn%])")
INT_CONV = set("diouxXc")
FLOAT_CONV = set("fFeEgGaA")


@dataclass(frozen=True)
class PrintfLine:
    ctaid: tuple
    tid: tuple
    text: str


def _cstring(wave, addr: int, thread: int) -> bytes:
    """The NUL-terminated string at a generic address (read 64 bytes at a time, clipped to the
    mapped memory the way ld would see it)."""
    out = bytearray()
    mem = wave.memory
    t = np.array([thread])
    while len(out) < MAX_STRING:
        b = mem.load("generic", np.array([addr + len(out)], np.uint64), 1, thread=t)
        c = int(b[0, 0])
        if c == 0:
            return bytes(out)
        out.append(c)
    raise OperandError(f"printf: string at {addr:#x} has no NUL in {MAX_STRING} bytes")


def parse(fmt: str):
    """-> list of literal strings and match objects (conversions), and their argument slots:
    (offset, size, kind) in the argument buffer."""
    parts, slots, pos, off = [], [], 0, 0

    def slot(size, kind):
        nonlocal off
        off = -(-off // size) * size
        slots.append((off, size, kind))
        off += size

    for m in SPEC.finditer(fmt):
        parts.append(fmt[pos:m.start()])
        pos = m.end()
        conv = m["conv"]
        if conv == "%":
            parts.append("%")
            continue
        if conv == "n":
            raise UnsupportedFeature("printf: %n is not supported on the device")
        if m["width"] == "*":
            slot(4, "int")
        if m["prec"] == "*":
            slot(4, "int")
        if conv in INT_CONV:
            slot(8 if m["len"] in ("l", "ll", "z", "j", "t") else 4, "int")
        elif conv in FLOAT_CONV:
            slot(8, "double")
        else:                                       # s, p
            slot(8, "ptr")
        parts.append(m)
    parts.append(fmt[pos:])
    return parts, slots


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def render(wave, parts, values, thread: int) -> str:
    """One thread's text: `values` are the raw argument words in slot order."""
    vals = iter(values)
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
            continue
        flags, width, prec = p["flags"], p["width"] or "", p["prec"]
        if width == "*":
            w = _signed(next(vals), 32)
            flags, width = (flags + "-" if w < 0 else flags), str(abs(w))
        if prec == "*":
            pv = _signed(next(vals), 32)
            prec = None if pv < 0 else str(pv)
        spec = "%" + flags + width + ("" if prec is None else "." + (prec or "0"))
        conv, ln = p["conv"], p["len"]
        raw = next(vals)
        bits = {"hh": 8, "h": 16}.get(ln, 64 if ln in ("l", "ll", "z", "j", "t") else 32)
        if conv in "di":
            out.append((spec + "d") % _signed(raw, bits))
        elif conv in "uoxX":
            out.append((spec + {"u": "d"}.get(conv, conv)) % (raw & ((1 << bits) - 1)))
        elif conv == "c":
            out.append((spec + "c") % chr(raw & 0xFF))
        elif conv in "fFeEgG":
            out.append((spec + conv) % float(np.array(raw, np.uint64).view(np.float64)))
        elif conv in "aA":
            if prec is not None or width:
                raise UnsupportedFeature("printf: %a with a width or precision is not modelled")
            x = float(np.array(raw, np.uint64).view(np.float64))
            h = x.hex() if np.isfinite(x) else ("-" if x < 0 else "") + "inf" if np.isinf(x) \
                else "nan"
            if "p" in h:                            # glibc drops trailing zero hex digits
                mant, exp = h.split("p")
                mant = mant.rstrip("0").rstrip(".")
                h = mant + "p" + exp
            out.append(h.upper() if conv == "A" else h)
        elif conv == "p":
            out.append((spec + "s") % (f"{raw:#x}" if raw else "(nil)"))
        else:                                       # s
            s = "(null)" if raw == 0 else _cstring(wave, raw, thread).decode("utf-8", "replace")
            out.append((spec + "s") % s)
    return "".join(out)


def vprintf_handler(wave, inst, actual: list[str], ret: str | None):
    """call (ret), vprintf, (fmt, args): format, emit, write the return value."""
    if len(actual) != 2:
        raise OperandError(f"vprintf takes 2 parameters (format, argument buffer), the call "
                           f"passes {len(actual)}")
    cache: dict[int, tuple] = {}
    launch = wave.launch

    def run(idx):
        fmt_p = callparam(wave, Address(actual[0]))[idx, :8].copy().view("<u8")[:, 0]
        arg_p = callparam(wave, Address(actual[1]))[idx, :8].copy().view("<u8")[:, 0]
        nargs = np.zeros(idx.size, np.int64)
        lines = launch.printf
        geo = launch.geometry
        for f in np.unique(fmt_p):
            sel = np.flatnonzero(fmt_p == f)
            if int(f) == 0:
                nargs[sel] = -1                        # NULL format: -1 (CUDA Guide)
                continue
            if int(f) not in cache:
                text = _cstring(wave, int(f), int(idx[sel[0]])).decode("utf-8", "replace")
                cache[int(f)] = parse(text)
            parts, slots = cache[int(f)]
            words = []
            for off, size, _ in slots:                 # one vectorised load per argument
                a = arg_p[sel] + np.uint64(off)
                v = wave.memory.load("generic", a, size, thread=idx[sel])[:, 0]
                words.append(v.astype(np.uint64))
            nargs[sel] = len(slots)
            for k, i in enumerate(sel):
                t = int(idx[i])
                text = render(wave, parts, [int(w[k]) for w in words], t)
                cta = int(wave.ctas[int(wave.cta_of[t])])
                tid = tuple(int(wave.sregs[f"%tid.{c}"][t]) for c in "xyz")
                lines.append(PrintfLine(tuple(int(x) for x in geo.ctaid(cta)), tid, text))
                sys.stdout.write(text)
        if ret is not None:
            r = callparam(wave, Address(ret))
            r[idx, :4] = nargs.astype("<i4").view(np.uint8).reshape(idx.size, 4)
        wave.advance(idx)
    return run


def assertfail_handler(wave, inst, actual: list[str]):
    """call __assertfail, (message, file, line, function, charSize): the system call behind a
    failed device `assert` (nvcc 13.0: `.extern .func __assertfail(.param .b64, .param .b64,
    .param .b32, .param .b64, .param .b64)`, generic addresses of the expression text, the file
    and the function's signature). As on the GPU, each calling thread prints
    `file:line: function: block: [x,y,z], thread: [x,y,z] Assertion `expr` failed.` (to stderr)
    and the kernel aborts: DeviceAssertion (the host sees cudaErrorAssert)."""
    if len(actual) != 5:
        raise OperandError(f"__assertfail takes 5 parameters (message, file, line, function, "
                           f"charSize), the call passes {len(actual)}")
    launch = wave.launch

    def word(i, idx, n):
        b = callparam(wave, Address(actual[i]))[idx, :n].copy()
        return b.view("<u8" if n == 8 else "<u4")[:, 0]

    def run(idx):
        msg_p, file_p, fn_p = word(0, idx, 8), word(1, idx, 8), word(3, idx, 8)
        line = word(2, idx, 4)
        lines = []
        for k, t in enumerate(idx.tolist()):
            def text(p):
                return "" if int(p) == 0 else _cstring(wave, int(p), t).decode("utf-8",
                                                                                "replace")
            cta = int(wave.ctas[int(wave.cta_of[t])])
            block = ",".join(str(int(x)) for x in launch.geometry.ctaid(cta))
            thread = ",".join(str(int(wave.sregs[f"%tid.{c}"][t])) for c in "xyz")
            lines.append(f"{text(file_p[k])}:{int(line[k])}: {text(fn_p[k])}: block: [{block}], "
                         f"thread: [{thread}] Assertion `{text(msg_p[k])}` failed.")
        sys.stdout.flush()
        for ln in lines:
            sys.stderr.write(ln + "\n")
        sys.stderr.flush()
        more = f" (and {len(lines) - 1} more threads)" if len(lines) > 1 else ""
        raise DeviceAssertion(f"line {inst.loc.line}: device assert failed: {lines[0]}{more}",
                              threads=idx.tolist(), messages=lines)
    return run

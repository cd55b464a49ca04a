"""Stack-instruction probes (PTX ISA 9.7.17) for the device: stacksave / alloca / stackrestore.

Each kernel: s0 = stacksave; p = alloca(sz0, ALIGN); s1 = stacksave; q = alloca(sz1) (default
alignment); s2 = stacksave; st.local [q]; stackrestore s0; s3 = stacksave. Outputs (u32 words):
s0, p, s1, q, s2, s3 (u64 forms: low words, then the high words of s0 and p). Per-thread sizes
come from ``stack_sizes()``; the ``overflow`` kernels ask for 1 MiB and run last, alone.
"""
from __future__ import annotations

import numpy as np

SIZES = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255,
         256, 257, 300, 384, 500, 511, 512]
ALIGNS = [None, 1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096, 1 << 23, 3, 1 << 24]


def stack_sizes(n: int = 1024) -> np.ndarray:
    """[2, n] uint32: sz0 cycles through SIZES, sz1 through SIZES shifted by 7."""
    i = np.arange(n)
    s = np.array(SIZES, dtype=np.uint32)
    return np.stack([s[i % len(s)], s[(i // len(s) + i + 7) % len(s)]]).astype(np.uint32)


def cases() -> list[dict]:
    out = []
    for t in ("u32", "u64"):
        for al in ALIGNS:
            for big in (False, True):
                w = 32 if t == "u32" else 64
                sz = "%sz0" if t == "u32" else "%zz0"
                sz1 = "%sz1" if t == "u32" else "%zz1"
                alt = "" if al is None else f", {al}"
                body = []
                if t == "u64":
                    body += ["cvt.u64.u32 %zz0, %sz0;", "cvt.u64.u32 %zz1, %sz1;"]
                if big:
                    body += [f"mov.b{w} {sz}, 1048576;"]
                body += [f"stacksave.{t} %x0;", f"alloca.{t} %x1, {sz}{alt};", f"stacksave.{t} %x2;",
                         f"alloca.{t} %x3, {sz1};", f"stacksave.{t} %x4;",
                         f"st.local.u32 [%x3], %sz1;", f"stackrestore.{t} %x0;", f"stacksave.{t} %x5;"]
                if t == "u32":
                    outs = [f"%x{i}" for i in range(6)]
                else:
                    body += [f"mov.b64 {{%o{i}, %h{i}}}, %x{i};" for i in range(6)]
                    outs = [f"%o{i}" for i in range(6)] + ["%h0", "%h1"]
                out.append(dict(name=f"st_{t}_{al}_{'big' if big else 'n'}", instruction="\n  ".join(body),
                                inputs=["%sz0", "%sz1"], outputs=outs, suspect=big, type=t, align=al,
                                overflow=big))
    return out


def decls(it: dict) -> str:
    if it["type"] == "u32":
        return "  .reg .b32 %sz0, %sz1, %x<6>;"
    return "  .reg .b32 %sz0, %sz1, %o<6>, %h<6>;\n  .reg .b64 %zz0, %zz1, %x<6>;"

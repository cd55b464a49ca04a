"""`ptxsim layout smem`: which matrix elements sit in each 16-byte chunk of shared memory.

Draws the PTX manual's missing swizzle figures (Figures 188-192, 219-229) for any parameters:
a text grid in the terminal (rich only) and, with -o out.png|svg, a picture (matplotlib, the
optional `plot` extra, imported lazily).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import LayoutError
from ptxsim.isa.descriptors import SWIZZLE_CODES
from ptxsim.isa.smem_layout import (canonical_descriptor, element_locations, footprint,
                                    smem_packing)

LINE_BYTES = 128          # one row of the picture: 8 chunks of 16 bytes (a full bank line)


def chunk_map(fmt: str, rows: int, cols: int, major: str, swizzle: str, *, start: int = 0,
              kind: str | None = None):
    """(descriptor, {chunk address: (mn range, k range)}) for a compact canonical layout."""
    desc = canonical_descriptor(fmt, rows, cols, major, swizzle, start=start, kind=kind)
    packing = smem_packing(fmt, kind)
    addr, _ = element_locations(desc, packing, rows, cols, major)
    chunks = addr & ~15
    out: dict[int, tuple[tuple[int, int], tuple[int, int]]] = {}
    flat = chunks.ravel()
    order = np.argsort(flat, kind="stable")
    mn_idx, k_idx = np.unravel_index(order, chunks.shape)
    bounds = np.flatnonzero(np.diff(flat[order])) + 1
    for grp_mn, grp_k, a in zip(np.split(mn_idx, bounds), np.split(k_idx, bounds),
                                flat[order][np.r_[0, bounds]]):
        out[int(a)] = ((int(grp_mn.min()), int(grp_mn.max())), (int(grp_k.min()), int(grp_k.max())))
    return desc, out


def _label(mn: tuple[int, int], k: tuple[int, int]) -> str:
    def r(a, b):
        return f"{a}" if a == b else f"{a}-{b}"
    return f"m{r(*mn)} k{r(*k)}"


def render_text(fmt, rows, cols, major, swizzle, *, start=0, kind=None) -> str:
    desc, cmap = chunk_map(fmt, rows, cols, major, swizzle, start=start, kind=kind)
    lines = [f"{major}-major {swizzle} {fmt}{f' (.kind::{kind})' if kind else ''}, {rows}x{cols} "
             f"(mn x k); descriptor 0x{desc.encode():016x}: start 0x{desc.start_bytes:x} "
             f"LBO {desc.lbo_bytes} SBO {desc.sbo_bytes}"]
    first, last = min(cmap) // LINE_BYTES, max(cmap) // LINE_BYTES
    width = max(len(_label(*v)) for v in cmap.values())
    for line in range(first, last + 1):
        base = line * LINE_BYTES
        cells = [_label(*cmap[a]) if (a := base + 16 * c) in cmap else "." for c in range(8)]
        lines.append(f"0x{base:05x}: " + " | ".join(s.ljust(width) for s in cells))
    return "\n".join(lines)


def render_plot(path: str, fmt, rows, cols, major, swizzle, *, start=0, kind=None) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise LayoutError("drawing a picture needs matplotlib (pip install 'ptxsim[plot]'); "
                          "the text rendering works without it") from None
    desc, cmap = chunk_map(fmt, rows, cols, major, swizzle, start=start, kind=kind)
    first = min(cmap) // LINE_BYTES
    nlines = max(cmap) // LINE_BYTES - first + 1
    fig, ax = plt.subplots(figsize=(12, max(2.0, 0.35 * nlines + 1)))
    cm = plt.get_cmap("tab20")
    for a, (mn, k) in cmap.items():
        line, col = a // LINE_BYTES - first, (a % LINE_BYTES) // 16
        # colour by position along the contiguous dimension: the swizzle shows as a permutation
        along = k if major == "K" else mn
        colour = cm((along[0] // (along[1] - along[0] + 1)) % 20)
        ax.add_patch(plt.Rectangle((col, line), 1, 1, facecolor=colour, edgecolor="black", lw=0.5))
        ax.text(col + 0.5, line + 0.5, _label(mn, k), ha="center", va="center", fontsize=7)
    ax.set_xlim(0, 8)
    ax.set_ylim(nlines, 0)
    ax.set_xticks(np.arange(8) + 0.5, [f"+{16 * c}" for c in range(8)])
    ax.set_yticks(np.arange(nlines) + 0.5, [f"0x{(first + i) * LINE_BYTES:05x}" for i in range(nlines)],
                  fontsize=7)
    ax.set_title(f"{major}-major, {swizzle} swizzle, {fmt} {rows}x{cols}: matrix element in each "
                 f"16-byte chunk (LBO {desc.lbo_bytes}, SBO {desc.sbo_bytes})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def add_arguments(p) -> None:
    p.add_argument("--major", choices=("K", "MN"), default="K")
    p.add_argument("--swizzle", choices=tuple(SWIZZLE_CODES), default="128B")
    p.add_argument("--dtype", default="bf16", help="element format (bf16, tf32, e4m3, e2m1, ...)")
    p.add_argument("--kind", default=None, help="MMA kind (needed for 4/6-bit types)")
    p.add_argument("--rows", type=int, default=8, help="M or N extent")
    p.add_argument("--cols", type=int, default=None, help="K extent (default: one swizzle row)")
    p.add_argument("--start", type=lambda s: int(s, 0), default=0, help="start address (bytes)")
    p.add_argument("-o", "--output", default=None, help="write a picture (.png / .svg)")


def run(args) -> int:
    cols = args.cols
    if cols is None:
        packing = smem_packing(args.dtype, args.kind)
        width = {"none": 32}.get(args.swizzle, {"32B": 32, "64B": 64}.get(args.swizzle, 128))
        cols = width * 8 // packing.layout_bits if args.major == "K" else 8
    print(render_text(args.dtype, args.rows, cols, args.major, args.swizzle, start=args.start,
                      kind=args.kind))
    if args.output:
        render_plot(args.output, args.dtype, args.rows, cols, args.major, args.swizzle,
                    start=args.start, kind=args.kind)
        print(f"wrote {args.output}")
    return 0


__all__ = ["chunk_map", "render_text", "render_plot", "add_arguments", "run", "footprint"]

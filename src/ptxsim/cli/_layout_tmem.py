"""`ptxsim layout tmem --shape 16x256b --num x2`: where each thread/register of a tcgen05.ld/st
fragment lives in Tensor Memory (lane x column grid, a per-thread list, or a PNG picture)."""
from __future__ import annotations

import numpy as np

from ptxsim.errors import OperandError
from ptxsim.isa.tmem_ldst import SHAPES, fragment_map


def add_arguments(p) -> None:
    p.add_argument("--shape", required=True, choices=SHAPES, help="tcgen05.ld/st shape")
    p.add_argument("--num", default="x1", help="repeat factor .num: x1 x2 ... x128 (Table 47)")
    p.add_argument("--pack", action="store_true", help=".pack::16b / .unpack::16b")
    p.add_argument("--split", type=int, default=None,
                   help=".16x32bx2 immHalfSplitoff in columns (default: the columns of one half)")
    p.add_argument("--list", action="store_true", help="print thread/register -> lane/column")
    p.add_argument("--png", metavar="FILE", help="also draw the grid into a PNG (matplotlib)")


def _num(text: str) -> int:
    t = text.lower().lstrip(".").lstrip("x")
    if not t.isdigit():
        raise OperandError(f"--num '{text}' is not of the form x1, x2, ..., x128")
    return int(t)


def placement(shape: str, num: int, pack: bool, split: int | None):
    """(lane, column, thread, register, half) for every cell the fragment touches."""
    f = fragment_map(shape, num, pack)
    t, j = np.meshgrid(np.arange(32), np.arange(f.nregs), indexing="ij")
    col = f.column
    if shape == "16x32bx2":
        if split is None:
            split = f.columns_spanned()
        second = f.second_half[..., None] if pack else f.second_half
        col = col + split * second
    if pack:
        h = np.broadcast_to(np.arange(2), col.shape)
        lane = np.broadcast_to(f.lane[..., None], col.shape)
        t, j = (np.broadcast_to(a[..., None], col.shape) for a in (t, j))
    else:
        h, lane = np.full(col.shape, -1), f.lane
    return (lane.ravel(), col.ravel(), t.ravel(), j.ravel(), h.ravel())


def run(args) -> int:
    num = _num(args.num)
    lane, col, t, j, h = placement(args.shape, num, args.pack, args.split)
    name = f"tcgen05.ld/st .{args.shape}.x{num}" + (" .pack::16b" if args.pack else "")
    if args.list:
        print(f"{name}: thread register -> lane column" + ("  (half)" if args.pack else ""))
        order = np.lexsort((h, j, t))
        for i in order:
            extra = f"  [{'15:0' if h[i] == 0 else '31:16'}]" if h[i] >= 0 else ""
            print(f"T{t[i]:<2d} r{j[i]:<3d} -> lane {lane[i]:3d}  column {col[i]:3d}{extra}")
        return 0
    nl, nc = int(lane.max()) + 1, int(col.max()) + 1
    cell = np.full((nl, nc), "", dtype=object)
    for a, b, tt, jj, hh in zip(lane, col, t, j, h):
        cell[a, b] = f"T{tt}.r{jj}" + ("" if hh < 0 else ("l" if hh == 0 else "h"))
    width = max(len(c) for c in cell.ravel()) + 1
    print(f"{name}: lanes (rows) x columns from taddr; cell = thread.register"
          + (" (l/h = register bits 15:0 / 31:16)" if args.pack else ""))
    print("lane\\col " + "".join(f"{c:>{width}d}" for c in range(nc)))
    for a in range(nl):
        print(f"{a:8d} " + "".join(f"{cell[a, c] or '.':>{width}}" for c in range(nc)))
    if args.png:
        _png(args.png, name, cell, t, lane, col)
    return 0


def _png(path: str, title: str, cell, t, lane, col) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    nl, nc = cell.shape
    grid = np.full((nl, nc), np.nan)
    grid[lane, col] = t
    fig, ax = plt.subplots(figsize=(max(4, 0.9 * nc), max(3, 0.35 * nl)))
    ax.imshow(grid, cmap="tab20", aspect="auto", interpolation="nearest")
    for a in range(nl):
        for c in range(nc):
            if cell[a, c]:
                ax.text(c, a, cell[a, c], ha="center", va="center", fontsize=6)
    ax.set_xlabel("column offset")
    ax.set_ylabel("lane offset")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

"""Triton 3.9 bf16 matmul (tests/data/ptx/triton/matmul_bf16.ptx, sm_100a) on a 1024^3 problem
run by ptxsim's executor: wall time, and the ratio to numpy's float32 matmul of the same size in
the same run. Also checks the result bit for bit against ptxsim.numerics.

    PYTHONPATH=src python benchmarks/triton_matmul.py [--size 1024] [--rounds R] [--baseline REV]

--baseline REV also runs ptxsim as of git revision REV (e.g. main), alternating with this tree
for R rounds (the PTX parse is cached first, outside the timing), so both see the same load.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

from ptxsim.machine.executor import launch
from ptxsim.numerics import mma
from ptxsim.numerics.backend import active as backend_active

PTX = Path(__file__).parents[1] / "tests" / "data" / "ptx" / "triton" / "matmul_bf16.ptx"


def _run(launch_fn, ptx, n, a, b):
    c = np.zeros((n, n), np.float32)
    t0 = time.perf_counter()
    run = launch_fn(ptx, "matmul_kernel", (n // 128, n // 128), 128,
                    args=[a.view(np.uint16), b.view(np.uint16), c, n, n, n, n, 1, n, 1, n, 1,
                          np.zeros(64, np.uint8), np.zeros(64, np.uint8)],
                    dynamic_shared=160 * 1024)
    return time.perf_counter() - t0, run, c


def _share_compiled_loop(base_pkg, rev: str) -> None:
    """`git archive` carries no built extension, so the baseline would run the numpy fallback
    of the MMA arithmetic. Give it the compiled loop too, so that both sides time the same kind
    of arithmetic: this tree's build when the baseline's _fdpa.c is this tree's, else the
    baseline's own _fdpa.c built with the baseline's setup.py (a warning if that fails)."""
    import importlib
    import shutil
    import subprocess

    from ptxsim.numerics import backend
    base_backend = importlib.import_module(base_pkg.__name__ + ".numerics.backend")
    if base_backend.compiled is not None or backend.compiled is None:
        return
    root = Path(__file__).resolve().parents[1]
    pkg_dir = Path(base_pkg.__file__).parent
    src = subprocess.run(["git", "-C", str(root), "show", f"{rev}:src/ptxsim/numerics/_fdpa.c"],
                         capture_output=True).stdout
    if src == (root / "src/ptxsim/numerics/_fdpa.c").read_bytes():
        so = Path(backend.compiled.__file__)
        shutil.copy(so, pkg_dir / "numerics" / so.name)
    else:
        setup_py = subprocess.run(["git", "-C", str(root), "show", f"{rev}:setup.py"],
                                  capture_output=True, text=True).stdout
        setup_py = setup_py.replace("src/ptxsim/numerics/_fdpa.c",
                                    f"{pkg_dir.name}/numerics/_fdpa.c").replace(
            '"ptxsim.numerics._fdpa_c"', f'"{pkg_dir.name}.numerics._fdpa_c"')
        (pkg_dir.parent / "setup_base.py").write_text(setup_py)
        built = subprocess.run([sys.executable, "setup_base.py", "-q", "build_ext", "--inplace"],
                               cwd=pkg_dir.parent, capture_output=True, text=True)
        if built.returncode or not list((pkg_dir / "numerics").glob("_fdpa_c*")):
            print(f"warning: could not build {rev}'s _fdpa.c; the baseline runs the numpy "
                  f"arithmetic\n{built.stderr[-2000:]}", flush=True)
            return
        print(f"built {rev}'s _fdpa.c for the baseline", flush=True)
    base_backend.compiled = importlib.import_module(base_pkg.__name__ + ".numerics._fdpa_c")
    base_backend.select("c")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--baseline", metavar="REV", help="also time ptxsim at this git revision")
    args = ap.parse_args()
    n = args.size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    ptx = PTX.read_text()
    if args.baseline:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from _baseline import load_baseline
        base_pkg = load_baseline(args.baseline)
        _share_compiled_loop(base_pkg, args.baseline)
        from ptxsim_base.machine.executor import launch as base_launch
        small = [np.ascontiguousarray(x[:128, :128]) for x in (a, b)]
        _run(base_launch, ptx, 128, *small)                           # parse, outside timing
        _run(launch, ptx, 128, *small)
        times = {"this tree": [], args.baseline: []}
        bits = {}
        for r in range(args.rounds):
            pair = [("this tree", launch), (args.baseline, base_launch)]
            for name, fn in (pair if r % 2 == 0 else pair[::-1]):    # no first-in-round bias
                t, run, c = _run(fn, ptx, n, a, b)
                times[name].append(t)
                bits[name] = c.view(np.uint32)
                print(f"round {r}: {name}: {t:.2f} s", flush=True)
        print("arithmetic backends: this tree", backend_active(), "/ baseline",
              __import__("ptxsim_base.numerics.backend").numerics.backend.active())
        print("D bits identical to the baseline's:",
              bool(np.array_equal(*bits.values())))
        for name, ts in times.items():
            print(f"{name}: median {np.median(ts):.2f} s, min {min(ts):.2f}, max {max(ts):.2f} "
                  f"({len(ts)} runs)")
    t_sim, run, c = _run(launch, ptx, n, a, b)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    t0 = time.perf_counter()
    ref = af @ bf
    t_np = time.perf_counter() - t0
    print(f"ptxsim Triton bf16 matmul {n}x{n}x{n}: {t_sim:.2f} s wall "
          f"({run.steps} scheduler steps, {n // 128 * n // 128} CTAs)")
    print(f"numpy float32 matmul same size: {t_np * 1e3:.2f} ms; ratio {t_sim / t_np:.0f}x")
    print(f"max |ptxsim - numpy f32| = {np.abs(c - ref).max():.3g}")
    if not args.no_check:
        d = np.zeros((n, n), np.uint32)
        for k in range(0, n, 16):
            d = mma(a.view(np.uint16)[:, k:k + 16], b.view(np.uint16)[k:k + 16], d,
                    arch="sm_100", kind="f16", atype="bf16", btype="bf16", ctype="f32",
                    dtype="f32")
        print("bit-exact vs ptxsim.numerics stepped over K:",
              bool(np.array_equal(d, c.view(np.uint32))))


if __name__ == "__main__":
    main()

"""Triton 3.9 bf16 matmul (sm_100a, tcgen05.mma) of n x n x n on ptxsim's executor, against its
peers in the same run: numpy's float32 matmul of the same size and Triton's own interpreter
(TRITON_INTERPRET=1, the same kernel source; a worker process, benchmarks/_triton_interpreter.py),
optionally ptxsim at another git revision. Rounds alternate the order of the runners, so all see
the same load; each ratio is the median of the per-round ratios, with its spread.

Load styles (tests/data/ptx/triton, scripts/gen_triton_ptx.py):
  cp_async  matmul_bf16_cpasync.ptx: matmul_kernel as Triton's JIT specialises it for contiguous
            16-divisible operands: cp.async loads, 3 stages (num_stages=3)
  tma       tma_matmul.ptx: tma_matmul_kernel, TMA loads and stores through tensor descriptors
            (tl.range num_stages=3), bf16 C
  ld        matmul_bf16.ptx: matmul_kernel unspecialised (ld.global + st.shared)
Bits: each ptxsim C against ptxsim.numerics stepped over K (the tensor core's arithmetic, 16 K
per MMA; the TMA kernel's epilogue rounds to bf16), and against the baseline revision's C.

    PYTHONPATH=src python benchmarks/triton_matmul.py [--size 1024] [--rounds 3]
        [--variants cp_async,tma,ld] [--no-interpreter] [--baseline REV] [--threads N]
        [--sanitize none|default|full] [--interpreter-threads N]
Ratios against the interpreter are given in wall time and in CPU time (the CPU seconds of
each process; on this shared 2-core machine the wall-clock ratio moves with the load).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data" / "ptx" / "triton"
VARIANTS = {"cp_async": "matmul_bf16_cpasync.ptx", "tma": "tma_matmul.ptx",
            "ld": "matmul_bf16.ptx"}
INTERPRETED = {"cp_async": "matmul", "ld": "matmul", "tma": "tma"}    # the kernel source


def _inputs(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    return a, b


SANITIZE = {"mode": "none"}         # --sanitize: the launches' sanitizer mode


def run_ptxsim(pkg: str, variant: str, ptx, n: int, a, b):
    """One launch; returns (wall s, cpu s, C bits)."""
    ex = __import__(pkg + ".machine.executor", fromlist=["launch"])
    scratch = [np.zeros(64, np.uint8), np.zeros(64, np.uint8)]
    au, bu = a.view(np.uint16), b.view(np.uint16)
    grid = (n // 128, n // 128)
    if variant == "tma":
        tmap = __import__(pkg + ".machine.tensormap", fromlist=["TensorMap"]).TensorMap
        bt = np.ascontiguousarray(bu.T)                 # the kernel reads B as (N, K)
        c = np.zeros((n, n), np.uint16)
        tm = [tmap.for_array(x, (64, 128), swizzle="128B", dtype="bfloat16")
              for x in (au, bt, c)]
        args = [tm[0], n, n, n, 1, tm[1], n, n, n, 1, tm[2], n, n, n, 1, n] + scratch
        shared = 200 * 1024
    else:
        c = np.zeros((n, n), np.float32)
        strides = [n, 1, n, 1, n, 1] if variant == "ld" else [n, n, n]
        args = [au, bu, c, n, n, n] + strides + scratch
        shared = 160 * 1024
    kernel = "tma_matmul_kernel" if variant == "tma" else "matmul_kernel"
    threads = 128
    t0, c0 = time.perf_counter(), time.process_time()
    ex.launch(ptx, kernel, grid, threads, args=args, dynamic_shared=shared,
              sanitize=SANITIZE["mode"])
    return time.perf_counter() - t0, time.process_time() - c0, c.view(
        np.uint16 if variant == "tma" else np.uint32).copy()


def expected_bits(variant: str, a, b) -> np.ndarray:
    """C from ptxsim.numerics alone: D = sum over K steps of 16 of the tensor core's MMA."""
    from ptxsim.numerics import mma
    au, bu = a.view(np.uint16), b.view(np.uint16)
    d = np.zeros((a.shape[0], b.shape[1]), np.uint32)
    for k in range(0, a.shape[1], 16):
        d = mma(au[:, k:k + 16], bu[k:k + 16], d, arch="sm_100", kind="f16", atype="bf16",
                btype="bf16", ctype="f32", dtype="f32")
    if variant == "tma":        # cvt.rn.bf16x2.f32 epilogue = round to nearest even
        return d.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    return d


class Interpreter:
    """The TRITON_INTERPRET=1 worker (one process for the whole run)."""

    def __init__(self, threads: int | None = None):
        env = dict(os.environ, TRITON_INTERPRET="1")
        if threads:                      # torch's intra-op threads in the interpreter's process
            env["PTXSIM_BENCH_TORCH_THREADS"] = str(threads)
        env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
        self.p = subprocess.Popen([sys.executable, str(HERE / "_triton_interpreter.py")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env)

    def run(self, kernel: str, n: int) -> dict:
        self.p.stdin.write(json.dumps({"kernel": kernel, "n": n}) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("the Triton interpreter worker stopped (see its stderr above)")
        return json.loads(line)

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def _spread(xs) -> str:
    return f"{statistics.median(xs):.3g} [{min(xs):.3g}-{max(xs):.3g}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default="cp_async,tma")
    ap.add_argument("--no-interpreter", action="store_true")
    ap.add_argument("--baseline", metavar="REV", help="also time ptxsim at this git revision")
    ap.add_argument("--threads", type=int, help="threads for the MMA arithmetic "
                    "(default: the CPUs this process may use)")
    ap.add_argument("--interpreter-threads", type=int, metavar="N",
                    help="torch intra-op threads for the interpreter (default: torch's own, "
                    "one per core)")
    ap.add_argument("--sanitize", default="none", choices=["none", "default", "full"],
                    help="ptxsim's sanitizer mode (default none: the executor alone; issue "
                    "#21's targets are the executor's)")
    args = ap.parse_args()
    SANITIZE["mode"] = args.sanitize
    n = args.size
    variants = args.variants.split(",")
    from ptxsim.numerics import backend
    if args.threads:
        backend.set_threads(args.threads)
    pkgs = ["ptxsim"]
    if args.baseline:
        sys.path.insert(0, str(HERE))
        from _baseline import load_baseline, share_compiled_loop
        share_compiled_loop(load_baseline(args.baseline), args.baseline)
        pkgs.append("ptxsim_base")
    a, b = _inputs(n)
    texts = {v: (DATA / VARIANTS[v]).read_text() for v in variants}
    small = _inputs(256)
    for p in pkgs:                                    # parse + imports + first touch, untimed
        for v in variants:
            run_ptxsim(p, v, texts[v], 256, *small)
    interp = None if args.no_interpreter else Interpreter(args.interpreter_threads)
    if interp:
        for k in {INTERPRETED[v] for v in variants}:
            interp.run(k, 256)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; numerics "
          f"backend {backend.active()}, {backend.threads()} arithmetic threads; sanitize="
          f"{args.sanitize}", flush=True)
    loads = [os.getloadavg()[0]]
    res = {}
    for r in range(args.rounds):
        runners = [("numpy", None)] + [(p, v) for v in variants for p in pkgs]
        if interp:
            runners += [("interpreter", k) for k in dict.fromkeys(INTERPRETED[v]
                                                                  for v in variants)]
        for who, what in (runners if r % 2 == 0 else runners[::-1]):
            if who == "numpy":
                af, bf = a.astype(np.float32), b.astype(np.float32)
                t0, c0 = time.perf_counter(), time.process_time()
                af @ bf
                got = (time.perf_counter() - t0, time.process_time() - c0)
            elif who == "interpreter":
                out = interp.run(what, n)
                got = (out["wall"], out["cpu"])
                res.setdefault(("interp_err", what), out["max_err"])
            else:
                w, c, bits = run_ptxsim(who, what, texts[what], n, a, b)
                got = (w, c)
                res[("bits", who, what)] = bits
            res.setdefault((who, what), []).append(got)
            print(f"round {r}: {who} {what or ''}: {got[0]:.2f} s wall, {got[1]:.2f} s cpu",
                  flush=True)
        loads.append(os.getloadavg()[0])
    if interp:
        interp.close()
    print(f"\nTriton bf16 matmul {n}x{n}x{n}, {args.rounds} rounds (median [min-max]), "
          f"sanitize={args.sanitize}, load average {_spread(loads)}:")
    npw = [x[0] for x in res[("numpy", None)]]
    for v in variants:
        pw = [x[0] for x in res[("ptxsim", v)]]
        pc = [x[1] for x in res[("ptxsim", v)]]
        print(f"  {v}: ptxsim {_spread(pw)} s wall, {_spread(pc)} s cpu; "
              f"{statistics.median(pw) / statistics.median(npw):.0f}x numpy float32 "
              f"({_spread([1e3 * x for x in npw])} ms)")
        if interp:
            iw = [x[0] for x in res[("interpreter", INTERPRETED[v])]]
            ic = [x[1] for x in res[("interpreter", INTERPRETED[v])]]
            ratios = [i / p for i, p in zip(iw, pw)]
            cratios = [i / p for i, p in zip(ic, pc)]
            print(f"      Triton interpreter {_spread(iw)} s wall, {_spread(ic)} s cpu: ptxsim "
                  f"is {_spread(ratios)}x faster in wall time, {_spread(cratios)}x in CPU "
                  f"time (interpreter |C - float64| up to "
                  f"{res[('interp_err', INTERPRETED[v])]:.3g})")
        if args.baseline:
            bw = [x[0] for x in res[("ptxsim_base", v)]]
            bc = [x[1] for x in res[("ptxsim_base", v)]]
            ratios = [q / p for q, p in zip(bw, pw)]
            cratios = [q / p for q, p in zip(bc, pc)]
            same = np.array_equal(res[("bits", "ptxsim", v)], res[("bits", "ptxsim_base", v)])
            print(f"      {args.baseline}: {_spread(bw)} s wall, {_spread(bc)} s cpu; this tree "
                  f"{_spread(ratios)}x faster in wall time, {_spread(cratios)}x in CPU time; "
                  f"C bits identical: {same}")
        exact = np.array_equal(res[("bits", "ptxsim", v)], expected_bits(v, a, b))
        print(f"      C bit-exact against ptxsim.numerics stepped over K: {exact}")


if __name__ == "__main__":
    main()

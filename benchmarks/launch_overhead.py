"""Launch overhead per CTA: a trivial kernel (thread 0 of each CTA stores its %ctaid.x; 32
threads per CTA) over grids of 10^4 .. 10^6 CTAs on ptxsim's executor. The peer in the same run
is the same launch at the smallest grid: the ratio of the per-CTA times says whether the
launch's bookkeeping stays linear in the number of CTAs (1.0 = linear). Each grid's output is
checked (every CTA ran once).

    PYTHONPATH=src python benchmarks/launch_overhead.py [--ctas 10000,100000,1000000]
        [--rounds 1]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from ptxsim.machine.executor import launch

PTX = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry trivial(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_done;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
$L_done:
    ret;
}
"""


def one(n: int) -> tuple[float, float]:
    out = np.zeros(n, np.uint32)
    t0, c0 = time.perf_counter(), time.process_time()
    launch(PTX, "trivial", n, 32, args=[out])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if not np.array_equal(out, np.arange(n, dtype=np.uint32)):
        raise SystemExit(f"{n} CTAs: wrong output")
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctas", default="10000,100000,1000000")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    sizes = [int(x) for x in args.ctas.split(",")]
    one(148)                                          # parse, imports, untimed
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)
    res = {n: [] for n in sizes}
    for r in range(args.rounds):
        for n in (sizes if r % 2 == 0 else sizes[::-1]):
            w, c = one(n)
            res[n].append((w, c))
            print(f"round {r}: {n} CTAs: {w:.2f} s wall, {c:.2f} s cpu, "
                  f"{1e6 * w / n:.1f} us/CTA wall", flush=True)
    base = statistics.median(w / sizes[0] for w, _ in res[sizes[0]])
    print("\nper CTA (median of rounds), and its ratio to the smallest grid's:")
    for n in sizes:
        per = statistics.median(w / n for w, _ in res[n])
        cpu = statistics.median(c / n for _, c in res[n])
        print(f"  {n:>9} CTAs: {1e6 * per:8.1f} us wall, {1e6 * cpu:8.1f} us cpu per CTA; "
              f"{per / base:.2f}x the {sizes[0]}-CTA cost")


if __name__ == "__main__":
    main()

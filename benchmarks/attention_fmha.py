"""Flash-attention forward on ptxsim: CUTLASS's CuTe DSL Blackwell FMHA example
(examples/python/CuTeDSL/cute/blackwell/kernel/attention/fmha/fmha.py, unmodified) run through
ptxsim's CuTe DSL front door (`ptxsim cute`, ptxsim.cuda), fp16 Q/K/V, seq 1024, head dim 128 by
default. Every launch of the attention kernel is timed (the DSL's compile and the example's
reference check are not); the example's own check (torch reference, its tolerance) must pass.
The peer in the same run: torch's scaled_dot_product_attention on the CPU, float32, same shapes,
timed between the ptxsim launches' process and after it (median of its rounds).

    PYTHONPATH=src python benchmarks/attention_fmha.py --fmha PATH/fmha.py
        [--batch 1] [--heads 1] [--seq 1024] [--dim 128] [--iterations 3]

PATH: a CUTLASS checkout or the cache of `python scripts/fetch_upstream.py cutlass` (its
examples/python/CuTeDSL/cute/blackwell/kernel/attention/fmha/fmha.py); without --fmha the
upstream cache is used when scripts/fetch_upstream.py knows it.
"""
from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLE = "examples/python/CuTeDSL/cute/blackwell/kernel/attention/fmha/fmha.py"


def _find_fmha(given: str | None) -> Path:
    if given:
        p = Path(given)
        return p / EXAMPLE if p.is_dir() else p
    sys.path.insert(0, str(HERE.parent / "scripts"))
    try:
        from fetch_upstream import cache_dir
    except ImportError:
        cache_dir = None
    base = cache_dir("cutlass") if cache_dir else None
    if base is None:
        raise SystemExit("give --fmha PATH (CUTLASS's fmha.py, or a CUTLASS checkout), or "
                         "fetch it: python scripts/fetch_upstream.py cutlass")
    return base / EXAMPLE


def torch_sdpa(b: int, h: int, s: int, d: int, rounds: int) -> list[float]:
    import torch
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, generator=g) for _ in range(3))
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        torch.nn.functional.scaled_dot_product_attention(q, k, v)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fmha", help="path of fmha.py or of a CUTLASS checkout")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--iterations", type=int, default=3,
                    help="timed launches after the checked one (the example's --iterations)")
    args = ap.parse_args()
    script = _find_fmha(args.fmha)
    if not script.is_file():
        raise SystemExit(f"{script} does not exist")
    try:
        from ptxsim.cli import main as ptxsim_main
        import ptxsim.cuda  # noqa: F401 -- the CuTe DSL front door (issue #16)
    except ImportError as e:
        raise SystemExit(f"this benchmark runs the CuTe DSL through ptxsim.cuda ({e})") from None
    import ptxsim.machine.executor as ex

    launches = []
    run = ex.Launch.run

    def timed(self):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return run(self)
        finally:
            launches.append((self.program.function.name, self.geometry.n_ctas,
                             time.perf_counter() - t0, time.process_time() - c0, self.steps))
    ex.Launch.run = timed
    shape = f"{args.batch},{args.seq},{args.heads},{args.dim}"
    peer = torch_sdpa(args.batch, args.heads, args.seq, args.dim, 3)
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(script.parent)
    try:
        with redirect_stdout(out):
            code = ptxsim_main(["cute", str(script), "--q_shape", shape, "--k_shape", shape,
                                "--warmup_iterations", "0", "--iterations",
                                str(args.iterations)])
    finally:
        os.chdir(cwd)
        ex.Launch.run = run
    peer += torch_sdpa(args.batch, args.heads, args.seq, args.dim, 3)
    text = out.getvalue()
    ok = code == 0 and "Results verified successfully" in text and "PASS" in text
    attn = [x for x in launches if "Attention" in x[0] or "Fmha" in x[0] or "fmha" in x[0]]
    if not attn:                                   # the kernel with the most steps
        top = max(x[4] for x in launches)
        attn = [x for x in launches if x[4] == top]
    walls, cpus = [x[2] for x in attn], [x[3] for x in attn]
    pw = statistics.median(peer)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"CuTe DSL fmha forward, fp16, batch {args.batch}, heads {args.heads}, seq {args.seq}, "
          f"head dim {args.dim}: {len(attn)} launches of {attn[0][1]} CTAs, {attn[0][4]} steps")
    print(f"  ptxsim: {statistics.median(walls):.2f} s wall [{min(walls):.2f}-{max(walls):.2f}], "
          f"{statistics.median(cpus):.2f} s cpu per launch")
    print(f"  torch SDPA float32 on the CPU: {1e3 * pw:.2f} ms [{1e3 * min(peer):.2f}-"
          f"{1e3 * max(peer):.2f}]; ptxsim / torch = {statistics.median(walls) / pw:.0f}x")
    print(f"  the example's own reference check passed: {ok}")
    if not ok:
        print(text[-3000:])
        raise SystemExit(1)


if __name__ == "__main__":
    main()

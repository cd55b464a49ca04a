"""Triton's own interpreter (TRITON_INTERPRET=1) as the peer of benchmarks/triton_matmul.py:
a worker process (the interpreter is chosen when a kernel is decorated, so it cannot share the
benchmark's process) running the same kernel sources that scripts/gen_triton_ptx.py compiled
to the PTX ptxsim runs, on CPU torch tensors. It reads one JSON request per line on stdin,
{"kernel": "matmul" | "tma", "n": 1024, "seed": 0}, runs it and answers one JSON line:
{"wall": s, "cpu": s, "max_err": |interpreter - float64 matmul|} (the interpreter's bf16
arithmetic is not the tensor core's: its error is reported, not checked).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import torch  # noqa: E402

if os.environ.get("PTXSIM_BENCH_TORCH_THREADS"):      # triton_matmul.py --interpreter-threads
    torch.set_num_threads(int(os.environ["PTXSIM_BENCH_TORCH_THREADS"]))

import gen_triton_ptx as g  # noqa: E402


def run(kernel: str, n: int, seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(n, n, generator=gen).to(torch.bfloat16)
    b = torch.randn(n, n, generator=gen).to(torch.bfloat16)
    grid = (n // 128, n // 128)
    if kernel == "matmul":
        c = torch.zeros(n, n, dtype=torch.float32)
        ref = a.double() @ b.double()
        t0, c0 = time.perf_counter(), time.process_time()
        g.matmul_kernel[grid](a, b, c, n, n, n, n, 1, n, 1, n, 1, BLOCK_M=128, BLOCK_N=128,
                              BLOCK_K=64)
    else:
        from triton.tools.tensor_descriptor import TensorDescriptor
        c = torch.zeros(n, n, dtype=torch.bfloat16)
        ref = a.double() @ b.double().T
        descs = [TensorDescriptor.from_tensor(x, box) for x, box in
                 ((a, [128, 64]), (b, [128, 64]), (c, [128, 128]))]
        t0, c0 = time.perf_counter(), time.process_time()
        g.tma_matmul_kernel[grid](*descs, n, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64,
                                  WARP_SPECIALIZE=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall": wall, "cpu": cpu, "max_err": float((c.double() - ref).abs().max())}


def main() -> None:
    for line in sys.stdin:
        req = json.loads(line)
        print(json.dumps(run(req["kernel"], int(req["n"]), int(req.get("seed", 0)))), flush=True)


if __name__ == "__main__":
    main()

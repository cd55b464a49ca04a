"""Generate the Triton 3.9 num_ctas=2 (CTA-cluster) matmul for sm_100a, offline (no GPU):
    /work/venv-gen/bin/python tests/machine/data/exec/gen_triton_cluster.py
writes triton_matmul_2cta.ptx next to this file. The kernel is the TMA matmul of
scripts/gen_triton_ptx.py compiled with num_ctas=2 (each CTA pair shares a 256-row tile)."""
import sys
from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def tma_matmul_kernel(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([pid_n * BLOCK_N, k])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.bfloat16))


def main() -> int:
    sig = {"a_desc": "tensordesc<bf16[256, 64]>", "b_desc": "tensordesc<bf16[128, 64]>",
           "c_desc": "tensordesc<bf16[256, 128]>", "K": "i32", "BLOCK_M": "constexpr",
           "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"}
    src = ASTSource(fn=tma_matmul_kernel, signature=sig,
                    constexprs={"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64})
    k = triton.compile(src, target=GPUTarget("cuda", 100, 32), options={"num_ctas": 2})
    out = Path(__file__).parent / "triton_matmul_2cta.ptx"
    out.write_text(k.asm["ptx"])
    print(out, len(k.asm["ptx"].splitlines()), "lines; metadata:",
          {x: getattr(k.metadata, x, None) for x in ("num_ctas", "num_warps", "shared",
                                                     "cluster_dims")})
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A CuTe DSL kernel with a shared-memory race (each thread reads the element another warp
wrote, with no barrier between): `ptxsim cute` must report it (tests/cuda/test_dsl.py).
With `--fixed` the barrier is there and nothing is reported."""
import sys

import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack

FIXED = "--fixed" in sys.argv


@cute.kernel
def reverse(gX: cute.Tensor, gY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    s = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64), 16)
    s[tidx] = gX[tidx]
    if cutlass.const_expr(FIXED):
        cute.arch.barrier()
    gY[tidx] = s[63 - tidx]


@cute.jit
def run(mX: cute.Tensor, mY: cute.Tensor):
    reverse(mX, mY).launch(grid=(1, 1, 1), block=(64, 1, 1))


x = torch.arange(64, dtype=torch.float32, device="cuda")
y = torch.zeros_like(x)
run(from_dlpack(x), from_dlpack(y))
torch.cuda.synchronize()
print("result", "as expected" if torch.equal(y.cpu(), x.flip(0).cpu()) else "differs")

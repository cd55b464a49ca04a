"""A CuTe DSL program compiled with --enable-tvm-ffi (as FlashAttention-4 compiles) whose kernel
writes past its output tensor: run by tests/cuda/test_dsl.py through `ptxsim cute`, which must
end it with the fault's PTX line."""
import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def copy_kernel(gX: cute.Tensor, gY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    gY[bidx * 64 + tidx] = gX[bidx * 64 + tidx]


@cute.jit
def copy(mX: cute.Tensor, mY: cute.Tensor, stream):
    copy_kernel(mX, mY).launch(grid=(2, 1, 1), block=(64, 1, 1), stream=stream)


x = torch.randn(128, device="cuda")
y = torch.zeros(64, device="cuda")                 # the second block writes past its end
f = cute.compile(copy, from_dlpack(x, enable_tvm_ffi=True), from_dlpack(y, enable_tvm_ffi=True),
                 cute.runtime.make_fake_stream(use_tvm_ffi_env_stream=True),
                 options="--enable-tvm-ffi")
f(x, y)
print("not reached")

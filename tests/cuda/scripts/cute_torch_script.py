"""A CuTe DSL program written as for a GPU (torch tensors on "cuda", cuda-python device query,
torch.cuda streams and events), run by tests/cuda/test_dsl.py through `ptxsim cute`."""
import sys

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def scale_rows(gX: cute.Tensor, gY: cute.Tensor, gS: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    m, n = gX.shape
    for j in cutlass.range(tidx, n, 32):
        gY[bidx, j] = gX[bidx, j] * gS[bidx]


@cute.jit
def run(mX: cute.Tensor, mY: cute.Tensor, mS: cute.Tensor):
    m, n = mX.shape
    scale_rows(mX, mY, mS).launch(grid=(m, 1, 1), block=(32, 1, 1))


def main() -> int:
    assert torch.cuda.is_available()
    err, = cuda.cuInit(0)
    err, dev = cuda.cuDeviceGet(0)
    err, sms = cuda.cuDeviceGetAttribute(
        cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
    err, major = cuda.cuDeviceGetAttribute(
        cuda.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    print(f"device: {torch.cuda.get_device_name()} sm_count={sms} major={major}")
    x = torch.randn(6, 100, device="cuda")
    s = torch.arange(6, dtype=torch.float32).cuda()
    y = torch.zeros_like(x)
    X, Y, S = from_dlpack(x), from_dlpack(y), from_dlpack(s)
    f = cute.compile(run, X, Y, S)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    f(X, Y, S)
    end.record()
    torch.cuda.synchronize()
    torch.testing.assert_close(y.cpu(), (x * s[:, None]).cpu(), rtol=0, atol=0)
    print(f"PASS elapsed_ms={start.elapsed_time(end):.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""torch on the emulated device (ptxsim.cuda.torch_cuda): "cuda" tensors keep their data in host
memory but are CUDA tensors to the script (is_cuda, device, DLPack), the torch.cuda calls scripts
make answer for the B200, and torch._scaled_mm's block-scaled forms (GPU-only in torch) are
computed on the CPU."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ptxsim import cuda  # noqa: E402
from ptxsim.cuda import torch_cuda  # noqa: E402


@pytest.fixture
def emulated():
    cuda.configure(["b200"])
    torch_cuda.install()
    yield
    torch_cuda.uninstall()
    cuda.configure(["b200"])


def test_cuda_tensors_and_queries(emulated):
    assert torch.cuda.is_available() and torch.cuda.device_count() == 1
    assert torch.cuda.get_device_capability() == (10, 0)
    assert torch.cuda.get_device_properties(0).multi_processor_count == 148
    x = torch.ones(4, 4, device="cuda")
    y = torch.zeros(4, device=torch.device("cuda:0")).cuda()
    z = x.to("cuda", torch.float16)
    assert x.device == y.device == z.device == torch.device("cuda", 0) and z.dtype == torch.float16
    assert x.is_cuda and y.is_cuda and z.is_cuda and not x.is_cpu and x.get_device() == 0
    assert torch.cuda.current_stream().cuda_stream == 0
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    e1.record()
    assert e0.elapsed_time(e1) == 0.0                    # no launch in between: no time passes


def test_device_follows_the_data(emulated):
    """What torch decides on a GPU: results of "cuda" tensors are on "cuda", in-place results
    keep their device, `.cpu()` / `.to("cpu")` are copies on the CPU, `.cuda()` of a CPU tensor
    is a copy on the device."""
    a = torch.arange(6.0, device="cuda").reshape(2, 3)
    host = torch.arange(6.0).reshape(2, 3)
    assert not host.is_cuda and host.device.type == "cpu"
    for t in (a * 2, a.t(), a[0], torch.empty_like(a), a.float(), a.new_zeros(3),
              torch.cat([a, a]), a.to(torch.float16), torch.randn(2, device=a.device)):
        assert t.is_cuda and t.device.type == "cuda", t
    assert torch.empty(2, device="cpu").device.type == "cpu"
    c = a.cpu()
    assert not c.is_cuda and c.data_ptr() != a.data_ptr() and torch.equal(c, host)
    a.add_(1)                                        # a copy: the host tensor keeps its values
    assert torch.equal(c, host)
    assert a.to("cpu").device.type == "cpu" and a.to(host).device.type == "cpu"
    g = host.cuda()
    assert g.is_cuda and g.data_ptr() != host.data_ptr() and not host.is_cuda
    assert g.cuda() is g and host.to(a).is_cuda
    host.add_(a.cpu())                               # in place on a CPU tensor: stays on the CPU
    assert not host.is_cuda
    # torch's own check: a CUDA tensor is not equal to a CPU one without moving it
    with pytest.raises(AssertionError, match="device"):
        torch.testing.assert_close(a, a.cpu())
    torch.testing.assert_close(a.cpu(), torch.arange(1.0, 7.0).reshape(2, 3))
    torch.testing.assert_close(a, torch.arange(1.0, 7.0, device="cuda").reshape(2, 3))


def test_dlpack_reports_the_device(emulated):
    """DLPack consumers see (kDLCUDA, 0) for a tensor on "cuda", (kDLCPU, 0) for a CPU one:
    `__dlpack_device__`, the `__dlpack__` capsule and torch's C exchange table (TVM-FFI)."""
    from torch.utils.dlpack import DLDeviceType
    a = torch.arange(8, dtype=torch.int32, device="cuda")
    assert a.__dlpack_device__() == (DLDeviceType.kDLCUDA, 0)
    assert torch.ones(2).__dlpack_device__() == (DLDeviceType.kDLCPU, 0)
    with pytest.raises(Exception, match="(?i)cuda|device"):  # numpy refuses device memory
        np.from_dlpack(a)
    np.testing.assert_array_equal(np.from_dlpack(a.cpu()), np.arange(8))
    tvm_ffi = pytest.importorskip("tvm_ffi")
    t = tvm_ffi.from_dlpack(a)                       # through __dlpack_c_exchange_api__
    assert t.device.type == "cuda" and t.device.index == 0 and t.shape == (8,)
    assert tvm_ffi.from_dlpack(a.cpu()).device.type == "cpu"


def _blocked(s):
    """The 128 x 4 blocked layout of a (rows, cols) scale matrix, built index by index: scale
    (r, c) of block (r // 128, c // 4) goes to ((r % 32) * 4 + (r % 128) // 32) * 4 + c % 4 of
    that block's 512 entries; blocks in row-major block order."""
    rows, cols = s.shape
    nr, nc = -(-rows // 128), -(-cols // 4)
    out = np.zeros(nr * nc * 512, s.dtype)
    for r in range(rows):
        for c in range(cols):
            blk = (r // 128) * nc + c // 4
            rr = r % 128
            out[blk * 512 + ((rr % 32) * 4 + rr // 32) * 4 + c % 4] = s[r, c]
    return out


E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float64)


@pytest.mark.parametrize("kind", ["nvfp4", "mxfp8"])
def test_block_scaled_mm_on_cpu(emulated, kind):
    rng = np.random.default_rng(5)
    m, n, k = 130, 8, 64
    vec = 16 if kind == "nvfp4" else 32
    sa = rng.choice([0.25, 0.5, 1.0, 2.0], (m, k // vec))
    sb = rng.choice([0.5, 1.0, 4.0], (n, k // vec))
    if kind == "nvfp4":
        ca, cb = rng.integers(0, 16, (m, k)), rng.integers(0, 16, (n, k))
        av, bv = E2M1[ca], E2M1[cb]
        a = torch.from_numpy((ca[:, 0::2] | ca[:, 1::2] << 4).astype(np.uint8)).view(
            torch.float4_e2m1fn_x2)
        b = torch.from_numpy((cb[:, 0::2] | cb[:, 1::2] << 4).astype(np.uint8)).view(
            torch.float4_e2m1fn_x2)
        sdt = torch.float8_e4m3fn
    else:
        av = rng.choice([-2.0, -0.5, 0.0, 0.75, 1.5, 3.0], (m, k))
        bv = rng.choice([-1.0, 0.25, 1.0, 2.0], (n, k))
        a, b = (torch.from_numpy(x).to(torch.float8_e4m3fn) for x in (av, bv))
        sdt = torch.float8_e8m0fnu
    want = (av * np.repeat(sa, vec, 1)) @ (bv * np.repeat(sb, vec, 1)).T
    got = torch._scaled_mm(a, b.t(), torch.from_numpy(_blocked(sa)).to(sdt),
                           torch.from_numpy(_blocked(sb)).to(sdt), out_dtype=torch.float32)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)

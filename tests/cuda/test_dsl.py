"""CuTe DSL on ptxsim: `cute.compile` + calling the compiled function, with the DSL's own host
code (parameter packing, launch) routed to ptxsim.cuda and CPU torch tensors through from_dlpack.
Kernels written here; expected values from torch."""
import pytest

cutlass = pytest.importorskip("cutlass")
torch = pytest.importorskip("torch")
pytest.importorskip("cuda.bindings.driver")

import cutlass.cute as cute  # noqa: E402
import cutlass.memory  # noqa: E402,F401
from cutlass.cute.runtime import from_dlpack  # noqa: E402

from ptxsim import cuda  # noqa: E402
from ptxsim.cuda import dsl  # noqa: E402
from ptxsim.errors import CudaError  # noqa: E402


@pytest.fixture(scope="module")
def routed():
    cuda.configure(["b200"])
    dsl.install()
    yield
    dsl.uninstall()
    cuda.configure(["b200"])


@cute.kernel
def axpb_kernel(gX: cute.Tensor, gY: cute.Tensor, a: cutlass.Float32, b: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    m, n = gX.shape
    gY[i // n, i % n] = a * gX[i // n, i % n] + b


@cute.jit
def axpb(mX: cute.Tensor, mY: cute.Tensor, a: cutlass.Float32, b: cutlass.Float32,
         rows: cutlass.Constexpr):
    m, n = mX.shape
    axpb_kernel(mX, mY, a, b).launch(grid=((rows * n) // 64, 1, 1), block=(64, 1, 1))


@cute.kernel
def row_sum_kernel(gX: cute.Tensor, gS: cute.Tensor):
    # one CTA per row: each thread adds a column slice, then a shared-memory tree reduction
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    smem = cutlass.memory.SmemAllocator()
    buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
    m, n = gX.shape
    acc = cutlass.Float32(0.0)
    for j in cutlass.range(tidx, n, 64):
        acc += gX[row, j]
    buf[tidx] = acc
    cute.arch.sync_threads()
    s = 32
    while s > 0:
        if tidx < s:
            buf[tidx] = buf[tidx] + buf[tidx + s]
        cute.arch.sync_threads()
        s //= 2
    if tidx == 0:
        gS[row] = buf[0]


@cute.jit
def row_sum(mX: cute.Tensor, mS: cute.Tensor):
    m, n = mX.shape
    row_sum_kernel(mX, mS).launch(grid=(m, 1, 1), block=(64, 1, 1))


def test_compiled_dsl_function_runs_on_ptxsim(routed):
    x = torch.randn(8, 128)
    y = torch.zeros(8, 128)
    X, Y = from_dlpack(x), from_dlpack(y)
    f = cute.compile(axpb, X, Y, cutlass.Float32(2.0), cutlass.Float32(0.5), 8)
    f(X, Y, cutlass.Float32(2.0), cutlass.Float32(0.5))
    assert torch.equal(y, 2.0 * x + 0.5)          # 2x is exact: fused or not, one rounding
    assert cuda.state().launches >= 1


def test_shared_memory_reduction(routed):
    x = torch.randint(-8, 8, (4, 200)).float()           # exact sums in any order
    s = torch.zeros(4)
    X, S = from_dlpack(x), from_dlpack(s)
    cute.compile(row_sum, X, S)(X, S)
    assert torch.equal(s, x.sum(dim=1))


def test_kernel_fault_reaches_the_caller_with_the_ptxsim_finding(routed):
    x = torch.randn(8, 128)
    y = torch.zeros(4, 128)                               # half the rows the launch writes
    X, Y = from_dlpack(x), from_dlpack(y)
    f = cute.compile(axpb, X, Y, cutlass.Float32(1.0), cutlass.Float32(0.0), 8)
    with pytest.raises(Exception) as e:
        f(X, Y, cutlass.Float32(1.0), cutlass.Float32(0.0))
    cause = e.value.__cause__
    assert isinstance(cause, CudaError) and cause.result == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert "outside every mapped buffer" in str(cause)
    cuda.configure(["b200"])                               # the context is unusable afterwards


def test_ptxsim_cute_runs_a_gpu_written_script():
    """`ptxsim cute` on a program written for a GPU: torch on "cuda", cuda-python device query,
    torch.cuda events (tests/cuda/scripts/cute_torch_script.py). The B200's SM count and compute
    capability come back; the result equals torch's."""
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).parent / "scripts" / "cute_torch_script.py"
    r = subprocess.run([sys.executable, "-m", "ptxsim", "cute", str(script)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "device: NVIDIA B200 sm_count=148 major=10" in r.stdout
    assert "PASS elapsed_ms=" in r.stdout



def _ptxsim_cute_script(name, *script_args, options=()):
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).parent / "scripts" / name
    return subprocess.run([sys.executable, "-m", "ptxsim", "cute", *options, str(script),
                           *script_args], capture_output=True, text=True, timeout=600)


def test_ptxsim_cute_reports_the_sanitizers_findings():
    """`ptxsim cute` prints the sanitizer's findings of the program's launches when it ends
    (tests/cuda/scripts/cute_race.py: threads read what another warp wrote without a barrier):
    the race with its PTX lines, and exit status 1 although the script itself succeeded."""
    r = _ptxsim_cute_script("cute_race.py")
    assert r.returncode == 1, (r.stdout + r.stderr)[-3000:]
    assert "result as expected" in r.stdout            # the race hides on this schedule
    assert "ptxsim sanitizer: 1 error(s), 0 warning(s) in 1 of 1 launch(es)" in r.stderr
    assert "race-shared" in r.stderr and "ld.shared.b32" in r.stderr
    assert "st.shared.b32" in r.stderr and "another warp" in r.stderr


def test_ptxsim_cute_without_findings_prints_none():
    """The same kernel with its barrier: nothing reported, exit status 0."""
    r = _ptxsim_cute_script("cute_race.py", "--fixed")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "result as expected" in r.stdout and "ptxsim sanitizer" not in r.stderr


@pytest.mark.slow
def test_ptxsim_cute_sanitize_none():
    r = _ptxsim_cute_script("cute_race.py", options=("--sanitize", "none"))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "result as expected" in r.stdout and "ptxsim sanitizer" not in r.stderr

# ---- host code compiled with --enable-tvm-ffi (how FlashAttention-4 compiles): linked by a
#      BinaryExecutionEngine against ptxsim's stand-in for libcute_dsl_runtime.so, called with
#      torch tensors directly (TVM-FFI reads their DLPack device: they must be on "cuda")
@cute.kernel
def axpb_1d_kernel(gX: cute.Tensor, gY: cute.Tensor, a: cutlass.Float32, b: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 64 + tidx
    gY[i] = a * gX[i] + b


@cute.jit
def axpb_1d(mX: cute.Tensor, mY: cute.Tensor, a: cutlass.Float32, b: cutlass.Float32,
            blocks: cutlass.Constexpr, stream):
    axpb_1d_kernel(mX, mY, a, b).launch(grid=(blocks, 1, 1), block=(64, 1, 1), stream=stream)


@pytest.fixture
def tvm_ffi_routed(routed):
    pytest.importorskip("tvm_ffi")
    if cuda.native_path("cute_dsl_runtime") is None:
        pytest.skip("ptxsim's native stand-in for libcute_dsl_runtime.so was not built")
    from ptxsim.cuda import torch_cuda
    torch_cuda.install()
    yield
    torch_cuda.uninstall()


def _compile_tvm_ffi(x, y, blocks):
    return cute.compile(axpb_1d, from_dlpack(x, enable_tvm_ffi=True),
                        from_dlpack(y, enable_tvm_ffi=True), cutlass.Float32(2.0),
                        cutlass.Float32(0.5), blocks,
                        cute.runtime.make_fake_stream(use_tvm_ffi_env_stream=True),
                        options="--enable-tvm-ffi")


def test_tvm_ffi_function_runs_on_ptxsim(tvm_ffi_routed):
    x = torch.randn(128, device="cuda")
    y = torch.zeros(128, device="cuda")
    f = _compile_tvm_ffi(x, y, 2)
    f(x, y, 2.0, 0.5)                                     # torch tensors, as FA4 passes them
    assert torch.equal(y.cpu(), 2.0 * x.cpu() + 0.5)
    # TVM-FFI's own argument check, as on a GPU: a CPU tensor is refused
    with pytest.raises(ValueError, match="expected device_type=cuda"):
        f(x, torch.zeros(128), 2.0, 0.5)


def test_tvm_ffi_kernel_fault_names_the_ptx_line(tvm_ffi_routed):
    x = torch.randn(128, device="cuda")
    y = torch.zeros(64, device="cuda")                    # half what the two blocks write
    f = _compile_tvm_ffi(x, y, 2)
    with pytest.raises(Exception) as e:
        f(x, y, 2.0, 0.5)
    # the DSL's CUDADialectError, its detail ptxsim's: the CUresult, the PTX line, the buffer
    text = str(e.value)
    assert "700" in text and "CUDA_ERROR_ILLEGAL_ADDRESS" in text
    assert "PTX line" in text and "outside every mapped buffer" in text
    cuda.configure(["b200"])                               # the context is unusable afterwards


def _elf_exports(path) -> set:
    """Names of the defined functions in an ELF shared library's dynamic symbol table."""
    import struct
    raw = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", raw, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", raw, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", raw, shoff + k * shentsize) for k in range(shnum)]
    names = set()
    for sec in secs:
        if sec[1] != 11:                                   # SHT_DYNSYM
            continue
        strtab = secs[sec[6]]
        for k in range(sec[5] // 24):
            nm, info, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", raw, sec[4] + 24 * k)
            if info & 0xF == 2 and shndx:                  # STT_FUNC, defined
                end = raw.index(b"\0", strtab[4] + nm)
                names.add(raw[strtab[4] + nm:end].decode())
    return names


def test_the_runtime_stand_in_exports_what_nvidias_library_exports(routed):
    """ptxsim's libcute_dsl_runtime.so stand-in defines every C function of the DSL's own
    runtime library (read from the installed wheel), answers a modelled one from ptxsim.cuda and
    an unmodelled one with 801 (cudaErrorNotSupported)."""
    import ctypes
    import os
    ours = cuda.native_path("cute_dsl_runtime")
    if ours is None:
        pytest.skip("ptxsim's native stand-in for libcute_dsl_runtime.so was not built")
    import nvidia_cutlass_dsl
    real = [os.path.join(p, "cu12", "lib", "libcute_dsl_runtime.so")
            for p in nvidia_cutlass_dsl.__path__]
    real = [p for p in real if os.path.exists(p)]
    if not real:
        pytest.skip("the DSL wheel's libcute_dsl_runtime.so is not there")
    theirs = {n for n in _elf_exports(real[0]) if not n.startswith("_Z")}   # C functions
    assert len(theirs) >= 80 and theirs <= _elf_exports(ours)
    lib = ctypes.CDLL(ours)
    n = ctypes.c_int32(-1)
    assert lib._cudaGetDeviceCount(ctypes.byref(n)) == 0 and n.value == 1
    lib.CuteDSLRT_Module_Destroy.restype = ctypes.c_int32
    assert lib.CuteDSLRT_Module_Destroy(None) == 801


def test_ptxsim_cute_names_the_fault_of_a_tvm_ffi_function():
    """`ptxsim cute` on a --enable-tvm-ffi program whose kernel writes out of bounds: the
    script's CUDADialectError, then ptxsim's finding (CUresult, PTX line), exit status 1."""
    import subprocess
    import sys
    from pathlib import Path
    pytest.importorskip("tvm_ffi")
    if cuda.native_path("cute_dsl_runtime") is None:
        pytest.skip("ptxsim's native stand-in for libcute_dsl_runtime.so was not built")
    script = Path(__file__).parent / "scripts" / "cute_tvm_ffi_fault.py"
    r = subprocess.run([sys.executable, "-m", "ptxsim", "cute", str(script)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, (r.stdout + r.stderr)[-3000:]
    assert "not reached" not in r.stdout
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ptxsim: CudaError: cuLaunchKernelEx(") and "PTX line" in last
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in last and "st.global" in last

"""Device `assert` and `__trap()` as on a GPU (issue #17 / #18): nvcc 13.0's PTX for
`assert(p[i] < n)` calls the extern `__assertfail(message, file, line, function, charSize)`;
each failing thread prints the CUDA C++ Programming Guide's line ("test.cu:19: void
testAssert(): block: [0,0,0], thread: [0,0,0] Assertion `should_be_one` failed.") and the kernel
aborts with cudaErrorAssert. The kernel: tests/machine/data/exec/assert_kernel.cu."""
from pathlib import Path

import numpy as np
import pytest

from ptxsim import cuda
from ptxsim.errors import CudaError, DeviceAssertion, TrapExecuted
from ptxsim.machine.executor import launch

PTX = (Path(__file__).parent / "data" / "exec" / "assert_kernel.ptx").read_text()
KERNEL = "_Z5checkPKiiPi"


def test_assert_that_holds_runs_clean():
    p = np.arange(32, dtype=np.int32)
    out = np.zeros(32, np.int32)
    launch(PTX, KERNEL, 1, 32, args=[p, 100, out])
    assert np.array_equal(out, 2 * p)


def test_failed_assert_prints_the_guides_line_per_thread_and_aborts(capsys):
    p = np.arange(32, dtype=np.int32)
    out = np.zeros(32, np.int32)
    with pytest.raises(DeviceAssertion) as e:
        launch(PTX, KERNEL, (3, 1, 1), 32, args=[p, 30, out])
    err = capsys.readouterr().err.splitlines()
    # threads 30 and 31 of every CTA fail it (the three CTAs run in step here)
    assert err[0] == ("assert_kernel.cu:5: void check(const int *, int, int *): block: [0,0,0], "
                      "thread: [30,0,0] Assertion `p[i] < n` failed.")
    assert err[1].endswith("block: [0,0,0], thread: [31,0,0] Assertion `p[i] < n` failed.")
    assert err[5].endswith("block: [2,0,0], thread: [31,0,0] Assertion `p[i] < n` failed.")
    assert len(err) == 6 and e.value.messages == err
    assert "device assert failed" in str(e.value) and "line" in str(e.value)
    assert not out[30:].any()                 # the kernel stopped before the store


def test_trap_aborts_the_kernel():
    p = np.arange(32, dtype=np.int32)
    p[7] = -1
    with pytest.raises(TrapExecuted, match="trap executed") as e:
        launch(PTX, KERNEL, 1, 32, args=[p, 100, np.zeros(32, np.int32)])
    assert not isinstance(e.value, DeviceAssertion)


def test_the_host_sees_cuda_error_assert_and_the_context_stays_broken(capsys):
    cuda.reset()
    cuda.cuInit(0)
    ctx = cuda.cuDevicePrimaryCtxRetain(0)
    cuda.cuCtxSetCurrent(ctx)
    mod = cuda.cuModuleLoadData(PTX)
    f = cuda.cuModuleGetFunction(mod, KERNEL)
    d = cuda.cuMemAlloc(128)
    cuda.cuMemcpyHtoD(d, np.arange(32, dtype=np.int32), 128)
    o = cuda.cuMemAlloc(128)
    with pytest.raises(CudaError) as e:
        cuda.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, [d, 4, o], None)
    assert e.value.result == "CUDA_ERROR_ASSERT" and e.value.code == 710
    assert isinstance(e.value.finding, DeviceAssertion)
    with pytest.raises(CudaError, match="CUDA_ERROR_ASSERT"):      # sticky, as on a GPU
        cuda.cuMemAlloc(16)
    assert "Assertion `p[i] < n` failed." in capsys.readouterr().err
    cuda.reset()


def test_a_fault_records_where_it_happened():
    # the memcheck-style report of ptxsim.cuda reads these: the faulting thread's access
    ptx = (Path(__file__).parent / "data" / "exec" / "assert_kernel.ptx").read_text()
    p = np.arange(32, dtype=np.int32)
    out = np.zeros(16, np.int32)                  # threads 16.. write past its end
    from ptxsim.errors import MemoryAccessError
    with pytest.raises(MemoryAccessError) as e:
        launch(ptx, KERNEL, 1, 32, args=[p, 100, out])
    err = e.value
    assert err.access == "write" and err.size == 4 and err.tid == (16, 0, 0)
    assert err.ctaid == (0, 0, 0) and err.kernel == KERNEL
    assert err.instruction.startswith("st.global") and isinstance(err.ptx_line, int)

"""`ptxsim exec`: nvcc-built CUDA programs run unchanged on ptxsim through its stand-ins for
libcudart.so.13 and libcuda.so.1 (docs/cudacpp.md). The programs are ptxsim's own
(tests/cuda/data/*.cu), compiled here with nvcc (`-cudart shared`, PTX for compute_100a); each
checks its results against a host reference, and what they print is what the CUDA C++
Programming Guide says a GPU gives. Skipped without nvcc or without the stand-ins."""
import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptxsim import cuda

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(Path(__file__).parents[1]))
import toolchain  # noqa: E402

NVCC = toolchain.nvcc()
pytestmark = [
    pytest.mark.skipif(NVCC is None, reason="nvcc is not installed"),
    pytest.mark.skipif(cuda.native_path("cudart") is None,
                       reason="ptxsim's CUDA stand-ins were not built (no shared libpython?)"),
]
PTX_ONLY = ["-cudart", "shared", "-gencode", "arch=compute_100a,code=compute_100a"]


def _build(src: str, out: Path, flags=PTX_ONLY) -> Path:
    r = subprocess.run([NVCC, *flags, str(DATA / src), "-o", str(out)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def tour(tmp_path_factory):
    return _build("cudart_tour.cu", tmp_path_factory.mktemp("tour") / "tour")


def _exec(prog, *args, report=None):
    cmd = [sys.executable, "-m", "ptxsim", "exec"]
    if report is not None:
        cmd += ["--report", str(report)]
    return subprocess.run(cmd + [str(prog), *args], capture_output=True, text=True, timeout=600)


def test_vadd_runs_unchanged(tmp_path):
    exe = _build("vadd.cu", tmp_path / "vadd")
    r = _exec(exe, report=tmp_path / "r.jsonl")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "no error 0 PASSED"
    events = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    (launch,) = [e for e in events if e["event"] == "launch"]
    assert launch["kernel"] == "_Z4vaddPKfS0_Pfi" and launch["grid"] == [4, 1, 1]
    assert launch["device"] == "NVIDIA B200" and launch["result"] == "CUDA_SUCCESS"
    assert "1 kernel launch on NVIDIA B200 (sm_100a)" in r.stderr
    assert "vadd(float const*, float const*, float*, int)" in r.stderr or "_Z4vadd" in r.stderr


def test_the_runtime_api_tour(tour):
    r = _exec(tour, "ok")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "device NVIDIA B200 cc 10.0 sms 148 warp 32 smem/block-optin 232448"
    assert out[1] == "saxpy mismatches 0 counter 1000 elapsed>0 1"
    assert out[2] == "reverse mismatches 0"
    # 100 KB of dynamic shared memory needs cudaFuncAttributeMaxDynamicSharedMemorySize first
    assert out[3] == "64KB without attribute: cudaErrorInvalidValue"
    assert out[4] == "64KB with attribute: cudaSuccess"
    # a configuration error is the launch's own: peek keeps it, get returns and clears it
    assert out[5] == ("2048 threads: cudaErrorInvalidValue / cudaErrorInvalidValue / then "
                      "cudaSuccess")
    assert out[6] == "cluster ranks 0 1 0 1"                   # __cluster_dims__(2, 1, 1)
    # device printf lands between the host's lines, in the program's own stdout
    assert out[7:9] == ["device says 42", "after printf"]
    assert out[9] == "double free: cudaErrorInvalidValue"
    assert out[10] == "managed 69"                               # 5 + 64 atomic adds
    assert out[11] == "PASSED"
    assert "findings: none" in r.stderr


def test_a_failed_device_assert(tour):
    r = _exec(tour, "assert")
    assert r.returncode == 0
    assert ("cudart_tour.cu:38: void checked(const int *, int): block: [0,0,0], "
            "thread: [31,0,0] Assertion `p[threadIdx.x] < n` failed.") in r.stderr
    # the fault is sticky: the synchronising call and every later one return it
    assert r.stdout.split()[2:] == ["sync", "cudaErrorAssert", "later", "cudaErrorAssert"]
    assert "DeviceAssertion at PTX line" in r.stderr and "findings: 1" in r.stderr


def test_an_out_of_bounds_store_gets_a_memcheck_report(tour):
    r = _exec(tour, "oob")
    assert r.returncode == 0
    err = r.stderr
    assert "========= Invalid __global__ write of size 4 bytes" in err
    assert "=========     by thread (16,0,0) in block (0,0,0)" in err
    assert "PTX line" in err and re.search(r"st\.global\.[ub]32", err)   # nvcc 13.0 u32, 13.5 b32
    assert "past the end" in err
    assert r.stdout.split()[2:] == ["sync", "cudaErrorIllegalAddress", "later",
                                    "cudaErrorIllegalAddress"]


def test_an_api_ptxsim_does_not_model_is_a_named_error(tour, tmp_path):
    r = _exec(tour, "unmodelled", report=tmp_path / "r.jsonl")
    assert r.returncode == 0
    assert r.stdout.strip() == "cudaGraphCreate: 801 cudaErrorNotSupported"
    assert "cudaGraphCreate is not modelled by ptxsim" in r.stderr
    assert "not modelled (returned error 801): cudaGraphCreate" in r.stderr
    events = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert {"event": "unmodelled", "api": "cudaGraphCreate"} in events


def test_programs_ptxsim_cannot_run_are_refused_with_how_to_rebuild(tmp_path):
    sass = _build("vadd.cu", tmp_path / "sass", ["-cudart", "shared", "-gencode",
                                                 "arch=compute_100a,code=sm_100a"])
    r = _exec(sass)
    assert r.returncode == 1
    assert "holds no PTX" in r.stderr and "code=compute_100a" in r.stderr
    static = _build("vadd.cu", tmp_path / "static", ["-gencode",
                                                     "arch=compute_100a,code=compute_100a"])
    r = _exec(static)
    assert r.returncode == 1 and "-cudart shared" in r.stderr
    r = _exec(tmp_path / "missing")
    assert r.returncode == 1 and "no such file" in r.stderr


def test_the_exit_status_is_the_programs(tmp_path):
    exe = tmp_path / "fail.sh"
    exe.write_text("#!/bin/sh\nexit 3\n")
    os.chmod(exe, 0o755)
    assert _exec(exe).returncode == 3


def test_mov_packs_constant_elements():
    """`mov.b64 d, {%r, 0x80004020}`: a pack whose elements include constants, as CuTe DSL 4.8.1
    emits for FlashAttention-4's small head dims. ptxas 13.5 assembles it (with constants in
    either position, hex or float); ptxsim's validator takes it and the executor packs element
    0 into the low bits (PTX ISA 9.7.9.10, mov: "{a, b}" packs a into the low half)."""
    import numpy as np
    from ptxsim.machine.executor import launch
    ptx = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  ld.global.u32 %r1, [%rd1];
  mov.b64 %rd2, {%r1, 0x80004020};
  mov.b64 %rd3, {0f3F800000, %r1};
  st.global.v2.u64 [%rd1], {%rd2, %rd3};
  ret;
}
"""
    buf = np.array([0x12345678, 0, 0, 0], np.uint32)
    launch(ptx, "k", 1, 1, args=[buf])
    out = buf.view(np.uint64)
    assert int(out[0]) == 0x80004020_12345678
    assert int(out[1]) == 0x12345678_3F800000


TWO_WARP_STORES = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .align 64 .b8 tmap[128])
{
  .reg .b32 %r<8>;
  .reg .pred %p<2>;
  .shared .align 1024 .b8 buf[1024];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 31;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra $L_end;
  shr.u32 %r3, %r1, 5;
  mov.u32 %r4, buf;
  mad.lo.u32 %r5, %r3, 512, %r4;
  st.shared.v4.b32 [%r5], {%r1, %r1, %r1, %r1};
  st.shared.v4.b32 [%r5+16], {%r1, %r1, %r1, %r1};
  st.shared.v4.b32 [%r5+32], {%r1, %r1, %r1, %r1};
  st.shared.v4.b32 [%r5+48], {%r1, %r1, %r1, %r1};
  fence.proxy.async.shared::cta;
  mul.lo.u32 %r6, %r3, 16;
  cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [tmap, {%r6}], [%r5];
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
$L_end:
  ret;
}
"""


def test_tma_stores_of_two_warps_in_one_step_are_not_a_race():
    """Each warp's lane 0 writes its own 64 bytes of shared memory, fences the async proxy and
    stores them with its own TMA store: nothing is shared between the warps, so nothing races
    (the pattern of FlashAttention-4's dK / dV epilogue, one warpgroup per slice)."""
    import numpy as np
    from ptxsim.machine.executor import launch
    from ptxsim.machine.tensormap import TensorMap
    out = np.zeros(64, np.uint32)
    tm = TensorMap.encode_tiled("uint32", 1, out, (64,), (), (16,), (1,), "none", "none",
                                "none", "none")
    run = launch(TWO_WARP_STORES, "k", 1, 64, args=[tm])
    assert (out[:16] == 0).all() and (out[16:32] == 32).all()
    assert not run.findings, str(run.findings)


ISSUER_FENCE = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry k(.param .align 64 .b8 tmap[128])
{
  .reg .b32 %r<8>;
  .reg .pred %p<2>;
  .shared .align 1024 .b8 buf[1024];
  mov.u32 %r1, %tid.x;
  mov.u32 %r4, buf;
  shl.b32 %r2, %r1, 2;
  add.u32 %r3, %r4, %r2;
  st.shared.b32 [%r3], %r1;
  bar.sync 0;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $L_end;
  FENCE
  cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [tmap, {0}], [%r4];
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
$L_end:
  ret;
}
"""


@pytest.mark.parametrize("fence", [True, False])
def test_a_proxy_fence_by_the_issuing_thread_after_the_barrier_suffices(fence):
    """ThunderKittens' TMA store: every warp writes shared memory with generic stores, the
    warps meet at a barrier, and only the storing thread runs fence.proxy.async before its TMA
    store. The fence lies on the base-causality path from each write to the store, which is
    what the memory model's proxy-preserved causality order asks (PTX ISA, memory consistency
    model: proxies); without any fence the store is a missing-proxy-fence finding."""
    import numpy as np
    from ptxsim.machine.executor import launch
    from ptxsim.machine.tensormap import TensorMap
    out = np.zeros(64, np.uint32)
    tm = TensorMap.encode_tiled("uint32", 1, out, (64,), (), (64,), (1,), "none", "none",
                                "none", "none")
    ptx = ISSUER_FENCE.replace("FENCE", "fence.proxy.async.shared::cta;" if fence else "")
    run = launch(ptx, "k", 1, 64, args=[tm])
    assert (out == np.arange(64)).all()
    kinds = {f.kind for f in run.findings}
    assert kinds == (set() if fence else {"missing-proxy-fence"}), str(run.findings)

"""FlashAttention-4 (Dao-AILab/flash-attention, flash_attn/cute) on ptxsim, unmodified: its
interface compiles the sm100 kernels with --enable-tvm-ffi and its own host code launches them
(docs/cuda.md, "FlashAttention-4"). As `ptxsim cute` runs:

- FA4's own tests (tests/cute/test_flash_attn.py, `ptxsim cute -m pytest`), each passing its own
  reference check;
- tests/cuda/scripts/fa4_attention.py: flash_attn_func at chosen sizes, checked as FA4's tests
  check (float32 reference attention, error at most twice PyTorch's bf16 error).

Needs the upstream cache (python scripts/fetch_upstream.py flash-attention), FA4's dependencies
(pip install -e '.[fa4]') and ptxsim's native stand-in for libcute_dsl_runtime.so; skips
otherwise. Slow (about a minute each): pytest -m slow tests/cuda/test_fa4.py.
"""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
from fetch_upstream import cache_dir  # noqa: E402

pytestmark = pytest.mark.slow
SCRIPT = Path(__file__).parent / "scripts" / "fa4_attention.py"


def _fa4() -> Path:
    base = cache_dir("flash-attention")
    if base is None:
        pytest.skip("FlashAttention-4 is not cached (python scripts/fetch_upstream.py "
                    "flash-attention)")
    missing = [m for m in ("tvm_ffi", "quack", "einops") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"FlashAttention-4's dependencies are missing ({', '.join(missing)}): "
                    "pip install -e '.[fa4]'")
    from ptxsim.cuda import native_path
    if native_path("cute_dsl_runtime") is None:
        pytest.skip("ptxsim's native stand-in for libcute_dsl_runtime.so was not built")
    return base


def ptxsim_cute(*args: str, cwd: Path, timeout: int = 3600, clean: bool = True) -> str:
    base = _fa4()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(base)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-m", "ptxsim", "cute", *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=timeout)
    out = r.stdout + r.stderr
    if not clean:
        return out
    assert r.returncode == 0, out[-6000:]
    # the sanitizer (on by default) checked every launch and found nothing
    assert "ptxsim sanitizer:" not in out, out[-6000:]
    return out


def fa4_tests(*node_ids: str) -> str:
    tests = _fa4() / "tests" / "cute"
    return ptxsim_cute("-m", "pytest", "-p", "no:cacheprovider", "-q", "-W", "ignore",
                       *(f"test_flash_attn.py::{n}" for n in node_ids), cwd=tests)


def test_fa4_own_test_small_head_dims():
    """test_flash_attn_small_head_dim at seqlen 128 (batch 2, 2 heads; head dims 8, 16, 32,
    causal and not): forward, FA4's own check against its float32 reference."""
    ids = [f"test_flash_attn_small_head_dim[128-128-{d}-{c}-dtype0]"
           for d in (8, 16, 32) for c in (False, True)]
    out = fa4_tests(*ids)
    assert "6 passed" in out, out[-3000:]


def test_fa4_own_test_hd256_2cta():
    """test_flash_attn_hd256_sm100_noncontiguous_transpose: the head-dim-256 2-CTA forward
    kernel on transposed (non-contiguous) inputs equals its result on contiguous ones."""
    out = fa4_tests("test_flash_attn_hd256_sm100_noncontiguous_transpose")
    assert "1 passed" in out, out[-3000:]


@pytest.mark.parametrize("shape,causal", [
    ("1,128,1,64", False),
    ("2,200,2,96", False),                      # a partial tile, two batches and heads
    ("1,256,2,128", True),
    ("1,128,2,256", False),                     # the 2-CTA head-dim-256 kernel
    ("1,1024,1,128", False),                    # issue #21's benchmark size
], ids=["d64", "d96-partial-tile", "d128-causal", "d256-2cta", "s1024-d128"])
def test_fa4_forward(shape, causal):
    out = ptxsim_cute(str(SCRIPT), "--shape", shape, *(["--causal"] if causal else []),
                      cwd=SCRIPT.parent)
    assert "PASS" in out, out[-3000:]


def test_fa4_backward():
    """The backward kernels too (preprocess, the sm100 dQ/dK/dV kernel, postprocess): autograd
    through FA4's own autograd.Function, gradients against the float32 reference."""
    out = ptxsim_cute(str(SCRIPT), "--shape", "1,128,1,64", "--backward", cwd=SCRIPT.parent,
                      clean=False)
    assert "PASS" in out, out[-3000:]
    # the dK / dV epilogue's two warpgroups each write their own 8 KiB of shared memory, sync
    # on their own named barrier and TMA-store it from their leader warp (4 and 8): no race
    assert "ptxsim sanitizer:" not in out, out[-3000:]

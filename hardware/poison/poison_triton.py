"""The two Triton 3.9.0 kernels of the peer-suite failures, compiled to PTX by Triton's own NVIDIA
passes (ptxsim's Triton backend; nothing is launched), with what a launch needs.

simple_persistent_kernel: read from the upstream cache's test_matmul.py (scripts/fetch_upstream.py
triton), at build time; the six parametrisations the peer suite runs (M, N, K = 1024, 512, 256,
NUM_SMS = 8, GROUP_SIZE_M = 8, num_stages = 3). The scan kernel: test_core.py's test_scan2d kernel
for op cumsum, axis 1, reverse True on an (8, 32) bfloat16 input (`z = tl.cumsum(x, axis=1,
reverse=True)`), num_warps 4 and 16, written out here (its body is three lines).
"""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PERSISTENT = [(True, 4, 128, 128, 16), (True, 4, 64, 512, 16), (True, 8, 32, 32, 32),
              (False, 4, 128, 128, 16), (False, 4, 64, 512, 16), (False, 8, 32, 32, 32)]
M, N, K = 1024, 512, 256
NUM_SMS = 8

SCAN = '''
import triton
import triton.language as tl


@triton.jit
def kernel(X, Y, Z, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, AXIS: tl.constexpr):
    range_m = tl.arange(0, BLOCK_M)
    range_n = tl.arange(0, BLOCK_N)
    x = tl.load(X + range_m[:, None] * BLOCK_N + range_n[None, :])
    y = tl.load(Y + range_m[:, None] * BLOCK_N + range_n[None, :])
    z = tl.cumsum(x, axis=1, reverse=True)
    tl.store(Z + range_m[:, None] * BLOCK_N + range_n[None, :], z)
'''


def _module(name: str, text: str, folder: Path):
    import importlib.util
    path = folder / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def persistent_source() -> str:
    sys.path.insert(0, str(ROOT / "scripts"))
    from fetch_upstream import cache_dir
    src = cache_dir("triton")
    if src is None:
        raise SystemExit("Triton's upstream files are not cached: python scripts/fetch_upstream.py triton")
    text = (src / "python/test/unit/language/test_matmul.py").read_text()
    i = text.index("@triton.jit\ndef simple_persistent_kernel")
    j = text.index("@pytest.mark.parametrize", i)
    return "import triton\nimport triton.language as tl\n\n\n" + text[i:j]


def compile_all(target: str, folder: Path) -> list[dict]:
    """[{name, entry, ptx, block, shared, kind, config}] for `target`."""
    import torch
    import triton
    import ptxsim.triton as pt
    pt.use(target)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    scan = _module("ptxsim_scan_kernel", SCAN, folder)
    x = torch.zeros((8, 32), dtype=torch.bfloat16)
    z = torch.zeros((8, 32), dtype=torch.float32)
    for nw in (4, 16):
        k = scan.kernel.warmup(x, x, z, BLOCK_M=8, BLOCK_N=32, AXIS=1, num_warps=nw, grid=(1,))
        out.append(dict(name=f"scan_cumsum_bf16_rev_nw{nw}", entry="kernel", ptx=k.asm["ptx"],
                        block=32 * nw, shared=k.metadata.shared, kind="scan",
                        config=dict(num_warps=nw)))
    per = _module("ptxsim_persistent_kernel", persistent_source(), folder)
    a = torch.zeros((M, K), dtype=torch.float16)
    b = torch.zeros((K, N), dtype=torch.float16)
    c = torch.zeros((M, N), dtype=torch.float16)
    for dis, nw, bm, bn, bk in PERSISTENT:
        grid = (min(NUM_SMS, triton.cdiv(M, bm) * triton.cdiv(N, bn)),)
        k = per.simple_persistent_kernel.warmup(
            a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
            c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
            NUM_SMS=NUM_SMS, DISALLOW_ACC_MULTI_BUFFER=dis, num_stages=3, num_warps=nw, grid=grid)
        out.append(dict(name=f"persistent_{dis}_{nw}_{bm}_{bn}_{bk}", entry="simple_persistent_kernel",
                        ptx=k.asm["ptx"], block=32 * nw, shared=k.metadata.shared, kind="persistent",
                        grid=grid[0], config=dict(disallow=dis, num_warps=nw, bm=bm, bn=bn, bk=bk)))
    return out


if __name__ == "__main__":
    d = Path(sys.argv[2])
    for k in compile_all(sys.argv[1], d):
        (d / f"{k['name']}.ptx").write_text(k["ptx"])
        print(k["name"], len(k["ptx"]), k["block"], k["shared"], k.get("grid"))

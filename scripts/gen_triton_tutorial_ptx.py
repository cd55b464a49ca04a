"""Generate sm_100a PTX, offline (no GPU), of kernels of Triton's own tutorials, read from the
upstream cache (python scripts/fetch_upstream.py triton; never copied into this repository):

    python scripts/gen_triton_tutorial_ptx.py [OUT_DIR]      (default tests/data/ptx/triton)

- 09-persistent-matmul `matmul_kernel_descriptor_persistent` (device-side tensor descriptors,
  `tl.make_tensor_descriptor`: the kernel writes its CUtensorMaps into the global scratch and
  fences them): fp16, BLOCK 128x128x64, GROUP_SIZE_M 8, NUM_SMS 4, FLATTEN, 3 stages, without
  and with warp specialisation (4 / 8 warps). The flattened loop computes the tile coordinates
  of the tile after its last one (`_compute_pid`, a `rem` by a group size of 0 when the tiles of
  the last group run out) and never uses them: ptxsim's poison values (issue #18).

The tutorial's @triton.jit functions are compiled as written (their decorators' launch_metadata
hooks dropped: host-side profiling only). Prints each kernel's global scratch size, which a
launch must provide per program (tests/machine/test_exec_triton_descriptor.py).
"""
from __future__ import annotations

import ast
import importlib.util
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, str(Path(__file__).parent))
from fetch_upstream import cache_dir  # noqa: E402

TARGET = GPUTarget("cuda", 100, 32)


def tutorial_kernels(tutorial: str, names: set[str]):
    """The module holding the tutorial's functions `names` (jitted), from the upstream cache."""
    base = cache_dir("triton")
    if base is None:
        sys.exit("Triton's tutorials are not cached: python scripts/fetch_upstream.py triton")
    tree = ast.parse((base / "python" / "tutorials" / f"{tutorial}.py").read_text())
    code = "import triton\nimport triton.language as tl\n\n"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            node.decorator_list = [ast.parse("triton.jit").body[0].value]
            code += ast.unparse(node) + "\n\n"
    path = Path(tempfile.mkdtemp()) / f"tut_{tutorial.replace('-', '_')}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    m = tutorial_kernels("09-persistent-matmul",
                         {"_compute_pid", "matmul_kernel_descriptor_persistent"})
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
           "K": "i32", **{k: "constexpr" for k in (
               "BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "EPILOGUE_SUBTILE",
               "NUM_SMS", "WARP_SPECIALIZE", "FLATTEN")}}
    for ws in (False, True):
        cx = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8,
                  EPILOGUE_SUBTILE=False, NUM_SMS=4, WARP_SPECIALIZE=ws, FLATTEN=True)
        k = triton.compile(ASTSource(fn=m.matmul_kernel_descriptor_persistent, signature=sig,
                                     constexprs=cx), target=TARGET,
                           options=dict(num_warps=4, num_stages=3))
        name = f"descriptor_persistent{'_ws' if ws else ''}"
        (out / f"{name}.ptx").write_text(k.asm["ptx"])
        print(f"{name}: {len(k.asm['ptx'].splitlines())} lines, num_warps "
              f"{k.metadata.num_warps}, shared {k.metadata.shared}, global scratch "
              f"{k.metadata.global_scratch_size} (align {k.metadata.global_scratch_align})")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/ptx/triton")))

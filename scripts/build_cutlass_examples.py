"""Build CUTLASS's Blackwell C++ examples for ptxsim, the way any CUDA program for ptxsim is built
(docs/cudacpp.md): PTX only for sm_100a (`-gencode arch=compute_100a,code=compute_100a`), the
shared CUDA runtime (`-cudart shared`), the driver API linked against ptxsim's libcuda.so.1
stand-in. The binaries then run unchanged under `ptxsim exec` and print their own "Passed"
(tests/cuda/test_cutlass.py).

    python scripts/build_cutlass_examples.py [NAME ...]     # default: every example in EXAMPLES
        --src DIR     a CUTLASS source tree (include/, tools/util/include/, examples/); default:
                      CUTLASS 4.2.0 from PyPI (the nvidia-cutlass==4.2.0.0 wheel carries the C++
                      tree under cutlass_library/source), downloaded and unpacked into the cache
        --out DIR     where binaries and build logs go; default
                      $PTXSIM_UPSTREAM_CACHE/cutlass-build/<source label>
        --nvcc PATH   default: $NVCC, else the nvidia-cuda-nvcc wheel's nvcc, else nvcc on PATH
        --print-out   print the output folder and exit (tests use it)

Nothing of CUTLASS is kept in this repository: the source is fetched at a pinned version into the
cache (~/.cache/ptxsim/upstream unless $PTXSIM_UPSTREAM_CACHE says otherwise). Headers CUTLASS
needs beyond nvcc's own: CCCL (`cuda/std/...`, the nvidia-cuda-cccl wheel or the toolkit's
include/cccl) and cuRAND's device header (`curand_kernel.h`, the nvidia-curand wheel or the
toolkit) for the examples' device-side random fill; `pip install .[cudacpp]` installs all three
wheels. An example that is already built is not rebuilt (delete it to rebuild). Exit status 0 when
every named example is built; a missing tool or header is named.
"""
from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

# The PyPI release whose wheel carries CUTLASS's C++ tree (include/, tools/, examples/).
CUTLASS_WHEEL = ("nvidia-cutlass", "4.2.0.0")

# name: path under examples/ (tests/cuda/test_cutlass.py runs them by these names)
EXAMPLES = {
    "70_fp16": "70_blackwell_gemm/70_blackwell_fp16_gemm.cu",
    "70_fp8": "70_blackwell_gemm/70_blackwell_fp8_gemm.cu",
    "71": "71_blackwell_gemm_with_collective_builder/71_blackwell_gemm_with_collective_builder.cu",
    "72a": "72_blackwell_narrow_precision_gemm/72a_blackwell_nvfp4_bf16_gemm.cu",
    "72b": "72_blackwell_narrow_precision_gemm/72b_blackwell_nvfp4_nvfp4_gemm.cu",
    "72c": "72_blackwell_narrow_precision_gemm/72c_blackwell_mixed_mxfp8_bf16_gemm.cu",
    "75": "75_blackwell_grouped_gemm/75_blackwell_grouped_gemm.cu",
    "81": "81_blackwell_gemm_blockwise/81_blackwell_gemm_blockwise.cu",
    "83": "83_blackwell_sparse_gemm/83_blackwell_sparse_gemm.cu",
}

FLAGS = ["-std=c++17", "-O2", "--expt-relaxed-constexpr", "-cudart", "shared",
         "-gencode", "arch=compute_100a,code=compute_100a"]


class BuildError(Exception):
    """A tool, header or source the build needs is missing, or nvcc failed."""


def cache_root() -> Path:
    return Path(os.environ.get("PTXSIM_UPSTREAM_CACHE",
                               Path.home() / ".cache" / "ptxsim" / "upstream"))


def _wheel_label() -> str:
    return f"pypi-{CUTLASS_WHEEL[1]}"


def default_out(src: Path | None) -> Path:
    label = _wheel_label() if src is None else "src-" + Path(src).resolve().name
    return cache_root() / "cutlass-build" / label


def fetch_source() -> Path:
    """CUTLASS's C++ tree from the pinned PyPI wheel, unpacked once into the cache."""
    dest = cache_root() / "cutlass" / _wheel_label()
    tree = dest / "cutlass_library" / "source"
    if (tree / "include" / "cutlass" / "cutlass.h").is_file():
        return tree
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp,
                            f"{CUTLASS_WHEEL[0]}=={CUTLASS_WHEEL[1]}"],
                           capture_output=True, text=True)
        wheels = glob.glob(os.path.join(tmp, "*.whl"))
        if r.returncode != 0 or not wheels:
            raise BuildError(f"could not download {CUTLASS_WHEEL[0]}=={CUTLASS_WHEEL[1]} from "
                             f"PyPI: {(r.stderr or r.stdout).strip()[-300:]}")
        with zipfile.ZipFile(wheels[0]) as z:
            z.extractall(dest, [n for n in z.namelist()
                                if n.startswith("cutlass_library/source/")])
    return tree


def _nvidia_dirs() -> list[Path]:
    """The folders where NVIDIA's wheels put the toolkit (site-packages/nvidia/cu13, ...)."""
    spec = importlib.util.find_spec("nvidia")
    out = []
    for loc in (spec.submodule_search_locations or []) if spec else []:
        out += [Path(loc) / d for d in ("cu13", "cu12")]
    return [d for d in out if d.is_dir()]


def find_nvcc(explicit: str | None = None) -> Path:
    for cand in [explicit, os.environ.get("NVCC")] + \
            [str(d / "bin" / "nvcc") for d in _nvidia_dirs()] + [shutil.which("nvcc")]:
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return Path(cand)
    raise BuildError("no nvcc: install it (pip install .[cudacpp], or a CUDA 13 toolkit) or "
                     "pass --nvcc")


def _header_dir(nvcc: Path, header: str) -> Path:
    """The include folder holding `header`: next to nvcc, in NVIDIA's wheels, in /usr/local/cuda."""
    roots = [nvcc.parent.parent / "include"] + [d / "include" for d in _nvidia_dirs()] + \
        [Path("/usr/local/cuda/include")]
    for root in roots:
        if (root / header).is_file():
            return root
    raise BuildError(f"no {header} next to {nvcc} or in NVIDIA's wheels: pip install "
                     f".[cudacpp] (nvidia-cuda-cccl, nvidia-curand)")


def include_flags(nvcc: Path) -> list[str]:
    """CCCL (CUTLASS includes <cccl/cuda/std/...>, CCCL itself <cuda/std/...>) and cuRAND."""
    cccl = _header_dir(nvcc, "cccl/cuda/std/utility")
    curand = _header_dir(nvcc, "curand_kernel.h")
    dirs = [cccl, cccl / "cccl", curand]
    seen, flags = set(), []
    for d in dirs:
        if d not in seen:
            seen.add(d)
            flags.append(f"-I{d}")
    return flags


def link_dir(out: Path) -> Path:
    """A folder with libcudart.so and libcuda.so naming ptxsim's stand-ins (sonames
    libcudart.so.13, libcuda.so.1: what the binary will ask for at run time). A toolkit's lib/
    would do as well; NVIDIA's wheels carry only libcudart.so.13, which -cudart shared cannot
    find."""
    from ptxsim import cuda
    d = out / ".lib"
    d.mkdir(parents=True, exist_ok=True)
    for lib, link in (("cuda", "libcuda.so"), ("cudart", "libcudart.so")):
        path = cuda.native_path(lib)
        if path is None:
            raise BuildError(f"ptxsim's lib{lib} stand-in was not built (pip install needs a C "
                             f"compiler and a shared libpython: docs/cudacpp.md)")
        if (d / link).is_symlink() or (d / link).exists():
            (d / link).unlink()
        (d / link).symlink_to(path)
    return d


def build(name: str, src: Path, out: Path, nvcc: Path) -> Path:
    exe = out / name
    if exe.is_file():
        return exe
    if name not in EXAMPLES:
        raise BuildError(f"unknown example {name!r}: one of {', '.join(EXAMPLES)}")
    out.mkdir(parents=True, exist_ok=True)
    cu = src / "examples" / EXAMPLES[name]
    if not cu.is_file():
        raise BuildError(f"{cu} is not in the CUTLASS tree {src}")
    return compile_program(name, out, nvcc, [*FLAGS, f"-I{src / 'include'}",
                                             f"-I{src / 'tools' / 'util' / 'include'}",
                                             f"-I{src / 'examples' / 'common'}"], cu)


def compile_program(name: str, out: Path, nvcc: Path, flags: list, cu: Path) -> Path:
    """nvcc `flags` + the toolchain's include folders on `cu` -> out/name, linked against
    ptxsim's stand-ins; the log in out/name.log; BuildError naming the log on failure."""
    exe = out / name
    cmd = [str(nvcc), *flags, *include_flags(nvcc), str(cu),
           "-o", str(exe) + ".part", f"-L{link_dir(out)}", "-lcuda"]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    (out / f"{name}.log").write_text(" ".join(cmd) + "\n" + r.stdout + r.stderr)
    if r.returncode != 0:
        raise BuildError(f"nvcc failed on {name} (log: {out / (name + '.log')}):\n"
                         + (r.stderr or r.stdout)[-2000:])
    os.replace(str(exe) + ".part", exe)
    print(f"{name}: built in {time.time() - t:.0f} s -> {exe}", flush=True)
    return exe


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"examples to build (default all: "
                                             f"{' '.join(EXAMPLES)})")
    ap.add_argument("--src", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--nvcc")
    ap.add_argument("--print-out", action="store_true")
    a = ap.parse_args(argv)
    out = a.out or default_out(a.src)
    if a.print_out:
        print(out)
        return 0
    try:
        bad = [n for n in a.names if n not in EXAMPLES]
        if bad:
            raise BuildError(f"unknown example(s) {', '.join(bad)}: choose from "
                             f"{', '.join(EXAMPLES)}")
        src = a.src or fetch_source()
        nvcc = find_nvcc(a.nvcc)
        for n in a.names or list(EXAMPLES):
            build(n, Path(src), out, nvcc)
    except BuildError as e:
        print(f"build_cutlass_examples: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Build ptxsim's host harnesses around two outside Blackwell GEMM kernels, for `ptxsim exec`
(tests/cuda/test_gemm_harnesses.py, slow):

- ThunderKittens' bf16_b200 GEMM (kernels/gemm/bf16_b200, 2-CTA pairs, cluster launch control)
- DeepGEMM's sm100 bf16 GEMM (`sm100_bf16_gemm_impl`, instantiated as its JIT does for a K-major
  GEMM; it includes CuTe / CUTLASS headers)

The harnesses are ours (tests/cuda/data/harness_*.cu): they fill A and B, launch the library's
kernel unchanged at 256x256x256 and compare D with a float64 host product (bf16 tolerance),
printing PASSED or FAILED. The libraries are fetched at pinned commits into the cache (a shallow
`git fetch` of the commit from GitHub), or taken from a checkout with --tk / --deepgemm; nothing
of them is kept in this repository. Built like any program for ptxsim: PTX only for sm_100a,
`-cudart shared`, linked against ptxsim's stand-ins (scripts/build_cutlass_examples.py, whose
toolchain lookup this reuses; CUTLASS's headers for DeepGEMM come from its cache too).

    python scripts/build_gemm_harnesses.py [tk_bf16_b200] [deepgemm_sm100_bf16]
        --tk DIR --deepgemm DIR --cutlass DIR --out DIR --nvcc PATH --print-out
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "cuda" / "data"
_spec = importlib.util.spec_from_file_location("build_cutlass_examples",
                                               HERE / "build_cutlass_examples.py")
bce = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bce)
BuildError = bce.BuildError

# name: (library, GitHub repository, pinned commit, harness, extra nvcc flags)
HARNESSES = {
    "tk_bf16_b200": ("thunderkittens", "HazyResearch/ThunderKittens",
                     "0b55588d2769dde0c7a9a606ffc015b0ca7a9551", "harness_tk_bf16_b200.cu",
                     ["-std=c++20", "--expt-extended-lambda", "-DKITTENS_BLACKWELL", "-DNDEBUG"]),
    "deepgemm_sm100_bf16": ("deepgemm", "deepseek-ai/DeepGEMM",
                            "54e22612409371d6364144b69086735beb54e98b",
                            "harness_deepgemm_sm100_bf16.cu", ["-std=c++20"]),
}


def default_out() -> Path:
    return bce.cache_root() / "gemm-harness-build"


def fetch_library(lib: str, repo: str, commit: str) -> Path:
    """The library's tree at `commit`, fetched once into the cache (shallow, that commit only)."""
    dest = bce.cache_root() / lib / commit[:12]
    if (dest / ".fetched").is_file():
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    cmds = [["git", "init", "-q"], ["git", "fetch", "-q", "--depth", "1",
                                    f"https://github.com/{repo}.git", commit],
            ["git", "checkout", "-q", "FETCH_HEAD"]]
    for cmd in cmds:
        r = subprocess.run(cmd, cwd=dest, capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError(f"could not fetch {repo} at {commit[:12]} ({' '.join(cmd[:2])}): "
                             f"{(r.stderr or r.stdout).strip()[-300:]}; pass a checkout with "
                             f"--{'tk' if lib == 'thunderkittens' else 'deepgemm'}")
    (dest / ".fetched").write_text(commit + "\n")
    return dest


def include_dirs(name: str, tree: Path, cutlass: Path | None) -> list[str]:
    if name == "tk_bf16_b200":
        return [f"-I{tree / 'include'}", f"-I{tree / 'prototype'}", f"-I{tree}"]
    if cutlass is None:
        raise BuildError("DeepGEMM needs CUTLASS's headers: --cutlass DIR or the CUTLASS cache")
    return [f"-I{tree / 'deep_gemm' / 'include'}", f"-I{cutlass / 'include'}"]


def build(name: str, tree: Path, out: Path, nvcc: Path, cutlass: Path | None = None) -> Path:
    exe = out / name
    if exe.is_file():
        return exe
    lib, repo, commit, harness, flags = HARNESSES[name]
    out.mkdir(parents=True, exist_ok=True)
    return bce.compile_program(name, out, nvcc, [
        *flags, "-O2", "--expt-relaxed-constexpr", "-cudart", "shared",
        "-gencode", "arch=compute_100a,code=compute_100a", *include_dirs(name, tree, cutlass)],
        DATA / harness)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"default all: {' '.join(HARNESSES)}")
    ap.add_argument("--tk", type=Path, help="a ThunderKittens checkout")
    ap.add_argument("--deepgemm", type=Path, help="a DeepGEMM checkout")
    ap.add_argument("--cutlass", type=Path, help="a CUTLASS source tree (DeepGEMM's headers)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--nvcc")
    ap.add_argument("--print-out", action="store_true")
    a = ap.parse_args(argv)
    out = a.out or default_out()
    if a.print_out:
        print(out)
        return 0
    try:
        bad = [n for n in a.names if n not in HARNESSES]
        if bad:
            raise BuildError(f"unknown harness(es) {', '.join(bad)}: choose from "
                             f"{', '.join(HARNESSES)}")
        nvcc = bce.find_nvcc(a.nvcc)
        for n in a.names or list(HARNESSES):
            lib, repo, commit, _, _ = HARNESSES[n]
            given = a.tk if lib == "thunderkittens" else a.deepgemm
            tree = given or fetch_library(lib, repo, commit)
            cutlass = None
            if lib == "deepgemm":
                cutlass = a.cutlass or bce.fetch_source()
            build(n, Path(tree), out, nvcc, cutlass)
    except BuildError as e:
        print(f"build_gemm_harnesses: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

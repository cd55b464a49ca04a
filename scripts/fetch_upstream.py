"""Fetch the upstream files some tests and scripts run (never committed to this repository) into
a cache, at a pinned ref:

    python scripts/fetch_upstream.py [SOURCE ...]            # from GitHub (needs the network)
    python scripts/fetch_upstream.py triton --from-git DIR --ref COMMIT --label NAME
                                                             # from a local clone / mirror

Layout: $PTXSIM_UPSTREAM_CACHE (default ~/.cache/ptxsim/upstream) / SOURCE / LABEL / <path in the
repository>, plus LABEL/manifest.json naming the repository, the ref and each file's sha256.
LABEL is the ref for GitHub fetches (e.g. triton/v3.9.0). Tests that need a source find it with
`cache_dir(SOURCE)` below and skip, with the reason, when it is absent.

Each source is one entry of SOURCES (repository, pinned ref, files); add a source by adding an
entry.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Source:
    repo: str                  # owner/name on GitHub
    ref: str                   # the pinned tag or commit
    files: tuple[str, ...]     # paths inside the repository
    note: str = ""


TRITON_TUTORIALS = ("01-vector-add", "02-fused-softmax", "03-matrix-multiplication",
                    "05-layer-norm", "06-fused-attention", "08-grouped-gemm",
                    "09-persistent-matmul", "10-block-scaled-matmul")

# flash_attn/cute: the whole package (its modules import one another)
FA4_FILES = (
    "__init__.py", "ampere_helpers.py", "barrier.py", "bench_utils.py", "blackwell_helpers.py",
    "block_info.py", "block_sparse_utils.py", "block_sparsity.py", "cache_utils.py",
    "compute_block_sparsity.py", "copy_utils.py", "cu_blocks_kernel.py", "cute_dsl_ptxas.py",
    "cute_dsl_utils.py", "fa_logging.py", "fast_math.py", "flash_bwd.py",
    "flash_bwd_mla_dk_sm100.py", "flash_bwd_mla_dq_dqv_sm100.py", "flash_bwd_mla_sm100.py",
    "flash_bwd_postprocess.py", "flash_bwd_preprocess.py", "flash_bwd_sm100.py",
    "flash_bwd_sm120.py", "flash_bwd_sm90.py", "flash_fwd.py", "flash_fwd_combine.py",
    "flash_fwd_mla_sm100.py", "flash_fwd_sm100.py", "flash_fwd_sm120.py", "flash_fwd_sm90.py",
    "interface.py", "mask.py", "mma_sm100_desc.py", "named_barrier.py", "pack_gqa.py",
    "paged_kv.py", "pipeline.py", "prepare_scheduler.py", "seqlen_info.py",
    "sm100_hd256_2cta_fmha_backward.py", "sm100_hd256_2cta_fmha_backward_dkdvkernel.py",
    "sm100_hd256_2cta_fmha_backward_dqkernel.py", "sm100_hd256_2cta_fmha_forward.py",
    "sm90_config_search.py", "softmax.py", "testing.py", "tile_scheduler.py",
    "topk_gather_kv.py", "utils.py")

SOURCES: dict[str, Source] = {
    # Triton 3.9.0, the version ptxsim's backend is built for (pyproject: triton==3.9.0): the
    # tutorials (tests/triton/test_tutorials.py) and the language unit tests the peer suite runs
    # (scripts/triton_peer_suite.py)
    "triton": Source(
        "triton-lang/triton", "v3.9.0",
        tuple(f"python/tutorials/{t}.py" for t in TRITON_TUTORIALS) + (
            "python/test/unit/language/test_core.py",
            "python/test/unit/language/test_matmul.py",
            "python/test/unit/language/test_mxfp.py",
            "python/test/conftest.py",
            "python/conftest.py",
            "pytest.ini",
        ),
        "tutorials and language unit tests of Triton 3.9.0"),
    # CUTLASS's CuTe DSL Blackwell examples, run unmodified by `ptxsim cute`
    # (tests/cuda/test_cute_examples.py); the commit whose examples match nvidia-cutlass-dsl 4.8
    "cutlass": Source(
        "NVIDIA/cutlass", "7107b0553",
        tuple(f"examples/python/CuTeDSL/cute/blackwell/kernel/{p}.py" for p in (
            "dense_gemm/dense_gemm", "dense_gemm/dense_gemm_persistent",
            "blockscaled_gemm/dense_blockscaled_gemm_persistent", "grouped_gemm/grouped_gemm",
            "attention/fmha/fmha")) + ("examples/python/CuTeDSL/helpers/__init__.py",
                                       "examples/python/CuTeDSL/helpers/fmha_helpers.py"),
        "CuTe DSL Blackwell examples (fmha imports helpers/ by a path relative to itself)"),
    # FlashAttention-4 (flash_attn/cute) and its tests: the sm100 forward kernel through the
    # package's own interface (tests/cuda/test_cute_examples.py)
    "flash-attention": Source(
        "Dao-AILab/flash-attention", "0251105a2fb19d2957484b7f023cd8c115286ced",
        tuple(f"flash_attn/cute/{f}" for f in FA4_FILES) + ("tests/cute/test_flash_attn.py",
                                                              "tests/cute/conftest.py"),
        "FlashAttention-4 (CuTe DSL)"),
}


def cache_root() -> Path:
    return Path(os.environ.get("PTXSIM_UPSTREAM_CACHE",
                               Path.home() / ".cache" / "ptxsim" / "upstream"))


def cache_dir(source: str, label: str | None = None) -> Path | None:
    """The cached copy of `source`: LABEL (default $PTXSIM_<SOURCE>_REF, else the pinned ref, else
    the only copy present); None when there is none."""
    base = cache_root() / source
    label = label or os.environ.get(f"PTXSIM_{source.upper()}_REF") or SOURCES[source].ref
    if (base / label / "manifest.json").is_file():
        return base / label
    present = sorted(p.parent for p in base.glob("*/manifest.json")) if base.is_dir() else []
    return present[0] if len(present) == 1 and not os.environ.get(
        f"PTXSIM_{source.upper()}_REF") else None


def _from_github(src: Source, path: str) -> bytes:
    url = f"https://raw.githubusercontent.com/{src.repo}/{src.ref}/{path}"
    with urllib.request.urlopen(url, timeout=60) as r:      # noqa: S310 (a fixed https URL)
        return r.read()


def _from_git(directory: str, ref: str, path: str) -> bytes:
    return subprocess.run(["git", "-C", directory, "show", f"{ref}:{path}"], check=True,
                          capture_output=True).stdout


def fetch(name: str, *, from_git: str | None = None, ref: str | None = None,
          label: str | None = None, origin: str | None = None) -> Path:
    src = SOURCES[name]
    ref = ref or src.ref
    label = label or ref
    out = cache_root() / name / label
    files = {}
    for path in src.files:
        data = _from_git(from_git, ref, path) if from_git else _from_github(src, path)
        dest = out / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        files[path] = hashlib.sha256(data).hexdigest()
        print(f"{name}/{label}/{path}: {len(data)} bytes")
    manifest = {"source": name, "repo": src.repo if not from_git else None,
                "ref": ref, "label": label, "from_git": from_git, "files": files}
    if from_git:
        remote = subprocess.run(["git", "-C", from_git, "config", "--get", "remote.origin.url"],
                                capture_output=True, text=True).stdout.strip()
        manifest["repo"] = origin or remote or from_git
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sources", nargs="*", default=list(SOURCES), metavar="SOURCE",
                    help=f"what to fetch: {', '.join(SOURCES)} (default: all)")
    ap.add_argument("--from-git", metavar="DIR", help="read the files from this git clone")
    ap.add_argument("--ref", help="commit / tag to read (default: the pinned ref)")
    ap.add_argument("--label", help="cache directory name (default: the ref)")
    ap.add_argument("--origin", help="with --from-git: where the commit comes from, for the "
                    "manifest (e.g. 'triton-lang/triton main via a mirror')")
    args = ap.parse_args(argv)
    for name in args.sources:
        if name not in SOURCES:
            print(f"unknown source {name!r}; known: {', '.join(SOURCES)}", file=sys.stderr)
            return 2
        try:
            out = fetch(name, from_git=args.from_git, ref=args.ref, label=args.label,
                        origin=args.origin)
            print(f"-> {out}")
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"{name}: cannot fetch ({exc})", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Generate PTX for sm_100a with the CuTe DSL (PyPI nvidia-cutlass-dsl), offline (no GPU).

The kernels are NVIDIA's own CuTe DSL Blackwell examples, loaded (not copied) from a CUTLASS
checkout: dense GEMM 1-CTA and 2-CTA (`dense_gemm.py`), persistent dense GEMM
(`dense_gemm_persistent.py`) and the persistent block-scaled GEMM
(`dense_blockscaled_gemm_persistent.py`, mxf8 / nvf4). The tensors are CuTe "fake" tensors /
null pointers: `cute.compile` lowers to PTX without a device (CUTE_DSL_ARCH=sm_100a); the PTX is
kept through CUTE_DSL_KEEP=ptx.

    /work/venv-gen/bin/python scripts/gen_cute_ptx.py CUTLASS_EXAMPLES_DIR OUT_DIR

CUTLASS_EXAMPLES_DIR holds the example files: examples/python/CuTeDSL/cute/blackwell/kernel/
{dense_gemm,blockscaled_gemm}/ of github.com/NVIDIA/cutlass (all four files in one folder).
"""
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ["CUTE_DSL_ARCH"] = "sm_100a"
os.environ["CUTE_DSL_KEEP"] = "ptx"


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def main(ex: Path, out: Path) -> int:
    dump = Path(tempfile.mkdtemp(prefix="cute_ptx_"))
    os.environ["CUTE_DSL_DUMP_DIR"] = str(dump)
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    def fake(dtype, shape):                       # K-major (m,k,l) / (n,k,l), N-major (m,n,l)
        return make_fake_compact_tensor(dtype, shape, stride_order=(1, 0, 2), assumed_align=16)

    m, n, k, l = 512, 256, 512, 1
    jobs = []
    dense = load(ex / "dense_gemm.py")
    for name, two_cta, tiler, cluster in (("cute_dense_gemm_f16_1cta", False, (128, 128), (1, 1)),
                                          ("cute_dense_gemm_f16_2cta", True, (256, 128), (2, 1))):
        jobs.append((name, lambda two_cta=two_cta, tiler=tiler, cluster=cluster: cute.compile(
            dense.DenseGemmKernel(cutlass.Float32, two_cta, tiler, cluster, True),
            fake(cutlass.Float16, (m, k, l)), fake(cutlass.Float16, (n, k, l)),
            fake(cutlass.Float16, (m, n, l)), make_fake_stream())))
    pers = load(ex / "dense_gemm_persistent.py")
    for name, dt, two_cta, tiler, cluster in (
            ("cute_persistent_gemm_bf16_2cta", cutlass.BFloat16, True, (256, 256), (2, 1)),
            ("cute_persistent_gemm_fp8_1cta", cutlass.Float8E4M3FN, False, (128, 256), (1, 1))):
        jobs.append((name, lambda dt=dt, two_cta=two_cta, tiler=tiler, cluster=cluster: cute.compile(
            pers.PersistentDenseGemmKernel(cutlass.Float32, two_cta, tiler, cluster, True),
            fake(dt, (m, k, l)), fake(dt, (n, k, l)), fake(cutlass.BFloat16, (m, n, l)), 148,
            make_fake_stream())))
    bs = load(ex / "dense_blockscaled_gemm_persistent.py")
    for name, ab, sf, vec, tiler, cluster in (
            ("cute_blockscaled_mxf8_1cta", cutlass.Float8E4M3FN, cutlass.Float8E8M0FNU, 32, (128, 128), (1, 1)),
            ("cute_blockscaled_nvf4_2cta", cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, 16, (256, 256), (2, 1)),
            ("cute_blockscaled_mxf4_2cta", cutlass.Float4E2M1FN, cutlass.Float8E8M0FNU, 32, (256, 128), (2, 1))):
        jobs.append((name, lambda ab=ab, sf=sf, vec=vec, tiler=tiler, cluster=cluster: bs.scaled_mm(
            bs.Sm100BlockScaledPersistentDenseGemmKernel(vec, tiler, cluster), ab, ab,
            cutlass.Float16, sf, "k", "k", "n", 148, make_fake_stream())))

    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, job in jobs:
        for old in dump.glob("*.ptx"):           # names repeat between configurations
            old.unlink()
        try:
            job()
        except Exception as exc:  # report and go on
            failed += 1
            print(f"{name}: FAILED {type(exc).__name__}: {str(exc)[:400]}")
            continue
        new = sorted(dump.glob("*.ptx"))
        if not new:
            failed += 1
            print(f"{name}: no PTX dumped")
            continue
        shutil.copy(new[-1], out / f"{name}.ptx")
        text = (out / f"{name}.ptx").read_text()
        print(f"{name}: {len(text.splitlines())} lines, "
              f"{sum('tcgen05' in x for x in text.splitlines())} tcgen05 lines")
    shutil.rmtree(dump, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2] if len(sys.argv) > 2 else "tests/data/ptx/cute")))

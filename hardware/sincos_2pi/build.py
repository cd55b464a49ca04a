"""Here (no GPU): assemble the capture's cubins with ptxas 13.5 and stage the device folder.

    python hardware/sincos_2pi/build.py /work/main/.device/reach3

sincos_2pi.cubin (kernels.py, .version 9.5: the H200's CUDA 13.0 driver cannot JIT it);
tr_{global,param}_{add,min,max}.cubin: hardware/tma_modes' TENSOR_REDUCE kernel assembled offline,
the map in global memory (as the JIT run that faulted) and as a kernel parameter; plus the
Python files capture.py needs."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tma_modes")]
import importlib.util         # noqa: E402

import kernels as sc          # noqa: E402

PTXAS = "/work/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas"


def assemble(ptx: str, out: Path) -> None:
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        subprocess.run([PTXAS, "-arch=sm_90a", str(src), "-o", str(out)], check=True)


def main(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    assemble(sc.module(), dest / "sincos_2pi.cubin")
    spec = importlib.util.spec_from_file_location("tma_kernels", HERE.parent / "tma_modes" / "kernels.py")
    tk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tk)
    for op in ("add", "min", "max", "inc", "dec", "and", "or", "xor"):
        t = tk.TENSOR_REDUCE.format(op=op)
        assemble(tk.head() + t, dest / f"tr_global_{op}.cubin")
        p = t.replace(".param .u64 tmap,", ".param .align 64 .b8 tmap[128],").replace(
            "    ld.param.u64 %rd5, [tmap];\n", "    mov.u64 %rd4, tmap;\n    cvta.param.u64 %rd5, %rd4;\n")
        assemble(tk.head() + p, dest / f"tr_param_{op}.cubin")
    for f in (HERE / "capture.py", HERE / "inputs.py", HERE / "tr_cases.py", HERE.parent / "tma_modes" / "probe.py",
              HERE.parent / "tma_modes" / "cases.py"):
        shutil.copy(f, dest / f.name)
    shutil.copy(HERE.parent / "tma_modes" / "kernels.py", dest / "kernels.py")
    print("staged", sorted(p.name for p in dest.iterdir()))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

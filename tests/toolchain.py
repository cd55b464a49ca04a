"""The nvcc the CUDA C++ tests compile with, found as scripts/build_cutlass_examples.py finds it:
$NVCC, else the nvidia-cuda-nvcc wheel's (installed by the test extra: `pip install .[cudacpp]`),
else nvcc on PATH; None when there is none.

NVIDIA's wheels ship libcudart.so.13 but no libcudart.so, so `nvcc -cudart shared` from a wheel
cannot link; for that nvcc, a folder with libcudart.so naming the wheel's libcudart.so.13 is put
on LIBRARY_PATH (the host linker's search path, inherited by the nvcc the tests run)."""
import importlib.util
import os
import tempfile
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "build_cutlass_examples", Path(__file__).resolve().parents[1] / "scripts" /
    "build_cutlass_examples.py")
_bce = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bce)


def _link_dir_for(nvcc: Path) -> None:
    lib = nvcc.resolve().parent.parent / "lib"
    if (lib / "libcudart.so").exists() or not (lib / "libcudart.so.13").exists():
        return
    d = Path(tempfile.gettempdir()) / f"ptxsim-tests-link-{os.getuid()}"
    d.mkdir(exist_ok=True)
    link = d / "libcudart.so"
    if not link.exists():
        try:
            link.symlink_to(lib / "libcudart.so.13")
        except FileExistsError:
            pass
    paths = [p for p in os.environ.get("LIBRARY_PATH", "").split(":") if p]
    if str(d) not in paths:
        os.environ["LIBRARY_PATH"] = ":".join([str(d)] + paths)


def nvcc() -> str | None:
    try:                                 # the lookup of scripts/build_cutlass_examples.py
        found = str(_bce.find_nvcc())
    except _bce.BuildError:
        return None
    _link_dir_for(Path(found))
    return found

"""The nvcc the CUDA C++ tests compile with: $NVCC, else nvcc on PATH, else the nvidia-cuda-nvcc
wheel's (installed by the test extra: `pip install .[cudacpp]`); None when there is none.

NVIDIA's wheels ship libcudart.so.13 but no libcudart.so, so `nvcc -cudart shared` from a wheel
cannot link; for that nvcc, a folder with libcudart.so naming the wheel's libcudart.so.13 is put
on LIBRARY_PATH (the host linker's search path, inherited by the nvcc the tests run)."""
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path


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
    cands = [os.environ.get("NVCC"), shutil.which("nvcc")]
    spec = importlib.util.find_spec("nvidia")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        cands.append(str(Path(loc) / "cu13" / "bin" / "nvcc"))
    found = next((c for c in cands if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)
    if found:
        _link_dir_for(Path(found))
    return found

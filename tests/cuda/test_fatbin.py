"""ptxsim.cuda.fatbin: the PTX inside nvcc's fat binaries, and the two decompressors it needs
(nvcc 13.0 compresses PTX with Zstandard, older nvcc with LZ4). Oracles: the zstd and lz4
command-line tools (round trips at several levels), and nvcc itself (the PTX of a fat binary is
`nvcc -ptx`'s text with comments and indentation dropped)."""
import random
import re
import shutil
import sys
import struct
import subprocess
from pathlib import Path

import pytest

from ptxsim import cuda
from ptxsim.cuda import fatbin
from ptxsim.errors import CudaError

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(Path(__file__).parents[1]))
import toolchain  # noqa: E402

NVCC = toolchain.nvcc()


def _samples():
    random.seed(7)
    text = (Path(fatbin.__file__).read_bytes())
    return {"text": text, "text x20 (several blocks)": text * 20,
            "random": bytes(random.getrandbits(8) for _ in range(3000)),
            "runs": b"a" * 70000 + b"b" * 5 + b"abc" * 3000,
            "small": b"x", "empty": b""}


@pytest.mark.skipif(shutil.which("zstd") is None, reason="the zstd tool is not installed")
@pytest.mark.parametrize("level", ["-1", "-3", "-9", "-19", "--ultra -22", "--fast=5"])
def test_zstd_round_trips_the_zstd_tools_frames(level):
    for name, data in _samples().items():
        if "ultra" in level and "x20" in name:
            continue                          # slow to compress; the other levels have it
        comp = subprocess.run(["zstd", "-q", "-c", *level.split()], input=data,
                              capture_output=True, check=True).stdout
        assert fatbin.zstd_decompress(comp) == data, name


@pytest.mark.skipif(shutil.which("lz4") is None, reason="the lz4 tool is not installed")
def test_lz4_block_decodes_the_lz4_tools_blocks():
    for name, data in _samples().items():
        if not data:
            continue
        frame = subprocess.run(["lz4", "-q", "-c", "-BI", "-B7"], input=data,
                               capture_output=True, check=True).stdout
        assert struct.unpack_from("<I", frame)[0] == 0x184D2204
        flg = frame[4]
        pos = 7 + (8 if flg & 8 else 0)
        out = b""
        while True:
            size, = struct.unpack_from("<I", frame, pos)
            pos += 4
            if size == 0:
                break
            block = frame[pos:pos + (size & 0x7FFFFFFF)]
            pos += size & 0x7FFFFFFF
            if size >> 31:                    # stored uncompressed
                out += block
            else:
                out += fatbin.lz4_block_decompress(block, min(len(data) - len(out), 4 << 20))
            if flg & 0x10:                    # block checksum
                pos += 4
        assert out == data, name


def test_corrupt_payloads_are_named_errors():
    with pytest.raises(fatbin.FatbinError, match="no Zstandard frame"):
        fatbin.zstd_decompress(b"\x00\x01\x02\x03garbage")
    with pytest.raises(fatbin.FatbinError, match="LZ4"):
        fatbin.lz4_block_decompress(b"\x1f\x41", 40)
    with pytest.raises(fatbin.FatbinError, match="not a fat binary"):
        fatbin.entries(b"\x7fELF" + bytes(60))


def _section(binary: Path, name: str, tmp: Path) -> bytes:
    out = tmp / "section.bin"
    subprocess.run(["objcopy", "-O", "binary", f"--only-section={name}", str(binary), str(out)],
                   check=True)
    return out.read_bytes()


def _strip_comments(ptx: str) -> list[str]:
    # the fat binary's copy has comments blanked and leading whitespace dropped
    return [ln for ln in (" ".join(re.sub(r"//.*", "", x).split()) for x in ptx.splitlines())
            if ln]


@pytest.mark.skipif(NVCC is None or shutil.which("objcopy") is None, reason="needs nvcc, objcopy")
def test_the_ptx_of_an_nvcc_fat_binary_is_nvccs_ptx(tmp_path):
    src = DATA / "vadd.cu"
    exe = tmp_path / "vadd"
    subprocess.run([NVCC, "-cudart", "shared", "-gencode", "arch=compute_100a,code=compute_100a",
                    str(src), "-o", str(exe)], check=True, capture_output=True)
    ptx = subprocess.run([NVCC, "-ptx", "-arch=compute_100a", str(src), "-o", "-"],
                         check=True, capture_output=True, text=True).stdout
    blob = _section(exe, ".nv_fatbin", tmp_path)
    found = fatbin.ptx_entries(blob)
    assert [(e.arch, e.target) for e in found] == [(100, "sm_100a")]
    assert _strip_comments(found[0].text) == _strip_comments(ptx)
    # the driver model loads it as a module
    cuda.reset()
    cuda.cuInit(0)
    cuda.cuCtxSetCurrent(cuda.cuDevicePrimaryCtxRetain(0))
    mod = cuda.cuModuleLoadFatBinary(blob)
    assert cuda.cuModuleGetFunction(mod, "_Z4vaddPKfS0_Pfi")
    cuda.reset()


@pytest.mark.skipif(NVCC is None or shutil.which("objcopy") is None, reason="needs nvcc, objcopy")
def test_a_sass_only_fat_binary_says_how_to_rebuild(tmp_path):
    exe = tmp_path / "vadd_sass"
    subprocess.run([NVCC, "-cudart", "shared", "-gencode", "arch=compute_100a,code=sm_100a",
                    str(DATA / "vadd.cu"), "-o", str(exe)], check=True, capture_output=True)
    blob = _section(exe, ".nv_fatbin", tmp_path)
    assert "SASS sm_100" in fatbin.describe(blob) and not fatbin.ptx_entries(blob)
    cuda.reset()
    cuda.cuInit(0)
    cuda.cuCtxSetCurrent(cuda.cuDevicePrimaryCtxRetain(0))
    with pytest.raises(CudaError) as e:
        cuda.cuModuleLoadFatBinary(blob)
    assert e.value.result == "CUDA_ERROR_NO_BINARY_FOR_GPU"
    assert "SASS sm_100" in e.value.why and "code=compute_100a" in e.value.why
    cuda.reset()

"""The legality tables of the Tensor Memory instructions against ptxas 13.0 (the oracle for PTX
syntax / legality). Skipped when ptxas is not installed.

Everything ptxsim calls legal goes into one kernel that must assemble; everything it calls
illegal is assembled alone and must be rejected.
"""
import shutil
import subprocess

import pytest

from ptxsim.errors import OperandError, TmemAllocError
from ptxsim.isa.tmem import TensorMemory
from ptxsim.isa.tmem_cp import CP_MULTICAST, CP_SHAPES, DECOMPRESS, check_cp
from ptxsim.isa.tmem_ldst import MAX_NUM, NUMS, RED_SHAPES, SHAPES, check_shape_num

PTXAS = shutil.which("ptxas")
pytestmark = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")


def assemble(body: list[str], arch: str, tmp_path) -> tuple[bool, str]:
    src = "\n".join([".version 8.8", f".target {arch}", ".address_size 64",
                     ".visible .entry k()", "{", ".reg .b32 r<130>;", ".reg .b32 ta, rv;",
                     ".reg .b64 d;", ".reg .f32 f<130>;", ".reg .f32 fv;", ".shared .b32 s;",
                     "mov.b32 ta, 0;", "mov.b64 d, 0;", *body, "ret;", "}", ""])
    path = tmp_path / "k.ptx"
    path.write_text(src)
    out = subprocess.run([PTXAS, f"-arch={arch}", str(path), "-o", "/dev/null"],
                         capture_output=True, text=True)
    return out.returncode == 0, out.stderr


def _vec(n, reg="r"):
    return "{" + ", ".join(f"{reg}{i}" for i in range(n)) + "}"


def _ldst(shape, num, pack):
    regs = REGS_X1_SPEC[shape] * num
    imm = ", 2" if shape == "16x32bx2" else ""
    ld = (f"tcgen05.ld.sync.aligned.{shape}.x{num}{'.pack::16b' if pack else ''}.b32 "
          f"{_vec(min(regs, 128))}, [ta]{imm};")
    st = (f"tcgen05.st.sync.aligned.{shape}.x{num}{'.unpack::16b' if pack else ''}.b32 "
          f"[ta]{imm}, {_vec(min(regs, 128))};")
    return ld, st


# Table 47 column headings, for the register-vector length in the PTX text
REGS_X1_SPEC = {"16x32bx2": 1, "16x64b": 1, "32x32b": 1, "16x128b": 2, "16x256b": 4}


def _legal_ldst(shape, num):
    try:
        check_shape_num(shape, num)
        return True
    except OperandError:
        return False


def test_ld_st_shape_num_pack_table(tmp_path):
    legal, illegal = [], []
    for shape in SHAPES:
        for num in NUMS:
            for pack in (False, True):
                (legal if _legal_ldst(shape, num) else illegal).extend(_ldst(shape, num, pack))
    ok, err = assemble(legal, "sm_100a", tmp_path)
    assert ok, err
    assert len(legal) == 37 * 4
    for line in illegal:
        ok, _ = assemble([line], "sm_100a", tmp_path)
        assert not ok, line


def test_ld_red_table(tmp_path):
    legal, illegal = [], []
    for shape in SHAPES:
        for num in (1, 2, 4, 128):
            for op in ("min", "max"):
                imm = ", 2" if shape == "16x32bx2" else ""
                n = REGS_X1_SPEC[shape] * num
                lines = [
                    f"tcgen05.ld.red.sync.aligned.{shape}.x{num}.{op}.abs.NaN.f32 "
                    f"{_vec(min(n, 128), 'f')}, fv, [ta]{imm};",
                    f"tcgen05.ld.red.sync.aligned.{shape}.x{num}.{op}.s32 "
                    f"{_vec(min(n, 128))}, rv, [ta]{imm};"]
                ok = shape in RED_SHAPES and num >= 2 and num <= MAX_NUM[shape]
                (legal if ok else illegal).extend(lines)
    ok, err = assemble(legal, "sm_103a", tmp_path)
    assert ok, err
    for line in illegal[::3]:          # a third of them keeps the run short; all are rejected
        ok, _ = assemble([line], "sm_103a", tmp_path)
        assert not ok, line
    ok, _ = assemble(["tcgen05.ld.red.sync.aligned.32x32b.x2.min.abs.u32 {r0, r1}, rv, [ta];"],
                     "sm_103a", tmp_path)
    assert not ok                      # .abs is for .f32 only, as tcgen05_ld_red says


def test_cp_shape_multicast_table(tmp_path):
    legal, illegal = [], []
    for shape in CP_SHAPES:
        for mc in (None, "warpx2::02_13", "warpx2::01_23", "warpx4"):
            for dec in (None, *DECOMPRESS):
                try:
                    check_cp(shape, mc, dec)
                    good = True
                except OperandError:
                    good = False
                line = (f"tcgen05.cp.cta_group::1.{shape}{'.' + mc if mc else ''}"
                        f"{'.' + dec if dec else ''} [ta], d;")
                (legal if good else illegal).append(line)
    assert sum(len(v) for v in CP_MULTICAST.values()) * 3 == len(legal)
    ok, err = assemble(legal, "sm_100a", tmp_path)
    assert ok, err
    for line in illegal[::2]:
        ok, _ = assemble([line], "sm_100a", tmp_path)
        assert not ok, line


@pytest.mark.parametrize("n", [16, 32, 48, 64, 96, 128, 256, 384, 512, 1024])
def test_alloc_ncols_immediates(n, tmp_path):
    try:
        TensorMemory().alloc(n)
        ours = True
    except TmemAllocError:
        ours = False
    ok, _ = assemble([f"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [s], {n};"],
                     "sm_100a", tmp_path)
    assert ok == ours

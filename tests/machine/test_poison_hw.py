"""Poison values against the H200 (tests/data/hardware/poison/poison_h200.npz, made by
hardware/poison: NVIDIA H200, driver 580.159.04, sm_90a, 2026-11-28; README there).

The record is the oracle: the bits the H200 gives where the PTX ISA leaves a result unspecified
(integer div / rem by zero under five ptxas builds, Triton's tile-coordinate sequence, mapa to a
rank outside the cluster), what a cp.async that reads nothing does with a null or unmapped
source (nothing: zero fill, no fault) and that one that does read an unmapped source faults, and
the outputs of the Triton 3.9.0 kernels of the two peer-suite failure classes run on the H200
(their sm_90a PTX, tests/data/ptx/triton/poison)."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import ptxsim
from ptxsim.errors import MemoryAccessError, PoisonValueError

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "hardware" / "poison"))
import poison_capture as capture  # noqa: E402
import poison_kernels as kernels  # noqa: E402
import poison_replay as replay  # noqa: E402

REC = np.load(ROOT / "tests" / "data" / "hardware" / "poison" / "poison_h200.npz")
MAN = json.loads((ROOT / "hardware" / "poison" / "manifest.json").read_text())
TAGS = MAN["probes"]            # ptxas 12.9 / 13.0 (-O3, -O0) / 13.4 / 13.5


def test_record_names_its_machine_and_assemblers():
    meta = json.loads(str(REC["meta"]))
    assert meta["machine"].startswith("NVIDIA H200") and meta["arch"] == "sm_90a"
    assert TAGS == ["ptxas12.9-O3", "ptxas13.0-O3", "ptxas13.0-O0", "ptxas13.4-O3",
                    "ptxas13.5-O3"]
    assert np.array_equal(REC["division_inputs"], kernels.division_inputs())
    assert np.array_equal(REC["triton_tile_inputs"], kernels.triton_tile_inputs())


@pytest.mark.parametrize("name", [n for n in kernels.division_names() if n != "triton_tile"])
def test_division_by_zero_gives_the_h200s_bits_under_every_ptxas(name):
    # rows 0..127 divide by 0 (the H200: all ones, every form, every assembler: the expansion
    # ends with `@!P LOP3.LUT R, RZ, divisor, RZ, 0x33`, i.e. ~divisor), rows 128..255 are
    # ordinary divisions (controls)
    got = replay.division(name, kernels.division_inputs())
    cols = 2 if name.startswith("pair_") else 1
    for tag in TAGS:
        exp = REC[f"div_{tag}_{name}"][:, :cols]
        assert np.array_equal(got[:, :cols], exp), (name, tag)
    bits = kernels.BITS[name.split("_")[-1]]
    assert (got[:128, :cols] == np.uint64((1 << bits) - 1)).all()


def test_tritons_tile_sequence_divides_by_a_group_size_of_zero_as_the_h200():
    # simple_persistent_kernel's group_size_m = min(num_pid_m - group_id * 8, 8) is 0 for tiles
    # 512..639; rem.s32 / div.s32 by it give 0xffffffff. The probe stores its three words per
    # thread 16 bytes apart (a slip of the probe: it was sized for two), so thread t's rem is
    # word 2t + 1 (no one else writes it) and its div word 2t + 2 (thread t + 1 writes its
    # first word there earlier in program order within a warp: word 2t + 2 is t's div except
    # for the last lane of a warp)
    got = replay.division("triton_tile", kernels.triton_tile_inputs())
    t = np.arange(got.shape[0])
    lanes = t % 32 != 31
    zero = got[:, 0] == 0
    assert zero.sum() == 43 and (got[zero, 1] == 0xFFFFFFFF).all()
    for tag in TAGS:
        flat = REC[f"div_{tag}_triton_tile"].reshape(-1)
        assert np.array_equal(flat[2 * t + 1], got[:, 1]), tag
        assert np.array_equal(flat[2 * t + 2][lanes], got[lanes, 2]), tag


@pytest.mark.parametrize("form", ["mapa.shared::cluster.u32", "mapa.u64"])
def test_mapa_to_a_rank_outside_the_cluster_gives_the_h200s_bits(form):
    # the H200 (a cluster of 2) puts any rank 0..31 into bits 24+ of the address; ptxsim gives
    # the same bits (poison where the rank is outside the cluster: here a cluster of 1). The
    # generic form's window base is the implementation's (the H200's 0x7f3c << 32); the low 32
    # bits carry the rank the same way
    m = REC["mapa"]
    ranks = np.arange(32, dtype=np.uint32)
    for col, base in ((0, 0x400), (1, 0x520)):
        if form.endswith(".u32"):
            a = np.full(32, base, np.uint32)
        else:
            a = ptxsim.machine.memory.WINDOWS["shared"] + np.full(32, base, np.uint64)
        with pytest.raises(PoisonValueError) as e:
            ptxsim.execute(f"{form} %d, %a, %b;", {"%a": a, "%b": ranks})
        got = np.asarray(e.value.values["%d"]).astype(np.uint64) & np.uint64(0xFFFFFFFF)
        hw = m[:32, col] if form.endswith(".u32") else m[:32, 2 + 2 * col]
        assert np.array_equal(got, hw.astype(np.uint64))
        assert np.array_equal(m[32:, col], m[:32, col])         # the other CTA: the same
        assert e.value.poison["%d"].tolist() == [False] + [True] * 31


@pytest.mark.parametrize("mode", [0, 1, 2], ids=["src-size-0", "src-size-0-ca-4", "ignore-src"])
@pytest.mark.parametrize("k", range(3), ids=["null", "all-ones", "unmapped"])
def test_cp_async_that_reads_nothing_zero_fills_as_the_h200(mode, k):
    exp = REC[f"cpasync_{mode}_{k}"]
    assert np.array_equal(replay.cpasync(mode, int(kernels.WILD[k])), exp)
    assert (exp.reshape(4, 16)[:, :4 if mode == 1 else 16] == 0).all()


def test_cp_async_that_reads_an_unmapped_source_faults_on_both():
    fault = json.loads(str(REC["fault"]))
    assert fault["returncode"] == 3 and "CUDA_ERROR_ILLEGAL_ADDRESS" in fault["message"]
    with pytest.raises(MemoryAccessError):
        replay.cpasync(3, int(kernels.WILD[2]))
    # and from a real buffer it copies
    from ptxsim.machine.executor import launch
    d = np.full(64, 0x5A, np.uint8)
    launch(kernels.module(), "cpasync_probe", 1, 4,
           args=[d, np.arange(64, dtype=np.uint8), np.uint32(3)])
    assert np.array_equal(d, REC["cpasync_valid"])


@pytest.mark.parametrize("nw", [4, 16])
def test_scan2d_bf16_cumsum_is_the_h200s_and_fails_the_upstream_check_there_too(nw):
    # Triton 3.9.0's tl.cumsum adds bfloat16 in bfloat16 (add.bf16 in its PTX); the upstream
    # test (Triton main) compares with float32 numpy at rtol 0.01, which the H200's result
    # fails as ptxsim's does: the same bits
    k = next(x for x in MAN["triton"] if x["name"] == f"scan_cumsum_bf16_rev_nw{nw}")
    z = replay.triton_kernel(k)
    assert np.array_equal(z.view(np.uint32), REC[f"scan_{k['name']}"])
    x, _ = capture.scan_inputs()
    check = json.loads(str(REC["checks"]))[k["name"]]
    assert capture.scan_check(x, z) == check and not check["passes"]
    ptx = (replay.PTX_DIR / f"{k['name']}.ptx").read_text()
    assert "add.bf16" in ptx and "add.f32" not in ptx


@pytest.mark.parametrize("name", ["persistent_True_8_32_32_32", "persistent_True_4_128_128_16",
                                  "persistent_True_4_64_512_16"])
def test_persistent_matmul_runs_through_its_unspecified_prefetch_as_on_the_h200(name):
    # sm_90a PTX of test_matmul.py's simple_persistent_kernel: after the last tile it computes
    # rem.s32 by a group size of 0 and prefetches with cp.async src-size 0; the H200 runs it and
    # passes the test's check; ptxsim runs it to the same output bits
    k = next(x for x in MAN["triton"] if x["name"] == name)
    c = replay.triton_kernel(k)
    assert replay.sha256(c) == str(REC[f"persistent_{name}_sha256"])
    assert np.array_equal(c[:8].view(np.uint16), REC[f"persistent_{name}_rows"])
    assert json.loads(str(REC["checks"]))[name]["passes"]

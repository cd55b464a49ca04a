"""The capture kernels themselves (hardware/mma_sync/sweep.py, hardware/matrix/build.py,
hardware/wgmma/build.py regenerate their PTX) run through the executor and produce the output
buffers the H200 wrote, byte for byte: ldmatrix / stmatrix (generic, .shared, .shared::cta
addresses, rows scattered), movmatrix, dense mma.sync (f64 registers included), and the
wgmma.fence / mma_async / commit_group / wait_group sequence with descriptors built in-kernel."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from ptxsim.machine.executor import launch

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "hardware"


def _load(rel, name):
    spec = importlib.util.spec_from_file_location(name, ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(ptx_kernel, name, grid, block, words, out_words):
    src = ".version 8.7\n.target sm_90a\n.address_size 64\n\n" + ptx_kernel
    out = np.zeros(out_words, np.uint32)
    launch(src, name, grid, block, args=[words.astype(np.uint32), out], target="sm_90a")
    return out


MX = np.load(DATA / "matrix" / "matrix_sm90.npz")
MX_ITEMS = json.loads(str(MX["items_json"]))


@pytest.mark.parametrize("k", range(len(MX_ITEMS)), ids=lambda k: MX_ITEMS[k]["instruction"].split(" ")[0])
def test_matrix_kernels(k):
    b = _load("hardware/matrix/build.py", "matrix_build")
    it = MX_ITEMS[k]
    words = b.inputs(it["spec"])
    out = _run(b.kernel(it["spec"]), it["name"], b.CTAS, 32, words, b.out_words(it["spec"]))
    assert np.array_equal(out, MX["outputs"][MX["offsets"][k]:MX["offsets"][k + 1]])


MS = np.load(DATA / "mma_sync" / "mma_sync_sweep_sm90.npz")
PICK = [i for i, t in enumerate(MS["instructions"]) if any(
    s in str(t) for s in ("m8n8k4.col.row.f16", "m16n8k16.row.col.f64", "m16n8k32.row.col.f16.e5m2",
                          "m16n8k8.row.col.f32.bf16"))]


@pytest.mark.parametrize("i", PICK, ids=lambda i: str(MS["instructions"][i]).split(" ")[0][17:])
def test_mma_sync_kernels(i):
    from ptxsim.isa import mma_sync as ms
    from ptxsim.ptx import parse_instruction
    b = _load("hardware/mma_sync/sweep.py", "mma_sync_sweep")
    inst = str(MS["instructions"][i])
    form = ms.form_of(parse_instruction(inst))
    w = int(MS["warps"][i])
    out = _run(b.kernel("k", form, inst), "k", 32 * w // 128, 128, b.input_words(form).reshape(-1),
               b.out_rows(form) * 32 * w)
    assert np.array_equal(out, MS["outputs"][MS["offsets"][i]:MS["offsets"][i + 1]])


WG = np.load(DATA / "wgmma" / "wgmma_sm90.npz")
WG_ITEMS = json.loads(str(WG["items_json"]))
# a spread of the sweep: every type family, A from registers, swizzles, MN-major, chains, sparse
WG_PICK = [k for k, it in enumerate(WG_ITEMS) if k % 4 == 0 or it["spec"]["chain"] > 1
           or it["spec"]["sparse"]]


@pytest.mark.parametrize("k", WG_PICK, ids=lambda k: WG_ITEMS[k]["name"])
def test_wgmma_kernels(k):
    b = _load("hardware/wgmma/build.py", "wgmma_build")
    it = WG_ITEMS[k]
    spec, lay = it["spec"], it["layout"]
    ins = b.inputs(spec, lay)
    words = np.concatenate([ins[c] for _, c in b.CTAS])
    out = _run(b.kernel(spec, lay), it["name"], len(b.CTAS), b.THREADS, words,
               b.d_regs(spec) * b.THREADS * len(b.CTAS))
    assert np.array_equal(out, WG["outputs"][WG["offsets"][k]:WG["offsets"][k + 1]])

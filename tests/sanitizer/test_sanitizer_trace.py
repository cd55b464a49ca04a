"""The timeline export (`launch(trace=...)`, `ptxsim run --trace`): Chrome-trace / Perfetto JSON
that Perfetto's JSON importer reads (the Trace Event Format: a `traceEvents` list of complete,
instant and metadata events), one track per warp and per asynchronous unit, and on Triton 3.9's
warp-specialised TMA matmul the overlap a pipelined GEMM is written for: TMA loads of one stage in
flight while the MMAs of another stage run."""
import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from ptxsim.machine.executor import launch
from ptxsim.machine.sanitizer import validate_trace
from ptxsim.machine.tensormap import TensorMap

DATA = Path(__file__).parents[1] / "data" / "ptx" / "triton"


@pytest.fixture(scope="module")
def ws_trace(tmp_path_factory):
    M, N, K = 128, 256, 512
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16).view(np.uint16)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16).view(np.uint16)
    c = np.zeros((M, N), np.uint16)
    tm = [TensorMap.for_array(x, (64, 128), swizzle="128B", dtype="bfloat16") for x in (a, b, c)]
    path = tmp_path_factory.mktemp("trace") / "ws.json"
    run = launch((DATA / "tma_matmul_ws.ptx").read_text(), "tma_matmul_kernel",
                 (M // 128, N // 128), 256,
                 args=[tm[0], M, K, K, 1, tm[1], N, K, K, 1, tm[2], M, N, N, 1, K,
                       np.zeros(64, np.uint8), np.zeros(64, np.uint8)],
                 dynamic_shared=200 * 1024, trace=str(path), trace_ctas=(0,))
    assert not run.findings
    return json.loads(path.read_text()), run


def test_trace_follows_the_trace_event_format(ws_trace):
    doc, run = ws_trace
    validate_trace(doc)
    assert run.trace == doc
    evs = doc["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs if e["ph"] == "M"
             and e["name"] == "thread_name"}
    # one track per warp of the traced CTA (8 warps), the TMA and MMA units, mbarrier phases
    assert {f"warp {w}" for w in range(8)} <= set(names.values())
    assert {"TMA (cp.async.bulk.tensor)", "tcgen05.mma", "mbarrier phases"} <= set(names.values())
    assert all(e["pid"] == 0 for e in evs)           # only CTA 0 was traced
    waits = [e for e in evs if e.get("cat") == "warp" and e["name"].startswith("wait line")]
    assert waits and all(e["dur"] > 0 for e in waits)


def test_validate_trace_rejects_what_perfetto_would_not_read():
    with pytest.raises(ValueError):
        validate_trace({"events": []})
    with pytest.raises(ValueError):
        validate_trace({"traceEvents": [{"name": "x", "ph": "X", "ts": 0, "pid": 0, "tid": 0}]})
    with pytest.raises(ValueError):
        validate_trace({"traceEvents": [{"name": "x", "ph": "Q", "ts": 0, "pid": 0, "tid": 0}]})


def test_tma_loads_overlap_the_mmas_of_another_stage(ws_trace):
    doc, _ = ws_trace
    evs = doc["traceEvents"]
    loads = [e for e in evs if e.get("cat") == "tma" and e["name"].startswith("tma ")]
    mmas = [e for e in evs if e.get("cat") == "mma"]
    assert len(loads) == 2 * 8 and len(mmas) == 32    # A and B tiles of 8 K-blocks, 4 MMAs each
    # the stage buffers are the loads' destinations; an MMA reads the buffers its operand
    # descriptors start in
    bufs = sorted({t["args"]["smem"] for t in loads})
    assert len(bufs) == 6                               # 3 stages of A and B, 16 KB each

    def buffer(addr):
        return max(b for b in bufs if b <= addr)
    overlaps = [(t, m) for t in loads for m in mmas
                if t["ts"] < m["ts"] + m["dur"] and m["ts"] < t["ts"] + t["dur"]
                and t["args"]["smem"] not in {buffer(x) for x in m["args"]["smem"]}]
    # a load issued while an MMA of another stage is in flight: the pipeline at work
    assert any(t["ts"] > m["ts"] for t, m in overlaps)

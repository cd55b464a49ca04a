"""Replay the video-instruction vectors recorded on an NVIDIA H200 (tests/data/hardware/video/video_sm90.npz,
captured by hardware/common/capture.py; format in hardware/video/README.md) through ptxsim: every
variant, every operand
set, bit for bit."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from ptxsim.isa import video
from ptxsim.testing.video_inputs import video_operands, video_operands_checksum

DATA = Path(__file__).resolve().parents[1] / "data" / "hardware" / "video" / "video_sm90.npz"


@pytest.fixture(scope="module")
def vectors():
    z = np.load(DATA)
    ops = video_operands()
    # the inputs are regenerated, not stored: they must be the ones the GPU saw
    assert video_operands_checksum(ops) == str(z["inputs_checksum"])
    return z, ops


def test_capture_metadata(vectors):
    z, _ = vectors
    assert "H200" in str(z["machine"]) or "H100" in str(z["machine"])
    assert len(z["instructions"]) >= 2000 and z["outputs"].shape == (len(z["instructions"]), 1024)
    assert list(z["input_registers"]) == ["%a", "%b", "%c", "%d"]


def test_every_qualifier_value_is_covered(vectors):
    z, _ = vectors
    parsed = [video.parse(str(t)) for t in z["instructions"]]
    ops = {(p.op, p.width) for p in parsed}
    assert len(ops) == 9 + 7 * 2          # 9 scalar, 7 SIMD ops in two widths
    assert {p.mask for p in parsed if p.width == 4} == {None, *video.MASKS4}
    assert {p.mask for p in parsed if p.width == 2} == {None, *video.MASKS2}
    assert {p.dsel for p in parsed if p.width == 1} == {None, *video.SCALAR_SELS}
    assert {p.asel for p in parsed if p.width == 1} == {None, *video.SCALAR_SELS}
    assert {p.asel for p in parsed if p.width == 2} == {None} | {f"h{x}{y}" for x in range(4) for y in range(4)}
    assert {p.cmp for p in parsed if p.op == "vset"} == set(video.CMPS)
    assert {(p.scale, p.po, p.sat) for p in parsed if p.op == "vmad"} >= {
        (s, po, sat) for s in (None, "shr7", "shr15") for po in (False, True) for sat in (False, True)}


def test_replay_bit_exact(vectors):
    z, ops = vectors
    bad = []
    for text, want in zip(z["instructions"], z["outputs"]):
        got = video.execute(str(text), {"%a": ops["a"], "%b": ops["b"], "%c": ops["c"],
                                         "%d": ops["d"]})["%d"]
        if not np.array_equal(got, want):
            bad.append((str(text), int((got != want).sum())))
    assert not bad, f"{len(bad)} variants differ from the hardware, first: {bad[:5]}"


def test_ptxas_rejections_match_the_legality_table(vectors):
    """Every variant ptxas 13.0 rejected for sm_90a is rejected by ptxsim's parser too."""
    z, _ = vectors
    for text, msg in zip(z["rejected_instructions"], z["rejected_messages"]):
        with pytest.raises(video.PtxValidationError):
            video.parse(str(text))


# ------------------------------------------------------------------ hash-only full product
FULL = DATA.parent / "video_full_hashes.npz"


def _hash(words: np.ndarray) -> int:
    digest = hashlib.sha256(np.ascontiguousarray(words, dtype="<u4").tobytes()).digest()[:8]
    return int(np.frombuffer(digest, dtype="<u8")[0])


def _replay_hashes(step: int):
    z = np.load(FULL)
    ops = video_operands()
    assert video_operands_checksum(ops) == str(z["inputs_checksum"])
    regs = {"%a": ops["a"], "%b": ops["b"], "%c": ops["c"], "%d": ops["d"]}
    bad = [str(t) for t, h in zip(z["instructions"][::step], z["hashes"][::step])
           if _hash(video.execute(str(t), regs)["%d"]) != int(h)]
    assert not bad, f"{len(bad)} variants differ from the hardware, first: {bad[:5]}"
    return len(z["instructions"][::step])


def test_full_product_hashes_sample():
    """Every 25th of the 112,495 hash-recorded variants (full scalar product incl. all selector
    pairs, and a random SIMD sample)."""
    assert _replay_hashes(25) > 4000


@pytest.mark.slow
def test_full_product_hashes_all():
    assert _replay_hashes(1) == 112495

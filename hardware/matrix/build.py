"""ldmatrix / stmatrix / movmatrix on the H200 (sm_90a), recorded for isa.matrix
(tests/isa/test_matrix_hw.py).

    build(stage) -> items     (here; hardware/matrix/stage.py)

Each item: 8 CTAs of one warp. A CTA's 1024-byte shared buffer starts as a pattern from global
memory (each 16-bit slot an independent value, ptxsim.testing.matrix_inputs); every lane reads a
byte offset from global memory (for ldmatrix / stmatrix: the row addresses, distinct 16-byte
slots in random order, so rows are not contiguous; lanes whose address the instruction does not
use get one too) and its source registers (stmatrix, movmatrix). ldmatrix stores its
destination registers; stmatrix stores the whole buffer after the instruction; movmatrix its
destination. Every form ptxas 13.0 accepts for sm_90a: .m8n8 .x1/.x2/.x4, with and without
.trans, .b16, the state spaces .shared / .shared::cta / generic.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from ptxsim.testing import matrix_inputs as mi  # noqa: E402
from ptxsim.testing.gen import Stream, checksum  # noqa: E402

PTXAS = "/usr/local/bin/ptxas"
ARCH = "sm_90a"
CTAS = 8
SMEM = 1024
WORDS = SMEM // 4


def sweep() -> list[dict]:
    out = []
    for op in ("ldmatrix", "stmatrix"):
        for num in (1, 2, 4):
            for trans in (False, True):
                for ss in (".shared", ".shared::cta", ""):
                    if ss != ".shared" and (num, trans) != (4, False):
                        continue
                    out.append(dict(op=op, num=num, trans=trans, ss=ss))
    out.append(dict(op="movmatrix", num=1, trans=True, ss=""))
    for i, it in enumerate(out):
        it["name"] = f"mx{i:02d}"
    return out


def instruction(it) -> str:
    regs = "{" + ", ".join(f"%r{i}" for i in range(it["num"])) + "}"
    tr = ".trans" if it["trans"] else ""
    if it["op"] == "movmatrix":
        return "movmatrix.sync.aligned.m8n8.trans.b16 %r0, %m0;"
    addr = "[%ga]" if it["ss"] == "" else "[%sa]"
    head = f"{it['op']}.sync.aligned.m8n8.x{it['num']}{tr}{it['ss']}.b16"
    return f"{head} {regs}, {addr};" if it["op"] == "ldmatrix" else f"{head} {addr}, {regs};"


def kernel(it) -> str:
    n = it["name"]
    L = [f".visible .entry {n}(.param .u64 pin, .param .u64 pout)", "{",
         f"  .shared .align 1024 .b8 sm_{n}[{SMEM}];",
         "  .reg .b32 %r<4>, %m0, %t, %c, %i, %w, %sa, %x;", "  .reg .b64 %in, %out, %p, %ga;",
         "  mov.u32 %t, %tid.x;", "  mov.u32 %c, %ctaid.x;",
         "  ld.param.u64 %in, [pin];", "  ld.param.u64 %out, [pout];",
         "  cvta.to.global.u64 %in, %in;", "  cvta.to.global.u64 %out, %out;",
         f"  mul.wide.u32 %p, %c, {(WORDS + 32 * 5) * 4};", "  add.u64 %in, %in, %p;",
         f"  mov.u32 %sa, sm_{n};"]
    for i in range(WORDS // 32):
        L += [f"  mul.wide.u32 %p, %t, 4;", f"  add.u64 %p, %p, {i * 128};", "  add.u64 %p, %in, %p;",
              "  ld.global.u32 %x, [%p];", f"  shl.b32 %w, %t, 2;", f"  add.u32 %w, %w, {i * 128};",
              "  add.u32 %w, %w, %sa;", "  st.shared.u32 [%w], %x;"]
    L.append("  bar.sync 0;")

    def row(k, reg):
        L.extend(["  mul.wide.u32 %p, %t, 4;", f"  add.u64 %p, %p, {(WORDS + 32 * k) * 4};",
                  "  add.u64 %p, %in, %p;", f"  ld.global.u32 {reg}, [%p];"])
    row(0, "%x")                                 # this lane's byte offset
    L.append("  add.u32 %sa, %sa, %x;")
    L.append("  cvta.shared.u64 %ga, 0;")         # placeholder, replaced below
    L[-1] = "  cvt.u64.u32 %ga, %sa;"
    L.append("  cvta.shared.u64 %ga, %ga;")
    if it["op"] == "stmatrix":
        for i in range(it["num"]):
            row(1 + i, f"%r{i}")
    if it["op"] == "movmatrix":
        row(1, "%m0")
    L.append("  " + instruction(it))
    L.append("  bar.sync 0;")
    if it["op"] == "stmatrix":
        L.append(f"  mov.u32 %sa, sm_{n};")
        L.append(f"  mul.wide.u32 %p, %c, {WORDS * 4};")
        L.append("  add.u64 %out, %out, %p;")
        for i in range(WORDS // 32):
            L += [f"  shl.b32 %w, %t, 2;", f"  add.u32 %w, %w, {i * 128};", "  add.u32 %w, %w, %sa;",
                  "  ld.shared.u32 %x, [%w];", "  mul.wide.u32 %p, %t, 4;",
                  f"  add.u64 %p, %p, {i * 128};", "  add.u64 %p, %out, %p;",
                  "  st.global.u32 [%p], %x;"]
    else:
        L.append(f"  mul.wide.u32 %p, %c, {it['num'] * 32 * 4};")
        L.append("  add.u64 %out, %out, %p;")
        for i in range(it["num"]):
            L += ["  mul.wide.u32 %p, %t, 4;", f"  add.u64 %p, %p, {i * 128};",
                  "  add.u64 %p, %out, %p;", f"  st.global.u32 [%p], %r{i};"]
    L += ["  ret;", "}", ""]
    return "\n".join(L)


def inputs(it) -> np.ndarray:
    """Per CTA: WORDS words of shared memory, 32 byte offsets, then 4 rows of 32 registers."""
    out = []
    for cta in range(CTAS):
        tag = f"{it['name']}|{instruction(it)}|cta{cta}"
        img = mi.registers(f"{tag}|smem", "b16", 1, WORDS, "random")[0]
        s = Stream(mi.SEED, f"{tag}|rows")
        slots = np.argsort(s.u32(SMEM // 16))[:32].astype(np.uint32) * 16   # distinct slots
        regs = mi.registers(f"{tag}|regs", "b16", 4, 32, "random")
        out.append(np.concatenate([img, slots, regs.reshape(-1)]))
    return np.concatenate(out)


def out_words(it) -> int:
    return CTAS * (WORDS if it["op"] == "stmatrix" else 32 * it["num"])


def build(stage: Path) -> list[dict]:
    items, texts, arrays = [], [], {}
    for it in sweep():
        words = inputs(it)
        arrays[it["name"]] = words
        texts.append(kernel(it))
        items.append(dict(name=it["name"], family="matrix", cubin="matrix.cubin",
                          grid=[CTAS, 1, 1], block=[32, 1, 1], in_words=int(words.size),
                          out_words=out_words(it), spec=it, instruction=instruction(it),
                          inputs_checksum=checksum(words)))
    ptx = f".version 8.7\n.target {ARCH}\n.address_size 64\n\n" + "\n".join(texts)
    (stage / "matrix.ptx").write_text(ptx)
    subprocess.run([PTXAS, f"-arch={ARCH}", str(stage / "matrix.ptx"), "-o",
                    str(stage / "matrix.cubin")], check=True)
    np.savez_compressed(stage / "matrix_in.npz", **arrays)
    return items


def pack(stage: Path, dev: Path, dst: Path) -> None:
    import json
    man = json.loads((stage / "manifest.json").read_text())
    items = [it for it in man["items"] if it["family"] == "matrix"]
    outs = np.load(dev / "matrix_out.npz")
    status = json.loads((dev / "status.json").read_text())
    meta = json.loads((dev / "meta.json").read_text())
    flat = np.concatenate([outs[it["name"]] for it in items])
    offsets = np.cumsum([0] + [outs[it["name"]].size for it in items])
    np.savez_compressed(
        dst, items_json=json.dumps([dict(name=it["name"], spec=it["spec"],
                                         instruction=it["instruction"],
                                         inputs_checksum=it["inputs_checksum"]) for it in items]),
        outputs=flat, offsets=offsets,
        status=np.array([status.get(it["name"], "missing") for it in items]),
        machine=meta["gpu"], date_utc=meta["date_utc"], cupy=meta["cupy"],
        ptxas=man["build"]["ptxas"], arch=ARCH)

"""wgmma.mma_async on the H200 (sm_90a): a representative sweep of the warpgroup MMA, recorded for
isa.wgmma (tests/isa/test_wgmma_hw.py).

    build(stage) -> items        (here, no GPU; hardware/matrix/stage.py runs it)
    pack(stage, device_out, dst) (-> tests/data/hardware/wgmma/wgmma_sm90.npz)

Each item is one kernel of one warpgroup per CTA, two CTAs (CTA 0 "random" inputs, CTA 1
"special": ptxsim.testing.matrix_inputs). A CTA copies its shared-memory image (every element
slot an independent element, so the image does not depend on the layout under test) from global
memory into a 1024-byte-aligned buffer, fences the generic proxy against the async proxy, loads
A (register-A forms), C (into the D registers) and the sparsity metadata, adds the buffer's
shared address to the start-address fields of the host-made descriptors, and runs
wgmma.fence / wgmma.mma_async (x chain, each step advancing both descriptors along K) /
wgmma.commit_group / wgmma.wait_group 0, then stores D. The sweep: every type family (f16, bf16,
tf32, e4m3/e5m2 pairs, s8/u8 pairs, .satfinite, b1), D f32/f16/s32, A from registers and from
shared memory, the four swizzles x K/MN-major, steps along K inside a swizzle atom, N from 8 to
256, scale-d 0/1, imm-scale-a/b -1, non-compact strides, chains, and sparse forms.
"""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from ptxsim.isa import smem_layout  # noqa: E402
from ptxsim.isa.descriptors import SmemDescriptor  # noqa: E402
from ptxsim.testing import matrix_inputs as mi  # noqa: E402
from ptxsim.testing.gen import Stream, checksum  # noqa: E402

PTXAS = "/usr/local/bin/ptxas"
ARCH = "sm_90a"
THREADS = 128
CTAS = (("random", 0), ("special", 1))
K_OF = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32, "b1": 256}
SMEM_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "b1": 1}
SW90 = {"none": 0, "128B": 1, "64B": 2, "32B": 3}          # sm_90 descriptor bits 62-63
META_2_4 = np.array([0x4, 0x8, 0xC, 0x9, 0xD, 0xE], np.uint32)
META_1_2 = np.array([0x4, 0xE], np.uint32)


def item(name, atype="f16", btype=None, dtype="f32", n=16, a_src="smem", a_major="K",
         b_major="K", a_sw="128B", b_sw="128B", scale_d=1, scale_a=1, scale_b=1,
         satfinite=False, sparse=False, selector=0, chain=1, a_start=0, b_start=0,
         a_pad=0, b_pad=0):
    return dict(name=name, atype=atype, btype=btype or atype, dtype=dtype, n=n, a_src=a_src,
                a_major=a_major, b_major=b_major, a_sw=a_sw, b_sw=b_sw, scale_d=scale_d,
                scale_a=scale_a, scale_b=scale_b, satfinite=satfinite, sparse=sparse,
                selector=selector, chain=chain, a_start=a_start, b_start=b_start, a_pad=a_pad,
                b_pad=b_pad)


def sweep() -> list[dict]:
    out = []
    add = lambda **kw: out.append(item(f"wg{len(out):03d}", **kw))
    # 1. type families, A and B from shared memory (K-major, 128B swizzle), N = 16
    add(atype="f16", dtype="f32")
    add(atype="f16", dtype="f16")
    add(atype="bf16", dtype="f32")
    add(atype="tf32", dtype="f32")
    for a, b in itertools.product(("e4m3", "e5m2"), repeat=2):
        for d in ("f32", "f16"):
            add(atype=a, btype=b, dtype=d)
    for a, b in itertools.product(("s8", "u8"), repeat=2):
        add(atype=a, btype=b, dtype="s32")
    add(atype="s8", btype="s8", dtype="s32", satfinite=True)
    add(atype="u8", btype="s8", dtype="s32", satfinite=True)
    add(atype="b1", dtype="s32")
    # 2. A from registers
    for a, b, d in (("f16", "f16", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32"),
                    ("tf32", "tf32", "f32"), ("e4m3", "e4m3", "f32"), ("e5m2", "e4m3", "f16"),
                    ("s8", "u8", "s32"), ("b1", "b1", "s32")):
        add(atype=a, btype=b, dtype=d, a_src="regs")
    add(atype="f16", dtype="f32", a_src="regs", b_major="MN")
    # 3. swizzle x major (f16: both majors; K-major only for the other types)
    for sw in ("none", "32B", "64B", "128B"):
        for am, bm in itertools.product(("K", "MN"), repeat=2):
            add(atype="f16", dtype="f32", a_major=am, b_major=bm, a_sw=sw, b_sw=sw)
    for sw in ("none", "32B", "64B"):
        add(atype="tf32", dtype="f32", a_sw=sw, b_sw=sw)
        add(atype="e4m3", dtype="f32", a_sw=sw, b_sw=sw)
        add(atype="s8", btype="s8", dtype="s32", a_sw=sw, b_sw=sw)
    add(atype="bf16", dtype="f32", a_major="MN", b_major="MN", a_sw="64B", b_sw="32B")
    # 4. steps along K inside a swizzle atom (the start address moves, the pattern does not)
    for off in (32, 64, 96):
        add(atype="f16", dtype="f32", a_start=off, b_start=off)
    add(atype="e4m3", dtype="f32", a_sw="64B", b_sw="64B", a_start=32, b_start=32)
    add(atype="bf16", dtype="f32", a_major="MN", b_major="MN", a_start=128, b_start=256,
        a_sw="none", b_sw="none")
    # 5. N
    for n in (8, 24, 64, 128, 256):
        add(atype="f16", dtype="f32", n=n)
    add(atype="f16", dtype="f16", n=256)
    for n in (8, 200):
        add(atype="e4m3", btype="e5m2", dtype="f32", n=n)
    for n in (24, 48, 256):
        add(atype="s8", btype="u8", dtype="s32", n=n)
    add(atype="tf32", dtype="f32", n=120)
    # 6. scale-d, imm-scale-a/b
    add(atype="f16", dtype="f32", scale_d=0)
    add(atype="e4m3", dtype="f16", scale_d=0)
    add(atype="s8", dtype="s32", scale_d=0)
    add(atype="f16", dtype="f32", a_src="regs", scale_d=0)
    add(atype="f16", dtype="f32", scale_a=-1)
    add(atype="f16", dtype="f32", scale_b=-1)
    add(atype="f16", dtype="f16", scale_a=-1, scale_b=-1)
    add(atype="bf16", dtype="f32", scale_a=-1, a_src="regs")
    add(atype="e4m3", btype="e5m2", dtype="f32", scale_b=-1)
    add(atype="tf32", dtype="f32", scale_a=-1, scale_b=-1)
    # 7. non-compact strides (padding between core matrices / 8-row groups)
    add(atype="f16", dtype="f32", a_sw="none", b_sw="none", a_pad=256, b_pad=128)
    add(atype="f16", dtype="f32", a_major="MN", b_major="MN", a_sw="64B", b_sw="64B", a_pad=512,
        b_pad=1024)
    # 8. chains: several mma_async in one group, each step one K further
    add(atype="f16", dtype="f32", chain=2)
    add(atype="e4m3", dtype="f32", chain=4, a_sw="128B", b_sw="128B")
    add(atype="bf16", dtype="f32", chain=4, a_major="MN", b_major="MN", a_sw="none", b_sw="none")
    # 9. sparse
    for a, d, sel in (("f16", "f32", 0), ("f16", "f32", 1), ("f16", "f16", 0), ("bf16", "f32", 1),
                      ("tf32", "f32", 0), ("tf32", "f32", 1), ("e4m3", "f32", 0),
                      ("e5m2", "f16", 0), ("s8", "s32", 0), ("u8", "s32", 0)):
        add(atype=a, dtype=d, sparse=True, selector=sel)
    add(atype="f16", dtype="f32", sparse=True, a_major="MN", b_major="MN", a_sw="64B",
        b_sw="64B")
    add(atype="f16", dtype="f32", sparse=True, a_src="regs", selector=1)
    add(atype="e4m3", dtype="f32", sparse=True, a_src="regs")
    return out


# --------------------------------------------------------------------------- per-item details
def k_of(it) -> int:
    return K_OF[it["atype"]] * (2 if it["sparse"] else 1)


def d_regs(it) -> int:
    return it["n"] // 4 if it["dtype"] == "f16" else it["n"] // 2


def a_cols(it) -> int:
    """K columns A holds in shared memory / registers (sparse: the compressed K/2)."""
    return k_of(it) // 2 if it["sparse"] else k_of(it)


FMT_OF_BITS = {1: "e4m3", 8: "e4m3", 16: "f16", 32: "tf32"}   # b1 is laid out as bytes


def _desc(bits, rows, cols, major, sw, start, pad) -> SmemDescriptor:
    """The canonical descriptor of smem_layout (LBO/SBO as the spec's compact figures), with
    `pad` more bytes on SBO (between 8-row groups, K-major; between K atoms, MN-major)."""
    fmt = FMT_OF_BITS[bits]
    d = smem_layout.canonical_descriptor(fmt, rows, cols if bits > 1 else cols // 8, major, sw,
                                         start=start)
    if pad:
        d = SmemDescriptor.make(start_address=d.start_bytes, lbo=d.lbo_bytes,
                                sbo=d.sbo_bytes + pad, swizzle=sw, base_offset=d.base_offset)
    return d


def k_step_bytes(d: SmemDescriptor, bits: int, cols: int, major: str) -> int:
    """Bytes the start address moves for the next `cols` K elements (one chain step): K-major,
    along the row; MN-major, cols/8 groups of 8 K rows (LBO apart unswizzled, SBO swizzled)."""
    if major == "K":
        return cols * bits // 8
    return (cols // 8) * (d.lbo_bytes if d.swizzle_name == "none" else d.sbo_bytes)


def sm90_value(d: SmemDescriptor) -> int:
    """The sm_90 GMMA descriptor word of a tcgen05 SmemDescriptor: same address / offset fields,
    bits 46-48 zero, the swizzle in bits 62-63 (1 128B, 2 64B, 3 32B)."""
    return (d.start_address | d.lbo << 16 | d.sbo << 32 | d.base_offset << 49
            | SW90[d.swizzle_name] << 62)


def layout(it) -> dict:
    """Descriptors (first step) and the shared-memory image size of an item; A from 0, B from
    the next 1024-byte boundary after A's footprint (all steps of a chain)."""
    bits = SMEM_BITS[it["atype"]]
    fmt = FMT_OF_BITS[bits]
    out, top = {}, 0
    for op, rows, cols, major, sw, start, pad in (
            ("a", 64, a_cols(it), it["a_major"], it["a_sw"], it["a_start"], it["a_pad"]),
            ("b", it["n"], k_of(it), it["b_major"], it["b_sw"], it["b_start"], it["b_pad"])):
        if op == "a" and it["a_src"] == "regs":
            continue
        base = -(-top // 1024) * 1024
        d0 = _desc(bits, rows, cols, major, sw, base + start, pad)
        step = k_step_bytes(d0, bits, cols, major)
        ecols = cols if bits > 1 else cols // 8
        top = max(smem_layout.footprint(d0.advance(step * j), fmt, rows, ecols, major)
                  for j in range(it["chain"]))
        out[op] = dict(desc=sm90_value(d0), start=base + start, step=step, major=major, sw=sw,
                       region=[base, top])
    out["smem_bytes"] = -(-top // 1024) * 1024
    return out


def instruction(it, chain_step=0) -> str:
    n, k = it["n"], k_of(it)
    a, b, d = it["atype"], it["btype"], it["dtype"]
    dv = "{" + ", ".join(f"%d{i}" for i in range(d_regs(it))) + "}"
    av = "{%a0, %a1, %a2, %a3}" if it["a_src"] == "regs" else "%da"
    sat = ".satfinite" if it["satfinite"] else ""
    sp = ".sp" if it["sparse"] else ""
    tail = ".and.popc" if a == "b1" else ""
    head = f"wgmma.mma_async{sp}.sync.aligned.m64n{n}k{k}{sat}.{d}.{a}.{b}{tail}"
    ops = [dv, av, "%db"]
    if it["sparse"]:
        ops += ["%meta", str(it["selector"])]
    ops.append("%pd")
    if a in ("f16", "bf16", "tf32", "e4m3", "e5m2"):
        ops += [str(it["scale_a"]), str(it["scale_b"])]
    if a in ("f16", "bf16"):
        if it["a_src"] == "smem":
            ops.append("1" if it["a_major"] == "MN" else "0")
        ops.append("1" if it["b_major"] == "MN" else "0")
    return head + " " + ", ".join(ops) + ";"


def kernel(it, lay) -> str:
    name = it["name"]
    sw = lay["smem_bytes"] // 4
    ar = 4 if it["a_src"] == "regs" else 0
    dr = d_regs(it)
    per_cta = sw + (ar + dr + (1 if it["sparse"] else 0)) * THREADS
    dt = {"f32": ".f32", "f16": ".b32", "s32": ".s32"}[it["dtype"]]
    L = [f".visible .entry {name}(.param .u64 pin, .param .u64 pout)", "{",
         f"  .shared .align 1024 .b8 sm_{name}[{lay['smem_bytes']}];",
         f"  .reg {dt} %d<{dr}>;", "  .reg .b32 %a<4>, %meta, %t, %c, %i, %w, %s;",
         "  .reg .b64 %in, %out, %p64, %da, %db, %sb;", "  .reg .pred %pd, %lp;",
         "  mov.u32 %t, %tid.x;", "  mov.u32 %c, %ctaid.x;",
         "  ld.param.u64 %in, [pin];", "  ld.param.u64 %out, [pout];",
         "  cvta.to.global.u64 %in, %in;", "  cvta.to.global.u64 %out, %out;",
         f"  mul.wide.u32 %p64, %c, {per_cta * 4};", "  add.u64 %in, %in, %p64;",
         f"  mov.u32 %s, sm_{name};", "  mov.u32 %i, %t;",
         f"LOOP_{name}:",
         f"  setp.lt.u32 %lp, %i, {sw};",
         f"  @!%lp bra DONE_{name};",
         "  mul.wide.u32 %p64, %i, 4;", "  add.u64 %p64, %in, %p64;",
         "  ld.global.u32 %w, [%p64];",
         "  shl.b32 %w, %i, 2;", "  add.u32 %w, %w, %s;",
         "  ld.global.u32 %meta, [%p64];", "  st.shared.u32 [%w], %meta;",
         f"  add.u32 %i, %i, {THREADS};", f"  bra LOOP_{name};",
         f"DONE_{name}:",
         "  fence.proxy.async.shared::cta;", "  bar.sync 0;"]
    row = sw

    def load(reg, typ="u32"):
        nonlocal row
        L.extend([f"  mul.wide.u32 %p64, %t, 4;", f"  add.u64 %p64, %p64, {row * 4};",
                  "  add.u64 %p64, %in, %p64;", f"  ld.global.{typ} {reg}, [%p64];"])
        row += THREADS
    for i in range(ar):
        load(f"%a{i}")
    for i in range(dr):
        load(f"%d{i}", {"f32": "f32", "f16": "b32", "s32": "s32"}[it["dtype"]])
    if it["sparse"]:
        load("%meta")
    L.append("  cvt.u64.u32 %sb, %s;")
    L.append("  shr.u64 %sb, %sb, 4;")
    if it["a_src"] == "smem":
        L.append(f"  mov.b64 %da, {lay['a']['desc']};")
        L.append("  add.u64 %da, %da, %sb;")
    L.append(f"  mov.b64 %db, {lay['b']['desc']};")
    L.append("  add.u64 %db, %db, %sb;")
    L.append(f"  setp.ne.u32 %pd, {it['scale_d']}, 0;")
    L.append("  wgmma.fence.sync.aligned;")
    for step in range(it["chain"]):
        if step:
            if it["a_src"] == "smem":
                L.append(f"  add.u64 %da, %da, {lay['a']['step'] >> 4};")
            L.append(f"  add.u64 %db, %db, {lay['b']['step'] >> 4};")
            L.append("  setp.ne.u32 %pd, 1, 0;")
        L.append("  " + instruction(it))
    L += ["  wgmma.commit_group.sync.aligned;", "  wgmma.wait_group.sync.aligned 0;"]
    L.append(f"  mul.wide.u32 %p64, %c, {dr * THREADS * 4};")
    L.append("  add.u64 %out, %out, %p64;")
    L.append("  mul.wide.u32 %p64, %t, 4;")
    L.append("  add.u64 %out, %out, %p64;")
    for i in range(dr):
        st = {"f32": "f32", "f16": "b32", "s32": "s32"}[it["dtype"]]
        L.append(f"  st.global.{st} [%out+{i * THREADS * 4}], %d{i};")
    L += ["  ret;", "}", ""]
    return "\n".join(L)


def inputs(it, lay) -> dict:
    """Per CTA: the shared-memory image, A registers, C (the D registers' start), metadata."""
    out = {}
    for regime, cta in CTAS:
        tag = f"{it['name']}|{instruction(it)}|cta{cta}"
        img = np.zeros(lay["smem_bytes"], np.uint8)
        for op, t in (("a", it["atype"]), ("b", it["btype"])):
            if op in lay:
                lo, hi = lay[op]["region"]
                img[lo:hi] = mi.smem_image(f"{tag}|{op}", t, hi - lo, regime)
        words = [img.view(np.uint32)]
        if it["a_src"] == "regs":
            words.append(mi.registers(f"{tag}|areg", it["atype"], 4, THREADS, regime).reshape(-1))
        words.append(mi.registers(f"{tag}|c", {"f32": "f32", "f16": "f16", "s32": "s32"}[it["dtype"]],
                                  d_regs(it), THREADS, regime).reshape(-1))
        if it["sparse"]:
            s = Stream(mi.SEED, f"{tag}|meta")
            table = META_1_2 if it["atype"] == "tf32" else META_2_4
            nib = s.choice(THREADS * 8, table).reshape(THREADS, 8).astype(np.uint64)
            words.append((nib << (np.arange(8, dtype=np.uint64) * np.uint64(4))).sum(
                axis=1, dtype=np.uint64).astype(np.uint32))
        out[cta] = np.concatenate(words)
    return out


def build(stage: Path) -> list[dict]:
    items, texts, arrays = [], [], {}
    for it in sweep():
        lay = layout(it)
        ins = inputs(it, lay)
        words = np.concatenate([ins[c] for _, c in CTAS])
        texts.append(kernel(it, lay))
        arrays[it["name"]] = words
        items.append(dict(name=it["name"], family="wgmma", cubin="wgmma.cubin",
                          grid=[len(CTAS), 1, 1], block=[THREADS, 1, 1],
                          in_words=int(words.size), out_words=d_regs(it) * THREADS * len(CTAS),
                          spec=it, layout=lay, instruction=instruction(it),
                          inputs_checksum=checksum(words)))
    # ptxas decides: drop what it refuses (reported), assemble the rest
    from ptxsim_stage_ptxas import prune   # noqa: E402  (hardware/matrix/stage.py puts it on the path)
    keep, rejected = prune(texts, items, ARCH, PTXAS)
    (stage / "wgmma_rejected.json").write_text(json.dumps(rejected, indent=1))
    ptx = f".version 8.7\n.target {ARCH}\n.address_size 64\n\n" + "\n".join(texts[i] for i in keep)
    (stage / "wgmma.ptx").write_text(ptx)
    subprocess.run([PTXAS, f"-arch={ARCH}", str(stage / "wgmma.ptx"), "-o",
                    str(stage / "wgmma.cubin")], check=True)
    items = [items[i] for i in keep]
    np.savez_compressed(stage / "wgmma_in.npz", **{it["name"]: arrays[it["name"]] for it in items})
    return items


def pack(stage: Path, dev: Path, dst: Path) -> None:
    """Outputs of every item (D registers, [CTA][register][thread] words) with its spec,
    layout, instruction and input checksum."""
    man = json.loads((stage / "manifest.json").read_text())
    items = [it for it in man["items"] if it["family"] == "wgmma"]
    outs = np.load(dev / "wgmma_out.npz")
    status = json.loads((dev / "status.json").read_text())
    meta = json.loads((dev / "meta.json").read_text())
    flat = np.concatenate([outs[it["name"]] for it in items])
    offsets = np.cumsum([0] + [outs[it["name"]].size for it in items])
    np.savez_compressed(
        dst, items_json=json.dumps([dict(name=it["name"], spec=it["spec"], layout=it["layout"],
                                         instruction=it["instruction"],
                                         inputs_checksum=it["inputs_checksum"]) for it in items]),
        outputs=flat, offsets=offsets,
        status=np.array([status.get(it["name"], "missing") for it in items]),
        machine=meta["gpu"], date_utc=meta["date_utc"], cupy=meta["cupy"],
        ptxas=man["build"]["ptxas"], arch=ARCH)

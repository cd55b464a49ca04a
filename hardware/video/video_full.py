"""Hash-only capture of (nearly) every video variant: the full product of qualifiers and
selectors of the scalar instructions, and a large random sample of the SIMD ones.

Storing 1024 outputs for each of ~10^5 variants would not fit the test-data budget, so the device
records only ``sha256(outputs as little-endian uint32)[:8]`` per variant (same operands as the
main capture, ptxsim.testing.video_inputs.video_operands()). The replay recomputes ptxsim's
outputs and compares hashes: still a bit-exact check of all 1024 results.

    python hardware/video/video_full.py BUILD_DIR        (here: write PTX chunks + manifests)
    # device: python3 .device/common/video_full.py --device .device/common $OUT
"""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHUNK = 2500
SEL = ("", ".b0", ".b1", ".b2", ".b3", ".h0", ".h1")
TYPES = ("u32", "s32")
TAILS = ([("", "%d", "")] + [(f".{o}", "%d", ", %c") for o in ("add", "min", "max")]
         + [("", f"%d.{d}", ", %c") for d in ("b0", "b1", "b2", "b3", "h0", "h1")])


def scalar_full() -> list[str]:
    out = []
    pairs = list(itertools.product(SEL, SEL))
    for op in ("vadd", "vsub", "vabsdiff", "vmin", "vmax"):
        for dt, at, bt, sat in itertools.product(TYPES, TYPES, TYPES, ("", ".sat")):
            for sfx, dst, ct in TAILS:
                for a, b in pairs:
                    out.append(f"{op}.{dt}.{at}.{bt}{sat}{sfx} {dst}, %a{a}, %b{b}{ct};")
    for op in ("vshl", "vshr"):
        for dt, at, sat, mode in itertools.product(TYPES, TYPES, ("", ".sat"), (".clamp", ".wrap")):
            for sfx, dst, ct in TAILS:
                for a, b in pairs:
                    out.append(f"{op}.{dt}.{at}.u32{sat}{mode}{sfx} {dst}, %a{a}, %b{b}{ct};")
    negs = [(na, nb, nc, False) for na in (0, 1) for nb in (0, 1) for nc in (0, 1)] + [(0, 0, 0, True)]
    for dt, at, bt, sat, scale in itertools.product(TYPES, TYPES, TYPES, ("", ".sat"), ("", ".shr7", ".shr15")):
        for na, nb, nc, po in negs:
            for a, b in pairs:
                out.append(f"vmad.{dt}.{at}.{bt}{'.po' if po else ''}{sat}{scale} %d, {'-' if na else ''}%a{a}, "
                           f"{'-' if nb else ''}%b{b}, {'-' if nc else ''}%c;")
    for at, bt, cmp in itertools.product(TYPES, TYPES, ("eq", "ne", "lt", "le", "gt", "ge")):
        for sfx, dst, ct in TAILS:
            for a, b in pairs:
                out.append(f"vset.{at}.{bt}.{cmp}{sfx} {dst}, %a{a}, %b{b}{ct};")
    return out


def simd_sample(n: int = 30000) -> list[str]:
    sys.path.insert(0, str(HERE.parents[1] / "src"))
    from ptxsim.testing.gen import Stream
    s = Stream(0xF011, "video-simd-sample")
    out = []
    m2 = ("", ".h0", ".h1", ".h10")
    m4 = ("", ".b0", ".b1", ".b10", ".b2", ".b20", ".b21", ".b210", ".b3", ".b30", ".b31", ".b310",
          ".b32", ".b320", ".b321", ".b3210")
    ops = ["vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax", "vset"]
    for i in range(n):
        r = s.below(12, 1 << 20)
        w = 2 if r[0] % 2 else 4
        op = ops[r[1] % 7]
        t = [TYPES[r[2] % 2], TYPES[r[3] % 2], TYPES[r[4] % 2]]
        mask = (m2 if w == 2 else m4)[r[5] % (4 if w == 2 else 16)]
        def sel(x):
            if x % 9 == 0:
                return ""
            if w == 2:
                return f".h{(x >> 4) % 4}{(x >> 6) % 4}"
            return ".b" + "".join(str((x >> (4 + 3 * k)) % 8) for k in range(4))
        asel, bsel = sel(r[6]), sel(r[7])
        if op == "vset":
            cmp = ("eq", "ne", "lt", "le", "gt", "ge")[r[8] % 6]
            add = ".add" if r[9] % 2 else ""
            out.append(f"vset{w}.{t[0]}.{t[1]}.{cmp}{add} %d{mask}, %a{asel}, %b{bsel}, %c;")
        else:
            q = ("", ".sat", ".add")[r[9] % 3]
            out.append(f"{op}{w}.{t[0]}.{t[1]}.{t[2]}{q} %d{mask}, %a{asel}, %b{bsel}, %c;")
    return list(dict.fromkeys(out))


def build(outdir: Path) -> None:
    sys.path.insert(0, str(HERE.parent / "common"))   # ptxgen
    sys.path.insert(0, str(HERE.parents[1] / "src"))
    from ptxgen import kernel, module
    from ptxsim.errors import PtxValidationError
    from ptxsim.isa import video
    texts, rejected = [], []
    for t in scalar_full() + simd_sample():
        try:
            video.parse(t)
            texts.append(t)
        except PtxValidationError as e:
            rejected.append([t, str(e)])
    full = outdir / "full"
    full.mkdir(parents=True, exist_ok=True)
    decl = "  .reg .b32 %a, %b, %c, %d;"
    chunks = []
    for ci in range(0, len(texts), CHUNK):
        name = f"full_{ci // CHUNK:03d}"
        items = [dict(name=f"f{ci + j}", instruction=t, inputs=["%a", "%b", "%c", "%d"], outputs=["%d"])
                 for j, t in enumerate(texts[ci:ci + CHUNK])]
        ptx = module([kernel(it["name"], it["instruction"], it["inputs"], it["outputs"], decl)
                      for it in items], "sm_90a")
        (full / f"{name}.ptx").write_text(ptx)
        (full / f"{name}.json").write_text(json.dumps(dict(items=items)))
        chunks.append(name)
    (full / "index.json").write_text(json.dumps(dict(chunks=chunks, n=len(texts),
                                                     parse_rejected=len(rejected))))
    print(f"{len(texts)} variants in {len(chunks)} chunks; {len(rejected)} rejected by ptxsim's parser")


def device(build: Path, out: Path) -> None:
    """On the GPU machine: assemble the chunks in parallel, run them, merge the hashes."""
    import numpy as np
    sys.path.insert(0, str(build))
    import capture
    full = build / "full"
    idx = json.loads((full / "index.json").read_text())
    t = time.time()
    procs = [subprocess.Popen(["ptxas", "-arch=sm_90a", str(full / f"{c}.ptx"), "-o", str(full / f"{c}.cubin")],
                              stderr=subprocess.PIPE, text=True) for c in idx["chunks"]]
    errs = {c: p.communicate()[1] for c, p in zip(idx["chunks"], procs)}
    log = open(out / "full_log.txt", "w", buffering=1)
    log.write(f"ptxas {time.time()-t:.1f}s; failures: {[c for c in errs if not (full / f'{c}.cubin').exists()]}\n")
    for c, e in errs.items():
        if "error" in e.lower():
            log.write(f"{c}: {e[:2000]}\n")
    res = Path("/tmp/full_results")
    res.mkdir(exist_ok=True)
    status, names, texts = {}, [], []
    import shutil
    for c in idx["chunks"]:
        if not (full / f"{c}.cubin").exists():
            continue
        shutil.copy(full / f"{c}.json", build / f"{c}.json")
        shutil.copy(full / f"{c}.cubin", build / f"{c}.cubin")
        shutil.copy(build / "video_in.npy", build / f"{c}_in.npy")
        man = json.loads((full / f"{c}.json").read_text())
        capture.run_names(build, c, [it["name"] for it in man["items"]], res, status, log)
        names += [it["name"] for it in man["items"]]
        texts += [it["instruction"] for it in man["items"]]
    hashes = np.array([np.load(res / f"{n}.npy")[0] if (res / f"{n}.npy").exists() else 0 for n in names],
                      dtype=np.uint64)
    np.savez_compressed(out / "video_full_hashes.npz", instructions=np.array(texts), hashes=hashes,
                        status=np.array([status.get(n, "missing") for n in names]))
    bad = {n: s for n, s in status.items() if s != "ok"}
    log.write(f"done {len(names)} variants in {time.time()-t:.1f}s; not ok {len(bad)}: {json.dumps(bad)[:2000]}\n")


if __name__ == "__main__":
    if sys.argv[1] == "--device":
        device(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        build(Path(sys.argv[1]))

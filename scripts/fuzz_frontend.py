"""Fuzz the PTX front end (parser + validator) outside CI: mutate real PTX (the ptxas corpus
kernels, windows of the Triton / CuTe fixtures, single instructions) and check that nothing but
ptxsim's own errors (PtxsimError) ever escapes.

    PYTHONPATH=src python scripts/fuzz_frontend.py [N=1000000] [--seed S] [--report-every K]

Prints the number of inputs run, how many parsed, how many raised PtxsimError, and every
foreign exception (with the input that caused it, saved under /tmp/ptxsim_fuzz_crash_*.ptx).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
import traceback
from pathlib import Path

from ptxsim.errors import PtxsimError
from ptxsim.ptx import parse_instruction, parse_module, validate

ROOT = Path(__file__).resolve().parents[1]
ALPHABET = list("{}[](),;:.%$@!-+|_<>\"/*\n\t 0123456789abcdefxXfFdD") + [
    ".reg", ".b32", ".pred", "%r1", "%rd1", "%p1", "::", ".x2", ".cta_group::1", ".kind::f16",
    "tcgen05.mma", "mma.sp", "vadd", "0f3F800000", "0x", "-1", "99999999999999999999", "{%r1, %r2}",
    "[%r1+4]", "@%p1 ", "@!", ".entry", ".func", ".version 9.0", ".target sm_100a", "//", "/*", "*/",
    "\"s\"", ".loc 1 2 3", "L1:", "bra L1;", ".branchtargets", ".section"]
TARGETS = ["sm_100a", "sm_103a", "sm_90a", "sm_120a", "sm_100f", "sm_80", "sm_110a"]


def seeds() -> tuple[list[str], list[str]]:
    corpus = json.loads((ROOT / "tests/data/ptx/ptxas_corpus.json").read_text())["cases"]
    modules = [c["ptx"] for c in corpus]
    instrs = [c["instruction"] for c in corpus]
    for p in sorted((ROOT / "tests/data/ptx").glob("*/*.ptx")):
        lines = p.read_text().splitlines()
        head = "\n".join(lines[:8])
        for k in range(0, len(lines), 25):                    # windows of real compiler output
            modules.append(head + "\n.visible .entry w()\n{\n" + "\n".join(lines[k:k + 40]) + "\n}\n")
    return modules, instrs


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        n = len(text)
        op = rng.randrange(7)
        i = rng.randrange(n + 1)
        if op == 0 and n:                                     # delete a range
            text = text[:i] + text[i + rng.randint(1, 12):]
        elif op == 1:                                         # insert a token / character
            text = text[:i] + rng.choice(ALPHABET) + text[i:]
        elif op == 2 and n:                                   # replace a character
            text = text[:i] + rng.choice(ALPHABET) + text[i + 1:]
        elif op == 3:                                         # duplicate / drop / swap lines
            lines = text.split("\n")
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            choice = rng.randrange(3)
            if choice == 0:
                lines.insert(a, lines[b])
            elif choice == 1:
                del lines[a]
            else:
                lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
        elif op == 4:                                         # truncate
            text = text[:i]
        elif op == 5 and n:                                   # flip a digit
            digits = [k for k, ch in enumerate(text) if ch.isdigit()]
            if digits:
                k = rng.choice(digits)
                text = text[:k] + str(rng.randrange(10)) + text[k + 1:]
        elif op == 6:                                         # swap qualifier order in a mnemonic
            words = text.split(" ")
            k = rng.randrange(len(words))
            parts = words[k].split(".")
            rng.shuffle(parts)
            words[k] = ".".join(parts)
            text = " ".join(words)
    return text


def one(text: str, instruction: bool, rng: random.Random) -> str:
    try:
        if instruction:
            validate(parse_instruction(text), target=rng.choice(TARGETS),
                     ptx_version=rng.choice(["7.0", "8.6", "8.8", "9.0"]))
        else:
            validate(parse_module(text))
        return "ok"
    except PtxsimError:
        return "ptxsim-error"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report-every", type=int, default=50_000)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    modules, instrs = seeds()
    counts = {"ok": 0, "ptxsim-error": 0, "foreign": 0}
    t0 = time.time()
    slowest = (0.0, "")
    for k in range(1, args.n + 1):
        instruction = rng.random() < 0.7
        text = mutate(rng.choice(instrs if instruction else modules), rng)
        t1 = time.perf_counter()
        try:
            counts[one(text, instruction, rng)] += 1
        except Exception:                                     # the bug class we hunt
            counts["foreign"] += 1
            path = Path(f"/tmp/ptxsim_fuzz_crash_{k}.ptx")
            path.write_text(text)
            print(f"FOREIGN EXCEPTION on input {k} (saved {path}):\n{traceback.format_exc()}", flush=True)
        dt = time.perf_counter() - t1
        if dt > slowest[0]:
            slowest = (dt, text)
            if dt > 1.0:
                Path("/tmp/ptxsim_fuzz_slowest.ptx").write_text(text)
        if k % args.report_every == 0:
            print(f"{k} inputs, {time.time() - t0:.0f} s: {counts}", flush=True)
    print(f"done: {args.n} inputs in {time.time() - t0:.0f} s: {counts}; slowest input "
          f"{slowest[0] * 1000:.0f} ms ({len(slowest[1])} chars)")
    return 1 if counts["foreign"] else 0


if __name__ == "__main__":
    sys.exit(main())

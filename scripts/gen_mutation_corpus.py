"""Generate the "one thing wrong" corpus and record ptxas's verdict on every kernel.

Seeds are valid-looking instructions from three sources:
  * every instruction of the PTX files in the repository (Triton, CuTe DSL, nvcc, hand-written
    kernels), with its registers renamed to the corpus kernel's declarations by declared type
    and its symbols mapped to the kernel's variables;
  * one instance of every syntax line of ptxsim's base-instruction table (random qualifiers
    within the line, operands of the line's kinds and types);
  * the instructions of the older single-instruction corpus (tests/data/ptx/ptxas_corpus.json:
    tcgen05, mma.sp, video, stack, misc).
Each case applies exactly one mutation to one seed (an opcode typo, a qualifier dropped /
doubled / replaced / inserted / moved, an operand dropped / added / of another register type /
turned into a constant or an address, a wrong vector size, a guard, a target or PTX version that
lacks the feature, a malformed declaration ...) or none (the seed itself). ptxas's exit status on
the kernel is the oracle; its first message is kept as the reason.

    PYTHONPATH=src python scripts/gen_mutation_corpus.py [N=7000] [--seed S] [--out PATH]

Writes tests/data/ptx/mutation_corpus.json.gz: the kernel template, and per case the mutated
instruction line, .target, .version, an optional declaration mutation, ptxas's verdict and first
message. The test suite rebuilds every kernel from these fields (tests/ptx/test_mutation_corpus.py)
and never runs ptxas. Needs ptxas 13.5 (PTXAS env var, default: the one in the nvidia-cu13 wheel).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ptxsim.ptx import parse_module  # noqa: E402
from ptxsim.ptx.instruction import (Address, Group, Immediate, Label, Register,  # noqa: E402
                                    RegisterPair, SpecialRegister, Vector)
from ptxsim.ptx.module import RegisterTable  # noqa: E402

PTXAS = os.environ.get("PTXAS", "/work/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas")

# The kernel every case is assembled in. {decls} and {pre} may be replaced by a declaration
# mutation; {line} is the instruction.
TEMPLATE = """.version {version}
.target {target}
.address_size 64
.global .align 16 .b8 gmem[256];
.const .align 16 .b8 cmem[256];
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1, .param .align 16 .b8 k_param_2[64])
{{
{decls}
.shared .align 16 .b8 smem[1024];
.local .align 16 .b8 lmem[64];
{pre}{line}
L_end:
ret;
}}
"""
REGS = [(".pred", "%p", 8), (".b8", "%c", 8), (".b16", "%rs", 64), (".b32", "%r", 300),
        (".b64", "%rd", 64), (".b128", "%q", 8), (".u16", "%us", 8), (".u32", "%ur", 8),
        (".u64", "%ul", 8), (".s16", "%ss", 8), (".s32", "%sr", 8), (".s64", "%sl", 8),
        (".f16", "%h", 16), (".f16x2", "%hh", 64), (".f32", "%f", 200), (".f64", "%fd", 64)]
DECLS = "\n".join(f".reg {t} {p}<{n}>;" for t, p, n in REGS)
PREFIX = {t: p for t, p, _ in REGS}
PREFIX.update({".u8": "%c", ".s8": "%c"})
TYPE_OF = {p: t for t, p, _ in REGS}

# declaration mutations: (name, decls, pre)
DECL_MUTATIONS = {
    "dup_reg": ("{auto}\n.reg .b32 %r<300>;", ""),
    "dup_one": ("{auto}" + "\n.reg .b32 %r5;", ""),
    "dup_other_type": ("{auto}" + "\n.reg .f32 %r7;", ""),
    "bad_reg_type_bf16": ("{auto}" + "\n.reg .bf16 %bh<2>;", ""),
    "bad_reg_type_u16x2": ("{auto}" + "\n.reg .u16x2 %ux<2>;", ""),
    "bad_reg_type_e4m3": ("{auto}" + "\n.reg .e4m3 %e<2>;", ""),
    "shadow_in_block": ("{auto}", "{ .reg .f32 %r1; mov.f32 %r1, 0f3F800000; }\n"),
    "sibling_blocks": ("{auto}", "{ .reg .f32 t; mov.f32 t, 0f3F800000; }\n{ .reg .b16 t; mov.b16 t, 1; }\n"),
    "use_outside_block": ("{auto}", "{ .reg .f32 t; mov.f32 t, 0f3F800000; }\nmov.f32 t, 0f3F800000;\n"),
    "reg_range_zero": ("{auto}" + "\n.reg .b32 %z<0>;", ""),
    "pred_vector": ("{auto}" + "\n.reg .v2 .pred %pv;", ""),
    "vector_reg": ("{auto}" + "\n.reg .v4 .f32 %fv;\nmov.f32 %fv.x, %f1;\n", ""),
    "vector_reg_bad_comp": ("{auto}" + "\n.reg .v2 .f32 %fv;\nmov.f32 %fv.z, %f1;\n", ""),
}
TARGETS = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a",
           "sm_100", "sm_100a", "sm_100f", "sm_103a", "sm_110a", "sm_120a", "sm_120f",
           "sm_121a", "sm_1", "sm_91", "sm_bogus", "sm_80a", "compute_90"]
VERSIONS = ["4.3", "6.0", "6.5", "7.0", "7.4", "7.8", "8.0", "8.3", "8.6", "8.7", "8.8", "9.0",
            "9.2", "9.5", "9.6", "10.0", "1.0", "7.9"]
IMMS = ["0", "1", "-1", "7", "0x7fffffff", "4294967296", "0xffffffffffffffff", "1.5",
        "0f3F800000", "0d3FF0000000000000", "79228162514264337593543950336", "-0.0", "0b101",
        "017"]
OPCODE_TYPOS = ["frobnicate", "addd", "mvo", "ld2", "stt", "tcgen05", "mma2", "cvtt", "setpp",
                "shfll", "bar2", "fencee", "atomm", "redd"]


def arch_for(target: str) -> str:
    """The -arch ptxas assembles a .target with (sm_XYa needs itself; old targets: sm_75)."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+)([af]?)", target)
    if not m:
        return "sm_100a"
    sm, suf = int(m.group(1)), m.group(2)
    if sm == 101:
        sm = 110
    if sm < 75:
        return "sm_75"
    return f"sm_{sm}{suf}"


# ------------------------------------------------------------------------------------ seeds
def _rename_instruction(inst, regs: RegisterTable, symbols: dict):
    counters: dict = {}
    names: dict = {}

    def reg(name):
        if name == "_":
            return "_"
        if name in names:
            return names[name]
        t = regs.get(name)
        p = PREFIX.get(t)
        if p is None or regs.vector(name):
            raise KeyError(name)
        k = counters.get(p, 1)
        counters[p] = k + 1
        names[name] = f"{p}{k}"
        return names[name]

    def op(o):
        if isinstance(o, SpecialRegister):
            return str(o)
        if isinstance(o, Register):
            return ("!" if o.negated else "") + ("-" if o.minus else "") + reg(o.name) + (o.selector or "")
        if isinstance(o, Immediate):
            return o.text
        if isinstance(o, Address):
            if o.base is None:
                base = str(o.offset)
            elif o.base in symbols:
                base = symbols[o.base] + (f"+{o.offset}" if o.offset else "")
            else:
                base = reg(o.base) + (f"+{o.offset}" if o.offset else "")
            return "[" + base + (", " + op(o.vector) if o.vector else "") + "]"
        if isinstance(o, Vector):
            return "{" + ", ".join(op(e) for e in o.elements) + "}"
        if isinstance(o, RegisterPair):
            return f"{op(o.first)}|{op(o.second)}"
        if isinstance(o, Label):
            if o.name == "_":
                return "_"
            if o.name in symbols:
                return symbols[o.name] + (f"+{o.offset}" if o.offset else "")
            if inst.opcode == "bra":
                return "L_end"
            raise KeyError(o.name)
        raise KeyError(type(o).__name__)

    text = inst.mnemonic
    if inst.operands:
        text += " " + ", ".join(op(o) for o in inst.operands)
    if inst.predicate:
        text = ("@!" if inst.predicate.negated else "@") + reg(inst.predicate.name) + " " + text
    return text + ";"


def real_seeds() -> list:
    out = []
    files = sorted(ROOT.glob("tests/**/*.ptx")) + sorted(ROOT.glob("src/ptxsim/data/kernels/*.ptx"))
    extra = os.environ.get("SEED_PTX_DIR")
    if extra:
        files += sorted(Path(extra).glob("*.ptx"))
    for path in files:
        try:
            m = parse_module(path.read_text(), str(path))
        except Exception:
            continue
        target = m.target or "sm_100a"
        for f in m.functions:
            if f.body is None:
                continue
            regs = RegisterTable(f.registers, {p.name: p.type for p in f.params if p.space == ".reg"})
            symbols = {}
            for p in f.params:
                symbols[p.name] = "k_param_0" if p.type in (".u64", ".b64", ".s64") else (
                    "k_param_1" if p.type in (".u32", ".b32", ".s32") else "k_param_2")
            for v in list(m.variables) + [s for s in f.body.walk() if hasattr(s, "space") and hasattr(s, "init")]:
                symbols[v.name] = {".shared": "smem", ".global": "gmem", ".const": "cmem",
                                   ".local": "lmem"}.get(v.space, "gmem")
            for inst in f.instructions:
                if inst.opcode in ("call", "brx", "ret", "exit"):
                    continue
                try:
                    out.append((_rename_instruction(inst, regs, symbols), target))
                except KeyError:
                    continue
    return out


def table_seeds(rng: random.Random) -> list:
    from ptxsim.isa.targets import parse_target
    from ptxsim.ptx.legality.forms import FORMS, resolve_type
    prefs = ["sm_100a", "sm_90a", "sm_120a", "sm_89", "sm_80", "sm_75", "sm_70"]
    out = []
    for opcode, forms in FORMS.items():
        for f in forms:
            for _ in range(2):
                chosen, quals = {}, []
                for e in f.elems:
                    if e.required or rng.random() < 0.3:
                        q = rng.choice(sorted(e.values))
                        chosen[e.name] = q
                        quals.append(q)
                    else:
                        chosen[e.name] = None
                specs = f.specs(chosen)
                ops = []
                ok = True
                for spec in specs:
                    if spec.optional and rng.random() < 0.5:
                        continue
                    t = resolve_type(spec, f, chosen)
                    o = _operand_for(spec, t, chosen, rng)
                    if o is None:
                        ok = False
                        break
                    ops.append(o)
                if not ok:
                    continue
                target = next((p for p in prefs if f.req.ok(parse_target(p))), "sm_100a")
                text = opcode + "".join(quals) + (" " + ", ".join(ops) if ops else "") + ";"
                out.append((text, target))
    return out


_REG_FOR = {".u32": "%r", ".s32": "%r", ".b32": "%r", ".f32": "%f", ".u64": "%rd", ".s64": "%rd",
            ".b64": "%rd", ".f64": "%fd", ".u16": "%rs", ".s16": "%rs", ".b16": "%rs", ".f16": "%h",
            ".bf16": "%rs", ".f16x2": "%hh", ".bf16x2": "%r", ".pred": "%p", ".b8": "%rs",
            ".u8": "%rs", ".s8": "%rs", ".b128": "%q", ".u16x2": "%r", ".s16x2": "%r",
            ".tf32": "%r", ".f32x2": "%rd"}


def _reg(t, rng, k=None):
    p = _REG_FOR.get(t, "%r")
    return f"{p}{k if k is not None else rng.randint(1, 7)}"


def _operand_for(spec, t, chosen, rng):
    k = spec.kinds
    if "x" in k or "g" in k:
        return None
    if "v" in k and ("r" not in k or rng.random() < 0.5 or spec.vec is not None):
        n = spec.vec if isinstance(spec.vec, int) else (int(chosen[spec.vec][2:]) if isinstance(spec.vec, str) and chosen.get(spec.vec) else 4)
        return "{" + ", ".join(_reg(t, rng, j + 1) for j in range(n)) + "}"
    if "a" in k:
        sp = [q for q in chosen.values() if q and q.startswith((".shared", ".local"))]
        return "[%r1]" if sp else "[%rd1]"
    if "t" in k:
        dims = [q for q in chosen.values() if q and re.fullmatch(r"\.\dd", q)]
        n = int(dims[0][1]) if dims else 2
        return "[%rd1, {" + ", ".join(f"%r{j + 2}" for j in range(n)) + "}]"
    if "Q" in k:
        return f"{_reg(t, rng)}|%p2"
    if "q" in k:
        return "%p1|%p2" if rng.random() < 0.5 else "%p1"
    if "p" in k:
        return "%p3"
    if "r" in k:
        return _reg(t, rng)
    if "i" in k or "n" in k:
        return "1" if t not in (".f32", ".f64") else "0f3F800000"
    if "y" in k:
        return "smem"
    if "l" in k:
        return "L_end"
    return None


def old_corpus_seeds() -> list:
    p = ROOT / "tests/data/ptx/ptxas_corpus.json"
    cases = json.loads(p.read_text())["cases"]
    return [(c["instruction"], c["target"]) for c in cases if c["ptxas_ok"]]


# -------------------------------------------------------------------------------- mutations
_QUAL_CLASSES = None


def _qual_pool(seeds):
    pool = {}
    for line, _ in seeds:
        mn = _split_line(line)[1]
        for q in re.findall(r"\.[A-Za-z0-9_:]+", mn[mn.find("."):] if "." in mn else ""):
            pool.setdefault(_qclass(q), set()).add(q)
    return {k: sorted(v) for k, v in pool.items()}


def _qclass(q):
    if re.fullmatch(r"\.[busf]\d+(x\d+)?|\.(bf16|bf16x2|tf32|pred|e\dm\d(x\d)?|ue8m0x2|f16x2)", q):
        return "type"
    if q in (".rn", ".rz", ".rm", ".rp", ".rni", ".rzi", ".rmi", ".rpi", ".rna", ".rs"):
        return "rnd"
    if q.startswith((".shared", ".global", ".local", ".param", ".const")):
        return "space"
    if q in (".cta", ".cluster", ".gpu", ".sys"):
        return "scope"
    if re.fullmatch(r"\.v\d", q) or re.fullmatch(r"\.x\d+", q):
        return "vec"
    if q.startswith(".m") and re.search(r"\d", q):
        return "shape"
    return "other"


def _split_line(line):
    """'@%p1 add.s32 %r1, %r2;' -> (guard, mnemonic, [operands])"""
    s = line.rstrip().rstrip(";")
    guard = ""
    if s.startswith("@"):
        guard, s = s.split(None, 1)
        guard += " "
    mn, _, rest = s.partition(" ")
    ops = []
    depth, cur = 0, ""
    for ch in rest:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            ops.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        ops.append(cur.strip())
    return guard, mn, ops


def _join(guard, mn, ops):
    return guard + mn + (" " + ", ".join(ops) if ops else "") + ";"


REG_RE = re.compile(r"%(?:p|c|rs|r|rd|q|us|ur|ul|ss|sr|sl|h|hh|f|fd)\d+")


def mutate(line: str, target: str, rng: random.Random, pool) -> tuple:
    """-> (kind, line, target, version, decl-mutation or None)"""
    version = "9.2"
    guard, mn, ops = _split_line(line)
    base, _, qtail = mn.partition(".")
    quals = re.findall(r"\.[^.]+(?:\.(?=[^.]*::)[^.]*)*", "." + qtail) if qtail else []
    quals = ["." + q for q in qtail.split(".")] if qtail else []
    kind = rng.choice(["none", "none", "opcode", "unknown_opcode", "drop_qual", "dup_qual",
                       "replace_qual", "replace_qual", "insert_qual", "swap_qual", "drop_op",
                       "add_op", "reg_type", "reg_type", "reg_to_imm", "imm_change",
                       "vector_size", "addr_reg", "addr_base", "guard", "negate", "target",
                       "target", "version", "version", "decl", "sreg", "undeclared"])
    if kind == "none":
        return kind, line, target, version, None
    if kind == "opcode":
        b = list(base)
        i = rng.randrange(len(b))
        op = rng.randrange(3)
        if op == 0:
            b.insert(i, rng.choice("abcdefghijklmnopqrstuvwxyz"))
        elif op == 1 and len(b) > 1:
            del b[i]
        else:
            b[i] = rng.choice("abcdefghijklmnopqrstuvwxyz")
        return kind, _join(guard, "".join(b) + "".join(quals), ops), target, version, None
    if kind == "unknown_opcode":
        return kind, _join(guard, rng.choice(OPCODE_TYPOS) + "".join(quals), ops), target, version, None
    if kind in ("drop_qual", "dup_qual", "replace_qual", "swap_qual") and not quals:
        kind = "insert_qual"
    if kind == "drop_qual":
        i = rng.randrange(len(quals))
        q = quals[:i] + quals[i + 1:]
        return kind, _join(guard, base + "".join(q), ops), target, version, None
    if kind == "dup_qual":
        i = rng.randrange(len(quals))
        q = quals[:i + 1] + [quals[i]] + quals[i + 1:]
        return kind, _join(guard, base + "".join(q), ops), target, version, None
    if kind == "replace_qual":
        i = rng.randrange(len(quals))
        cls = pool.get(_qclass(quals[i]), [])
        alts = [x for x in cls if x != quals[i]]
        if not alts:
            return "none", line, target, version, None
        q = quals[:i] + [rng.choice(alts)] + quals[i + 1:]
        return kind, _join(guard, base + "".join(q), ops), target, version, None
    if kind == "insert_qual":
        allq = sorted({x for v in pool.values() for x in v})
        i = rng.randrange(len(quals) + 1)
        q = quals[:i] + [rng.choice(allq)] + quals[i:]
        return kind, _join(guard, base + "".join(q), ops), target, version, None
    if kind == "swap_qual":
        if len(quals) < 2:
            return "none", line, target, version, None
        i = rng.randrange(len(quals) - 1)
        q = list(quals)
        q[i], q[i + 1] = q[i + 1], q[i]
        return kind, _join(guard, base + "".join(q), ops), target, version, None
    if kind == "drop_op":
        if not ops:
            return "none", line, target, version, None
        i = rng.randrange(len(ops))
        return kind, _join(guard, mn, ops[:i] + ops[i + 1:]), target, version, None
    if kind == "add_op":
        extra = rng.choice(["%r9", "%rd9", "%p7", "1", "[%rd9]"])
        i = rng.randrange(len(ops) + 1)
        return kind, _join(guard, mn, ops[:i] + [extra] + ops[i:]), target, version, None
    if kind == "reg_type":
        found = list(REG_RE.finditer(line[len(guard):]))
        if not found:
            return "none", line, target, version, None
        m = rng.choice(found)
        p = re.match(r"%[a-z]+", m.group()).group()
        newp = rng.choice([x for _, x, _ in REGS if x != p])
        s = line[len(guard):]
        s = s[:m.start()] + f"{newp}{rng.randint(1, 7)}" + s[m.end():]
        return kind, guard + s, target, version, None
    if kind == "reg_to_imm":
        cand = [i for i, o in enumerate(ops) if REG_RE.fullmatch(o)]
        if not cand:
            return "none", line, target, version, None
        i = rng.choice(cand)
        o = list(ops)
        o[i] = rng.choice(IMMS)
        return kind, _join(guard, mn, o), target, version, None
    if kind == "imm_change":
        cand = [i for i, o in enumerate(ops) if re.fullmatch(r"-?[0-9][0-9a-fA-FxXdDfF.]*", o)]
        if not cand:
            cand = [i for i, o in enumerate(ops) if REG_RE.fullmatch(o)]
            if not cand:
                return "none", line, target, version, None
        i = rng.choice(cand)
        o = list(ops)
        o[i] = rng.choice(IMMS + [f"%r{rng.randint(1, 7)}"])
        return kind, _join(guard, mn, o), target, version, None
    if kind == "vector_size":
        cand = [i for i, o in enumerate(ops) if o.startswith("{")]
        if not cand:
            return "none", line, target, version, None
        i = rng.choice(cand)
        els = [e.strip() for e in ops[i][1:-1].split(",")]
        if rng.random() < 0.5 and len(els) > 1:
            els = els[:-1]
        else:
            els = els + [els[-1]]
        o = list(ops)
        o[i] = "{" + ", ".join(els) + "}"
        return kind, _join(guard, mn, o), target, version, None
    if kind == "addr_reg":
        o = list(ops)
        cand = [i for i, x in enumerate(ops) if x.startswith("[")]
        if cand and rng.random() < 0.6:
            i = rng.choice(cand)
            o[i] = o[i][1:-1].split(",")[0].split("+")[0].strip()
        else:
            cand = [i for i, x in enumerate(ops) if REG_RE.fullmatch(x)]
            if not cand:
                return "none", line, target, version, None
            i = rng.choice(cand)
            o[i] = "[" + o[i] + "]"
        return kind, _join(guard, mn, o), target, version, None
    if kind == "addr_base":
        cand = [i for i, x in enumerate(ops) if x.startswith("[")]
        if not cand:
            return "none", line, target, version, None
        i = rng.choice(cand)
        inner = ops[i][1:-1]
        head, sep, tail = inner.partition(",")
        head = rng.choice(["%r3", "%rd3", "smem", "gmem+8", "nosuch", "%rd3+4", "16", "k_param_0",
                           "%f3", "%rs3"])
        o = list(ops)
        o[i] = "[" + head + (sep + tail if sep else "") + "]"
        return kind, _join(guard, mn, o), target, version, None
    if kind == "guard":
        g = rng.choice(["@%p1 ", "@!%p1 ", "@%r1 ", "@%p9 ", ""])
        return kind, _join(g, mn, ops), target, version, None
    if kind == "negate":
        cand = [i for i, x in enumerate(ops) if REG_RE.fullmatch(x)]
        if not cand:
            return "none", line, target, version, None
        i = rng.choice(cand)
        o = list(ops)
        o[i] = rng.choice(["!", "-"]) + o[i]
        return kind, _join(guard, mn, o), target, version, None
    if kind == "target":
        return kind, line, rng.choice(TARGETS), version, None
    if kind == "version":
        return kind, line, target, rng.choice(VERSIONS), None
    if kind == "decl":
        return kind, line, target, version, rng.choice(sorted(DECL_MUTATIONS))
    if kind == "sreg":
        cand = [i for i, x in enumerate(ops) if REG_RE.fullmatch(x)]
        if not cand:
            return "none", line, target, version, None
        i = rng.choice(cand)
        o = list(ops)
        o[i] = rng.choice(["%tid.x", "%laneid", "%tid", "%clock64", "%ctaid.y", "%laneid.x",
                           "%nosuch", "%smid", "%globaltimer"])
        return kind, _join(guard, mn, o), target, version, None
    if kind == "undeclared":
        found = list(REG_RE.finditer(line[len(guard):]))
        if not found:
            return "none", line, target, version, None
        m = rng.choice(found)
        s = line[len(guard):]
        s = s[:m.start()] + rng.choice(["%zz1", "%r300", "%p8", "t"]) + s[m.end():]
        return kind, guard + s, target, version, None
    return "none", line, target, version, None


def declarations(text: str) -> str:
    """The .reg lines for the register classes `text` uses (a .b128 or .f16 declaration has
    target requirements of its own, so only what the instruction needs is declared)."""
    used = set(re.findall(r"%([a-z]+)\d", text))
    return "\n".join(f".reg {t} {p}<{n}>;" for t, p, n in REGS if p[1:] in used or p in ("%r", "%rd", "%p"))


def kernel_text(line: str, target: str, version: str, decl: str | None) -> str:
    decls, pre = ("{auto}", "") if decl is None else DECL_MUTATIONS[decl]
    decls = decls.replace("{auto}", declarations(line + pre + decls))
    return TEMPLATE.format(version=version, target=target, decls=decls, pre=pre, line=line)


def run_ptxas(case) -> tuple:
    line, target, version, decl = case
    text = kernel_text(line, target, version, decl)
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as fh:
        fh.write(text)
        path = fh.name
    try:
        p = subprocess.run([PTXAS, f"-arch={arch_for(target)}", path, "-o", os.devnull],
                           capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(path)
    msgs = [re.sub(r"^ptxas\s+\S+,\s*line\s*\d+;\s*", "", ln).strip() for ln in p.stderr.splitlines()
            if ("error" in ln or "fatal" in ln) and "aborted" not in ln]
    if p.returncode < 0:                  # ptxas itself crashed: no verdict
        return None, f"ptxas died with signal {-p.returncode}"
    return p.returncode == 0, (msgs[0] if msgs else "")[:160]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int, nargs="?", default=7000)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--out", default=str(ROOT / "tests/data/ptx/mutation_corpus.json.gz"))
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    real, table, old = real_seeds(), table_seeds(rng), old_corpus_seeds()
    # one copy of each distinct instruction per source
    real = sorted(set(real))
    table = sorted(set(table))
    old = sorted(set(old))
    seeds = [("real", s) for s in real] + [("table", s) for s in table] + [("old", s) for s in old]
    print(f"seeds: {len(real)} real, {len(table)} table, {len(old)} old corpus", flush=True)
    pool = _qual_pool([s for _, s in seeds])
    cases, seen = [], set()
    while len(cases) < args.n:
        src, (line, target) = rng.choice(seeds)
        kind, mline, mtarget, mversion, decl = mutate(line, target, rng, pool)
        key = (mline, mtarget, mversion, decl)
        if key in seen:
            continue
        seen.add(key)
        cases.append((src, kind, mline, mtarget, mversion, decl))
    ver = subprocess.run([PTXAS, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-2]
    with ThreadPoolExecutor(max_workers=args.workers) as ex:
        verdicts = list(ex.map(run_ptxas, [c[2:] for c in cases]))
    rows = [[src, kind, line, t, v, d, ok, msg] for (src, kind, line, t, v, d), (ok, msg)
            in zip(cases, verdicts)]
    data = {"ptxas": ver, "template": TEMPLATE, "registers": REGS, "decl_mutations": DECL_MUTATIONS,
            "fields": ["source", "mutation", "line", "target", "version", "decl", "ptxas_ok",
                       "ptxas_message"], "cases": rows}
    with gzip.open(args.out, "wt") as fh:
        json.dump(data, fh, separators=(",", ":"))
    ok = sum(r[6] is True for r in rows)
    print(f"{len(rows)} cases, ptxas accepts {ok}, rejects {len(rows) - ok} -> {args.out} "
          f"({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    main()

"""Enumerate the video-instruction variants captured on hardware (PTX ISA 9.7.18).

Every variant is one instruction text over the registers %a, %b, %c, %d (d is also loaded before
the instruction, so its prior value is an input). The product of all qualifiers and selectors is
far too large (the 4-way SIMD selectors alone have 8^4 values per operand), so this is a
stratified sample: the full product of the *structural* qualifiers (types, .sat, secondary op /
merge, cmp, mode, scale, negations, mask) for the scalar and 2-way forms, and for the 4-way forms a
sample in which every mask value appears; selectors are cycled so that every selector value of
every operand occurs, plus the defaults (no selector). Deterministic (splitmix64 stream).

ptxas then decides which variants are legal (build.py drops and records the rejected ones).
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
from ptxsim.testing.gen import Stream  # noqa: E402

TYPES = ("u32", "s32")
SCALAR_SEL = ("", ".b0", ".b1", ".b2", ".b3", ".h0", ".h1")
SECOP = (".add", ".min", ".max")
DSEL = (".b0", ".b1", ".b2", ".b3", ".h0", ".h1")
CMP = (".eq", ".ne", ".lt", ".le", ".gt", ".ge")
MASK2 = ("", ".h0", ".h1", ".h10")
MASK4 = ("", ".b0", ".b1", ".b10", ".b2", ".b20", ".b21", ".b210", ".b3", ".b30", ".b31", ".b310",
         ".b32", ".b320", ".b321", ".b3210")
SEL2 = [""] + [f".h{x}{y}" for x in range(4) for y in range(4)]


def _scalar_tail(_unused, i: int):
    """(suffix on the opcode, destination text, trailing operand text) for tail mode i of 10."""
    if i == 0:
        return "", "%d", ""
    if i <= 3:
        return SECOP[i - 1], "%d", ", %c"
    return "", "%d" + DSEL[i - 4], ", %c"


def variants(seed: int = 0x71DE0) -> list[str]:
    s = Stream(seed, "video-variants")
    out: list[str] = []
    k = itertools.count()

    def sel_scalar():
        j = next(k)
        return SCALAR_SEL[j % 7], SCALAR_SEL[(j // 7 + j) % 7]

    # 9.7.18.1.1 vadd vsub vabsdiff vmin vmax: full structural product
    for op in ("vadd", "vsub", "vabsdiff", "vmin", "vmax"):
        for dt, at, bt in itertools.product(TYPES, TYPES, TYPES):
            for sat in ("", ".sat"):
                for t in range(10):
                    sfx, dst, ctext = _scalar_tail(s, t)
                    asel, bsel = sel_scalar()
                    out.append(f"{op}.{dt}.{at}.{bt}{sat}{sfx} {dst}, %a{asel}, %b{bsel}{ctext};")
    # 9.7.18.1.2 vshl vshr (btype is always u32)
    for op in ("vshl", "vshr"):
        for dt, at in itertools.product(TYPES, TYPES):
            for sat in ("", ".sat"):
                for mode in (".clamp", ".wrap"):
                    for t in range(10):
                        sfx, dst, ctext = _scalar_tail(s, t)
                        asel, bsel = sel_scalar()
                        out.append(f"{op}.{dt}.{at}.u32{sat}{mode}{sfx} {dst}, %a{asel}, %b{bsel}{ctext};")
    # 9.7.18.1.3 vmad: negation of a, b, c (all 8 patterns) and .po
    negs = [(na, nb, nc, False) for na in (0, 1) for nb in (0, 1) for nc in (0, 1)] + [(0, 0, 0, True)]
    for dt, at, bt in itertools.product(TYPES, TYPES, TYPES):
        for sat in ("", ".sat"):
            for scale in ("", ".shr7", ".shr15"):
                for na, nb, nc, po in negs:
                    asel, bsel = sel_scalar()
                    po_t = ".po" if po else ""
                    out.append(f"vmad.{dt}.{at}.{bt}{po_t}{sat}{scale} %d, {'-' if na else ''}%a{asel}, "
                               f"{'-' if nb else ''}%b{bsel}, {'-' if nc else ''}%c;")
    # 9.7.18.1.4 vset
    for at, bt in itertools.product(TYPES, TYPES):
        for cmp in CMP:
            for t in range(10):
                sfx, dst, ctext = _scalar_tail(s, t)
                asel, bsel = sel_scalar()
                out.append(f"vset.{at}.{bt}{cmp}{sfx} {dst}, %a{asel}, %b{bsel}{ctext};")

    j2 = itertools.count()

    def sel2():
        j = next(j2)
        return SEL2[j % 17], SEL2[(j * 5 + j // 17) % 17]

    # 9.7.18.2.1 vop2: types x {none, sat, add, sat+add} x mask
    for op in ("vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2"):
        for dt, at, bt in itertools.product(TYPES, TYPES, TYPES):
            for sat, add in itertools.product(("", ".sat"), ("", ".add")):
                for mask in MASK2:
                    asel, bsel = sel2()
                    out.append(f"{op}.{dt}.{at}.{bt}{sat}{add} %d{mask}, %a{asel}, %b{bsel}, %c;")
    # 9.7.18.2.2 vset2
    for at, bt in itertools.product(TYPES, TYPES):
        for cmp in CMP:
            for add in ("", ".add"):
                for mask in MASK2:
                    asel, bsel = sel2()
                    out.append(f"vset2.{at}.{bt}{cmp}{add} %d{mask}, %a{asel}, %b{bsel}, %c;")

    def sel4():
        # default (no selector) one time in eight, else 4 random byte indices 0..7
        r = s.below(5, 8)
        def one(x, digits):
            return "" if x == 0 else ".b" + "".join(str(int(d)) for d in digits)
        return one(r[0], s.below(4, 8)), one(r[1], s.below(4, 8))

    # 9.7.18.2.3 vop4: for each op and (types, sat, add) two masks, cycling through all 16
    m4 = itertools.count()
    for op in ("vadd4", "vsub4", "vavrg4", "vabsdiff4", "vmin4", "vmax4"):
        for dt, at, bt in itertools.product(TYPES, TYPES, TYPES):
            for sat, add in itertools.product(("", ".sat"), ("", ".add")):
                for _ in range(4):
                    mask = MASK4[next(m4) % 16]
                    asel, bsel = sel4()
                    out.append(f"{op}.{dt}.{at}.{bt}{sat}{add} %d{mask}, %a{asel}, %b{bsel}, %c;")
    # 9.7.18.2.4 vset4
    for at, bt in itertools.product(TYPES, TYPES):
        for cmp in CMP:
            for add in ("", ".add"):
                for _ in range(6):
                    mask = MASK4[next(m4) % 16]
                    asel, bsel = sel4()
                    out.append(f"vset4.{at}.{bt}{cmp}{add} %d{mask}, %a{asel}, %b{bsel}, %c;")
    return out


def variants_fullword() -> list[str]:
    """Supplement: every structural scalar combination (and vmad) with whole-word a and b (no
    selector), the case where the 33/34-bit intermediate overflows 32 bits most often."""
    out = []
    for op in ("vadd", "vsub", "vabsdiff", "vmin", "vmax"):
        for dt, at, bt in itertools.product(TYPES, TYPES, TYPES):
            for sat in ("", ".sat"):
                for t in range(10):
                    sfx, dst, ctext = _scalar_tail(None, t)
                    out.append(f"{op}.{dt}.{at}.{bt}{sat}{sfx} {dst}, %a, %b{ctext};")
    for op in ("vshl", "vshr"):
        for dt, at in itertools.product(TYPES, TYPES):
            for sat in ("", ".sat"):
                for mode in (".clamp", ".wrap"):
                    for t in range(10):
                        sfx, dst, ctext = _scalar_tail(None, t)
                        out.append(f"{op}.{dt}.{at}.u32{sat}{mode}{sfx} {dst}, %a, %b.b0{ctext};")
    negs = [(na, nb, nc, False) for na in (0, 1) for nb in (0, 1) for nc in (0, 1)] + [(0, 0, 0, True)]
    for dt, at, bt in itertools.product(TYPES, TYPES, TYPES):
        for sat in ("", ".sat"):
            for scale in ("", ".shr7", ".shr15"):
                for na, nb, nc, po in negs:
                    po_t = ".po" if po else ""
                    out.append(f"vmad.{dt}.{at}.{bt}{po_t}{sat}{scale} %d, {'-' if na else ''}%a, "
                               f"{'-' if nb else ''}%b, {'-' if nc else ''}%c;")
    for at, bt in itertools.product(TYPES, TYPES):
        for cmp in CMP:
            for t in range(10):
                sfx, dst, ctext = _scalar_tail(None, t)
                out.append(f"vset.{at}.{bt}{cmp}{sfx} {dst}, %a, %b{ctext};")
    return out


def all_variants() -> list[str]:
    seen, out = set(), []
    for v in variants() + variants_fullword():
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


if __name__ == "__main__":
    v = all_variants()
    from collections import Counter
    print(len(v), Counter(x.split(".")[0] for x in v))

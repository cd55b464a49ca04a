"""`ptxsim formats [NAME] [--all] [--decode BITS ...] [--encode VALUE ...]`: the element formats.

Without NAME: one table row per format (width, exponent/fraction bits, bias, range, special
encodings). With NAME: that format's parameters and its PTX cvt forms; `--all` adds the value of
every code (formats of at most 8 bits); `--decode` / `--encode` convert given bit patterns / values
(`--rounding`, `--satfinite`, `--relu` as in PTX cvt).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import FormatError
from ptxsim.types import CVT_RULES, FORMATS, decode, encode, get_format


def register(sub) -> None:
    p = sub.add_parser("formats", help="element formats: parameters, every code, decode / encode")
    p.add_argument("name", nargs="?", help="format name (f16, bf16, tf32, e4m3, e2m1, ue8m0, s8, ...)")
    p.add_argument("--all", action="store_true", help="list the value of every code (<= 8-bit formats)")
    p.add_argument("--decode", nargs="+", metavar="BITS", help="bit patterns to decode (hex 0x.. or decimal)")
    p.add_argument("--encode", nargs="+", metavar="VALUE",
                   help="values to encode (Python float syntax; write a negative exponent form as "
                        "--encode=-1e-3)")
    p.add_argument("--rounding", default=None, help="rn (default), rz, rm, rp, rna; --encode only")
    p.add_argument("--satfinite", action="store_true", help="apply .satfinite (--encode)")
    p.add_argument("--relu", action="store_true", help="apply .relu (--encode)")
    p.set_defaults(func=run)


def _console():
    from rich.console import Console
    return Console(highlight=False, soft_wrap=True, width=110)


def _fmt_value(v: float, sig: int = 10) -> str:
    if np.isnan(v):
        return "NaN"
    if np.isinf(v):
        return "-Inf" if v < 0 else "+Inf"
    if v == 0:
        return "-0" if np.signbit(v) else "0"
    return f"{v:.{sig}g}" if 2 ** -20 <= abs(v) < 2 ** 24 else f"{v:.{min(sig, 6) - 1}e}"


def _specials(f, short: bool = False) -> str:
    if f.kind != "float":
        return "two's complement" if f.kind == "sint" else "unsigned"
    shift = f.storage_bits - f.bits if f.name == "tf32" else 0    # tf32: show the b32 image
    parts = []
    if f.has_inf:
        parts.append(f"Inf {f.inf_code << shift:#x}")
    if f.nan == "ieee":
        parts.append("NaN exp=all-ones" if short else
                     "NaN: all-ones exponent, fraction != 0 (canonical "
                     f"{f.nan_code << shift:#x})")
    elif f.nan:
        parts.append(f"NaN {f.nan_code:#x}" + (" (either sign)" if f.signed and not short else ""))
    else:
        parts.append("no Inf/NaN")
    if not f.has_zero:
        parts.append("no zero")
    return ", ".join(parts)


def _summary_table():
    from rich.table import Table
    t = Table(title="PTX element formats")
    for col in ("name", "bits", "E", "M", "bias", "max finite", "min > 0", "specials"):
        t.add_column(col, justify="right" if col in ("bits", "E", "M", "bias") else "left")
    for f in FORMATS.values():
        if f.kind == "float":
            t.add_row(f.name, f"{f.bits}" + (f" in b{f.storage_bits}" if f.container_bits else ""),
                      str(f.ebits), str(f.mbits), str(f.bias), _fmt_value(f.max_finite, 6),
                      _fmt_value(f.min_subnormal, 4), _specials(f, short=True))
        else:
            lo = -(1 << (f.bits - 1)) if f.signed else 0
            hi = (1 << (f.bits - 1)) - 1 if f.signed else (1 << f.bits) - 1
            t.add_row(f.name, str(f.bits), "", "", "", str(hi), f"min {lo}", _specials(f))
    return t


def _parse_bits(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise FormatError(f"not an integer bit pattern: {text!r} (use 0x.. or decimal)") from None


def _parse_value(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise FormatError(f"not a number: {text!r}") from None


def run(args) -> int:
    con = _console()
    if args.name is None:
        if args.all or args.decode or args.encode:
            raise FormatError("--all, --decode and --encode need a format NAME")
        con.print(_summary_table())
        return 0
    f = get_format(args.name)
    width = f.storage_bits
    digits = (width + 3) // 4
    if args.decode:
        bits = np.array([_parse_bits(b) for b in args.decode], dtype=object)
        vals = decode(np.array([int(b) for b in bits], dtype=np.int64), f)
        for b, v in zip(bits, vals):
            con.print(f"{int(b):#0{digits + 2}x}  {_fmt_value(float(v))}")
        return 0
    if args.encode:
        rounding = args.rounding or ("rz" if f.name == "ue8m0" else "rn")
        vals = np.array([_parse_value(v) for v in args.encode])
        codes = encode(vals, f, rounding, satfinite=args.satfinite, relu=args.relu)
        for v, c in zip(vals, codes):
            back = decode(np.array([int(c)]), f)[0]
            con.print(f"{float(v)!r:>24}  ->  {int(c):#0{digits + 2}x}  = {_fmt_value(float(back))}")
        return 0
    con.print(f"[bold].{f.name}[/bold]: {f.bits} bits"
              + (f" in a {f.storage_bits}-bit container" if f.container_bits else "")
              + (f", E{f.ebits}M{f.mbits}, bias {f.bias}" if f.kind == "float" else f", {f.kind}"))
    con.print(f"  {_specials(f)}")
    if f.kind == "float":
        con.print(f"  max finite {_fmt_value(f.max_finite)}, smallest positive "
                  f"{_fmt_value(f.min_subnormal)}")
    forms = [(r, rule) for (n, r), rule in CVT_RULES.items() if n == f.name]
    for r, rule in forms:
        con.print(f"  cvt .{r}: {rule.ptx_form or '(no PTX cvt form; emulated)'}"
                  + ("  [satfinite=False: OCP conversion, not PTX]" if rule.nonsat_extension else ""))
    if args.all:
        if f.bits > 8:
            raise FormatError(f"--all lists every code of formats of at most 8 bits; .{f.name} has "
                              f"{1 << f.bits} codes (use --decode)")
        from rich.table import Table
        t = Table(title=f"every .{f.name} code")
        t.add_column("bits", justify="right")
        t.add_column("binary", justify="right")
        t.add_column("value", justify="right")
        codes = np.arange(1 << f.bits)
        for c, v in zip(codes, decode(codes, f)):
            t.add_row(f"{int(c):#0{digits + 2}x}", format(int(c), f"0{f.bits}b"), _fmt_value(float(v)))
        con.print(t)
    return 0

"""The executor fast paths of the integer, logic, selp and integer setp instructions
(`base.semantics`, the FAST_PATHS of ptxsim.isa.integer / logic / compare / convert) give the
general functions' bits -- differential tests on every pair of special values and on random
bits -- and leave every other call (other dtypes, shapes, keywords) to the general function."""
import numpy as np
import pytest
from fast_path_kit import INT32_SPECIALS, check_same, pairs

from ptxsim.errors import OperandError, PtxValidationError
from ptxsim.isa.base import semantics

RNG = np.random.default_rng(20261121)
N = 4096


def _bits(width, n=N):
    u = RNG.integers(0, 2**63, n, dtype=np.uint64) ^ (RNG.integers(0, 2, n, dtype=np.uint64)
                                                      << np.uint64(63))
    return u.astype({16: np.uint16, 32: np.uint32, 64: np.uint64}[width])


def _operands(width, k):
    """k operands of `width` bits: the cross product of the specials (truncated to the width,
    plus the width's extremes) followed by random bits."""
    sp = np.unique(np.concatenate([INT32_SPECIALS.astype(np.uint64),
                                   np.array([(1 << width) - 1, 1 << (width - 1),
                                             (1 << (width - 1)) - 1], np.uint64)]))
    sp = (sp & np.uint64((1 << width) - 1 if width < 64 else 2**64 - 1))
    dt = {16: np.uint16, 32: np.uint32, 64: np.uint64}[width]
    grid = pairs(np.unique(sp).astype(dt), k) if k <= 2 else [
        np.resize(np.unique(sp).astype(dt), 20 ** 2) for _ in range(k)]
    return [np.concatenate([g, _bits(width)]) for g in grid]


BINARY = [(op, t) for t in ("u16", "s16", "u32", "s32", "u64", "s64") for op in
          ("add", "sub", "mul.lo", "min", "max")] + \
         [(op, t) for t in ("u16", "s16", "u32", "s32") for op in ("mul.hi", "mul.wide")] + \
         [(op, t) for t in ("b16", "b32", "b64") for op in ("and", "or", "xor")]


@pytest.mark.parametrize("op,t", BINARY)
def test_binary_integer_fast_path_is_bit_identical(op, t):
    w = int(t[1:])
    check_same(f"{op}.{t}", *_operands(w, 2))


@pytest.mark.parametrize("mode,t", [(m, t) for m in ("lo", "hi", "wide")
                                    for t in ("u16", "s16", "u32", "s32")] +
                         [("lo", "u64"), ("lo", "s64")])
def test_mad_fast_path_is_bit_identical(mode, t):
    w = int(t[1:])
    a, b, _ = _operands(w, 3)
    c = _bits(2 * w if mode == "wide" else w, a.size)
    check_same(f"mad.{mode}.{t}", a, b, c)


@pytest.mark.parametrize("op,t", [("shl", t) for t in ("b16", "b32", "b64")] +
                         [("shr", t) for t in ("b16", "b32", "b64", "u16", "u32", "u64", "s16",
                                               "s32", "s64")])
def test_shift_fast_path_is_bit_identical_for_every_amount(op, t):
    w = int(t[1:])
    a = _bits(w, 300 * 8)
    amounts = np.concatenate([np.arange(0, 300, dtype=np.uint32),
                              INT32_SPECIALS, RNG.integers(0, 2**32, 300, np.uint64).astype(
                                  np.uint32)])
    b = np.resize(amounts, a.size)
    check_same(f"{op}.{t}", a, b)


def test_shift_amounts_clamp_by_hand():
    # 9.7.8.x: shift amounts above the width clamp to the width
    a = np.array([0x80000001] * 5, np.uint32)
    b = np.array([0, 1, 31, 32, 0xFFFFFFFF], np.uint32)
    assert semantics("shl.b32")(a, b).tolist() == [0x80000001, 2, 0x80000000, 0, 0]
    assert semantics("shr.u32")(a, b).tolist() == [0x80000001, 0x40000000, 1, 0, 0]
    assert semantics("shr.s32")(a, b).tolist() == [0x80000001, 0xC0000000, 0xFFFFFFFF,
                                                    0xFFFFFFFF, 0xFFFFFFFF]


@pytest.mark.parametrize("t", ["pred"])
@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_predicate_logic_fast_path(op, t):
    p, q = RNG.random(64) < 0.5, RNG.random(64) < 0.5
    check_same(f"{op}.{t}", p, q)
    check_same("not.pred", p)


@pytest.mark.parametrize("t", ["b16", "b32", "b64"])
def test_not_fast_path(t):
    check_same(f"not.{t}", _operands(int(t[1:]), 1)[0])


@pytest.mark.parametrize("t", ["b16", "u16", "s16", "b32", "u32", "s32", "f32", "b64", "u64",
                               "s64", "f64"])
def test_selp_fast_path(t):
    w = 64 if t.endswith("64") else (16 if t.endswith("16") else 32)
    a, b = _bits(w), _bits(w)
    check_same(f"selp.{t}", a, b, RNG.random(N) < 0.5)


INT_SETP = [(c, t) for t in ("u16", "u32", "u64") for c in
            ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")] + \
           [(c, t) for t in ("s16", "s32", "s64") for c in ("eq", "ne", "lt", "le", "gt", "ge")] + \
           [(c, t) for t in ("b16", "b32", "b64") for c in ("eq", "ne")]


@pytest.mark.parametrize("cmp,t", INT_SETP)
def test_integer_setp_fast_path(cmp, t):
    a, b = _operands(int(t[1:]), 2)
    check_same(f"setp.{cmp}.{t}", a, b)
    c = RNG.random(a.size) < 0.5
    for bool_op in ("and", "or", "xor"):
        check_same(f"setp.{cmp}.{bool_op}.{t}", a, b, c)


def test_signed_setp_by_hand():
    a = np.array([0xFFFFFFFF, 0x7FFFFFFF, 5], np.uint32)     # -1, INT_MAX, 5
    b = np.array([0, 0x80000000, 5], np.uint32)              # 0, INT_MIN, 5
    p, q = semantics("setp.lt.s32")(a, b)
    assert p.tolist() == [True, False, False] and q.tolist() == [False, True, True]
    p, _ = semantics("setp.lo.u32")(a, b)
    assert p.tolist() == [False, True, False]


@pytest.mark.parametrize("d,a", [(d, a) for d in ("u16", "s16", "u32", "s32", "u64", "s64")
                                 for a in ("u16", "s16", "u32", "s32", "u64", "s64")])
def test_int_to_int_cvt_fast_path(d, a):
    check_same(f"cvt.{d}.{a}", _operands(int(a[1:]), 1)[0])


def test_int_values_by_hand():
    a = np.array([0xFFFFFFFF, 0x80000000, 7], np.uint32)
    b = np.array([2, 0xFFFFFFFF, 0xFFFFFFF9], np.uint32)
    assert semantics("add.s32")(a, b).tolist() == [1, 0x7FFFFFFF, 0]
    assert semantics("mul.hi.s32")(a, b).tolist() == [0xFFFFFFFF, 0, 0xFFFFFFFF]   # -2, 2^31, -49
    assert semantics("mul.hi.u32")(a, b).tolist() == [1, 0x7FFFFFFF, 6]
    assert semantics("mul.wide.s32")(a, b).tolist() == [2**64 - 2, 2**31, 2**64 - 49]
    assert semantics("mad.wide.u32")(a, b, np.array([1, 1, 1], np.uint64)).tolist() == [
        0x1FFFFFFFF, 0x7FFFFFFF80000001, 7 * 0xFFFFFFF9 + 1]
    assert semantics("cvt.s64.s32")(a).tolist() == [2**64 - 1, 2**64 - 2**31, 7]
    assert semantics("min.s32")(a, b).tolist() == [0xFFFFFFFF, 0x80000000, 0xFFFFFFF9]


def test_other_operands_take_the_general_path():
    f = semantics("add.s32")
    # Python ints, signed arrays, scalars, mixed shapes: the general function's rules
    assert f(np.array([-1, 2], np.int64), 1).tolist() == [0, 3]
    assert f(np.uint32(5), np.array([1, 2], np.uint32)).tolist() == [6, 7]
    with pytest.raises(OperandError):
        f(np.array([1.0], np.float32), np.array([1], np.uint32))
    with pytest.raises(OperandError):
        f(np.array([2**40], np.uint64), np.array([1], np.uint64))
    # a 64-bit register passed to a 32-bit instruction: checked by the general function
    assert semantics("add.u32")(np.array([7], np.uint64), np.array([1], np.uint32)).tolist() == [8]


@pytest.mark.parametrize("opcode", ["add.sat.u64", "mul.wide.u64", "shl.u32", "setp.lt.b32",
                                    "min.relu.u32", "and.u32"])
def test_illegal_forms_keep_their_error(opcode):
    a = np.array([1, 2], np.uint32)
    with pytest.raises(PtxValidationError):
        semantics(opcode)(a, a)

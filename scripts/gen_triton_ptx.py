"""Generate PTX with Triton, offline (no GPU): bf16 matmul (also JIT-specialised: cp.async),
fp8 matmul, dot_scaled, TMA matmul, warp-specialised matmul -- sm_100a (default), 90a, 120a.

Run with a venv that has triton installed:
    python scripts/gen_triton_ptx.py tests/data/ptx/triton                  # sm_100a
    python scripts/gen_triton_ptx.py tests/data/ptx/triton/sm90a --arch 90  # wgmma kernels
    python scripts/gen_triton_ptx.py tests/data/ptx/triton/sm120a --arch 120 # mma.sync kernels
"""
import sys
from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

TARGET = GPUTarget("cuda", 100, 32)     # --arch N replaces it


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty))


@triton.jit
def tma_matmul_kernel(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, warp_specialize=WARP_SPECIALIZE, num_stages=3):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([pid_n * BLOCK_N, k])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.bfloat16))


@triton.jit
def dot_scaled_kernel(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, c_ptr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, A_FMT: tl.constexpr,
                      B_FMT: tl.constexpr):
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    A_DIV: tl.constexpr = 2 if A_FMT == "e2m1" else 1
    B_DIV: tl.constexpr = 2 if B_FMT == "e2m1" else 1
    offs_ka = tl.arange(0, BLOCK_K // A_DIV)
    offs_kb = tl.arange(0, BLOCK_K // B_DIV)
    offs_s = tl.arange(0, BLOCK_K // 32)
    a = tl.load(a_ptr + offs_m[:, None] * (BLOCK_K // A_DIV) + offs_ka[None, :])
    b = tl.load(b_ptr + offs_kb[:, None] * BLOCK_N + offs_n[None, :])
    sa = tl.load(a_scale_ptr + offs_m[:, None] * (BLOCK_K // 32) + offs_s[None, :])
    sb = tl.load(b_scale_ptr + offs_n[:, None] * (BLOCK_K // 32) + offs_s[None, :])
    c = tl.dot_scaled(a, sa, A_FMT, b, sb, B_FMT)
    tl.store(c_ptr + offs_m[:, None] * BLOCK_N + offs_n[None, :], c)


def compile_ptx(fn, signature, constexprs, attrs=None, **opts):
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=TARGET, options=opts).asm["ptx"]


def specialised(fn, signature, constexprs, ones=(), div16=()):
    """The signature, constants and attributes Triton's JIT gives a call whose integer
    arguments `ones` equal 1 (they become constants) and whose pointers / integers `div16` are
    multiples of 16 (tt.divisibility 16): what matmul_kernel[grid](a, b, c, 1024, ...) compiles,
    whose contiguous, aligned loads Triton pipelines with cp.async (num_stages=3)."""
    sig = dict(signature, **{n: "constexpr" for n in ones})
    cx = dict(constexprs, **{n: 1 for n in ones})
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in div16}
    return sig, cx, attrs


def main(out: Path):
    out.mkdir(parents=True, exist_ok=True)
    mm_sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
              "K": "i32", "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32",
              "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32",
              "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"}
    jobs = {
        "matmul_bf16": (matmul_kernel, mm_sig, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, {}),
        "matmul_fp8": (matmul_kernel, dict(mm_sig, a_ptr="*fp8e4nv", b_ptr="*fp8e4nv"),
                       {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128}, {}),
    }
    # the same kernel as Triton's JIT specialises it for 1024 x 1024 x 1024 contiguous
    # matrices: unit strides constant, sizes and pointers 16-divisible -> cp.async pipelining
    jobs["matmul_bf16_cpasync"] = (matmul_kernel,) + specialised(
        matmul_kernel, mm_sig, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
        ones=("stride_ak", "stride_bn", "stride_cn"),
        div16=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk",
               "stride_cm")) + ({"num_stages": 3},)
    tma_sig = {"a_desc": "tensordesc<bf16[128, 64]>", "b_desc": "tensordesc<bf16[128, 64]>",
               "c_desc": "tensordesc<bf16[128, 128]>", "K": "i32", "BLOCK_M": "constexpr",
               "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "WARP_SPECIALIZE": "constexpr"}
    for ws in (False, True):
        jobs["tma_matmul" + ("_ws" if ws else "")] = (
            tma_matmul_kernel, tma_sig,
            {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "WARP_SPECIALIZE": ws}, {})
    for a_fmt, b_fmt, at, bt in (("e4m3", "e4m3", "*fp8e4nv", "*fp8e4nv"), ("e2m1", "e2m1", "*u8", "*u8"),
                                 ("e4m3", "e2m1", "*fp8e4nv", "*u8")):
        jobs[f"dot_scaled_{a_fmt}_{b_fmt}"] = (
            dot_scaled_kernel,
            {"a_ptr": at, "a_scale_ptr": "*u8", "b_ptr": bt, "b_scale_ptr": "*u8", "c_ptr": "*fp32",
             "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr",
             "A_FMT": "constexpr", "B_FMT": "constexpr"},
            {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "A_FMT": a_fmt, "B_FMT": b_fmt}, {})
    failed = []
    for name, job in jobs.items():
        fn, sig, cx, attrs, opts = job if len(job) == 5 else job[:3] + (None,) + job[3:]
        try:
            ptx = compile_ptx(fn, sig, cx, attrs, **opts)
        except Exception as exc:  # report and go on: one kernel failing must not hide the others
            failed.append(name)
            print(f"{name}: FAILED {type(exc).__name__}: {str(exc)[:300]}")
            continue
        (out / f"{name}.ptx").write_text(ptx)
        print(f"{name}: {len(ptx.splitlines())} lines, tcgen05 / wgmma / mma lines: "
              f"{sum('tcgen05' in l for l in ptx.splitlines())} / "
              f"{sum('wgmma' in l for l in ptx.splitlines())} / "
              f"{sum(l.strip().startswith('mma.') for l in ptx.splitlines())}")
    return 1 if failed else 0


if __name__ == "__main__":
    if "--arch" in sys.argv:
        i = sys.argv.index("--arch")
        TARGET = GPUTarget("cuda", int(sys.argv[i + 1]), 32)
        del sys.argv[i:i + 2]
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/ptx/triton")))

"""The TMA probe's cases (shared by tma_probe.cu via cases.txt and by test_tma_hardware.py).

Run: python make_cases.py > cases.txt. Input buffer word w holds pattern(w): 16-bit types
(w % 30000) + 1, 32-bit types the float32 value w + 1 (see tma_probe.cu)."""
import math

ENUM = {"uint16": 1, "uint32": 2, "float16": 6, "float32": 7, "bfloat16": 9}
SW = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
U16 = dict(dtype="uint16", dims=(72, 40), strides=(144,))
CASES = [
    dict(U16, box=(64, 16), swizzle="128B", coords=(8, 0)),
    dict(U16, box=(64, 16), swizzle="128B", coords=(64, 32)),
    dict(U16, box=(64, 16), swizzle="128B", coords=(-8, -4)),
    dict(U16, box=(32, 16), swizzle="64B", coords=(8, 3)),
    dict(U16, box=(16, 16), swizzle="32B", coords=(-4, 30)),
    dict(U16, box=(32, 16), swizzle="none", coords=(50, 5)),
    dict(U16, box=(32, 16), swizzle="128B", coords=(0, 0)),     # 64-byte rows, 128B swizzle
    dict(U16, box=(16, 8), swizzle="64B", coords=(8, 2)),       # 32-byte rows, 64B swizzle
    dict(U16, box=(8, 16), swizzle="128B", coords=(4, 1)),      # 16-byte rows, 128B swizzle
    dict(dtype="float16", dims=(72, 40), strides=(144,), box=(64, 8), swizzle="128B",
         coords=(40, 36), oob=1),
    dict(dtype="bfloat16", dims=(72, 40), strides=(144,), box=(64, 8), swizzle="none",
         coords=(40, 36), oob=1),
    dict(dtype="float32", dims=(24, 10, 6), strides=(96, 960), box=(8, 5, 3), es=(2, 2, 3),
         swizzle="none", coords=(20, 7, 4), oob=1),
    dict(dtype="float32", dims=(24, 10, 6), strides=(96, 960), box=(8, 5, 3), es=(1, 2, 3),
         swizzle="32B", coords=(0, -1, 0)),
    dict(dtype="uint32", dims=(8, 5, 4, 2, 3), strides=(32, 160, 640, 1280), box=(4, 3, 2, 2, 2),
         swizzle="none", coords=(6, 3, 3, 1, 2)),
    dict(dtype="uint32", dims=(64,), strides=(), box=(16,), swizzle="none", coords=(56,)),
]


def esize(dtype):
    return 2 if dtype in ("uint16", "float16", "bfloat16") else 4


def nbytes(case):
    return case["strides"][-1] * case["dims"][-1] if case["strides"] else \
        case["dims"][0] * esize(case["dtype"])


def box_bytes(case):
    es = [1] + list(case.get("es", (1,) * len(case["box"]))[1:])
    return math.prod(math.ceil(b / e) for b, e in zip(case["box"], es)) * esize(case["dtype"])


if __name__ == "__main__":
    for c in CASES:
        es = c.get("es", (1,) * len(c["box"]))
        print(ENUM[c["dtype"]], len(c["dims"]), SW[c["swizzle"]], c.get("oob", 0),
              esize(c["dtype"]), nbytes(c), *c["dims"], *c["strides"], *c["box"], *es,
              *c["coords"], box_bytes(c))

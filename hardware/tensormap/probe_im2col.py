"""The im2col corner-rule probe (probe_im2col.cu): `python probe_im2col.py cases` writes
probe_im2col.txt (the argument sets); `python probe_im2col.py pack OUT.txt NPZ INFO.txt` packs the
driver's answers next to them for tests/cuda/test_tensormap_driver.py."""
import sys
import numpy as np

F16, I = 6, 1 << 31
# (rank, dims, lower, upper, interleave): f16, channelsPerPixel 8 (16 bytes), 32 pixels
CASES = [
    (3, (64, I, 4), (0,), (-1,), 0), (3, (64, I, 4), (0,), (0,), 0),
    (3, (64, I, 4), (-5,), (0,), 0), (3, (64, 2 * I - 1, 4), (0,), (1,), 0),
    (3, (64, 2 * I - 1, 4), (0,), (2,), 0), (3, (64, 2 * I - 1, 4), (-3,), (1,), 0),
    (3, (64, 2 * I, 4), (0,), (5,), 0), (3, (64, 100, 4), (50,), (-50,), 0),
    (3, (64, 100, 4), (49,), (-50,), 0), (3, (100, 10, 4), (50,), (-50,), 1),
    (3, (100, 10, 4), (49,), (-50,), 1), (3, (10, 100, 4), (49,), (-50,), 1),
    (3, (I, 8, 4), (0,), (0,), 2), (3, (I, 8, 4), (0,), (-1,), 2),
    (4, (20, 30, 4, 2), (0, 15), (0, -10), 1), (4, (20, 30, 40, 2), (0, 35), (0, -1), 1),
    (4, (64, 10, 100, 2), (20, 0), (0, 0), 0), (4, (64, 10, 100, 2), (0, 20), (0, 0), 0),
    (5, (64, 8, 8, I, 2), (0, 0, 0), (0, 0, -1), 0), (5, (64, 8, 8, I, 2), (0, 0, 0), (0, 0, 0), 0),
]


def rows():
    out = []
    for rank, dims, lo, up, il in CASES:
        esize = 2
        strides, s = [], (dims[0] * esize + 31) // 32 * 32
        for d in dims[1:]:
            strides.append(s)
            s *= d
        strides = [min(x, (1 << 40) - 32) // 32 * 32 for x in strides]
        pad = lambda v, n: list(v) + [0] * (n - len(v))
        out.append([F16, rank, 0x10000000] + pad(dims, 5) + pad(strides, 4) + pad(lo, 3)
                   + pad(up, 3) + [8, 32] + [1] * 5 + [il, 1 if il == 2 else 0, 0, 0])
    return out


if __name__ == "__main__":
    if sys.argv[1] == "cases":
        with open("probe_im2col.txt", "w") as f:
            for r in rows():
                f.write(" ".join(str(int(x)) for x in r) + "\n")
    else:
        res = [ln.split() for ln in open(sys.argv[2]) if ln.strip()]
        args = np.array(rows(), dtype=np.int64)
        assert len(res) == len(args)
        np.savez_compressed(sys.argv[3], args=args,
                            result=np.array([int(r[0]) for r in res], np.int32),
                            map=np.array([np.frombuffer(bytes.fromhex(r[1]), np.uint8)
                                          for r in res]),
                            machine=np.array(open(sys.argv[4]).read()))   # info.txt

"""Device side: pack the raw u32 result files of `mufu range` into first differences, lzma'd.

    python3 pack.py OUT.npz NAME=START:COUNT:FILE ...

Each block k is stored as start, count and the lzma stream of the first differences of its
results (int8 where they fit, else int32); the first entry is the first result itself.
Unpack: np.cumsum(diff, dtype=np.int64).astype(np.uint32)."""
import lzma
import sys

import numpy as np

out = {}
for spec in sys.argv[2:]:
    name, rest = spec.split("=")
    start, count, path = rest.split(":")
    r = np.fromfile(path, dtype="<u4").astype(np.int64)
    d = np.diff(r, prepend=0)
    d[0] = r[0]
    dt = np.int8 if (d[1:].min() >= -128 and d[1:].max() <= 127 and r[0] < 128) else np.int32
    if dt is np.int8:
        first = r[0]
        d[0] = 0
    else:
        first = 0
    blob = lzma.compress(d.astype(dt).tobytes(), preset=6)
    out[name + "_start"] = np.uint32(int(start, 0))
    out[name + "_count"] = np.int64(int(count, 0))
    out[name + "_first"] = np.int64(first)
    out[name + "_dtype"] = np.str_(np.dtype(dt).name)
    out[name + "_xz"] = np.frombuffer(blob, np.uint8)
    print(name, dt.__name__, len(blob), "bytes", flush=True)
np.savez(sys.argv[1], **out)

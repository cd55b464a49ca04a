"""Pack capture.cu's output folder into the compressed vectors the tests replay.

    python hardware/tensormap/pack.py REC_DIR tests/data/hardware/tensormap/tensormap_sm90.npz
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from records import ENC, REP, TMA  # noqa: E402

# the host-call cases of capture.cu (id -> what it does); host.txt holds "host ID RESULT EXTRA"
HOST_CASES = {
    0: "cuMemAlloc before cuInit", 1: "cuInit(1)", 2: "cuMemAlloc without a context",
    3: "cuDeviceGet(7)", 10: "cuMemFree twice", 11: "cuMemFree(0)",
    12: "cuMemFree(p + 16)", 13: "cuMemAlloc(0)", 14: "cuMemcpyHtoD past the end",
    15: "cuMemcpyDtoH from freed memory", 16: "cuModuleGetFunction of a missing name",
    17: "launch with 60000 B dynamic shared memory, no attribute",
    18: "MAX_DYNAMIC_SHARED_SIZE_BYTES = 232449",
    19: "launch with 100001 B, attribute 100000", 20: "cluster 16 without NON_PORTABLE",
    21: "cluster 16 with NON_PORTABLE", 22: "cluster 32 with NON_PORTABLE",
    23: "grid 6, cluster 4", 24: "cluster 4 for a .reqnctapercluster 2 kernel",
    25: "grid 3 for a .reqnctapercluster 2 kernel", 26: "block 1025",
    27: "block 256 for .maxntid 128", 28: "blockDim.z 65", 29: "gridDim.y 65536",
    30: "load PTX .target sm_100a", 31: "load PTX .version 9.9", 32: "load PTX with a bad opcode",
    33: "cuEventElapsedTime, events not recorded", 34: "cuEventElapsedTime, DISABLE_TIMING",
    35: "cuMemHostGetDevicePointer of pageable memory", 36: "cuMemFreeHost of a device pointer",
    37: "cuFuncGetAttribute(99)", 38: "cuDeviceGetAttribute(9999)", 39: "cuStreamDestroy(0)",
    40: "kernelParams and extra both given", 41: "kernel stores to address 0x10 (then cuMemAlloc)",
    42: "kernel executes trap", 43: "kernel stores misaligned", 44: ".explicitcluster kernel, no cluster",
    45: "cooperative launch of 100000 CTAs", 46: "default MAX_DYNAMIC_SHARED_SIZE_BYTES (extra)",
    47: "NUM_REGS of a one-store kernel (extra)", 48: "cuMemAlloc(2^50)",
    49: "distance between two 1000-byte allocations (result)",
    50: "pinned host pointer == its device pointer (result 1 = yes)",
    51: "cuTensorMapEncodeTiled, address 0, rank 1, strides NULL",
    52: "cuModuleGetFunction on an unloaded module", 53: "kernelParams NULL for a kernel with a parameter",
}


def main(rec: Path, out: Path) -> None:
    tiled = np.fromfile(rec / "tiled.bin", ENC)
    im2col = np.fromfile(rec / "im2col.bin", ENC)
    reps = np.concatenate([np.fromfile(p, REP) for p in sorted(rec.glob("replace_*.bin"))])
    bases, base_index = np.unique(reps["before"], axis=0, return_inverse=True)
    tma = np.concatenate([np.fromfile(p, TMA) for p in sorted(rec.glob("tma_0*.bin"))])
    host = [line.split() for line in (rec / "host.txt").read_text().splitlines()
            if line.startswith("host ") and "crashed" not in line]
    host = np.array([[int(x) for x in h[1:4]] for h in host], np.int64)
    info = (rec / "info.txt").read_text()

    def enc(a):
        keep = [n for n in ENC.names if n != "map"]
        return {f"{n}": a[n] for n in keep} | {"map": a["map"]}

    arrays = {f"tiled_{k}": v for k, v in enc(tiled).items()}
    arrays |= {f"im2col_{k}": v for k, v in enc(im2col).items()}
    arrays |= {"replace_base": base_index.astype(np.int16).reshape(-1),
               "replace_bases": bases, "replace_field": reps["field"].astype(np.int8),
               "replace_ord": reps["ord"].astype(np.int8),
               "replace_loaded": reps["loaded"].astype(np.int16),
               "replace_value": reps["value"], "replace_after": reps["after"]}
    arrays |= {"tma_kind": tma["kind"], "tma_result": tma["result"], "tma_c": np.stack(
        [tma["c0"], tma["c1"]], 1), "tma_map": tma["map"], "tma_out": tma["out"][:, :1024],
        "tma_tensor": np.fromfile(rec / "tma_tensor.bin", np.uint16)}
    arrays |= {"host": host, "host_names": np.array([HOST_CASES.get(int(i), "?")
                                                     for i in host[:, 0]])}
    arrays["machine"] = np.array(info)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **arrays)
    print(out, out.stat().st_size, "bytes;", len(tiled), "tiled,", len(im2col), "im2col,",
          len(reps), "replace,", len(tma), "tma,", len(host), "host")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))

"""The PTX inside a CUDA fat binary (what nvcc embeds in a program and hands to
`__cudaRegisterFatBinary`, or what `cuModuleLoadFatBinary` takes).

A fat binary is a sequence of containers; each container holds entries of PTX text (kind 1) or
an ELF cubin of SASS (kind 2), each for one architecture. Recent nvcc compresses the payloads:
nvcc 13.0 PTX is a Zstandard frame (RFC 8878), older releases an LZ4 block. Both decompressors
are here in plain Python (no dependency), enough for what nvcc writes: every block and literals
type, FSE and predefined tables, repeat offsets; dictionaries are refused by name.

Layout (little-endian; the field names are ours, the offsets those nvcc 13.0 writes and
`cuobjdump` reads):

    container: u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size of its entries
    entry:     u16 kind (1 PTX, 2 ELF), u16 version, u32 header size, u64 payload size,
               u32 compressed size, u32 -, u16 minor, u16 major, u32 arch (100 = sm_100),
               u32 name offset, u32 name size, u64 flags, u64 -, u64 uncompressed size
    flags:     0x2000 the payload is an LZ4 block; a Zstandard frame is known by its magic
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from ptxsim.errors import PtxsimError

FATBIN_MAGIC = 0xBA55ED50
WRAPPER_MAGIC = 0x466243B1            # __fatBinC_Wrapper_t (nvcc's host-side wrapper struct)
KIND_PTX, KIND_ELF = 1, 2
FLAG_LZ4 = 0x2000
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class FatbinError(PtxsimError, ValueError):
    """A fat binary (or a compressed payload in it) that cannot be read."""


@dataclass(frozen=True)
class Entry:
    kind: int             # KIND_PTX or KIND_ELF
    arch: int             # 100 for sm_100 / compute_100
    payload: bytes        # decompressed

    @property
    def text(self) -> str:
        return self.payload.split(b"\0", 1)[0].decode("utf-8", "replace")

    @property
    def target(self) -> str | None:
        """The PTX's .target (e.g. sm_100a), for a PTX entry."""
        m = re.search(r"^\s*\.target\s+(\w+)", self.text, re.M) if self.kind == KIND_PTX else None
        return m[1] if m else None


def is_fatbin(data: bytes) -> bool:
    return len(data) >= 16 and struct.unpack_from("<I", data)[0] == FATBIN_MAGIC


def fatbin_size(data: bytes) -> int:
    """Bytes of the container sequence that starts `data` (header sizes + entry sizes)."""
    off = 0
    while off + 16 <= len(data) and struct.unpack_from("<I", data, off)[0] == FATBIN_MAGIC:
        _, _, hsize, fsize = struct.unpack_from("<IHHQ", data, off)
        off += hsize + fsize
    return off


def entries(data: bytes) -> list[Entry]:
    """Every entry of every container, payloads decompressed."""
    data = bytes(data)
    if not is_fatbin(data):
        raise FatbinError("not a fat binary (no 0xBA55ED50 magic)")
    out, off = [], 0
    while off + 16 <= len(data) and struct.unpack_from("<I", data, off)[0] == FATBIN_MAGIC:
        _, _, hsize, fsize = struct.unpack_from("<IHHQ", data, off)
        pos, end = off + hsize, off + hsize + fsize
        if end > len(data):
            raise FatbinError(f"fat binary container at {off} claims {fsize} bytes, "
                              f"{len(data) - off - hsize} present")
        while pos + 64 <= end:
            kind, _, ehsize, psize = struct.unpack_from("<HHIQ", data, pos)
            csize, = struct.unpack_from("<I", data, pos + 16)
            arch, = struct.unpack_from("<I", data, pos + 28)
            flags, = struct.unpack_from("<Q", data, pos + 40)
            usize, = struct.unpack_from("<Q", data, pos + 56)
            if ehsize < 64 or pos + ehsize + psize > end:
                raise FatbinError(f"fat binary entry at {pos} has a bad size")
            raw = data[pos + ehsize:pos + ehsize + psize]
            out.append(Entry(kind, arch, _payload(raw, csize, usize, flags)))
            pos += ehsize + psize
        off = end
    return out


def _payload(raw: bytes, csize: int, usize: int, flags: int) -> bytes:
    if raw[:4] == ZSTD_MAGIC:
        return zstd_decompress(raw[:csize] if csize else raw)
    if flags & FLAG_LZ4 and usize:
        return lz4_block_decompress(raw[:csize] if csize else raw, usize)
    return raw


def ptx_entries(data: bytes) -> list[Entry]:
    return [e for e in entries(data) if e.kind == KIND_PTX]


def describe(data: bytes) -> str:
    """'PTX compute_100, SASS sm_90' — what a fat binary holds, for error messages."""
    try:
        es = entries(data)
    except FatbinError as e:
        return f"unreadable ({e})"
    parts = [f"{'PTX compute' if e.kind == KIND_PTX else 'SASS sm'}_{e.arch}" for e in es]
    return ", ".join(parts) or "nothing"


# =================================================================================== LZ4 block
def lz4_block_decompress(src: bytes, size: int) -> bytes:
    """An LZ4 block (the LZ4 block format: token, literals, 2-byte offset, match length)."""
    out = bytearray()
    i, n = 0, len(src)
    try:
        while i < n:
            token = src[i]
            i += 1
            lit = token >> 4
            if lit == 15:
                while True:
                    b = src[i]
                    i += 1
                    lit += b
                    if b != 255:
                        break
            out += src[i:i + lit]
            i += lit
            if i >= n:
                break
            off = src[i] | src[i + 1] << 8
            i += 2
            ml = token & 15
            if ml == 15:
                while True:
                    b = src[i]
                    i += 1
                    ml += b
                    if b != 255:
                        break
            ml += 4
            if off == 0 or off > len(out):
                raise FatbinError(f"LZ4 match offset {off} before the start of the output")
            _copy_match(out, off, ml)
    except IndexError:
        raise FatbinError("LZ4 block ends inside a sequence") from None
    if len(out) != size:
        raise FatbinError(f"LZ4 block gives {len(out)} bytes, the header says {size}")
    return bytes(out)


def _copy_match(out: bytearray, off: int, ml: int) -> None:
    start = len(out) - off
    if off >= ml:
        out += out[start:start + ml]
        return
    chunk = out[start:]                      # overlapping: the last `off` bytes repeat
    reps, rest = divmod(ml, off)
    out += chunk * reps + chunk[:rest]


# ================================================================================== Zstandard
# RFC 8878. Tables: 3.1.1.3.2.1.1 (literal-length codes), .1.3 (match-length codes), the
# predefined distributions of 3.1.1.3.2.2.
LL_BASE = list(range(16)) + [16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048,
                             4096, 8192, 16384, 32768, 65536]
LL_BITS = [0] * 16 + [1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
ML_BASE = [i + 3 for i in range(32)] + [35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259,
                                        515, 1027, 2051, 4099, 8195, 16387, 32771, 65539]
ML_BITS = [0] * 32 + [1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
LL_DEFAULT = ([4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1,
               1, 1, 1, 1, -1, -1, -1, -1], 6)
ML_DEFAULT = ([1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
               1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1],
              6)
OF_DEFAULT = ([1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1,
               -1, -1], 5)


class _Forward:
    """Little-endian bit reader from the start (FSE table descriptions)."""

    def __init__(self, data: bytes, pos: int = 0):
        self.data, self.bit = data, pos * 8

    def read(self, n: int) -> int:
        b = self.bit
        v = int.from_bytes(self.data[b >> 3:(b + n + 7 >> 3) + 1], "little") >> (b & 7)
        self.bit += n
        return v & ((1 << n) - 1)

    def peek(self, n: int) -> int:
        b = self.bit
        return (int.from_bytes(self.data[b >> 3:(b + n + 7 >> 3) + 1], "little")
                >> (b & 7)) & ((1 << n) - 1)

    @property
    def nbytes(self) -> int:
        return (self.bit + 7) >> 3


class _Backward:
    """The reverse bit stream of Huffman and FSE payloads: read from the last byte's highest
    set bit (the end marker) down; bits past the start read as 0."""

    def __init__(self, data: bytes):
        if not data or data[-1] == 0:
            raise FatbinError("Zstandard bit stream without its end marker")
        self.data = data
        self.pos = 8 * len(data) - 8 + data[-1].bit_length() - 1

    def read(self, n: int) -> int:
        if n == 0:
            return 0
        p = self.pos - n
        self.pos = p
        if p >= 0:
            lo = p >> 3
            hi = (p + n - 1 >> 3) + 1
            return (int.from_bytes(self.data[lo:hi], "little") >> (p & 7)) & ((1 << n) - 1)
        top = p + n
        v = int.from_bytes(self.data[:(top + 7) >> 3], "little") & ((1 << top) - 1) if top > 0 \
            else 0
        return v << -p

    def peek(self, n: int) -> int:
        p = self.pos - n
        if p >= 0:
            return (int.from_bytes(self.data[p >> 3:(p + n - 1 >> 3) + 1], "little")
                    >> (p & 7)) & ((1 << n) - 1)
        top = p + n
        v = int.from_bytes(self.data[:(top + 7) >> 3], "little") & ((1 << top) - 1) if top > 0 \
            else 0
        return v << -p


def _fse_counts(r: _Forward, max_symbol: int, max_log: int) -> tuple[list[int], int]:
    """An FSE table description (RFC 8878 4.1.1) -> (normalised counts, accuracy log)."""
    log = r.read(4) + 5
    if log > max_log:
        raise FatbinError(f"Zstandard FSE accuracy log {log} above {max_log}")
    remaining = (1 << log) + 1
    threshold = 1 << log
    nbits = log + 1
    counts: list[int] = []
    while remaining > 1 and len(counts) <= max_symbol:
        mx = (2 * threshold - 1) - remaining
        low = r.peek(nbits - 1)
        if low < mx:
            r.read(nbits - 1)
            count = low
        else:
            count = r.read(nbits)
            if count >= threshold:
                count -= mx
        count -= 1
        remaining -= -count if count < 0 else count
        counts.append(count)
        if count == 0:
            while True:
                rep = r.read(2)
                counts += [0] * rep
                if rep != 3:
                    break
        while remaining < threshold:
            nbits -= 1
            threshold >>= 1
    if remaining != 1 or len(counts) > max_symbol + 1:
        raise FatbinError("Zstandard FSE table description is corrupt")
    return counts, log


def _fse_table(counts: list[int], log: int):
    """Decoding table: per state (symbol, bits to read, baseline)."""
    size = 1 << log
    sym = [0] * size
    high = size - 1
    nxt = []
    for s, c in enumerate(counts):
        if c == -1:
            sym[high] = s
            high -= 1
            nxt.append(1)
        else:
            nxt.append(c)
    pos, step, mask = 0, (size >> 1) + (size >> 3) + 3, size - 1
    for s, c in enumerate(counts):
        for _ in range(max(c, 0)):
            sym[pos] = s
            pos = (pos + step) & mask
            while pos > high:
                pos = (pos + step) & mask
    if pos != 0:
        raise FatbinError("Zstandard FSE table does not fill its states")
    nb, base = [0] * size, [0] * size
    for st in range(size):
        s = sym[st]
        x = nxt[s]
        nxt[s] += 1
        b = log - (x.bit_length() - 1)
        nb[st], base[st] = b, (x << b) - size
    return sym, nb, base, log


def _rle_table(symbol: int):
    return [symbol], [0], [0], 0


class _Huffman:
    def __init__(self, weights: list[int]):
        total = sum(1 << (w - 1) for w in weights if w)
        if total == 0:
            raise FatbinError("Zstandard Huffman weights are all zero")
        maxbits = total.bit_length()
        left = (1 << maxbits) - total
        if left & (left - 1):
            raise FatbinError("Zstandard Huffman weights do not complete a tree")
        weights = weights + [left.bit_length()]
        self.maxbits = maxbits
        size = 1 << maxbits
        self.sym = [0] * size
        self.nb = [0] * size
        pos = 0
        for w in range(1, maxbits + 1):
            for s, ws in enumerate(weights):
                if ws == w:
                    n = 1 << (w - 1)
                    self.sym[pos:pos + n] = [s] * n
                    self.nb[pos:pos + n] = [maxbits + 1 - w] * n
                    pos += n
        if pos != size:
            raise FatbinError("Zstandard Huffman table is incomplete")

    def decode(self, stream: bytes, n: int, out: bytearray) -> None:
        r = _Backward(stream)
        sym, nb, mb = self.sym, self.nb, self.maxbits
        data = r.data
        p = r.pos
        for _ in range(n):
            q = p - mb
            if q >= 0:
                v = (int.from_bytes(data[q >> 3:(p - 1 >> 3) + 1], "little") >> (q & 7)) \
                    & ((1 << mb) - 1)
            else:
                r.pos = p
                v = r.peek(mb)
            out.append(sym[v])
            p -= nb[v]
        if p != 0:
            raise FatbinError("Zstandard Huffman stream does not end where its symbols do")


def _huffman_tree(src: bytes, pos: int) -> tuple[_Huffman, int]:
    head = src[pos]
    pos += 1
    if head >= 128:                                  # direct 4-bit weights
        n = head - 127
        raw = src[pos:pos + (n + 1) // 2]
        weights = []
        for b in raw:
            weights += [b >> 4, b & 15]
        return _Huffman(weights[:n]), pos + (n + 1) // 2
    data = src[pos:pos + head]                       # FSE-compressed weights
    r = _Forward(data)
    counts, log = _fse_counts(r, 255, 6)
    sym, nb, base, _ = _fse_table(counts, log)
    br = _Backward(data[r.nbytes:])
    s1, s2 = br.read(log), br.read(log)
    weights = []
    while len(weights) < 256:                        # two interleaved states (4.2.1.2): each
        weights.append(sym[s1])                      # step emits a state's symbol and reads
        s1 = base[s1] + br.read(nb[s1])              # its next state; reading past the
        if br.pos < 0:                               # stream's start ends it, with the other
            weights.append(sym[s2])                  # state's symbol
            break
        weights.append(sym[s2])
        s2 = base[s2] + br.read(nb[s2])
        if br.pos < 0:
            weights.append(sym[s1])
            break
    return _Huffman(weights), pos + head


class _Frame:
    def __init__(self):
        self.huff: _Huffman | None = None
        self.tables = {"ll": None, "of": None, "ml": None}
        self.rep = [1, 4, 8]


def zstd_decompress(src: bytes) -> bytes:
    """Every Zstandard frame of `src` (skippable frames skipped), concatenated."""
    src = bytes(src)
    out = bytearray()
    pos = 0
    while pos < len(src):
        magic = struct.unpack_from("<I", src, pos)[0] if pos + 4 <= len(src) else 0
        if magic & 0xFFFFFFF0 == 0x184D2A50:         # skippable frame
            size, = struct.unpack_from("<I", src, pos + 4)
            pos += 8 + size
            continue
        if src[pos:pos + 4] != ZSTD_MAGIC:
            if pos and not any(src[pos:]):           # zero padding after the last frame
                break
            raise FatbinError(f"no Zstandard frame at byte {pos}")
        pos = _frame(src, pos + 4, out)
    return bytes(out)


def _frame(src: bytes, pos: int, out: bytearray) -> int:
    desc = src[pos]
    pos += 1
    fcs_flag, single, checksum, dict_flag = desc >> 6, desc >> 5 & 1, desc >> 2 & 1, desc & 3
    if desc & 8:
        raise FatbinError("Zstandard frame header has its reserved bit set")
    if not single:
        pos += 1                                     # window descriptor
    if dict_flag:
        dsize = (0, 1, 2, 4)[dict_flag]
        did = int.from_bytes(src[pos:pos + dsize], "little")
        pos += dsize
        if did:
            raise FatbinError(f"Zstandard frame needs dictionary {did}, which ptxsim does not "
                              "have")
    fcs_size = (1 if single else 0, 2, 4, 8)[fcs_flag]
    pos += fcs_size
    frame = _Frame()
    start = len(out)
    while True:
        if pos + 3 > len(src):
            raise FatbinError("Zstandard frame ends inside a block header")
        h = int.from_bytes(src[pos:pos + 3], "little")
        pos += 3
        last, btype, bsize = h & 1, h >> 1 & 3, h >> 3
        if btype == 0:
            out += src[pos:pos + bsize]
            pos += bsize
        elif btype == 1:
            out += src[pos:pos + 1] * bsize
            pos += 1
        elif btype == 2:
            _block(src[pos:pos + bsize], frame, out, start)
            pos += bsize
        else:
            raise FatbinError("Zstandard block of the reserved type 3")
        if last:
            break
    return pos + (4 if checksum else 0)


def _literals(b: bytes, frame: _Frame) -> tuple[bytes, int]:
    ltype, sf = b[0] & 3, b[0] >> 2 & 3
    if ltype in (0, 1):
        if sf in (0, 2):
            size, hs = b[0] >> 3, 1
        elif sf == 1:
            size, hs = (b[0] >> 4) + (b[1] << 4), 2
        else:
            size, hs = (b[0] >> 4) + (b[1] << 4) + (b[2] << 12), 3
        if ltype == 0:
            return b[hs:hs + size], hs + size
        return b[hs:hs + 1] * size, hs + 1
    hs, bits = {0: (3, 10), 1: (3, 10), 2: (4, 14), 3: (5, 18)}[sf]
    h = int.from_bytes(b[:hs], "little") >> 4
    regen, comp = h & ((1 << bits) - 1), h >> bits & ((1 << bits) - 1)
    streams = 1 if sf == 0 else 4
    pos = hs
    if ltype == 2:
        frame.huff, pos = _huffman_tree(b, pos)
        comp -= pos - hs
    elif frame.huff is None:
        raise FatbinError("Zstandard treeless literals without an earlier Huffman table")
    data = b[pos:pos + comp]
    lit = bytearray()
    if streams == 1:
        frame.huff.decode(data, regen, lit)
    else:
        s1, s2, s3 = struct.unpack_from("<HHH", data)
        seg = (regen + 3) // 4
        p = 6
        for k, sz in enumerate((s1, s2, s3, comp - 6 - s1 - s2 - s3)):
            frame.huff.decode(data[p:p + sz], seg if k < 3 else regen - 3 * seg, lit)
            p += sz
    return bytes(lit), pos + comp


def _seq_table(b: bytes, pos: int, mode: int, kind: str, frame: _Frame):
    default, max_sym, max_log = {"ll": (LL_DEFAULT, 35, 9), "of": (OF_DEFAULT, 31, 8),
                                 "ml": (ML_DEFAULT, 52, 9)}[kind]
    if mode == 0:
        t = _fse_table(*default)
    elif mode == 1:
        t = _rle_table(b[pos])
        pos += 1
    elif mode == 2:
        r = _Forward(b, pos)
        counts, log = _fse_counts(r, max_sym, max_log)
        t = _fse_table(counts, log)
        pos = r.nbytes
    else:
        t = frame.tables[kind]
        if t is None:
            raise FatbinError(f"Zstandard repeat-mode {kind} table without an earlier one")
    frame.tables[kind] = t
    return t, pos


def _block(b: bytes, frame: _Frame, out: bytearray, start: int) -> None:
    lit, pos = _literals(b, frame)
    n = b[pos]
    if n == 0:
        out += lit
        return
    if n < 128:
        pos += 1
    elif n < 255:
        n = ((n - 128) << 8) + b[pos + 1]
        pos += 2
    else:
        n = b[pos + 1] + (b[pos + 2] << 8) + 0x7F00
        pos += 3
    modes = b[pos]
    pos += 1
    (lls, llb, llbase, lllog), pos = _seq_table(b, pos, modes >> 6, "ll", frame)
    (ofs, ofb, ofbase, oflog), pos = _seq_table(b, pos, modes >> 4 & 3, "of", frame)
    (mls, mlb, mlbase, mllog), pos = _seq_table(b, pos, modes >> 2 & 3, "ml", frame)
    r = _Backward(b[pos:])
    sll, sof, sml = r.read(lllog), r.read(oflog), r.read(mllog)
    rep = frame.rep
    li = 0
    for k in range(n):
        llc, ofc, mlc = lls[sll], ofs[sof], mls[sml]
        ofv = (1 << ofc) + r.read(ofc)
        ml = ML_BASE[mlc] + r.read(ML_BITS[mlc])
        ll = LL_BASE[llc] + r.read(LL_BITS[llc])
        if ofv > 3:
            off = ofv - 3
            rep[2], rep[1], rep[0] = rep[1], rep[0], off
        else:
            i = ofv - 1 + (ll == 0)
            if i == 0:
                off = rep[0]
            elif i == 3:
                off = rep[0] - 1
                rep[2], rep[1], rep[0] = rep[1], rep[0], off
            else:
                off = rep[i]
                if i == 1:
                    rep[1], rep[0] = rep[0], off
                else:
                    rep[2], rep[1], rep[0] = rep[1], rep[0], off
        out += lit[li:li + ll]
        li += ll
        if off <= 0 or off > len(out) - start:
            raise FatbinError(f"Zstandard match offset {off} before the start of the frame")
        _copy_match(out, off, ml)
        if k + 1 < n:
            sll = llbase[sll] + r.read(llb[sll])
            sml = mlbase[sml] + r.read(mlb[sml])
            sof = ofbase[sof] + r.read(ofb[sof])
    if r.pos != 0:
        raise FatbinError("Zstandard sequence stream does not end where its sequences do")
    out += lit[li:]


# =================================================================================== ELF files
def _elf_sections(data: bytes) -> dict[str, tuple[int, int, int, int]]:
    """{name: (type, file offset, size, address)} of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise FatbinError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    _, _, _, _, stroff, strsize = heads[shstrndx]
    names = data[stroff:stroff + strsize]
    out = {}
    for name, stype, _, addr, off, size in heads:
        out[names[name:names.index(b"\0", name)].decode()] = (stype, off, size, addr)
    return out


def elf_section(data: bytes, name: str) -> bytes | None:
    """The bytes of a section (e.g. `.nv_fatbin`, where nvcc puts a program's fat binary)."""
    sec = _elf_sections(data).get(name)
    if sec is None or sec[0] == 8:                    # absent, or SHT_NOBITS
        return None
    return data[sec[1]:sec[1] + sec[2]]


def elf_needed(data: bytes) -> list[str]:
    """The shared libraries an ELF program names (DT_NEEDED)."""
    secs = _elf_sections(data)
    dyn, dynstr = secs.get(".dynamic"), secs.get(".dynstr")
    if dyn is None or dynstr is None:
        return []
    strtab = data[dynstr[1]:dynstr[1] + dynstr[2]]
    out = []
    for k in range(0, dyn[2] - 15, 16):
        tag, val = struct.unpack_from("<qQ", data, dyn[1] + k)
        if tag == 0:
            break
        if tag == 1:                                  # DT_NEEDED
            out.append(strtab[val:strtab.index(b"\0", val)].decode())
    return out

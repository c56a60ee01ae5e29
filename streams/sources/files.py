"""Reading input files: compression sniffed from the magic bytes (gzip, bz2, xz, zstd read;
archives and other compressions refused by name), whole-line chunks and lines with a cap on a
line's length (memory flat in the file size and in its longest line), and a plain progress line
on stderr."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import sys
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, overload

from models.records.reject import Reject
from streams.errors import UserError, open_regular

try:  # a dependency; without it zstd inputs are refused by name
    import zstandard as _zstd
except ImportError:  # pragma: no cover - exercised only where the package is missing
    _zstd = None  # type: ignore[assignment]

GZIP_MAGIC = b"\x1f\x8b"
BZ2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# Inputs refused by name: archives hold files (extract them first), other compressions have no
# reader here (decompress them first).
REFUSED = (
    (b"PK\x03\x04", "zip archive", "extract it first"),
    (b"PK\x05\x06", "zip archive", "extract it first"),
    (b"PK\x07\x08", "zip archive", "extract it first"),
    (b"7z\xbc\xaf\x27\x1c", "7z archive", "extract it first"),
    (b"Rar!\x1a\x07", "rar archive", "extract it first"),
    (b"\x04\x22\x4d\x18", "lz4-compressed input", "decompress it first"),
    (b"\x1f\x9d", "compress (.Z) input", "decompress it first"),
)
TAR_MAGIC_AT = 257  # "ustar" in a tar header (POSIX and GNU)

MAX_LINE_BYTES = 1 << 20  # default of the max_line_bytes setting
LINE_TOO_LONG = "line_too_long"
UTF8_BOM = b"\xef\xbb\xbf"
KEEP_BYTES = 200  # of an overlong line, kept as its reject text
_SKIP_PIECE = 1 << 20  # an overlong line is skipped in pieces of this size


class DamagedInput(Exception):
    """A compressed stream that cannot be read to its end (corrupt or truncated)."""


def _damaged(path: str | Path, why: object) -> UserError:
    return UserError(f"{path}: damaged compressed input ({why}); nothing written")


class _Decompressed(io.RawIOBase):
    """A decompressing reader (bz2, xz, zstd) as a raw stream: its errors become DamagedInput,
    ``fileobj`` is the file on disk (for progress)."""

    def __init__(self, inner: Any, fileobj: BinaryIO, kind: str) -> None:
        super().__init__()
        self.inner, self.fileobj, self.kind = inner, fileobj, kind

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        try:
            n: int = self.inner.readinto(b)
        except (EOFError, lzma.LZMAError) as e:
            raise DamagedInput(f"{self.kind}: {e}") from None
        except OSError as e:
            if e.errno is not None:  # a real I/O error of the file, not of its contents
                raise
            raise DamagedInput(f"{self.kind}: {e}") from None
        except Exception as e:
            if _zstd is not None and isinstance(e, _zstd.ZstdError):
                raise DamagedInput(f"{self.kind}: {e}") from None
            raise
        return n

    def close(self) -> None:
        try:
            self.inner.close()
            self.fileobj.close()
        finally:
            super().close()


def _check_zstd_frames(f: BinaryIO) -> None:
    """Walk the frames of a zstd file (headers and block headers only) and raise DamagedInput if
    it ends inside one: the zstandard stream reader returns a truncated frame's bytes silently.
    Corrupt block contents are found by the decoder itself."""
    f.seek(0, io.SEEK_END)
    size = f.tell()
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        f.seek(pos)
        b = f.read(n)
        if len(b) < n:
            raise DamagedInput("zstd: truncated")
        pos += n
        return b

    while pos < size:
        magic = int.from_bytes(take(4), "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            skip = int.from_bytes(take(4), "little")
            pos += skip
            if pos > size:
                raise DamagedInput("zstd: truncated")
            continue
        if magic != 0xFD2FB528:
            raise DamagedInput(f"zstd: no frame at byte {pos - 4}")
        fhd = take(1)[0]
        single = fhd >> 5 & 1
        fcs = (1 if single else 0, 2, 4, 8)[fhd >> 6]
        take((0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + fcs)
        while True:
            h = int.from_bytes(take(3), "little")
            kind, bsize = h >> 1 & 3, h >> 3
            if kind == 3:
                raise DamagedInput("zstd: reserved block type")
            pos += 1 if kind == 1 else bsize
            if pos > size:
                raise DamagedInput("zstd: truncated")
            if h & 1:
                break
        if fhd >> 2 & 1:
            take(4)  # content checksum
    f.seek(0)


def _refuse(path: str | Path, what: str, advice: str) -> UserError:
    return UserError(f"{path}: {what}; {advice}")


def open_binary(path: str | Path) -> BinaryIO:
    """Open a file for binary reading, decompressing gzip, bz2, xz and zstd transparently (told
    by their magic bytes, not the name). Archives (zip, 7z, rar, tar, also compressed) and other
    compressions are refused by name (UserError); a zstd file that ends inside a frame too.
    Only a regular file is opened (a FIFO, a device or a directory is a UserError before a
    byte is read: :func:`streams.errors.open_regular`)."""
    f = open_regular(path)
    try:
        head = f.read(8)
        f.seek(0)
        g: BinaryIO
        if head.startswith(GZIP_MAGIC):
            gz = gzip.GzipFile(fileobj=f, mode="rb")
            gz.myfileobj = f  # type: ignore[assignment]  # closed with it
            g = gz  # type: ignore[assignment]
        elif head.startswith(BZ2_MAGIC):
            g = _buffered(bz2.BZ2File(f), f, "bz2")
        elif head.startswith(XZ_MAGIC):
            g = _buffered(lzma.LZMAFile(f), f, "xz")
        elif head.startswith(ZSTD_MAGIC):
            if _zstd is None:
                raise _refuse(path, "zstd-compressed input", "decompress it first")
            try:
                _check_zstd_frames(f)
            except DamagedInput as e:
                raise _damaged(path, e) from None
            reader = _zstd.ZstdDecompressor().stream_reader(
                f, read_size=1 << 16, read_across_frames=True
            )
            g = _buffered(reader, f, "zstd")
        else:
            for magic, what, advice in REFUSED:
                if head.startswith(magic):
                    raise _refuse(path, what, advice)
            g = f
        if g is not f:
            try:
                inner = g.peek(TAR_MAGIC_AT + 5)  # type: ignore[attr-defined]
            except (DamagedInput, EOFError, OSError, zlib.error) as e:
                if isinstance(e, OSError) and e.errno is not None:
                    raise
                raise _damaged(path, e) from None
        else:
            inner = f.peek(TAR_MAGIC_AT + 5)
        if inner[TAR_MAGIC_AT : TAR_MAGIC_AT + 5] == b"ustar":
            raise _refuse(path, "tar archive", "extract it first")
        if inner.startswith(UTF8_BOM):  # an editor's byte-order mark is not part of line 1
            g.read(len(UTF8_BOM))
        return g
    except BaseException:
        f.close()
        raise


def _buffered(inner: Any, f: BinaryIO, kind: str) -> BinaryIO:
    return io.BufferedReader(_Decompressed(inner, f, kind), buffer_size=1 << 20)


def open_text(path: str | Path) -> IO[str]:
    """Open a possibly compressed file as UTF-8 text (bad bytes replaced, never fatal). Its lines
    are not capped: use :func:`capped_lines` for input records."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", errors="replace")


def read_text(path: str | Path) -> str:
    """The whole (possibly compressed) file as text, bad bytes replaced."""
    with open_binary(path) as f:
        return f.read().decode("utf-8", "replace")


def check_format(path: str | Path) -> None:
    """Refuse an input whose compression or archive format cannot be read (UserError), before
    the run reads a line."""
    with reading(path), open_binary(path):
        pass


@contextmanager
def reading(path: str | Path) -> Iterator[None]:
    """Turn a damaged input (a truncated or corrupt gzip, bz2, xz or zstd stream) into a
    one-line user error that names the file; the run's outputs are not written."""
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error, DamagedInput) as e:
        raise _damaged(path, e) from None


def raw_position(f: BinaryIO) -> int:
    """Bytes consumed from the file on disk (the compressed position for a compressed file),
    for progress."""
    inner = getattr(f, "fileobj", None)  # gzip
    if inner is None:
        inner = getattr(getattr(f, "raw", None), "fileobj", None)  # bz2, xz, zstd
    return inner.tell() if inner is not None else f.tell()


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line longer than the cap, replaced by an empty line in its chunk."""

    index: int  # of the line in its chunk, from 0
    head: bytes  # its first KEEP_BYTES bytes

    def reject(self, source: str, first_lineno: int) -> Reject:
        text = self.head.decode("utf-8", "replace")
        return Reject(LINE_TOO_LONG, source, first_lineno + self.index, text)


def bare_cr_to_lf(data: bytes) -> bytes:
    """``data`` with each bare CR (one no LF follows) made an LF, byte for byte.

    The rule of every line reader here: a line ends at LF, CRLF or a bare CR, as
    ``bytes.splitlines`` cuts (universal newlines), so a log whose writer ended some lines with
    a lone CR loses none of them to its neighbour; CRLF stays (the parsers take its CR off).
    Lengths and positions stay those of the input (seeking, progress, line caps). A CR that
    ends ``data`` counts as bare: a reader that has more input decides it first
    (:class:`_Universal`). No CR at all, or only CRLF: ``data`` itself (no copy)."""
    crs = data.count(b"\r")
    if crs == 0 or crs == data.count(b"\r\n"):
        return data
    return b"\r\n".join(part.replace(b"\r", b"\n") for part in data.split(b"\r\n"))


class _Universal:
    """A binary file as :func:`line_chunks` reads it: its bytes with each bare CR made an LF
    (:func:`bare_cr_to_lf`), one byte for one, so positions are the file's. A CR at the end of
    what was read is decided by the byte after it, read then and kept for the next call."""

    __slots__ = ("ahead", "f")

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.ahead = b""  # read from the file, not given yet

    def _take(self, n: int) -> bytes:
        """Up to ``n`` bytes as the file has them, the kept ones first."""
        if not self.ahead:
            return self.f.read(n)
        data, self.ahead = self.ahead[:n], self.ahead[n:]
        return data + self.f.read(n - len(data)) if len(data) < n else data

    def seekable(self) -> bool:
        return self.f.seekable()

    def seek_back(self, n: int) -> None:
        """Go back ``n`` bytes of what was given (the kept ones are read again)."""
        self.f.seek(-(n + len(self.ahead)), io.SEEK_CUR)
        self.ahead = b""

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes (one more when they end in the CR of a CRLF)."""
        data = self._take(n)
        if b"\r" not in data:  # the common case: one memchr
            return data
        if data.endswith(b"\r"):
            after = self._take(1)
            if after == b"\n":
                data += after
            else:
                self.ahead = after + self.ahead
        return bare_cr_to_lf(data)

    def readline(self, limit: int) -> bytes:
        """The rest of the current line and its end (LF, CRLF, or a bare CR given as LF), at
        most ``limit`` bytes. Cut after the CR of a CRLF, it ends in that CR (no line end: the
        LF is the next call's), as the file's own ``readline`` would."""
        if not self.ahead:
            raw = self.f.readline(limit)
        else:
            lf = self.ahead.find(b"\n", 0, limit)
            end = lf + 1 if lf >= 0 else limit
            if end <= len(self.ahead):
                raw, self.ahead = self.ahead[:end], self.ahead[end:]
            else:
                raw, self.ahead = self.ahead, b""
                raw += self.f.readline(limit - len(raw))
        cr = raw.find(b"\r")
        if cr < 0 or (cr == len(raw) - 2 and raw.endswith(b"\n")):
            return raw
        if cr == len(raw) - 1:  # cut at the limit, or the end of the file: the next byte says
            after = self._take(1)
            self.ahead = after + self.ahead
            if after == b"\n":
                return raw
        self.ahead = raw[cr + 1 :] + self.ahead
        return raw[:cr] + b"\n"


def _skip_line(f: _Universal) -> None:
    """Read past the end of the current line, in bounded pieces."""
    while True:
        piece = f.readline(_SKIP_PIECE)
        if not piece or piece.endswith(b"\n"):
            return


@overload
def line_chunks(
    f: BinaryIO,
    chunk_bytes: int = ...,
    max_line_bytes: int = ...,
    first_bytes: int | None = ...,
    views: Literal[False] = ...,
) -> Iterator[tuple[bytes, list[LongLine]]]: ...


@overload
def line_chunks(
    f: BinaryIO,
    chunk_bytes: int,
    max_line_bytes: int,
    first_bytes: int | None,
    views: Literal[True],
) -> Iterator[tuple[bytes | memoryview, list[LongLine]]]: ...


def line_chunks(
    f: BinaryIO,
    chunk_bytes: int = 32 << 20,
    max_line_bytes: int = MAX_LINE_BYTES,
    first_bytes: int | None = None,
    views: bool = False,
) -> Iterator[tuple[bytes | memoryview, list[LongLine]]]:
    """Chunks of whole lines: a block, completed up to the end of its last line (each chunk ends
    with a newline except possibly the very last; a line ends at LF, CRLF or a bare CR, which
    the chunk holds as LF: :func:`bare_cr_to_lf`), and the lines in it that were longer than
    ``max_line_bytes`` (without their newline). Such a line is replaced by an empty line, so the
    numbers of the others stay right, and is never held whole: its unread part is skipped in
    bounded pieces. A chunk holds at most ``chunk_bytes + max_line_bytes + 1`` bytes;
    ``first_bytes``: a smaller first block (the reader's first chunk comes sooner). ``views``
    (a seekable file): a chunk may be a memoryview of the block read, the file position set
    back to the start of its unfinished last line, rather than a copy of the block completed
    with the rest of that line (the Moab replay's reader: a copy per chunk was a fifth of its
    time)."""
    cap = max_line_bytes
    size = min(first_bytes or chunk_bytes, chunk_bytes)
    u = _Universal(f)  # lines end at LF, CRLF or a bare CR
    seek_back = views and u.seekable()
    while True:
        block = u.read(size)
        size = chunk_bytes
        if not block:
            return
        tail: bytes | None = None  # head of an overlong unfinished last line
        if not block.endswith(b"\n"):
            start = block.rfind(b"\n") + 1
            have = len(block) - start
            if seek_back and 0 < start and have <= cap and not _long_inside(block, start, cap):
                u.seek_back(have)  # the unfinished line starts the next block
                yield memoryview(block)[:start], []
                continue
            if have <= cap:
                more = u.readline(cap + 1 - have)
                block += more
                have += len(more)
            if have > cap and not block.endswith(b"\n"):
                tail = block[start : start + KEEP_BYTES]
                more = u.readline(KEEP_BYTES - len(tail)) if len(tail) < KEEP_BYTES else b""
                tail += more.removesuffix(b"\n")
                if not more.endswith(b"\n"):
                    _skip_line(u)
                block = block[:start] + b"\n"
        # overlong lines inside the block: hop from line start to the last newline within
        # cap + 1 bytes (about len/cap steps); none there means the line at pos is too long
        spans: list[tuple[int, int]] = []
        n = len(block)
        pos = 0
        while n - pos > cap + 1:
            j = block.rfind(b"\n", pos, pos + cap + 1)
            if j >= 0:
                pos = j + 1
                continue
            k = block.find(b"\n", pos + cap + 1)
            k = n if k < 0 else k
            spans.append((pos, k))
            pos = k + 1
        if not spans and tail is None:
            yield block, []
            continue
        longs: list[LongLine] = []
        parts: list[bytes] = []
        prev = counted = index = 0
        for a, b in spans:
            index += block.count(b"\n", counted, a)
            counted = a
            longs.append(LongLine(index, block[a : min(b, a + KEEP_BYTES)]))
            parts.append(block[prev:a])
            prev = b  # the newline stays: an empty line in its place
        parts.append(block[prev:])
        block = b"".join(parts)
        if tail is not None:
            longs.append(LongLine(block.count(b"\n") - 1, tail))
        yield block, longs


def _long_inside(block: bytes, end: int, cap: int) -> bool:
    """Whether a line of ``block[:end]`` (whole lines) is longer than ``cap``."""
    pos = 0
    while end - pos > cap + 1:
        j = block.rfind(b"\n", pos, pos + cap + 1)
        if j < 0:
            return True
        pos = j + 1
    return False


def capped_lines(
    f: BinaryIO,
    source: str,
    rejects: list[Reject],
    max_line_bytes: int = MAX_LINE_BYTES,
    chunk_bytes: int = 1 << 20,
) -> Iterator[bytes]:
    """The lines of ``f`` without their line end (LF, CRLF or a bare CR). A line longer than
    ``max_line_bytes`` is yielded as an empty line (line numbers stay right) and appended to
    ``rejects`` as ``line_too_long`` with its first 200 bytes, in its place in the stream (when
    the line is reached, so rejects stay in line order with the parser's own)."""
    lineno = 1
    for chunk, longs in line_chunks(f, chunk_bytes, max_line_bytes):
        if b"\r\n" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n")
        lines = chunk.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        if not longs:
            yield from lines
        else:
            at = {ln.index: ln for ln in longs}
            for i, line in enumerate(lines):
                if i in at:
                    rejects.append(at[i].reject(source, lineno))
                yield line
        lineno += len(lines)


class Progress:
    """'replay: 123.4/567.8 MB  1.23 M lines/s' on stderr, at most every half second."""

    def __init__(self, total_bytes: int, label: str = "replay", enabled: bool = True) -> None:
        self.total = max(total_bytes, 1)
        self.label = label
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self._last = 0.0

    def update(self, done_bytes: int, lines: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last < 0.5:
            return
        self._last = now
        rate = lines / max(now - self.t0, 1e-9)
        pct = 100.0 * min(done_bytes, self.total) / self.total
        sys.stderr.write(
            f"\r{self.label}: {done_bytes / 1e6:,.1f}/{self.total / 1e6:,.1f} MB "
            f"({pct:5.1f}%)  {lines:,} lines  {rate / 1e6:.2f} M lines/s "
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()

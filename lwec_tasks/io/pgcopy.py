"""PostgreSQL's binary ``COPY`` format, parsed and built with numpy.

Format (PostgreSQL documentation, "COPY", *Binary Format*): an 11-byte
signature, a 32-bit flags word, a 32-bit header-extension length and the
extension; then one tuple per row — a 16-bit field count and, per field, a
32-bit length (−1 for NULL) followed by that many bytes — and a 16-bit −1
trailer. Every integer is big-endian.

Reading: every column the fast path reads is either an 8-byte value (the
``SELECT`` casts integers to ``bigint`` and numbers to ``double precision``)
or text. While a block holds only 8-byte, non-NULL fields, its rows all have
one size and :func:`numpy.frombuffer` with a big-endian structured dtype
decodes the whole block; a block with NULLs or text is walked by a compiled
scanner (:func:`_scan_rows`) that writes the 8-byte values straight into the
output columns and records where each text value lies. No Python object is
made per row.

Writing: :func:`build_rows` lays out rows whose fields are all constant except
a few per-row columns, with one structured array per block (plus a byte mask
to interleave variable-length text).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numba
import numpy as np
import pyarrow as pa

SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
#: Signature, flags 0 (no OIDs), no header extension.
HEADER = SIGNATURE + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
TRAILER = b"\xff\xff"
NULL_FIELD = b"\xff\xff\xff\xff"

#: Column kinds of a read: an 8-byte big-endian integer or float, or text.
INT8, FLOAT8, TEXT = "int8", "float8", "text"

_NAN_BITS = np.array([np.nan]).view(np.int64)[0]


class CopyFormatError(ValueError):
    """The ``COPY`` stream is not what the reader expected (then the caller reads another way)."""


# ----------------------------------------------------------------------------- reading


@numba.njit(cache=True)
def _scan_rows(buf, pos, ncols, is_text, slot, fixed_out, null_out, out_row, text_off, text_len, max_rows):
    """Decode complete rows of ``buf`` from ``pos``; at most ``max_rows``.

    8-byte fields go to ``fixed_out[slot[j], out_row + r]`` (their bits, as int64),
    NULLs set ``null_out[slot[j], out_row + r]``; text fields' offsets and
    lengths (−1: NULL) go to ``text_off/text_len[slot[j], r]``.

    Returns (rows decoded, position after them, status): status 0 = stopped at
    an incomplete row or after ``max_rows`` rows, 1 = trailer reached (position after
    it), −1 = unexpected field count, −2 = unexpected field width.
    """
    n = buf.shape[0]
    r = 0
    while True:
        if pos + 2 > n:
            return r, pos, 0
        nf = (np.int32(buf[pos]) << 8) | np.int32(buf[pos + 1])
        if nf == 0xFFFF:
            return r, pos + 2, 1
        if r >= max_rows:
            return r, pos, 0
        if nf != ncols:
            return r, pos, -1
        # First make sure the whole row is in the buffer.
        p = pos + 2
        complete = True
        for _ in range(ncols):
            if p + 4 > n:
                complete = False
                break
            length = np.int32(
                (np.uint32(buf[p]) << 24) | (np.uint32(buf[p + 1]) << 16)
                | (np.uint32(buf[p + 2]) << 8) | np.uint32(buf[p + 3])
            )
            p += 4
            if length > 0:
                if p + length > n:
                    complete = False
                    break
                p += length
        if not complete:
            return r, pos, 0
        p = pos + 2
        for j in range(ncols):
            length = np.int32(
                (np.uint32(buf[p]) << 24) | (np.uint32(buf[p + 1]) << 16)
                | (np.uint32(buf[p + 2]) << 8) | np.uint32(buf[p + 3])
            )
            p += 4
            s = slot[j]
            if is_text[j]:
                text_off[s, r] = p
                text_len[s, r] = length
            elif length == 8:
                bits = np.uint64(0)
                for b in range(8):
                    bits = (bits << np.uint64(8)) | np.uint64(buf[p + b])
                fixed_out[s, out_row + r] = np.int64(bits)
            elif length == -1:
                null_out[s, out_row + r] = 1
            else:
                return r, pos, -2
            if length > 0:
                p += length
        pos = p
        r += 1


class BinaryCopyReader:
    """Collects the rows of a binary ``COPY ... TO STDOUT`` into numpy columns.

    Parameters
    ----------
    kinds : kind of each column, in ``SELECT`` order (:data:`INT8`, :data:`FLOAT8`, :data:`TEXT`)
    n_rows : rows expected (a ``count(*)`` in the same snapshot); the 8-byte
        columns are allocated once at this size, so memory stays at about the
        size of the result
    encoding : Python name of the connection's client encoding (text must be UTF-8)

    Feed the stream with :meth:`feed`, then call :meth:`finish`, which returns
    one entry per column: an int64 or float64 array, or a :class:`pyarrow.ChunkedArray`
    of strings, plus the NULL mask of each column (None: no NULLs).
    """

    #: Bytes gathered before a block is decoded.
    block_bytes = 8 << 20

    def __init__(self, kinds: Sequence[str], n_rows: int, encoding: str = "utf-8"):
        if any(kind == TEXT for kind in kinds) and encoding.replace("_", "-").lower() not in ("utf-8", "utf8"):
            raise CopyFormatError(f"text columns need a UTF-8 client encoding, not {encoding!r}")
        self.kinds = list(kinds)
        self.n_rows = int(n_rows)
        self._is_text = np.array([kind == TEXT for kind in kinds], dtype=np.bool_)
        fixed = [j for j, kind in enumerate(kinds) if kind != TEXT]
        text = [j for j, kind in enumerate(kinds) if kind == TEXT]
        self._slot = np.zeros(len(kinds), dtype=np.int64)
        self._slot[fixed] = np.arange(len(fixed))
        self._slot[text] = np.arange(len(text))
        self._fixed_columns = fixed
        self._text_columns = text
        self.fixed_out = np.zeros((len(fixed), self.n_rows), dtype=np.int64)
        self.null_out = np.zeros((len(fixed), self.n_rows), dtype=np.uint8)
        self._text_chunks: list[list[pa.Array]] = [[] for _ in text]
        self._text_nulls: list[list[np.ndarray]] = [[] for _ in text]
        self._row = 0
        self._pending = bytearray()
        self._header_done = False
        self._finished = False
        # All 8-byte columns, no NULLs: rows of one size, decoded with one structured dtype.
        field_dtype = np.dtype([("length", ">i4"), ("value", ">i8")])
        self._row_dtype = None if text else np.dtype([("n", ">i2"), ("fields", field_dtype, (len(kinds),))])

    # -- stream

    def feed(self, data) -> None:
        """Add a piece of the stream (any split); full blocks are decoded at once."""
        self._pending += data
        if len(self._pending) >= self.block_bytes:
            self._decode(final=False)

    def read_from(self, connection, cursor, statement: str) -> None:
        """Run ``COPY ... TO STDOUT (FORMAT BINARY)`` on a psycopg 3 connection and feed its whole stream.

        Rows libpq already holds are taken without psycopg's per-row machinery
        (``PGconn.get_copy_data`` without blocking); only when none is buffered
        does psycopg's ``Copy.read`` wait for the server.
        """
        from psycopg import pq

        pgconn = connection.pgconn
        pending = self._pending
        limit = self.block_bytes
        filled = len(pending)
        with cursor.copy(statement) as copy:
            while True:
                nbytes, data = pgconn.get_copy_data(1)
                if nbytes > 0:
                    pending += data
                    filled += nbytes
                    if filled >= limit:
                        self._decode(final=False)
                        filled = len(pending)
                elif nbytes == 0:  # nothing buffered: psycopg waits for the next row
                    data = copy.read()
                    if not data:  # the COPY ended and psycopg collected its result
                        break
                    pending += data
                    filled += len(data)
                else:
                    # The COPY has ended: collect its final result, as psycopg would.
                    for result in _remaining_results(pgconn):
                        if result.status != pq.ExecStatus.COMMAND_OK:
                            import psycopg

                            message = result.error_message.decode("utf-8", "replace").strip()
                            raise psycopg.DatabaseError(message or "COPY failed")
                    break

    def finish(self) -> tuple[list, list]:
        """Decode what is left; return (columns, NULL masks)."""
        self._decode(final=True)
        if not self._finished:
            raise CopyFormatError("the COPY stream ended without its trailer")
        if self._row != self.n_rows:
            raise CopyFormatError(f"expected {self.n_rows} rows, got {self._row}")
        columns: list = [None] * len(self.kinds)
        masks: list = [None] * len(self.kinds)
        for s, j in enumerate(self._fixed_columns):
            nulls = self.null_out[s].view(np.bool_)
            has_nulls = bool(nulls.any())
            if self.kinds[j] == FLOAT8:
                values = self.fixed_out[s].view(np.float64)
                if has_nulls:
                    values[nulls] = np.nan
            else:
                values = self.fixed_out[s]
            columns[j] = values
            masks[j] = nulls if has_nulls else None
        for s, j in enumerate(self._text_columns):
            columns[j] = pa.chunked_array(self._text_chunks[s], type=pa.string())
            nulls = np.concatenate(self._text_nulls[s]) if self._text_nulls[s] else np.zeros(0, dtype=np.bool_)
            masks[j] = nulls if nulls.any() else None
        return columns, masks

    # -- decoding

    def _decode(self, final: bool) -> None:
        pending = self._pending
        pos = 0
        if not self._header_done:
            if len(pending) < len(SIGNATURE) + 8:
                if final:
                    raise CopyFormatError("the COPY stream is shorter than its header")
                return
            if bytes(pending[:len(SIGNATURE)]) != SIGNATURE:
                raise CopyFormatError("not a binary COPY stream")
            flags, extension = struct.unpack_from(">iI", pending, len(SIGNATURE))
            if flags & (1 << 16):
                raise CopyFormatError("the COPY stream carries OIDs")
            pos = len(SIGNATURE) + 8 + extension
            if len(pending) < pos:
                if final:
                    raise CopyFormatError("the COPY header extension is cut short")
                return
            self._header_done = True
        buf = np.frombuffer(pending, dtype=np.uint8)
        try:
            pos = self._decode_rows(buf, pos)
        finally:
            del buf
        del pending[:pos]
        if final and (pending or not self._finished):
            raise CopyFormatError("the COPY stream ends inside a row or without its trailer")

    def _decode_rows(self, buf: np.ndarray, pos: int) -> int:
        while not self._finished:
            start = pos
            if self._row_dtype is not None:
                pos = self._decode_fixed(buf, pos)
            if pos == start or self._row_dtype is None:
                pos = self._decode_scanned(buf, pos)
            if pos == start:
                break
        return pos

    def _decode_fixed(self, buf: np.ndarray, pos: int) -> int:
        """Decode the leading rows that have every field 8 bytes wide and not NULL."""
        size = self._row_dtype.itemsize
        count = min((buf.shape[0] - pos) // size, self.n_rows - self._row)
        if count <= 0:
            return pos
        rows = np.frombuffer(buf, dtype=self._row_dtype, count=count, offset=pos)
        good = (rows["n"] == len(self.kinds)) & (rows["fields"]["length"] == 8).all(axis=1)
        if not good.all():
            count = int(np.argmin(good))  # rows before the first NULL (or other) row
            rows = rows[:count]
        if count:
            # slot j is column j when every column is 8 bytes wide
            self.fixed_out[:, self._row:self._row + count] = rows["fields"]["value"].T
            self._row += count
        return pos + count * size

    def _decode_scanned(self, buf: np.ndarray, pos: int) -> int:
        ncols = len(self.kinds)
        capacity = self.n_rows - self._row
        # A row takes at least 2 + 4·ncols bytes.
        max_rows = min(capacity, (buf.shape[0] - pos) // (2 + 4 * ncols))
        n_text = len(self._text_columns)
        text_off = np.zeros((n_text, max_rows), dtype=np.int64)
        text_len = np.zeros((n_text, max_rows), dtype=np.int32)
        count, new_pos, status = _scan_rows(
            buf, pos, ncols, self._is_text, self._slot, self.fixed_out, self.null_out, self._row,
            text_off, text_len, max_rows,
        )
        if status == -1:
            raise CopyFormatError("a COPY row has an unexpected number of fields")
        if status == -2:
            raise CopyFormatError("a COPY field has an unexpected width")
        for s in range(n_text):
            self._add_text(buf, text_off[s, :count], text_len[s, :count], s)
        self._row += count
        if status == 1:
            self._finished = True
        elif count == capacity and new_pos + 2 <= buf.shape[0]:
            # Every expected row is read: only the trailer may follow.
            if bytes(buf[new_pos:new_pos + 2]) != TRAILER:
                raise CopyFormatError(f"more rows than the {self.n_rows} counted")
            new_pos += 2
            self._finished = True
        return new_pos

    def _add_text(self, buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, s: int) -> None:
        valid = lengths >= 0
        sizes = np.where(valid, lengths, 0).astype(np.int64)
        ends = np.cumsum(sizes)
        total = int(ends[-1]) if len(ends) else 0
        starts = ends - sizes
        if total >= 2**31:
            raise CopyFormatError("a block of text is too large")
        value_offsets = np.zeros(len(sizes) + 1, dtype=np.int32)
        value_offsets[1:] = ends
        gather = np.repeat(offsets - starts, sizes) + np.arange(total, dtype=np.int64)
        data = buf[gather]
        array = pa.Array.from_buffers(
            pa.string(), len(sizes),
            [pa.py_buffer(np.packbits(valid, bitorder="little")), pa.py_buffer(value_offsets), pa.py_buffer(data)],
            null_count=int((~valid).sum()),
        )
        array.validate(full=True)  # also checks that the text is UTF-8
        self._text_chunks[s].append(array)
        self._text_nulls[s].append(~valid)


def _remaining_results(pgconn) -> list:
    """The results still due on a non-blocking ``PGconn`` (after a COPY's data)."""
    import selectors

    results = []
    with selectors.DefaultSelector() as selector:
        selector.register(pgconn.socket, selectors.EVENT_READ)
        while True:
            while pgconn.is_busy():
                selector.select()
                pgconn.consume_input()
            result = pgconn.get_result()
            if result is None:
                return results
            results.append(result)


# ----------------------------------------------------------------------------- writing


def field(payload: bytes | None) -> bytes:
    """One field: its 32-bit length and bytes, or the NULL marker."""
    if payload is None:
        return NULL_FIELD
    return struct.pack(">i", len(payload)) + payload


def build_rows(
    n_fields: int,
    constant: bytes,
    fixed: Sequence[tuple[str, np.ndarray]],
    text: np.ndarray | None = None,
    text_offsets: np.ndarray | None = None,
) -> np.ndarray:
    """The tuples of one block of rows, as a uint8 array.

    Each row is: the field count, ``constant`` (the already-encoded fields that
    are equal in every row), the fixed-width per-row fields ``fixed`` (each a
    big-endian dtype code and an array of values, one per row), and optionally
    a last text field whose UTF-8 bytes are ``text`` (all rows, concatenated)
    delimited by ``text_offsets`` (length rows + 1).
    """
    n = len(fixed[0][1]) if fixed else len(text_offsets) - 1
    fields = [("n", ">i2"), ("c", f"V{len(constant)}")] if constant else [("n", ">i2")]
    for j, (code, _) in enumerate(fixed):
        fields += [(f"l{j}", ">i4"), (f"v{j}", code)]
    if text is not None:
        fields += [("tl", ">i4")]
    rows = np.empty(n, dtype=np.dtype(fields))
    rows["n"] = n_fields
    if constant:
        rows["c"] = np.frombuffer(constant, dtype=f"V{len(constant)}")[0]
    for j, (code, values) in enumerate(fixed):
        rows[f"l{j}"] = np.dtype(code).itemsize
        rows[f"v{j}"] = values
    if text is None:
        return rows.view(np.uint8)
    sizes = np.diff(text_offsets)
    rows["tl"] = sizes
    head = rows.itemsize
    # Interleave each row's fixed part with its text bytes: a mask marks the fixed bytes.
    counts = np.empty(2 * n, dtype=np.int64)
    counts[0::2] = head
    counts[1::2] = sizes
    is_head = np.repeat(np.tile(np.array([True, False]), n), counts)
    out = np.empty(is_head.shape[0], dtype=np.uint8)
    out[is_head] = rows.view(np.uint8)
    out[~is_head] = text[text_offsets[0]:text_offsets[-1]]
    return out


__all__ = [
    "FLOAT8", "HEADER", "INT8", "TEXT", "TRAILER",
    "BinaryCopyReader", "CopyFormatError", "build_rows", "field",
]

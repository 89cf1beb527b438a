"""Response bodies: the bulk pattern and a byte range of a file."""

from __future__ import annotations

BULK_PATTERN_PERIOD = 251
"""Bulk payload byte at offset i is ``i % 251`` (a prime period, so misordered
or shifted data is detectable)."""

_FILE_BLOCK_BYTES = 1 << 16


class BulkBody:
    """``size_bytes`` of the bulk pattern (byte i = i mod 251)."""

    def __init__(self, size_bytes: int, chunk_bytes: int) -> None:
        self.remaining_bytes = size_bytes
        self._offset = 0
        self._pattern = bytes(range(BULK_PATTERN_PERIOD)) * (
            chunk_bytes // BULK_PATTERN_PERIOD + 2
        )

    def read(self, max_bytes: int) -> bytes:
        """Next at most ``max_bytes`` of the body (empty at the end)."""
        n = min(max_bytes, self.remaining_bytes)
        start = self._offset % BULK_PATTERN_PERIOD
        if start + n > len(self._pattern):
            self._pattern = bytes(range(BULK_PATTERN_PERIOD)) * (n // BULK_PATTERN_PERIOD + 2)
        chunk = self._pattern[start : start + n]
        self._offset += n
        self.remaining_bytes -= n
        return chunk

    def close(self) -> None:
        """Nothing to release."""


class FileBody:
    """Bytes ``[first, first + length)`` of an open file, read in 64 KiB blocks.

    Raises:
        OSError: on open (by the constructor) or on read.
    """

    def __init__(self, path: str, first: int, length: int) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 (closed by close())
        self._file.seek(first)
        self.remaining_bytes = length
        self._block = b""
        self._block_offset = 0

    def read(self, max_bytes: int) -> bytes:
        """Next at most ``max_bytes`` of the range.

        Raises:
            EOFError: the file is shorter than the range (changed under us).
            OSError: the read failed.
        """
        n = min(max_bytes, self.remaining_bytes)
        if n <= 0:
            return b""
        if self._block_offset >= len(self._block):
            self._block = self._file.read(min(max(_FILE_BLOCK_BYTES, n), self.remaining_bytes))
            self._block_offset = 0
            if not self._block:
                raise EOFError(f"file ended {self.remaining_bytes} bytes early")
        chunk = self._block[self._block_offset : self._block_offset + n]
        self._block_offset += len(chunk)
        self.remaining_bytes -= len(chunk)
        return chunk

    def close(self) -> None:
        """Close the file (idempotent)."""
        self._file.close()


Body = BulkBody | FileBody

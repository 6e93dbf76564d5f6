"""Stored (uncompressed) zip archives with fixed timestamps, written directly: the xlsx container.

The bytes are exactly those ``zipfile`` writes for ``ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))`` entries
with ``compress_type = ZIP_STORED``, ``create_system = 0`` and ``external_attr = 0o644 << 16`` into a seekable
buffer (no data descriptors, no zip64, ASCII names), without its per-entry machinery: an archive's leading,
fixed parts are laid out once, and only its last part is written per archive. Storing rather than
compressing keeps the bytes independent of the zlib build of the machine.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

_LOCAL = "<4s2B4HL2L2H"
_CENTRAL = "<4s4B4HL2L5H2L"
_END = "<4s4H2LH"
_VERSION = 20  # what zipfile writes as the version made by and needed to extract
_STORED = 0
_DOS_TIME = 0  # 00:00:00
_DOS_DATE = 1 << 5 | 1  # 1980-01-01
_ATTRIBUTES = 0o644 << 16
_LOCAL_SIZE = struct.calcsize(_LOCAL)
_CENTRAL_SIZE = struct.calcsize(_CENTRAL)
_END_SIZE = struct.calcsize(_END)


def _entry(name: str, data: bytes, offset: int) -> tuple[bytes, bytes]:
    """The local header (the data follows it) and the central directory entry of a part at ``offset``."""
    encoded = name.encode("ascii")  # ASCII names: no UTF-8 flag
    crc = zlib.crc32(data)
    size = len(data)
    local = struct.pack(
        _LOCAL, b"PK\x03\x04", _VERSION, 0, 0, _STORED, _DOS_TIME, _DOS_DATE, crc, size, size, len(encoded), 0
    )
    central = struct.pack(
        _CENTRAL,
        b"PK\x01\x02",
        _VERSION,
        0,  # create_system
        _VERSION,
        0,  # reserved
        0,  # flag bits
        _STORED,
        _DOS_TIME,
        _DOS_DATE,
        crc,
        size,
        size,
        len(encoded),
        0,  # extra
        0,  # comment
        0,  # disk
        0,  # internal attributes
        _ATTRIBUTES,
        offset,
    )
    return local + encoded, central + encoded


class StoredZip:
    """Archives of the same fixed parts followed by one part of their own."""

    def __init__(self, fixed: Sequence[tuple[str, bytes]]) -> None:
        entries: list[bytes] = []
        directory: list[bytes] = []
        offset = 0
        for name, data in fixed:
            local, central = _entry(name, data, offset)
            entries += [local, data]
            directory.append(central)
            offset += len(local) + len(data)
        self._entries = b"".join(entries)
        self._directory = b"".join(directory)
        self._count = len(fixed) + 1

    def archive(self, name: str, data: bytes) -> bytes:
        """The archive of the fixed parts and ``data`` stored as ``name``."""
        offset = len(self._entries)
        local, central = _entry(name, data, offset)
        directory = self._directory + central
        end = struct.pack(
            _END, b"PK\x05\x06", 0, 0, self._count, self._count, len(directory), offset + len(local) + len(data), 0
        )
        return b"".join((self._entries, local, data, directory, end))

    def size(self, name: str, size: int) -> int:
        """``len(self.archive(name, data))`` for any ``data`` of ``size`` bytes."""
        encoded = len(name.encode("ascii"))
        return len(self._entries) + len(self._directory) + _LOCAL_SIZE + _CENTRAL_SIZE + 2 * encoded + size + _END_SIZE

"""The runtime's pickles, written with a checksum after the data and read back against it.

An unpickler notices a truncated pickle (its last opcode is missing) and nearly always a
garbled one, but not a page of it zeroed inside a long string: the records would load
with part of a conversation replaced. So every pickle the server writes of its records
(`thread_records`) and of the long-term store (`store_journal`) ends with a line
``#crc32 <8 hex digits> <length>``, after the pickle's STOP opcode, where every unpickler
stops reading (the runtime's loader and the playbook's ignore it). `load_checked` checks
it; a file without it (written before, or by another tool such as the playbook's staging
copy) is read as it is, and must end where its pickle ends.
"""

from __future__ import annotations

import functools
import os
import pickle
import re
import threading
import zlib
from pathlib import Path
from typing import Any

_TRAILER = re.compile(rb"#crc32 ([0-9a-f]{8}) ([0-9]{1,15})\n\Z")
"""The line after a checked pickle: the CRC-32 and the length of the pickle before it."""


class DamagedPickle(ValueError):
    """A pickle file does not hold what was written: the cause is the message."""


def with_checksum(data: bytes) -> bytes:
    """``data`` (a pickle) followed by its checksum line."""
    return data + b"#crc32 %08x %d\n" % (zlib.crc32(data), len(data))


def load_checked(data: bytes) -> Any:
    """Unpickle a file's contents, checked against its checksum line when it has one; `DamagedPickle` when not whole.

    Other exceptions are the unpickler's own (a class the data names is gone, a garbled file).
    """
    trailer = _TRAILER.search(data[-48:])
    if trailer is not None:
        crc, length, there = int(trailer.group(1), 16), int(trailer.group(2)), len(data) - len(trailer.group(0))
        if length != there:
            raise DamagedPickle(f"its checksum line gives {length} bytes of data, and {there} are there")
        data = data[:length]
        if zlib.crc32(data) != crc:
            raise DamagedPickle(f"its contents do not match the checksum written with them (CRC-32 {crc:08x})")
    loaded = pickle.loads(data)
    if not data.endswith(b"."):  # every pickle ends with its STOP opcode: these bytes came after it
        raise DamagedPickle("bytes follow the pickled data that are not its checksum line: it is not as it was written")
    return loaded


_WRITING = threading.Lock()
"""One writer at a time (the runtime's flush thread and the start-up write the store's pickle)."""


def write_checked(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` and its checksum line, whole or not at all (a temporary file, then a rename)."""
    with _WRITING:
        temporary = path.with_name(path.name + ".checked.tmp")
        temporary.write_bytes(with_checksum(data))
        os.replace(temporary, path)


def _sync_checked(persistent: Any, protocol: int) -> None:
    if persistent.flag == "r":  # as PersistentDict.sync: a read-only dict is not written
        return
    write_checked(Path(persistent.filename), pickle.dumps(dict(persistent), protocol))


def checksum_on_sync(persistent: Any, protocol: int = 2) -> None:
    """Make a langgraph ``PersistentDict`` write its pickle with a checksum line (its ``sync``: the flush and the stop).

    Protocol 2, as ``PersistentDict.dump`` writes it.
    """
    if not getattr(persistent, "checksummed", False):
        persistent.sync = functools.partial(_sync_checked, persistent, protocol)
        persistent.checksummed = True

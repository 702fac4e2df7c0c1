"""The host's journal: a crash-safe record of a match in progress, for `basra host --resume FILE`.

This module is the file format and its durable storage; what the records say
is the table's business, so records come in and go out as plain dicts.  Each
record is on disk (written and fsynced) before `JournalWriter.append` returns,
and `load_journal` gives back every record or none: a journal with a damaged
or incomplete record anywhere is refused whole, with a `JournalError` that
names the file and the record.

File format
-----------
A journal is the 20-byte line

    basra-net journal 1\\n          (ASCII, ending in one line feed, 0x0A)

followed by records, one after another to the end of the file, with nothing
between them and nothing after the last.  Each record is

    length  4 bytes   the size N of the body, an unsigned big-endian integer,
                      at most 1 MiB (1,048,576)
    body    N bytes   one msgpack map (msgpack with the str and bin types
                      kept apart, as msgpack.packb(use_bin_type=True) writes)
    check   32 bytes  SHA-256(P || body), where P is the check of the record
                      before it or, for the first record, SHA-256 of the
                      20-byte first line

so each check covers the first line and every body up to its own.  Records
are counted from 1.  Record 1 is the header: a map whose "type" is "header".
The records after it are the caller's, in the order they were appended.

A body's values are nil, booleans, integers from -2**63 to 2**64 - 1, str
(UTF-8), bin, arrays and maps whose keys are str; the record's own map counts
as level 1 and no value sits deeper than level 32.  There are no floats and
no extension types.  Arrays read back as lists (a tuple written reads back as
a list).

The check values find damage (a flipped bit, a lost or repeated stretch of
bytes), not forgery: anyone can compute them.

Reading
-------
The file must end right after a complete record.  It is refused if it is
empty, does not begin with the first line, ends inside a record (inside its
length, body or check), declares a body longer than 1 MiB (before reading
it), has a check that does not match, has a body that is not one msgpack map
of the values above, or its record 1 is not a header.  Bytes after the last
record are read as the start of another record, so they are refused as one of
these.

A file cut exactly between two records reads as a shorter journal: there is
no end mark, because records are added as the match goes, and a crash between
two appends leaves exactly such a file.  A writer that is asked to
(`resume(torn_tail=True)`, as `basra serve` does) takes a fault in the last
record (one cut short, or damaged and reaching the end of the file or
claiming to reach past it) as the write a crash interrupted, and cuts it off.

Writing
-------
`JournalWriter.create` makes a new file (never replacing one), readable by
its owner only (it may hold a seed the host has not revealed yet), writes the
first line and the header in one write, fsyncs the file and then its folder.
`append` writes the whole record with one write to the file opened for
appending, then fsyncs it; `append_encoded` writes several records the same
way, with one write and one fsync (the group commit of `basra serve`,
serve_journal.py).  A write that fails is cut back off the file where
possible and the writer takes no more records.  Where the system has flock,
a writer holds an exclusive lock on its file, so a second `basra host
--resume` of the same journal is refused rather than interleaving records.
"""

from __future__ import annotations

import errno
import hashlib
import os
import struct
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import msgpack

from ..protocol.framing import MSGPACK_ERRORS

try:
    import fcntl
except ImportError:  # Windows: no lock against a second writer
    fcntl = None

MAGIC = b"basra-net journal 1\n"
MAX_RECORD = 1 << 20
MAX_DEPTH = 32
CHECK_SIZE = 32

_LENGTH = struct.Struct(">I")
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1
# A folder fsync the file system does not do; anything else is a failed write.
_NO_FOLDER_SYNC = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF})
_O_BINARY = getattr(os, "O_BINARY", 0)
# One packer for every record: packb would make a new one each time, and a packer kept by each table's
# encoder would hold a page of memory per table.  Only values of the types a journal holds are packed
# (_pack_fit), so pack() runs in C without calling back into Python or releasing the GIL: a commit in a
# worker thread may share it.
_PACKER = msgpack.Packer(use_bin_type=True)


class JournalError(Exception):
    """The file is not a journal that can be resumed, or could not be written; the message says what is wrong and where, for a player to read."""


def load_journal(path: Path) -> tuple[dict, list[dict]]:
    """The header and the records after it, or JournalError; never part of a journal."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            header, records, _, _ = _read_journal(f.read, path)
    except OSError as e:
        raise JournalError(_os_problem(path, "cannot be read", e)) from e
    return header, records


class JournalWriter:
    """Adds records to a journal, each on disk before `append` returns.

    Made by `create` (a new journal) or `resume` (one a crashed host left).
    Synchronous on purpose: a record is a few hundred bytes, written from the
    table's trio task.
    """

    def __init__(self, path: Path, fd: int, check: bytes, size: int) -> None:
        # Use create() or resume(): they open, lock and check the file.
        self._path = path
        self._fd: int | None = fd
        self._check = check  # the last record's check value, which the next one chains from
        self._size = size  # bytes of complete records on disk, where a failed write is cut back to
        self._failure: str | None = None

    @classmethod
    def create(cls, path: Path, header: dict, *, magic: bytes = MAGIC) -> JournalWriter:
        """A new journal at path holding header, on disk; JournalError if the file exists or cannot be made.

        ValueError if header is not a map with "type": "header" of the values a journal holds.
        ``magic`` is the first line (another one marks another kind of journal).
        """
        path = Path(path)
        if not isinstance(header, dict) or header.get("type") != "header":
            raise ValueError('a journal header must be a dict with "type": "header"')
        body = _encode(header, "header")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | _O_BINARY, 0o600)
        except FileExistsError as e:
            raise JournalError(f"{path} already exists; a new journal never replaces a file") from e
        except OSError as e:
            raise JournalError(_os_problem(path, "cannot be created", e)) from e
        writer = cls(path, fd, hashlib.sha256(magic).digest(), 0)
        try:
            _lock(fd, path)
            writer._append_bodies([body], prefix=magic)
            try:
                _sync_folder(path.parent)
            except OSError as e:
                raise JournalError(f"{path} cannot be created: {_reason(e)}") from e
        except BaseException:
            writer.close()
            try:
                path.unlink()
            except OSError:
                pass
            raise
        return writer

    @classmethod
    def resume(cls, path: Path, *, magic: bytes = MAGIC, torn_tail: bool = False) -> tuple[JournalWriter, dict, list[dict]]:
        """The journal at path, checked as load_journal does, and a writer that continues it.

        With ``torn_tail``, a last record that is cut short or damaged is the
        write a crash interrupted: it is cut off the file before anything is
        added, and the records before it are kept.
        """
        path = Path(path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | _O_BINARY)
        except OSError as e:
            raise JournalError(_os_problem(path, "cannot be opened to continue it", e)) from e
        try:
            _lock(fd, path)
            # Read through the locked descriptor, so the records checked are the ones continued.
            file_size = os.fstat(fd).st_size
            header, records, check, size = _read_journal(
                partial(os.read, fd), path, magic=magic, file_size=file_size, torn_tail=torn_tail
            )
            if size < file_size:
                os.ftruncate(fd, size)
                os.fsync(fd)
        except OSError as e:
            os.close(fd)
            raise JournalError(_os_problem(path, "cannot be read", e)) from e
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, check, size), header, records

    @property
    def path(self) -> Path:
        return self._path

    @property
    def size(self) -> int:
        """Bytes of complete records on disk."""
        return self._size

    def append(self, record: dict) -> None:
        """Add one record, written and fsynced before this returns.

        ValueError if record is not a map of the values a journal holds (the
        file is untouched); JournalError if it could not be written.
        """
        if self._fd is None:
            raise ValueError(f"the journal {self._path} is closed")
        if self._failure is not None:
            raise JournalError(self._failure)
        self._append_bodies([_encode(record, "record")])

    def append_encoded(self, bodies: list[bytes]) -> None:
        """Add records already encoded by ``encode_record``, all with one write and one fsync."""
        if self._fd is None:
            raise ValueError(f"the journal {self._path} is closed")
        if self._failure is not None:
            raise JournalError(self._failure)
        self._append_bodies(bodies)

    def rename(self, path: Path) -> None:
        """Give the journal the name path, replacing any file there, and make the new name durable."""
        try:
            os.replace(self._path, path)
            _sync_folder(path.parent)
        except OSError as e:
            raise JournalError(f"{self._path} could not be renamed to {path}: {_reason(e)}") from e
        self._path = Path(path)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _append_bodies(self, bodies: list[bytes], prefix: bytes = b"") -> None:
        assert self._fd is not None
        check = self._check
        parts = [prefix]
        for body in bodies:
            check = hashlib.sha256(check + body).digest()
            parts += (_LENGTH.pack(len(body)), body, check)
        data = b"".join(parts)
        try:
            view = memoryview(data)
            while view:  # one write, unless the system takes only part of it
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
        except OSError as e:
            self._failure = f"the journal {self._path} could not be written: {_reason(e)}"
            self._cut_back()
            raise JournalError(self._failure) from e
        self._check = check
        self._size += len(data)

    def _cut_back(self) -> None:
        """Take a partly written record off the end, so the journal still loads with the records before it."""
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, self._size)
            os.fsync(self._fd)
        except OSError:
            pass


def _read_journal(
    read: Callable[[int], bytes], path: Path, *, magic: bytes = MAGIC, file_size: int = 0, torn_tail: bool = False
) -> tuple[dict, list[dict], bytes, int]:
    """Header, records, the last check value and the size in bytes of the records kept; JournalError at the first fault.

    With ``torn_tail``, a fault in the last record of a file of ``file_size``
    bytes (one cut short, or damaged and reaching the end of the file, or
    claiming to reach past it) ends the journal before that record: the
    write a crash interrupted.  A fault in any record before it is damage.
    """
    first = _read_exactly(read, len(magic))
    if not first:
        raise JournalError(f"{path} is empty; it is not a journal")
    if first != magic:
        if magic.startswith(first):
            raise JournalError(f"{path}: the journal ends in its first line; it was cut short")
        raise JournalError(f'{path} is not a basra-net journal (it does not begin with "{magic.decode().strip()}")')
    check = hashlib.sha256(magic).digest()
    size = len(magic)
    records: list[dict] = []
    while True:
        try:
            found = _read_record(read, path, len(records) + 1, check)
        except _RecordFault as fault:
            if torn_tail and records and size + fault.claimed >= file_size:
                break
            raise
        if found is None:
            break
        record, check, length = found
        records.append(record)
        size += length
    if not records:
        raise JournalError(f"{path}: the journal ends before its header; it was cut short")
    return records[0], records[1:], check, size


def _read_record(read: Callable[[int], bytes], path: Path, number: int, check: bytes) -> tuple[dict, bytes, int] | None:
    """The next record, its check value and its size in bytes; None at the end of the file."""
    head = _read_exactly(read, _LENGTH.size)
    if not head:
        return None
    if len(head) < _LENGTH.size:
        raise _cut_short(path, number, _LENGTH.size)
    (length,) = _LENGTH.unpack(head)
    claimed = _LENGTH.size + length + CHECK_SIZE
    if length > MAX_RECORD:
        raise _RecordFault(
            f"{path}: record {number} is damaged or not part of the journal "
            f"(it claims {length} bytes; a record holds at most {MAX_RECORD})",
            claimed,
        )
    body = _read_exactly(read, length)
    stored = _read_exactly(read, CHECK_SIZE) if len(body) == length else b""
    if len(stored) < CHECK_SIZE:
        raise _cut_short(path, number, claimed)
    check = hashlib.sha256(check + body).digest()
    if stored != check:
        raise _RecordFault(f"{path}: record {number} is damaged (its check value does not match)", claimed)
    try:
        record = _decode(body, path, number)
    except JournalError as err:
        raise _RecordFault(str(err), claimed) from None
    if number == 1 and record.get("type") != "header":
        raise JournalError(f'{path}: record 1 is not a journal header (it has no "type": "header")')
    return record, check, claimed


class _RecordFault(JournalError):
    """A record that cannot be read, and how many bytes it takes (or claims to)."""

    def __init__(self, message: str, claimed: int) -> None:
        super().__init__(message)
        self.claimed = claimed


def _cut_short(path: Path, number: int, claimed: int) -> _RecordFault:
    return _RecordFault(f"{path}: the journal ends in the middle of record {number}; it was cut short", claimed)


def _read_exactly(read: Callable[[int], bytes], count: int) -> bytes:
    """count bytes, or fewer only at the end of the file."""
    parts = []
    while count:
        part = read(count)
        if not part:
            break
        parts.append(part)
        count -= len(part)
    return b"".join(parts)


def _decode(body: bytes, path: Path, number: int) -> dict:
    try:
        record = msgpack.unpackb(
            body,
            raw=False,
            strict_map_key=True,
            use_list=True,
            max_str_len=MAX_RECORD,
            max_bin_len=MAX_RECORD,
            max_array_len=MAX_RECORD,
            max_map_len=MAX_RECORD,
            max_ext_len=0,
        )
    except MSGPACK_ERRORS as e:
        raise JournalError(f"{path}: record {number} is not one msgpack map ({e})") from e
    if not isinstance(record, dict):
        raise JournalError(f"{path}: record {number} is not a msgpack map")
    # A decoded integer is always in msgpack's range: a map of the usual shape needs no walk.
    problem = None if _plain_map(record, 1) else _unfit(record)
    if problem is not None:
        raise JournalError(f"{path}: record {number} {problem}")
    return record


def encode_record(record: dict) -> bytes:
    """The body of a journal record, for ``JournalWriter.append_encoded``; ValueError as for ``append``."""
    return _encode(record, "record")


def nested_record_encoder(fixed: dict, key: str) -> Callable[[dict], bytes]:
    """Encode records ``{**fixed, key: value}`` as ``encode_record`` would, checking and packing ``fixed`` once.

    The returned function takes the map ``value`` and gives the record's body;
    ValueError as for ``append``.  Only ``value`` is walked for each record.
    """
    if key in fixed:
        raise ValueError(f"the key {key!r} is the record's own; it cannot be among the fixed ones")
    empty = _encode({**fixed, key: None}, "record")
    head = empty[:-1]  # the map's size, the fixed keys and values, then key; its nil (one byte) cut off

    def encode(value: dict) -> bytes:
        if not isinstance(value, dict):
            raise ValueError(f"a journal record must be a dict, not {type(value).__name__}")
        body = head + _pack_fit(value, 2, "record")
        if len(body) > MAX_RECORD:
            raise ValueError(f"this journal record takes {len(body)} bytes; a record holds at most {MAX_RECORD}")
        return body

    return encode


def decode_record(body: bytes, path: Path, number: int) -> dict:
    """A record encoded by ``encode_record``, checked as a journal's records are; JournalError naming record ``number`` of path."""
    return _decode(body, path, number)


def _encode(record: Any, what: str) -> bytes:
    if not isinstance(record, dict):
        raise ValueError(f"a journal {what} must be a dict, not {type(record).__name__}")
    body = _pack_fit(record, 1, what)
    if len(body) > MAX_RECORD:
        raise ValueError(f"this journal {what} takes {len(body)} bytes; a record holds at most {MAX_RECORD}")
    return body


def _pack_fit(value: dict, level: int, what: str) -> bytes:
    """The map packed, or ValueError saying why it cannot be in a journal record at this level.

    A map of a record's usual shape is packed at once: the packer itself refuses an integer outside
    msgpack's range, which is the journal's, and only then, or for a map of any other shape, is it
    walked by _unfit, which says what is wrong.
    """
    if _plain_map(value, level):
        try:
            return _PACKER.pack(value)
        except OverflowError:
            pass
    problem = _unfit(value, level)
    if problem is not None:
        raise ValueError(f"this journal {what} {problem}")
    return _PACKER.pack(value)


def _plain_map(value: dict, level: int) -> bool:
    """Whether a map at this level has a record's usual shape: str keys; values nil, booleans, integers, str and
    bin, lists of them, or maps of this shape.

    Checked with no call per value but for a map; the integers' range is left to the caller.
    """
    if level >= MAX_DEPTH - 1:
        return False  # a list in it would hold values deeper than MAX_DEPTH
    for key, item in value.items():
        if type(key) is not str:
            return False
        kind = type(item)
        if kind in _PACKED_SCALARS or (kind is list and _PACKED_SCALARS.issuperset(map(type, item))):
            continue
        if kind is dict and _plain_map(item, level + 1):
            continue
        return False
    return True


def _unfit(value: Any, level: int = 1) -> str | None:
    """Why value cannot be in a journal record at this level (the record's map is level 1), or None."""
    if level > MAX_DEPTH:
        return f"nests values more than {MAX_DEPTH} levels deep"
    if value is None or isinstance(value, (bool, str, bytes)):
        return None
    if isinstance(value, int):
        return None if _INT_MIN <= value <= _INT_MAX else f"holds an integer outside msgpack's range ({value})"
    if isinstance(value, msgpack.ExtType):  # a namedtuple, but packed as an extension
        return "holds a msgpack extension type, which a journal does not hold"
    if isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                return f"has a map key of type {type(key).__name__} (keys must be str)"
        items = value.values()
    else:
        return f"holds a {type(value).__name__}, which a journal does not hold"
    inner_scalars_fit = level < MAX_DEPTH
    for item in items:
        kind = type(item)
        # A scalar of an exact type that fits needs no call of its own: a record is mostly such.
        if inner_scalars_fit and (kind in _PLAIN_SCALARS or (kind is int and _INT_MIN <= item <= _INT_MAX)):
            continue
        problem = _unfit(item, level + 1)
        if problem is not None:
            return problem
    return None


_PLAIN_SCALARS = frozenset({type(None), bool, str, bytes})
_PACKED_SCALARS = _PLAIN_SCALARS | {int}  # and the integer's range, which the packer checks


def _lock(fd: int, path: Path) -> None:
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as e:
        raise JournalError(f"{path} is in use by another basra process") from e
    except OSError:
        pass  # a file system without locks: the journal still works, unguarded


def _sync_folder(folder: Path) -> None:
    """Make a new file's name durable, where the system lets a folder be opened and synced."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # Windows: a folder cannot be opened this way
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in _NO_FOLDER_SYNC:
            raise
    finally:
        os.close(fd)


def _reason(e: OSError) -> str:
    return e.strerror.lower() if e.strerror else str(e)


def _os_problem(path: Path, what: str, e: OSError) -> str:
    if isinstance(e, FileNotFoundError):
        return f"{path}: there is no such file"
    if isinstance(e, IsADirectoryError):
        return f"{path} is a folder, not a journal"
    return f"{path} {what}: {_reason(e)}"

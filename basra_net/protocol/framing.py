"""Length-prefixed msgpack frames: encoding, incremental decoding, strict body checks.

A frame is a u32 big-endian length N (1..MAX_FRAME) followed by N bytes holding
exactly one msgpack map. Bodies are decoded against a strict subset of msgpack
(see PROTOCOL.md section 4); anything outside it is a ProtocolError.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import msgpack

from basra_net.protocol.errors import BAD_FRAME, BAD_MSGPACK, ProtocolError

MAX_FRAME = 65536
MAX_DEPTH = 8
# Before the host's `welcome` only a `hello` may come, and a hello is under
# 200 bytes: a peer nobody has admitted yet gets no more than this to decode.
MAX_FRAME_BEFORE_WELCOME = 1024
# Entries of one container.  The longest array a message has is a
# `your_turn`'s moves (1024); the largest map, a message's dozen fields.
MAX_ARRAY_LEN = 1024
MAX_MAP_LEN = 64
# Entries of all containers of one frame together, in a frame a client sends:
# the host's messages can be long (a `your_turn`), a client's never are (a
# `play` has a dozen), so that a seated peer cannot make each frame cost the
# host tens of milliseconds either.
MAX_CLIENT_FRAME_ENTRIES = 1024

_HEADER = struct.Struct(">I")

# First bytes of the container formats; every other first byte is a scalar
# (or a forbidden type), which msgpack decodes for us and we type-check.
_FIXMAP = range(0x80, 0x90)
_FIXARRAY = range(0x90, 0xA0)
_MAP_HEADS = frozenset({*_FIXMAP, 0xDE, 0xDF})
_ARRAY_HEADS = frozenset({*_FIXARRAY, 0xDC, 0xDD})

_SCALAR_TYPES = (type(None), bool, int, str, bytes)

MSGPACK_ERRORS = (msgpack.UnpackException, ValueError, TypeError, OverflowError)  # what msgpack raises for a bad body


# One packer for every frame: packb would make a new one each time.  pack() runs
# in C without releasing the GIL, so sharing it is safe.
_PACKER = msgpack.Packer(use_bin_type=True)


def encode_frame(message: dict[str, Any]) -> bytes:
    """Pack one message as a frame. Raises ValueError if the body exceeds MAX_FRAME."""
    body = _PACKER.pack(message)
    if len(body) > MAX_FRAME:
        raise ValueError(f"message body is {len(body)} bytes, limit is {MAX_FRAME}")
    return _HEADER.pack(len(body)) + body


def decode_body(body: bytes, max_frame: int = MAX_FRAME, max_entries: int | None = None) -> dict[str, Any]:
    """Decode one frame body strictly.

    Raises ProtocolError: bad_msgpack for anything outside the subset
    (including more than ``max_entries`` container entries in all, when
    given), bad_frame for a body longer than ``max_frame``.
    """
    if len(body) > max_frame:
        raise ProtocolError(BAD_FRAME, f"body of {len(body)} bytes exceeds {max_frame}")
    message = _decode_plain(body, max_entries)
    return message if message is not None else _decode_strict(body, max_entries)


def _decode_strict(body: bytes, max_entries: int | None = None) -> dict[str, Any]:
    reader = _BodyReader(body, max_entries)
    if not body or body[0] not in _MAP_HEADS:
        raise ProtocolError(BAD_MSGPACK, "frame body is not a msgpack map")
    message = reader.read_value(depth=1)
    if reader.offset != len(body):
        raise ProtocolError(
            BAD_MSGPACK, f"{len(body) - reader.offset} trailing bytes after the map"
        )
    if "type" not in message:
        raise ProtocolError(BAD_MSGPACK, 'message has no "type" field')
    if type(message["type"]) is not str:
        raise ProtocolError(BAD_MSGPACK, '"type" field is not a str')
    return message


def _unique_keys(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    message = dict(pairs)
    if len(message) != len(pairs):
        raise _Irregular
    return message


class _Irregular(Exception):
    """A body the quick decoding does not vouch for: the strict reader decides, and names the fault."""


def _decode_plain(body: bytes, max_entries: int | None = None) -> dict[str, Any] | None:
    """The body decoded by msgpack in one call, when it is a well-formed map inside the subset; else None.

    Every body goes through here first: what msgpack decodes is then checked
    for everything the strict reader checks (a map at the top with a str
    "type", str keys without repeats, scalar types, depth, the entries of
    each container and of the whole frame), so a body accepted here decodes
    exactly as the strict reader would decode it.  Anything else (malformed,
    trailing bytes, a forbidden type, a lying or too large length) is left
    to the strict reader, which rejects it with its reason.  msgpack's own
    limits stop a header from making it allocate more than the subset allows.
    """
    if not body or body[0] not in _MAP_HEADS:
        return None
    size = len(body)
    try:
        message = msgpack.unpackb(
            body, raw=False, timestamp=0, strict_map_key=False, object_pairs_hook=_unique_keys,
            max_str_len=size, max_bin_len=size, max_array_len=MAX_ARRAY_LEN, max_map_len=MAX_MAP_LEN, max_ext_len=0,
        )
    except (_Irregular, *MSGPACK_ERRORS):
        return None
    if type(message.get("type")) is not str:
        return None
    entries = _entries_if_plain(message, 1)
    if entries < 0 or (max_entries is not None and entries > max_entries):
        return None
    return message


def _entries_if_plain(value: Any, depth: int) -> int:
    """The container entries in ``value`` when it is inside the subset (str keys, allowed scalar
    types, no deeper than MAX_DEPTH); -1 when it is not."""
    kind = type(value)
    if kind is dict:
        if depth > MAX_DEPTH:
            return -1
        total = len(value)
        for key, item in value.items():
            inner = _entries_if_plain(item, depth + 1)
            if type(key) is not str or inner < 0:
                return -1
            total += inner
        return total
    if kind is list:
        if depth > MAX_DEPTH:
            return -1
        total = len(value)
        for item in value:
            inner = _entries_if_plain(item, depth + 1)
            if inner < 0:
                return -1
            total += inner
        return total
    return 0 if kind in _SCALAR_SET else -1


_SCALAR_SET = frozenset(_SCALAR_TYPES)


class _BodyReader:
    """Walks one body, reading containers itself and scalars through msgpack.

    Containers are built element by element rather than by msgpack, which
    would preallocate whatever length a header declares; together with the
    depth limit this keeps memory proportional to the body size.
    """

    def __init__(self, body: bytes, max_entries: int | None = None) -> None:
        self._body = body
        self._entries_left = max_entries
        self._unpacker = msgpack.Unpacker(
            raw=False,
            timestamp=0,
            strict_map_key=False,  # key types are checked here, with a clearer message
            max_buffer_size=MAX_FRAME,
        )
        try:
            self._unpacker.feed(body)
        except MSGPACK_ERRORS as exc:
            raise ProtocolError(BAD_MSGPACK, f"body rejected by msgpack: {exc}") from None

    @property
    def offset(self) -> int:
        return self._unpacker.tell()

    def read_value(self, depth: int) -> Any:
        head = self._peek()
        if head in _MAP_HEADS:
            return self._read_map(depth)
        if head in _ARRAY_HEADS:
            return self._read_array(depth)
        return self._read_scalar()

    def _peek(self) -> int:
        if self.offset >= len(self._body):
            raise ProtocolError(BAD_MSGPACK, "body ends in the middle of a value")
        return self._body[self.offset]

    def _read_map(self, depth: int) -> dict[str, Any]:
        self._check_depth(depth)
        count = self._call(self._unpacker.read_map_header)
        self._check_count(count, 2, "map", MAX_MAP_LEN)
        result: dict[str, Any] = {}
        for _ in range(count):
            head = self._peek()
            if head in _MAP_HEADS or head in _ARRAY_HEADS:
                raise ProtocolError(BAD_MSGPACK, "map key is a container, not a str")
            key = self._read_scalar()
            if type(key) is not str:
                raise ProtocolError(BAD_MSGPACK, f"map key is {type(key).__name__}, not str")
            if key in result:
                # Name the key only when it is short and printable: the text goes back to the peer.
                shown = f"'{key}'" if len(key) <= 32 and key.isprintable() else f"of {len(key)} characters"
                raise ProtocolError(BAD_MSGPACK, f"duplicate map key {shown}")
            result[key] = self.read_value(depth + 1)
        return result

    def _read_array(self, depth: int) -> list[Any]:
        self._check_depth(depth)
        count = self._call(self._unpacker.read_array_header)
        self._check_count(count, 1, "array", MAX_ARRAY_LEN)
        return [self.read_value(depth + 1) for _ in range(count)]

    def _read_scalar(self) -> Any:
        value = self._call(self._unpacker.unpack)
        if type(value) not in _SCALAR_TYPES:
            raise ProtocolError(BAD_MSGPACK, f"forbidden msgpack type {_type_label(value)}")
        return value

    def _check_depth(self, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise ProtocolError(BAD_MSGPACK, f"nesting deeper than {MAX_DEPTH}")

    def _check_count(self, count: int, min_bytes_each: int, kind: str, most: int) -> None:
        # Checked from the header, before any entry is read: a body of tens of
        # thousands of small values is refused as cheaply as a short one.
        if count > most:
            raise ProtocolError(BAD_MSGPACK, f"{kind} of {count} entries; at most {most} are allowed")
        if self._entries_left is not None:
            self._entries_left -= count
            if self._entries_left < 0:
                raise ProtocolError(BAD_MSGPACK, "too many entries in one frame for a message of this sender")
        # Each element needs at least one byte, so a larger count is a lie.
        remaining = len(self._body) - self.offset
        if count * min_bytes_each > remaining:
            raise ProtocolError(
                BAD_MSGPACK,
                f"{kind} declares {count} entries but only {remaining} bytes remain",
            )

    def _call(self, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except MSGPACK_ERRORS as exc:
            raise ProtocolError(BAD_MSGPACK, _describe(exc)) from None


def _type_label(value: Any) -> str:
    if isinstance(value, float):
        return "float"
    if isinstance(value, msgpack.Timestamp):
        return "ext -1 (timestamp)"
    if isinstance(value, msgpack.ExtType):
        return f"ext {value.code}"
    return type(value).__name__


def _describe(exc: Exception) -> str:
    if isinstance(exc, msgpack.OutOfData):
        return "body ends in the middle of a value"
    if isinstance(exc, UnicodeDecodeError):
        return "str is not valid UTF-8"
    if isinstance(exc, msgpack.FormatError):
        return "byte is not a valid msgpack format"
    return f"undecodable msgpack: {str(exc) or type(exc).__name__}"


class FrameDecoder:
    """Reassembles frames from a byte stream delivered in arbitrary chunks.

    After the first error the decoder is poisoned: every later call raises
    that same error, since the stream can no longer be trusted.
    """

    def __init__(self, max_frame: int = MAX_FRAME, max_entries: int | None = None) -> None:
        self._buffer = bytearray()
        self._error: ProtocolError | None = None
        self.max_frame = max_frame  # the longest body accepted now; a host raises it once it has sent `welcome`
        self.max_entries = max_entries  # container entries in one frame, all containers together (None: no limit)
        self.last_body = b""  # the body of the frame next_message returned last: what a signed record hashes

    @property
    def buffered(self) -> int:
        """Number of bytes received but not yet returned as messages."""
        return len(self._buffer)

    @property
    def in_partial_frame(self) -> bool:
        """True when the buffer starts with a frame that has not fully arrived.

        Meaningful after draining complete messages; the caller runs its
        frame-completion deadline while this is true.
        """
        if not self._buffer:
            return False
        if len(self._buffer) < _HEADER.size:
            return True
        (length,) = _HEADER.unpack_from(self._buffer)
        return len(self._buffer) < _HEADER.size + length

    def feed(self, data: bytes) -> None:
        self._raise_if_poisoned()
        self._buffer += data

    def next_message(self) -> dict[str, Any] | None:
        """Return the next complete message, or None until more bytes arrive."""
        body = self.next_body()
        return None if body is None else self.decode(body)

    def next_body(self) -> bytes | None:
        """The next complete frame's body, not yet decoded (see decode), or None until more bytes arrive."""
        self._raise_if_poisoned()
        if len(self._buffer) < _HEADER.size:
            return None
        (length,) = _HEADER.unpack_from(self._buffer)
        if length == 0 or length > self.max_frame:
            self._fail(ProtocolError(BAD_FRAME, f"frame length {length} not in 1..{self.max_frame}"))
        end = _HEADER.size + length
        if len(self._buffer) < end:
            return None
        body = bytes(self._buffer[_HEADER.size : end])
        del self._buffer[:end]
        self.last_body = body
        return body

    def decode(self, body: bytes) -> dict[str, Any]:
        """A body next_body returned, decoded strictly; a fault poisons the decoder as next_message's would."""
        try:
            return decode_body(body, self.max_frame, self.max_entries)
        except ProtocolError as exc:
            self._fail(exc)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Yield every message that is complete in the buffer right now."""
        while (message := self.next_message()) is not None:
            yield message

    def _raise_if_poisoned(self) -> None:
        if self._error is not None:
            # A fresh instance each time, so tracebacks do not pile up on one object.
            raise ProtocolError(self._error.code, self._error.message)

    def _fail(self, error: ProtocolError) -> NoReturn:
        self._error = error
        self._buffer.clear()
        raise error

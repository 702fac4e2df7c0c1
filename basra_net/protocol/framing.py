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

_HEADER = struct.Struct(">I")

# First bytes of the container formats; every other first byte is a scalar
# (or a forbidden type), which msgpack decodes for us and we type-check.
_FIXMAP = range(0x80, 0x90)
_FIXARRAY = range(0x90, 0xA0)
_MAP_HEADS = frozenset({*_FIXMAP, 0xDE, 0xDF})
_ARRAY_HEADS = frozenset({*_FIXARRAY, 0xDC, 0xDD})

_SCALAR_TYPES = (type(None), bool, int, str, bytes)

_MSGPACK_ERRORS = (msgpack.UnpackException, ValueError, TypeError, OverflowError)


def encode_frame(message: dict[str, Any]) -> bytes:
    """Pack one message as a frame. Raises ValueError if the body exceeds MAX_FRAME."""
    body = msgpack.packb(message, use_bin_type=True)
    if len(body) > MAX_FRAME:
        raise ValueError(f"message body is {len(body)} bytes, limit is {MAX_FRAME}")
    return _HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, Any]:
    """Decode one frame body strictly.

    Raises ProtocolError: bad_msgpack for anything outside the subset,
    bad_frame for a body longer than MAX_FRAME.
    """
    if len(body) > MAX_FRAME:
        raise ProtocolError(BAD_FRAME, f"body of {len(body)} bytes exceeds {MAX_FRAME}")
    message = _decode_plain(body)
    return message if message is not None else _decode_strict(body)


def _decode_strict(body: bytes) -> dict[str, Any]:
    reader = _BodyReader(body)
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


def _decode_plain(body: bytes) -> dict[str, Any] | None:
    """The body decoded by msgpack in one call, when it is a well-formed map inside the subset; else None.

    Every body goes through here first: what msgpack decodes is then checked
    for everything the strict reader checks (a map at the top with a str
    "type", str keys without repeats, scalar types, depth), so a body
    accepted here decodes exactly as the strict reader would decode it.
    Anything else (malformed, trailing bytes, a forbidden type, a lying
    length) is left to the strict reader, which rejects it with its reason.
    The declared lengths are capped at the body's size, so no header makes
    msgpack allocate more than the body could fill.
    """
    if not body or body[0] not in _MAP_HEADS:
        return None
    try:
        message = msgpack.unpackb(
            body, raw=False, timestamp=0, strict_map_key=False, object_pairs_hook=_unique_keys,
            max_str_len=len(body), max_bin_len=len(body), max_array_len=len(body), max_map_len=len(body), max_ext_len=0,
        )
    except (_Irregular, *_MSGPACK_ERRORS):
        return None
    if type(message.get("type")) is not str or not _plain(message, 1):
        return None
    return message


def _plain(value: Any, depth: int) -> bool:
    """Inside the subset: str keys, allowed scalar types, containers no deeper than MAX_DEPTH."""
    kind = type(value)
    if kind is dict:
        return depth <= MAX_DEPTH and all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    if kind is list:
        return depth <= MAX_DEPTH and all(_plain(v, depth + 1) for v in value)
    return kind in _SCALAR_SET


_SCALAR_SET = frozenset(_SCALAR_TYPES)


class _BodyReader:
    """Walks one body, reading containers itself and scalars through msgpack.

    Containers are built element by element rather than by msgpack, which
    would preallocate whatever length a header declares; together with the
    depth limit this keeps memory proportional to the body size.
    """

    def __init__(self, body: bytes) -> None:
        self._body = body
        self._unpacker = msgpack.Unpacker(
            raw=False,
            timestamp=0,
            strict_map_key=False,  # key types are checked here, with a clearer message
            max_buffer_size=MAX_FRAME,
        )
        try:
            self._unpacker.feed(body)
        except _MSGPACK_ERRORS as exc:
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
        self._check_count(count, 2, "map")
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
        self._check_count(count, 1, "array")
        return [self.read_value(depth + 1) for _ in range(count)]

    def _read_scalar(self) -> Any:
        value = self._call(self._unpacker.unpack)
        if type(value) not in _SCALAR_TYPES:
            raise ProtocolError(BAD_MSGPACK, f"forbidden msgpack type {_type_label(value)}")
        return value

    def _check_depth(self, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise ProtocolError(BAD_MSGPACK, f"nesting deeper than {MAX_DEPTH}")

    def _check_count(self, count: int, min_bytes_each: int, kind: str) -> None:
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
        except _MSGPACK_ERRORS as exc:
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

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._error: ProtocolError | None = None

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
        self._raise_if_poisoned()
        if len(self._buffer) < _HEADER.size:
            return None
        (length,) = _HEADER.unpack_from(self._buffer)
        if length == 0 or length > MAX_FRAME:
            self._fail(ProtocolError(BAD_FRAME, f"frame length {length} not in 1..{MAX_FRAME}"))
        end = _HEADER.size + length
        if len(self._buffer) < end:
            return None
        body = bytes(self._buffer[_HEADER.size : end])
        del self._buffer[:end]
        try:
            return decode_body(body)
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

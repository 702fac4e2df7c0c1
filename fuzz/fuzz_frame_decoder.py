#!/usr/bin/env python3
"""Fuzz target: the frame decoder and message validation (basra_net/protocol/framing.py, messages.py).

Run for a fixed time (see fuzz/README.md):

    python fuzz/fuzz_frame_decoder.py fuzz/corpus/frame_decoder -dict=fuzz/msgpack.dict -max_total_time=60

How an input is read (FuzzedDataProvider: bytes from the front, integers from the back):

- mode = int 0..3. Mode 3: the rest of the input is one frame body, given to
  decode_body directly (and, with its length header, to a FrameDecoder).
  Modes 0..2: the input is a byte stream fed to one FrameDecoder in chunks:
  repeatedly size = int 0..255, then that many bytes (0: all that is left);
  after each chunk every complete message is pulled (mode 1: by iterating
  the decoder, the others: by next_message).

What counts as a crash:

- any exception other than ProtocolError out of FrameDecoder or decode_body,
  or a ProtocolError with a code other than bad_frame/bad_msgpack;
- from_wire raising anything but ProtocolError(bad_message/unknown_type);
- a ProtocolError whose text could not go to the peer in an `error` message;
- a decoded body outside the msgpack subset, or one that does not re-encode
  to itself;
- a validated message that does not survive to_wire + encode_frame + decode + from_wire;
- a decoder that answers differently depending on how the stream was chunked,
  or that accepts bytes after it has failed.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import atheris
except ImportError:
    atheris = None

if __name__ == "__main__" and atheris is not None:
    with atheris.instrument_imports(include=["basra_net"]):
        import basra_net.protocol.framing  # noqa: F401
        import basra_net.protocol.messages  # noqa: F401

from fuzz_common import check_reportable, check_wire_shape, fuzz_main, make_provider, strict_equal

from basra_net.protocol.errors import BAD_FRAME, BAD_MESSAGE, BAD_MSGPACK, UNKNOWN_TYPE, ProtocolError
from basra_net.protocol.framing import MAX_FRAME, FrameDecoder, decode_body, encode_frame
from basra_net.protocol.messages import from_wire, to_wire

FRAMING_CODES = frozenset({BAD_FRAME, BAD_MSGPACK})
MESSAGE_CODES = frozenset({BAD_MESSAGE, UNKNOWN_TYPE})
ITER_MODE, BODY_MODE = 1, 3


def TestOneInput(data: bytes) -> None:  # noqa: N802 - the name atheris and libFuzzer use
    fdp = make_provider(data)
    mode = fdp.ConsumeIntInRange(0, 3)
    if mode == BODY_MODE:
        _body(fdp.ConsumeBytes(MAX_FRAME + 1))
    else:
        _stream(fdp, by_iteration=mode == ITER_MODE)


def _body(body: bytes) -> None:
    try:
        wire = decode_body(body)
    except ProtocolError as err:
        check_reportable(err, FRAMING_CODES)
        wire = None
    if len(body) <= MAX_FRAME:
        # The decoder must agree with decode_body on the same body behind a header.
        framed = _decode_stream(len(body).to_bytes(4, "big") + body)
        if wire is None:
            assert framed[-1][0] == "error", "the decoder took a body decode_body refused"
        else:
            assert framed == [("message", wire)], "the decoder and decode_body disagree"
    if wire is not None:
        check_message(wire)


def _stream(fdp, by_iteration: bool) -> None:
    decoder = FrameDecoder()
    fed = bytearray()
    outcomes: list[tuple[str, object]] = []
    while fdp.remaining_bytes():
        size = fdp.ConsumeIntInRange(0, 255)
        chunk = fdp.ConsumeBytes(size if size else fdp.remaining_bytes())
        fed += chunk
        try:
            decoder.feed(chunk)
            for wire in decoder if by_iteration else iter(decoder.next_message, None):
                outcomes.append(("message", wire))
                check_message(wire)
        except ProtocolError as err:
            check_reportable(err, FRAMING_CODES)
            outcomes.append(("error", err.code))
            _check_poisoned(decoder, err.code)
            break
        assert decoder.buffered <= len(fed)
        decoder.in_partial_frame  # noqa: B018 - must not raise
    # Chunking must not matter: the same bytes in one piece decode the same way.
    whole = _decode_stream(bytes(fed))
    assert len(whole) == len(outcomes) and all(
        kind == other_kind and (strict_equal(value, other_value) if kind == "message" else value == other_value)
        for (kind, value), (other_kind, other_value) in zip(outcomes, whole)
    ), "the decoder's answer depends on how the bytes were chunked"


def _decode_stream(data: bytes) -> list[tuple[str, object]]:
    decoder = FrameDecoder()
    outcomes: list[tuple[str, object]] = []
    try:
        decoder.feed(data)
        while (wire := decoder.next_message()) is not None:
            outcomes.append(("message", wire))
    except ProtocolError as err:
        outcomes.append(("error", err.code))
    return outcomes


def _check_poisoned(decoder: FrameDecoder, code: str) -> None:
    for attempt in (lambda: decoder.feed(b"\x00\x00\x00\x01\x80"), decoder.next_message):
        try:
            attempt()
        except ProtocolError as again:
            assert again.code == code, "a failed decoder changed its error"
        else:
            raise AssertionError("a failed decoder went on decoding")


def check_message(wire: dict) -> None:
    """Oracles for one decoded wire map."""
    assert type(wire) is dict and type(wire.get("type")) is str
    check_wire_shape(wire)
    # A decoded body re-encodes (never longer than it came) and decodes to itself.
    frame = encode_frame(wire)
    decoder = FrameDecoder()
    decoder.feed(frame)
    again = decoder.next_message()
    assert strict_equal(again, wire) and decoder.buffered == 0, "a decoded body does not re-encode to itself"
    try:
        message = from_wire(wire)
    except ProtocolError as err:
        check_reportable(err, MESSAGE_CODES)
        return
    # A validated message goes back on the wire and comes back the same.
    sent = to_wire(message)
    assert set(sent) <= set(wire), "to_wire added a field the peer did not send"
    decoder = FrameDecoder()
    decoder.feed(encode_frame(sent))
    received = decoder.next_message()
    assert strict_equal(received, sent), "to_wire's map does not survive framing"
    back = from_wire(received)
    assert back == message and strict_equal(to_wire(back), sent), "a message does not survive the round trip"


if __name__ == "__main__":
    fuzz_main(TestOneInput)

import random
import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basra_net.protocol.errors import ERROR_CODES, FATAL_CODES, ProtocolError
from basra_net.protocol.framing import (
    MAX_ARRAY_LEN,
    MAX_DEPTH,
    MAX_FRAME,
    MAX_MAP_LEN,
    FrameDecoder,
    decode_body,
    encode_frame,
)


def frame_of(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def nested(depth: int) -> dict:
    """A message whose containers nest exactly `depth` deep (the top map is 1)."""
    value: object = 0
    for _ in range(depth - 1):
        value = [value]
    return {"type": "nest", "value": value}


SAMPLE_MESSAGES = [
    {"type": "hello", "version": 1, "nonce": bytes(range(32)), "name": "Samira"},
    {"type": "play", "card": "10D", "capture": ["3S", "7H"], "request": 17},
    {"type": "x", "none": None, "yes": True, "no": False, "empty": {}, "list": []},
    {"type": "ints", "values": [0, -1, 127, 128, -33, 2**32, 2**64 - 1, -(2**63)]},
    {"type": "utf8", "text": "مرحبا 🂡", "nested": {"a": {"b": [1, [2, {"c": b""}]]}}},
]


def stream_of(count: int) -> tuple[list[dict], bytes]:
    messages = [
        {**SAMPLE_MESSAGES[i % len(SAMPLE_MESSAGES)], "seq": i} for i in range(count)
    ]
    return messages, b"".join(encode_frame(m) for m in messages)


def decode_bad(body: bytes) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        decode_body(body)
    return info.value


# Errors


def test_protocol_error_text_and_fatality():
    error = ProtocolError("illegal_move", "that card is not in your hand")
    assert (error.code, error.message) == ("illegal_move", "that card is not in your hand")
    assert str(error) == "illegal_move: that card is not in your hand"
    assert not error.fatal
    assert ProtocolError("bad_frame", "x").fatal
    assert FATAL_CODES < ERROR_CODES
    assert ERROR_CODES - FATAL_CODES == {
        "unexpected", "illegal_move", "stale_request", "not_your_turn", "chat_dropped"
    }


def test_protocol_error_refuses_unknown_codes():
    with pytest.raises(ValueError):
        ProtocolError("not_a_code", "x")


# Round trips and chunking


@pytest.mark.parametrize("message", SAMPLE_MESSAGES)
def test_round_trip(message):
    decoder = FrameDecoder()
    decoder.feed(encode_frame(message))
    assert decoder.next_message() == message
    assert decoder.next_message() is None
    assert decoder.buffered == 0


def test_frame_header_is_big_endian_body_length():
    frame = encode_frame({"type": "x"})
    body = msgpack.packb({"type": "x"}, use_bin_type=True)
    assert frame == struct.pack(">I", len(body)) + body


def test_bytes_are_encoded_as_bin_and_come_back_as_bytes():
    frame = encode_frame({"type": "x", "blob": b"\x00\xff"})
    assert b"\xc4\x02\x00\xff" in frame
    assert decode_body(frame[4:])["blob"] == b"\x00\xff"


def test_byte_at_a_time():
    messages, stream = stream_of(40)
    decoder = FrameDecoder()
    received = []
    for i in range(len(stream)):
        decoder.feed(stream[i : i + 1])
        received.extend(decoder)
    assert received == messages
    assert decoder.buffered == 0
    assert not decoder.in_partial_frame


@pytest.mark.parametrize("seed", range(5))
def test_random_chunking(seed):
    messages, stream = stream_of(200)
    rng = random.Random(seed)
    decoder = FrameDecoder()
    received = []
    position = 0
    while position < len(stream):
        size = rng.choice([1, 2, 3, 5, 17, 100, 1000, 5000])
        decoder.feed(stream[position : position + size])
        position += size
        received.extend(decoder)
    assert received == messages


def test_several_frames_in_one_feed():
    messages, stream = stream_of(10)
    decoder = FrameDecoder()
    decoder.feed(stream)
    assert list(decoder) == messages


def test_partial_frame_tracking():
    frame = encode_frame({"type": "x", "pad": b"z" * 10})
    decoder = FrameDecoder()
    assert not decoder.in_partial_frame
    decoder.feed(frame[:2])
    assert decoder.in_partial_frame and decoder.buffered == 2
    assert decoder.next_message() is None
    decoder.feed(frame[2:-1])
    assert decoder.in_partial_frame and decoder.next_message() is None
    decoder.feed(frame[-1:])
    assert not decoder.in_partial_frame
    assert decoder.next_message() is not None
    assert decoder.buffered == 0


# Frame lengths


def body_of_exact_size(size: int) -> bytes:
    """A valid body of exactly `size` bytes (256 <= size <= 65550: a bin16 pad)."""
    probe = 1000
    overhead = len(msgpack.packb({"type": "pad", "p": b"\x00" * probe})) - probe
    body = msgpack.packb({"type": "pad", "p": b"\x00" * (size - overhead)})
    assert len(body) == size
    return body


def test_largest_frame_accepted():
    body = body_of_exact_size(MAX_FRAME)
    decoder = FrameDecoder()
    decoder.feed(frame_of(body))
    assert decoder.next_message() == msgpack.unpackb(body)


def test_encode_frame_refuses_oversized_body():
    assert len(encode_frame(msgpack.unpackb(body_of_exact_size(MAX_FRAME)))) == MAX_FRAME + 4
    with pytest.raises(ValueError):
        encode_frame({"type": "pad", "p": b"\x00" * MAX_FRAME})


@pytest.mark.parametrize("length", [0, MAX_FRAME + 1, 2**32 - 1])
def test_bad_length_rejected_from_header_alone(length):
    decoder = FrameDecoder()
    decoder.feed(struct.pack(">I", length))
    with pytest.raises(ProtocolError) as info:
        decoder.next_message()
    assert info.value.code == "bad_frame"
    assert info.value.fatal


def test_decode_body_refuses_oversized_body():
    body = body_of_exact_size(MAX_FRAME + 1)
    with pytest.raises(ProtocolError) as info:
        decode_body(body)
    assert info.value.code == "bad_frame"


def test_decoder_is_poisoned_after_error():
    decoder = FrameDecoder()
    decoder.feed(struct.pack(">I", 0) + encode_frame({"type": "x"}))
    with pytest.raises(ProtocolError) as first:
        decoder.next_message()
    for call in (decoder.next_message, lambda: decoder.feed(encode_frame({"type": "x"}))):
        with pytest.raises(ProtocolError) as again:
            call()
        assert (again.value.code, again.value.message) == (first.value.code, first.value.message)
    with pytest.raises(ProtocolError):
        list(decoder)


def test_decoder_is_poisoned_after_bad_body():
    decoder = FrameDecoder()
    decoder.feed(frame_of(msgpack.packb([1])) + encode_frame({"type": "x"}))
    with pytest.raises(ProtocolError) as first:
        decoder.next_message()
    assert first.value.code == "bad_msgpack"
    with pytest.raises(ProtocolError) as again:
        decoder.next_message()
    assert again.value.code == "bad_msgpack"


def test_messages_before_a_bad_frame_are_delivered():
    decoder = FrameDecoder()
    decoder.feed(encode_frame({"type": "ok"}) + struct.pack(">I", 0))
    assert decoder.next_message() == {"type": "ok"}
    with pytest.raises(ProtocolError):
        decoder.next_message()


# The msgpack subset


def test_depth_limit():
    assert decode_body(msgpack.packb(nested(MAX_DEPTH))) == nested(MAX_DEPTH)
    assert decode_bad(msgpack.packb(nested(MAX_DEPTH + 1))).code == "bad_msgpack"


def test_depth_counts_maps_too():
    deep: dict = {"type": "x"}
    inner = deep
    for _ in range(MAX_DEPTH - 1):
        inner["m"] = {}
        inner = inner["m"]
    assert decode_body(msgpack.packb(deep)) == deep
    inner["m"] = {}
    assert decode_bad(msgpack.packb(deep)).code == "bad_msgpack"


def test_integer_extremes_accepted():
    message = {"type": "x", "big": 2**64 - 1, "small": -(2**63)}
    assert decode_body(msgpack.packb(message)) == message


FORBIDDEN_BODIES = {
    "float64": msgpack.packb({"type": "x", "f": 1.5}),
    "float32": msgpack.packb({"type": "x", "f": 1.5}, use_single_float=True),
    "ext": msgpack.packb({"type": "x", "e": msgpack.ExtType(5, b"ab")}),
    "timestamp": msgpack.packb({"type": "x", "t": msgpack.Timestamp(0)}),
    "int key": msgpack.packb({"type": "x", 1: 2}),
    "bin key": msgpack.packb({"type": "x", b"k": 2}, use_bin_type=True),
    "array key": b"\x82\xa4type\xa1x\x91\x01\x01",
    "duplicate key": b"\x82\xa4type\xa1x\xa4type\xa1y",
    "duplicate nested key": b"\x82\xa4type\xa1x\xa1m\x82\xa1a\x01\xa1a\x02",
    "trailing bytes": msgpack.packb({"type": "x"}) + b"\xc0",
    "top-level array": msgpack.packb(["type", "x"]),
    "top-level str": msgpack.packb("type"),
    "missing type": msgpack.packb({"kind": "x"}),
    "non-str type": msgpack.packb({"type": 7}),
    "bin type": msgpack.packb({"type": b"x"}, use_bin_type=True),
    "bad utf-8": b"\x81\xa4type\xa2\xff\xfe",
    "utf-8 surrogate": b"\x81\xa4type\xa3\xed\xa0\x80",
    "str longer than body": b"\x82\xa4type\xa1x\xa1s\xd9\xc8abc",
    "bin longer than body": b"\x82\xa4type\xa1x\xa1b\xc5\xff\xffabc",
    "array longer than body": b"\x82\xa4type\xa1x\xa1a\xdd\xff\xff\xff\xff\x01\x02",
    "map longer than body": b"\x82\xa4type\xa1x\xa1m\xdf\x00\x01\x00\x00\xa1a\x01",
    "top map longer than body": b"\x83\xa4type\xa1x",
    "reserved byte 0xc1": b"\x82\xa4type\xa1x\xa1v\xc1",
    "empty body": b"",
}


@pytest.mark.parametrize("body", FORBIDDEN_BODIES.values(), ids=FORBIDDEN_BODIES.keys())
def test_forbidden_constructs(body):
    error = decode_bad(body)
    assert error.code == "bad_msgpack"
    assert error.fatal
    assert str(error).startswith("bad_msgpack: ")


# A zero-length frame is bad_frame, so the empty body is left out here.
FORBIDDEN_FRAMES = {name: body for name, body in FORBIDDEN_BODIES.items() if body}


@pytest.mark.parametrize("body", FORBIDDEN_FRAMES.values(), ids=FORBIDDEN_FRAMES.keys())
def test_forbidden_constructs_through_decoder(body):
    decoder = FrameDecoder()
    decoder.feed(frame_of(body))
    with pytest.raises(ProtocolError) as info:
        decoder.next_message()
    assert info.value.code == "bad_msgpack"


def test_unknown_fields_are_kept_for_the_message_layer():
    message = {"type": "x", "future_field": {"anything": [1, "two", b"3"]}}
    assert decode_body(msgpack.packb(message, use_bin_type=True)) == message


# Hostile input


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.lists(st.integers(1, 300), min_size=1, max_size=30))
def test_random_bytes_only_raise_protocol_error(data, chunk_sizes):
    decoder = FrameDecoder()
    position = 0
    try:
        while position < len(data):
            size = chunk_sizes[position % len(chunk_sizes)]
            decoder.feed(data[position : position + size])
            position += size
            for message in decoder:
                assert isinstance(message, dict)
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000))
def test_random_bodies_only_raise_protocol_error(body):
    try:
        assert isinstance(decode_body(body), dict)
    except ProtocolError:
        pass


# Allowed scalar values and containers, nested up to the depth limit.
allowed_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.text(max_size=20)
    | st.binary(max_size=20)
)
allowed_values = st.recursive(
    allowed_scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
valid_messages = st.builds(
    lambda type_, fields: {**fields, "type": type_},
    st.text(max_size=12),
    st.dictionaries(st.text(max_size=8), allowed_values, max_size=5),
)


def depth_of(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


@settings(max_examples=200, deadline=None)
@given(valid_messages)
def test_valid_messages_round_trip(message):
    body = msgpack.packb(message, use_bin_type=True)
    if depth_of(message) > MAX_DEPTH:
        assert decode_bad(body).code == "bad_msgpack"
    else:
        assert decode_body(body) == message


mutations = st.lists(
    st.tuples(st.sampled_from(["flip", "insert", "delete"]), st.integers(0), st.integers(0, 255)),
    min_size=1,
    max_size=4,
)


def mutate(data: bytes, edits: list[tuple[str, int, int]]) -> bytes:
    buffer = bytearray(data)
    for kind, position, byte in edits:
        if kind == "insert":
            buffer.insert(position % (len(buffer) + 1), byte)
        elif buffer and kind == "flip":
            buffer[position % len(buffer)] ^= 1 << (byte % 8)
        elif buffer:
            del buffer[position % len(buffer)]
    return bytes(buffer)


@settings(max_examples=300, deadline=None)
@given(valid_messages, mutations, st.integers(1, 64))
def test_mutated_frames_decode_or_raise_protocol_error(message, edits, chunk_size):
    damaged = mutate(encode_frame(message), edits)
    decoder = FrameDecoder()
    try:
        for start in range(0, len(damaged), chunk_size):
            decoder.feed(damaged[start : start + chunk_size])
            for decoded in decoder:
                assert isinstance(decoded, dict) and isinstance(decoded["type"], str)
    except ProtocolError as error:
        assert error.code in {"bad_frame", "bad_msgpack"}


def _both_ways(body: bytes):
    """What the quick decoding gives (None: it leaves the body to the strict reader) and what the strict reader gives."""
    from basra_net.protocol.framing import _decode_plain, _decode_strict

    try:
        strict = _decode_strict(body)
    except ProtocolError as err:
        strict = err
    return _decode_plain(body), strict


@pytest.mark.parametrize("body", FORBIDDEN_BODIES.values(), ids=FORBIDDEN_BODIES.keys())
def test_the_quick_decoding_leaves_every_forbidden_body_to_the_strict_reader(body):
    quick, strict = _both_ways(body)
    assert quick is None and isinstance(strict, ProtocolError)


@pytest.mark.parametrize("message", [*SAMPLE_MESSAGES, nested(MAX_DEPTH)])
def test_the_quick_decoding_takes_a_well_formed_body_and_decodes_it_as_the_strict_reader_does(message):
    quick, strict = _both_ways(msgpack.packb(message, use_bin_type=True))
    assert quick == strict == message


def test_the_quick_decoding_leaves_a_body_nested_too_deep_to_the_strict_reader():
    quick, strict = _both_ways(msgpack.packb(nested(MAX_DEPTH + 1)))
    assert quick is None and isinstance(strict, ProtocolError)


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_the_quick_decoding_agrees_with_the_strict_reader_on_damaged_bodies(data):
    body = bytearray(msgpack.packb(data.draw(st.sampled_from(SAMPLE_MESSAGES)), use_bin_type=True))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(body) - 1))
        body[position] = data.draw(st.integers(0, 255))
    quick, strict = _both_ways(bytes(body))
    if quick is not None:
        assert quick == strict


# Maps as a sender may pack them, keys repeated or not: what msgpack.packb of a dict can never produce.
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=False),
    st.sampled_from(["type", "play", "card", "AS", "request", "captures", ""]), st.binary(max_size=4),
)
_keys = st.one_of(st.sampled_from(["type", "request", "card", "captures", "x"]), st.integers(0, 3), st.binary(max_size=2))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(st.tuples(_keys, inner), max_size=3).map(lambda pairs: _Pairs(pairs))
), max_leaves=12)


class _Pairs(list):
    """A map's entries in order, repeats kept."""


def _pack_value(packer: msgpack.Packer, value) -> bytes:
    if isinstance(value, _Pairs):
        return packer.pack_map_header(len(value)) + b"".join(_pack_value(packer, k) + _pack_value(packer, v) for k, v in value)
    if isinstance(value, list):
        return packer.pack_array_header(len(value)) + b"".join(_pack_value(packer, v) for v in value)
    return packer.pack(value)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.tuples(_keys, _values), max_size=6), st.sampled_from(["play", "seed", 7]))
def test_the_quick_decoding_agrees_with_the_strict_reader_on_maps_with_repeated_keys_and_any_values(pairs, kind):
    body = _pack_value(msgpack.Packer(use_bin_type=True), _Pairs([("type", kind), *pairs]))
    quick, strict = _both_ways(body)
    if isinstance(strict, ProtocolError):
        assert quick is None
    else:
        assert quick is None or quick == strict
        assert decode_body(body) == strict


def test_a_play_with_its_card_given_twice_is_refused():
    body = b"\x84\xa4type\xa4play\xa7request\x01\xa4card\xa2AS\xa4card\xa2KS"
    with pytest.raises(ProtocolError, match="duplicate map key 'card'"):
        decode_body(body)


def test_an_array_longer_than_the_limit_is_refused_from_its_header():
    assert decode_body(msgpack.packb({"type": "x", "v": [0] * MAX_ARRAY_LEN}))["v"] == [0] * MAX_ARRAY_LEN
    with pytest.raises(ProtocolError) as info:
        decode_body(msgpack.packb({"type": "x", "v": [0] * (MAX_ARRAY_LEN + 1)}))
    assert info.value.code == "bad_msgpack"
    assert f"at most {MAX_ARRAY_LEN}" in info.value.message


def test_a_map_with_more_entries_than_the_limit_is_refused_from_its_header():
    fields = {f"f{n}": n for n in range(MAX_MAP_LEN - 1)}
    assert len(decode_body(msgpack.packb({"type": "x", **fields}))) == MAX_MAP_LEN
    with pytest.raises(ProtocolError) as info:
        decode_body(msgpack.packb({"type": "x", "inner": {f"f{n}": n for n in range(MAX_MAP_LEN + 1)}}))
    assert info.value.code == "bad_msgpack"
    assert f"at most {MAX_MAP_LEN}" in info.value.message


def test_a_frame_of_65000_integers_is_refused_without_reading_them():
    body = msgpack.packb({"type": "hello", "junk": [7] * 65_000})
    assert len(body) <= MAX_FRAME
    decoder = FrameDecoder()
    decoder.feed(frame_of(body))
    with pytest.raises(ProtocolError) as info:
        decoder.next_message()
    assert info.value.code == "bad_msgpack"
    assert "array of 65000 entries" in info.value.message


def test_a_decoder_with_a_smaller_limit_refuses_a_longer_frame_from_its_header():
    decoder = FrameDecoder(max_frame=1024)
    decoder.feed(struct.pack(">I", 1025))
    with pytest.raises(ProtocolError) as info:
        decoder.next_message()
    assert info.value.code == "bad_frame"
    assert "1..1024" in info.value.message


def test_the_quick_decoding_counts_a_frame_s_entries_as_the_strict_reader_does():
    from basra_net.protocol.framing import _decode_plain

    body = msgpack.packb({"type": "x", "v": [[0, 1], {"a": 2}]})  # 2 + 2 + 2 + 1 entries
    assert _decode_plain(body, max_entries=7) == decode_body(body, max_entries=7)
    assert _decode_plain(body, max_entries=6) is None
    with pytest.raises(ProtocolError):
        decode_body(body, max_entries=6)

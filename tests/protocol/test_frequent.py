"""The one-step decoder of a seated player's frequent messages agrees with the general decoder.

Whatever it accepts, the general way (decode_body, then from_wire, with a
seated client's limits) accepts as the same message; it refuses nothing
itself, so every fault is still named by the general way; and a conforming
client's `play`, `ping` and `pong` do take the one step.  A seated
`HostConnection` gives the same outcome for a frame either way: the same
message and state after it, or the same error code and text.
"""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basra_net.engine.cards import card_name
from basra_net.protocol.connection import HostConnection, _Connection
from basra_net.protocol.errors import BAD_MSGPACK, ProtocolError
from basra_net.protocol.framing import MAX_CLIENT_FRAME_ENTRIES, MAX_FRAME, decode_body, encode_frame
from basra_net.protocol.frequent import decode_frequent
from basra_net.protocol.messages import Hello, Ping, Play, Pong, from_wire, to_wire

REQUEST_TOP = (1 << 63) - 1


def general(body: bytes):
    """The general way's verdict: the message, or the ProtocolError's code."""
    try:
        return from_wire(decode_body(body, MAX_FRAME, MAX_CLIENT_FRAME_ENTRIES))
    except ProtocolError as err:
        return err.code


def agrees(body: bytes) -> bool:
    """Whether the one step took the body, after checking it took it as the general way does."""
    quick = decode_frequent(body)
    if quick is None:
        return False
    assert general(body) == quick, body
    return True


card_names = st.integers(0, 51).map(card_name)
requests = st.integers(0, REQUEST_TOP)
conforming = st.one_of(
    st.builds(Play, requests, st.integers(0, 51), st.lists(st.integers(0, 51), max_size=12, unique=True).map(lambda c: tuple(sorted(c)))),
    st.builds(Ping, requests),
    st.builds(Pong, requests),
)

# Values near and past each field's limits, of every type the subset has and some it has not.
odd_values = st.one_of(
    st.none(), st.booleans(), st.integers(-(1 << 63), (1 << 64) - 1), st.floats(allow_nan=False), st.binary(max_size=4),
    st.sampled_from(["AS", "10D", "KC", "1S", "10d", "ZZ", "", "play", "ping"]), card_names, st.text(max_size=4),
    st.lists(st.one_of(card_names, st.integers(0, 60), st.binary(max_size=2), st.none()), max_size=60),
    st.lists(st.sampled_from(["AS", "2S", "10D"]), max_size=5),  # a card twice, often
    st.dictionaries(st.text(max_size=3), st.integers(-5, 5), max_size=2),
)
field_names = st.sampled_from(["type", "request", "card", "captures", "id", "extra", "Type"])
type_names = st.sampled_from(["play", "ping", "pong", "chat", "leave", "Play", "seed"])


@st.composite
def near_misses(draw):
    """A frequent message's wire map with fields changed, dropped, added or given odd values."""
    wire = to_wire(draw(conforming))
    for _ in range(draw(st.integers(0, 3))):
        action = draw(st.sampled_from(["set", "drop", "type"]))
        if action == "set":
            wire[draw(field_names)] = draw(odd_values)
        elif action == "drop" and wire:
            wire.pop(draw(st.sampled_from(sorted(wire))))
        else:
            wire["type"] = draw(type_names)
    return wire


@settings(max_examples=400, deadline=None)
@given(conforming)
def test_a_conforming_frequent_message_takes_the_one_step(message):
    body = encode_frame(to_wire(message))[4:]
    assert agrees(body)
    assert decode_frequent(body) == message


@settings(max_examples=1500, deadline=None)
@given(near_misses())
def test_a_changed_message_is_taken_only_as_the_general_way_takes_it(wire):
    agrees(msgpack.packb(wire, use_bin_type=True))


@settings(max_examples=500, deadline=None)
@given(requests, st.lists(st.sampled_from(["AS", "2S", "10D", "QH", "1S", "AS "]), max_size=5))
def test_a_play_of_any_captures_is_taken_only_as_the_general_way_takes_it(request, captures):
    agrees(msgpack.packb({"type": "play", "request": request, "card": "KC", "captures": captures}))


@settings(max_examples=1500, deadline=None)
@given(conforming, st.data())
def test_a_mutated_frame_is_taken_only_as_the_general_way_takes_it(message, data):
    body = bytearray(encode_frame(to_wire(message))[4:])
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "cut", "append", "insert"]))
        at = data.draw(st.integers(0, len(body)))
        if action == "flip" and at < len(body):
            body[at] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del body[at:]
        elif action == "append":
            body += data.draw(st.binary(min_size=1, max_size=6))
        else:
            body[at:at] = data.draw(st.binary(min_size=1, max_size=3))
    agrees(bytes(body))


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=40).map(lambda tail: b"\x84" + tail))
def test_random_bytes_after_a_map_head_are_taken_only_as_the_general_way_takes_them(body):
    agrees(body)


def test_a_field_given_twice_is_left_to_the_general_way_which_refuses_it():
    # {"type": "play", "request": 1, "card": "AS", "card": "2S"}: four entries declared, three distinct keys.
    body = b"\x84" + b"".join(msgpack.packb(x) for x in ("type", "play", "request", 1, "card", "AS", "card", "2S"))
    assert decode_frequent(body) is None
    assert general(body) == BAD_MSGPACK


@pytest.mark.parametrize(
    "wire",
    [
        {"type": "play", "request": 1, "card": "AS", "captures": [], "note": 1},  # an unknown field: allowed, the general way
        {"type": "play", "request": 1, "card": "AS", "captures": ["2S", "2S"]},  # a card twice
        {"type": "play", "request": 1.0, "card": "AS", "captures": []},  # a float
        {"type": "play", "request": True, "card": "AS", "captures": []},  # a bool is no integer
        {"type": "ping", "id": 1 << 63},  # past the range
        {"type": "pong", "id": -1},
    ],
)
def test_what_the_one_step_does_not_vouch_for_goes_the_general_way(wire):
    body = msgpack.packb(wire, use_bin_type=True)
    assert decode_frequent(body) is None
    assert general(body) is not None


def test_a_seated_host_connection_refuses_a_play_with_a_repeated_key_as_before():
    connection = HostConnection()
    body = b"\x84" + b"".join(msgpack.packb(x) for x in ("type", "play", "request", 1, "card", "AS", "card", "2S"))
    connection.receive_data(len(body).to_bytes(4, "big") + body)
    with pytest.raises(ProtocolError) as caught:
        connection.next_event()
    assert caught.value.code == BAD_MSGPACK


class GeneralOnly(HostConnection):
    """A host connection that decodes every frame the general way."""

    _decode = _Connection._decode


def seated_outcome(connection: HostConnection, frame: bytes, open_request: int | None, answered_request: int | None):
    """What a seated connection with this request state makes of the frame: the message and the request
    state after it, or the error's code and text."""
    connection.receive_data(encode_frame(to_wire(Hello((1,), "Samira", bytes(32)))))
    connection.next_event()
    connection.agree(1)
    connection.seat = 1
    connection.match.open_request, connection.match.answered_request = open_request, answered_request
    connection.receive_data(frame)
    try:
        return connection.next_event(), connection.match.open_request, connection.match.answered_request
    except ProtocolError as err:
        return err.code, err.message


request_states = st.sampled_from([(17, None), (17, 16), (None, 17), (None, None), (3, 2)])


def same_outcome_either_way(body: bytes, state: tuple[int | None, int | None]) -> None:
    frame = len(body).to_bytes(4, "big") + body
    one_step = seated_outcome(HostConnection(), frame, *state)
    assert seated_outcome(GeneralOnly(), frame, *state) == one_step, body


@settings(max_examples=400, deadline=None)
@given(conforming, request_states, st.sampled_from([None, 16, 17, 18]))
def test_a_seated_connection_takes_a_conforming_message_alike_either_way(message, state, request):
    if request is not None and isinstance(message, Play):
        message = Play(request, message.card, message.captures)  # the open request, the one answered last, others
    same_outcome_either_way(encode_frame(to_wire(message))[4:], state)


@settings(max_examples=1000, deadline=None)
@given(near_misses(), request_states)
def test_a_seated_connection_refuses_a_changed_message_alike_either_way(wire, state):
    same_outcome_either_way(msgpack.packb(wire, use_bin_type=True), state)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["AS", "2S", "10D", "QH", "1S", "AS "]), max_size=5), request_states)
def test_a_seated_connection_takes_a_play_of_any_captures_alike_either_way(captures, state):
    same_outcome_either_way(msgpack.packb({"type": "play", "request": 17, "card": "KC", "captures": captures}), state)


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=40).map(lambda tail: b"\x84" + tail), request_states)
def test_a_seated_connection_refuses_random_bytes_alike_either_way(body, state):
    same_outcome_either_way(body, state)


def test_a_seated_connection_names_a_repeated_key_alike_either_way():
    body = b"\x84" + b"".join(msgpack.packb(x) for x in ("type", "play", "request", 17, "card", "AS", "card", "2S"))
    same_outcome_either_way(body, (17, None))
    assert seated_outcome(HostConnection(), len(body).to_bytes(4, "big") + body, 17, None)[0] == BAD_MSGPACK

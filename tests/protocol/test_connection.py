"""The sans-I/O connection state machines, host end against client end."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basra_net.engine import Match, MatchEnded, Move
from basra_net.engine.cards import parse_card
from basra_net.engine.scoring import GameScore
from basra_net.protocol import shuffle
from basra_net.protocol.announce import messages_for_seat
from basra_net.protocol.connection import (
    CHECK_FREE_WHEN_SEATED,
    ClientConnection,
    ConnectionClosed,
    HostConnection,
    LocalProtocolError,
    SENT_AGAIN,
)
from basra_net.protocol.errors import (
    BAD_FRAME,
    BAD_MESSAGE,
    NOT_YOUR_TURN,
    STALE_REQUEST,
    UNEXPECTED,
    WRONG_CODE,
    ProtocolError,
)
from basra_net.protocol.framing import MAX_CLIENT_FRAME_ENTRIES, MAX_FRAME, MAX_FRAME_BEFORE_WELCOME, FrameDecoder, encode_frame
from basra_net.protocol.messages import PROTOCOL_VERSIONS
from basra_net.protocol.pake import GuestCodeExchange, HostCodeExchange
from basra_net.protocol.messages import (
    Commit,
    Deal,
    Error,
    GameEnd,
    Hello,
    Leave,
    MatchEnd,
    MatchStart,
    Message,
    Pake,
    PakeConfirm,
    Play,
    Ping,
    Played,
    Reveal,
    Seed,
    Welcome,
    YourTurn,
    to_wire,
    Shuffle,
    Lock,
    Locked,
    Open,
    Opened,
    HiddenTurn,
    HiddenPlay,
    Audit,
    Audited,
    Option,
    Sig,
    from_wire,
)

from .test_messages import MESSAGE_STRATEGIES

MATCH_ID = bytes(range(16))
HOST_KEY = bytes(32)
NONCE = bytes(range(32, 64))
C = parse_card
ZERO = GameScore(0, 0, 0, 0, 0, 0, 0)


class Link:
    """One seat's connection: the host's end and the client's end, joined by hand."""

    def __init__(self) -> None:
        self.host = HostConnection()
        self.client = ClientConnection()

    def to_client(self, message: Message) -> Message:
        self.client.receive_data(self.host.send(message))
        received = self.client.next_event()
        assert self.client.next_event() is None
        assert received == message
        return received

    def to_host(self, message: Message) -> Message:
        self.host.receive_data(self.client.send(message))
        received = self.host.next_event()
        assert self.host.next_event() is None
        assert received == message
        return received

    def raw_to_client(self, message: Message) -> None:
        """Deliver a message the host's own state machine would not let it send."""
        self.client.receive_data(encode_frame(to_wire(message)))

    def raw_to_host(self, message: Message) -> None:
        self.host.receive_data(encode_frame(to_wire(message)))


def welcome(seat: int) -> Welcome:
    return Welcome(version=1, seat=seat, match_id=MATCH_ID, host_key=HOST_KEY, scoring="egyptian", target=60, token=bytes(16), sent=0)


def seated(seat: int) -> Link:
    """A link past the handshake and match_start."""
    link = Link()
    link.to_host(Hello((1,), f"Seat{seat}", NONCE))
    link.to_client(welcome(seat))
    link.to_client(MatchStart(("Hoda", "Omar")))
    return link


def seat1_in_game_1() -> tuple[Link, Deal]:
    """Seat 1 with game 1 dealt (after the seed exchange), and its deal."""
    link = seated(1)
    link.to_client(Commit(1, bytes(32), bytes(64)))
    link.to_host(Seed(1, bytes(32)))
    deal = Deal(1, 1, 0, (C("AS"), C("2S"), C("3S"), C("4S")), (C("5H"), C("6H"), C("8H"), C("9H")), 36, (), 1)
    link.to_client(deal)
    return link, deal


def refused(connection, data: bytes = b"") -> ProtocolError:
    if data:
        connection.receive_data(data)
    with pytest.raises(ProtocolError) as info:
        connection.next_event()
    return info.value


def frame(message: Message) -> bytes:
    return encode_frame(to_wire(message))


# --- a whole match, driven by the real engine -----------------------------------------------------


def test_both_seats_play_a_whole_match_through_the_state_machines():
    links = [Link(), Link()]
    for seat, link in enumerate(links):
        hello = link.to_host(Hello((1,), ("Hoda", "Omar")[seat], bytes([seat]) * 32))
        assert link.host.hello == hello
        link.to_client(welcome(seat))
        assert (link.host.seat, link.client.seat) == (seat, seat)
    for link in links:
        link.to_client(MatchStart(("Hoda", "Omar")))

    match = Match(scoring="egyptian", target=60)
    nonce = links[1].host.hello.nonce
    request = 0
    received = {0: [], 1: []}  # every message each client took, in order

    def announce(events) -> None:
        for seat in (0, 1):
            for message in messages_for_seat(events, seat, match.turn):
                received[seat].append(links[seat].to_client(message))

    while not match.over:
        game = match.game_number + 1
        host_seed, client_seed = bytes([game]) * 32, bytes([100 + game]) * 32
        commitment = shuffle.commitment(MATCH_ID, game, nonce, host_seed)
        links[1].to_client(Commit(game, commitment, bytes(64)))
        assert links[1].host.match.awaiting_seed == game
        links[1].to_host(Seed(game, client_seed))
        assert links[1].host.match.awaiting_seed is None
        announce(match.start_game(shuffle.shuffled_deck(MATCH_ID, game, host_seed, client_seed)))
        ended = []
        while match.turn is not None:
            seat, link = match.turn, links[match.turn]
            request += 1
            offered = link.to_client(YourTurn(request, tuple(match.legal_moves())))
            assert [m.kind for m in offered.moves] == [m.kind for m in match.legal_moves()]
            move = offered.moves[-1]
            play = link.to_host(Play(request, move.card, move.captures))
            events = match.play(seat, Move(play.card, play.captures))
            ended = [e for e in events if isinstance(e, MatchEnded)]
            announce([e for e in events if not isinstance(e, MatchEnded)])
        links[1].to_client(Reveal(game, host_seed, bytes(64)))
        announce(ended)

    assert match.game_number >= 2
    for seat, link in enumerate(links):
        assert link.client.match.over and link.client.closed
        assert isinstance(received[seat][-1], MatchEnd)
        assert received[seat][-1].totals == tuple(match.totals)
        # Each seat saw 6 deals per game, and every play of both seats.
        assert sum(isinstance(m, Deal) for m in received[seat]) == 6 * match.game_number
        assert sum(isinstance(m, Played) for m in received[seat]) == 48 * match.game_number
        assert sum(isinstance(m, GameEnd) for m in received[seat]) == match.game_number


def test_a_deal_shows_each_seat_only_its_own_hand():
    match = Match()
    events = match.start_game(tuple(range(52)))
    deals = [messages_for_seat(events, seat, match.turn)[0] for seat in (0, 1)]
    assert deals[0].hand == events[0].hands[0] and deals[1].hand == events[0].hands[1]
    assert set(deals[0].hand).isdisjoint(deals[1].hand)


# --- the host end: what a client may send, and when -------------------------------------------


@pytest.mark.parametrize(
    "message",
    [Seed(1, bytes(32)), Play(1, C("AS"), ()), Leave("bye"), Error("bad_frame", "x"), MatchStart(("a", "b"))],
    ids=lambda m: m.TYPE,
)
def test_anything_but_hello_first_is_unexpected_at_the_host(message):
    error = refused(HostConnection(), frame(message))
    assert error.code == UNEXPECTED
    assert "before 'hello'" in error.message


def test_before_the_welcome_the_host_takes_no_frame_longer_than_a_hello_needs():
    padded = to_wire(Hello((1,), "Omar", NONCE)) | {"later": "x" * MAX_FRAME_BEFORE_WELCOME}
    body = encode_frame(padded)
    assert len(body) - 4 > MAX_FRAME_BEFORE_WELCOME
    error = refused(HostConnection(), body[:4])  # refused from the length alone
    assert error.code == BAD_FRAME


def test_after_the_welcome_the_host_takes_frames_up_to_the_full_limit():
    link = seated(1)
    assert link.host.max_frame == MAX_FRAME
    link.raw_to_host(Ping(1))
    assert isinstance(link.host.next_event(), Ping)


def test_a_client_frame_with_more_entries_than_a_client_message_needs_is_refused():
    link = seated(1)
    junk = [[0] * 300 for _ in range(4)]  # each array within its own limit, together too many
    assert sum(map(len, junk)) + len(junk) > MAX_CLIENT_FRAME_ENTRIES
    error = refused(link.host, encode_frame(to_wire(Ping(1)) | {"later": junk}))
    assert error.code == "bad_msgpack" and "too many entries" in error.message


def test_the_host_may_send_a_frame_with_more_entries_than_a_client_may():
    link = seated(1)
    wire = to_wire(Ping(1)) | {"later": [[0] * 300 for _ in range(4)]}
    link.client.receive_data(encode_frame(wire))
    assert isinstance(link.client.next_event(), Ping)


def test_a_message_between_hello_and_welcome_is_unexpected():
    host = HostConnection()
    host.receive_data(frame(Hello((1,), "Omar", NONCE)))
    assert isinstance(host.next_event(), Hello)
    assert refused(host, frame(Seed(1, bytes(32)))).code == UNEXPECTED


def test_a_second_hello_is_unexpected():
    link = seated(0)
    link.raw_to_host(Hello((1,), "Again", NONCE))
    assert refused(link.host).code == UNEXPECTED


def test_a_play_with_no_open_request_is_not_your_turn_and_the_connection_survives():
    link, _ = seat1_in_game_1()
    link.raw_to_host(Play(1, C("AS"), ()))
    error = refused(link.host)
    assert error.code == NOT_YOUR_TURN and not error.fatal
    # The connection carries on: the next request is answered normally.
    link.to_client(YourTurn(5, (Move(C("AS"), (), "drop"),)))
    assert link.to_host(Play(5, C("AS"), ())).request == 5
    assert link.host.match.open_request is None


def test_a_play_answering_an_old_request_is_stale_request():
    link, _ = seat1_in_game_1()
    link.to_client(YourTurn(7, (Move(C("AS"), (), "drop"),)))
    link.raw_to_host(Play(6, C("AS"), ()))
    error = refused(link.host)
    assert error.code == STALE_REQUEST and not error.fatal
    assert link.host.match.open_request == 7  # still open: the right answer is still welcome
    assert link.to_host(Play(7, C("AS"), ())).request == 7
    # The answer again (a resumed client repeats its last answer) is dropped without a word...
    link.raw_to_host(Play(7, C("AS"), ()))
    assert link.host.next_event() is None
    # ...while an older one is still refused.
    link.raw_to_host(Play(6, C("AS"), ()))
    assert refused(link.host).code == NOT_YOUR_TURN


def test_a_seed_for_the_wrong_game_is_unexpected():
    link = seated(1)
    link.to_client(Commit(1, bytes(32), bytes(64)))
    link.raw_to_host(Seed(2, bytes(32)))
    assert refused(link.host).code == UNEXPECTED
    assert link.host.match.awaiting_seed == 1


def test_a_seed_with_no_commitment_outstanding_is_unexpected():
    link = seated(1)
    link.raw_to_host(Seed(1, bytes(32)))
    assert refused(link.host).code == UNEXPECTED
    link, _ = seat1_in_game_1()  # the one seed of game 1 is already in
    link.raw_to_host(Seed(1, bytes([7]) * 32))  # another seed for it
    assert refused(link.host).code == UNEXPECTED
    link.raw_to_host(Seed(1, bytes(32)))  # the same seed again, as a resumed client repeats it: dropped
    assert link.host.next_event() is None


@pytest.mark.parametrize(
    "message",
    [Deal(1, 1, 0, (), (), 0, (), 1), MatchEnd(0, (1, 0), "target"), Commit(1, bytes(32), bytes(64))],
    ids=lambda m: m.TYPE,
)
def test_a_host_message_from_a_client_is_unexpected(message):
    link = seated(0)
    link.raw_to_host(message)
    assert refused(link.host).code == UNEXPECTED


def test_a_leave_after_the_handshake_closes_the_host_end():
    link = seated(0)
    link.to_host(Leave("bye"))
    assert link.host.closed


# --- the client end: what a host may send, and when -------------------------------------------


def test_anything_before_the_client_says_hello_is_unexpected():
    error = refused(ClientConnection(), frame(welcome(1)))
    assert error.code == UNEXPECTED


def test_anything_but_welcome_after_hello_is_unexpected():
    client = ClientConnection()
    client.send(Hello((1,), "Omar", NONCE))
    assert refused(client, frame(MatchStart(("a", "b")))).code == UNEXPECTED


def test_game_messages_before_match_start_are_unexpected():
    link = Link()
    link.to_host(Hello((1,), "Omar", NONCE))
    link.to_client(welcome(1))
    link.raw_to_client(Commit(1, bytes(32), bytes(64)))
    assert refused(link.client).code == UNEXPECTED


def test_a_second_commit_for_the_same_game_is_unexpected():
    link = seated(1)
    link.to_client(Commit(1, bytes(32), bytes(64)))
    link.raw_to_client(Commit(1, bytes(32), bytes(64)))
    error = refused(link.client)
    assert error.code == UNEXPECTED and "twice" in error.message


def test_a_commit_for_a_game_out_of_turn_or_to_seat_0_is_unexpected():
    link = seated(1)
    link.raw_to_client(Commit(2, bytes(32), bytes(64)))
    assert refused(link.client).code == UNEXPECTED
    link = seated(0)  # seat 0 takes no part in the seed exchange
    link.raw_to_client(Commit(1, bytes(32), bytes(64)))
    assert refused(link.client).code == UNEXPECTED


def test_a_deal_before_the_seed_exchange_is_unexpected_at_seat_1():
    link = seated(1)
    deal = Deal(1, 1, 0, (C("AS"),), (), 36, (), 1)
    link.raw_to_client(deal)
    assert refused(link.client).code == UNEXPECTED
    # Committed but no seed sent yet: still too early.
    link = seated(1)
    link.to_client(Commit(1, bytes(32), bytes(64)))
    link.raw_to_client(deal)
    error = refused(link.client)
    assert error.code == UNEXPECTED and "seed exchange" in error.message


def test_seat_0_takes_a_deal_without_any_seed_exchange():
    link = seated(0)
    link.to_client(Deal(1, 1, 0, (C("AS"),), (), 36, (), 1))
    assert link.client.match.game_live


def test_a_reveal_of_another_game_during_a_game_is_unexpected():
    link, _ = seat1_in_game_1()
    link.raw_to_client(Reveal(2, bytes(32), bytes(64)))
    assert refused(link.client).code == UNEXPECTED


def test_a_reveal_during_a_game_cuts_it_off_and_only_match_end_may_follow():
    # The host reveals a game cut off when the match is abandoned (PROTOCOL.md 7.3).
    link, deal = seat1_in_game_1()
    link.to_client(Reveal(1, bytes(32), bytes(64)))
    assert link.client.match.cut_off and not link.client.match.game_live
    link.raw_to_client(Played(1, 0, deal.table[0], (), "drop", deal.table, 1))
    assert refused(link.client).code == UNEXPECTED


def test_match_end_follows_a_game_cut_off():
    link, _ = seat1_in_game_1()
    link.to_client(Reveal(1, bytes(32), bytes(64)))
    link.to_client(MatchEnd(1, (0, 0), "abandoned"))
    assert link.client.match.over


def test_a_reveal_comes_once_after_its_game_end():
    link, _ = seat1_in_game_1()
    link.to_client(GameEnd(1, None, (), (ZERO, ZERO), (0, 0)))
    assert link.client.match.reveal_due == 1
    link.raw_to_client(Reveal(2, bytes(32), bytes(64)))  # the wrong game
    assert refused(link.client).code == UNEXPECTED
    link = seat1_in_game_1()[0]
    link.to_client(GameEnd(1, None, (), (ZERO, ZERO), (0, 0)))
    link.to_client(Reveal(1, bytes(32), bytes(64)))
    link.raw_to_client(Reveal(1, bytes(32), bytes(64)))
    assert refused(link.client).code == UNEXPECTED
    # The next game's commitment is now in order.
    link.to_client(Commit(2, bytes(32), bytes(64)))


def test_a_next_game_cannot_start_before_the_reveal():
    link, _ = seat1_in_game_1()
    link.to_client(GameEnd(1, None, (), (ZERO, ZERO), (0, 0)))
    link.raw_to_client(Commit(2, bytes(32), bytes(64)))
    assert refused(link.client).code == UNEXPECTED


def test_play_messages_outside_a_live_game_are_unexpected():
    link = seated(0)
    link.raw_to_client(YourTurn(1, ()))
    assert refused(link.client).code == UNEXPECTED
    link = seated(0)
    link.raw_to_client(Played(1, 0, C("AS"), (), "drop", (C("AS"),), 1))
    assert refused(link.client).code == UNEXPECTED
    link = seated(0)
    link.to_client(Deal(1, 1, 0, (C("AS"),), (), 36, (), 1))
    link.raw_to_client(Played(2, 0, C("AS"), (), "drop", (C("AS"),), 1))  # another game's play
    assert refused(link.client).code == UNEXPECTED


@pytest.mark.parametrize(
    "message",
    [
        Deal(2, 1, 1, (), (), 36, (), 0),
        YourTurn(9, ()),
        Commit(2, bytes(32), bytes(64)),
        MatchEnd(0, (61, 0), "target"),
        MatchStart(("a", "b")),
        welcome(1),
    ],
    ids=lambda m: m.TYPE,
)
def test_anything_after_match_end_is_unexpected(message):
    link = seated(0)
    link.to_client(MatchEnd(0, (61, 0), "target"))
    assert link.client.match.over and link.client.closed
    link.raw_to_client(message)
    assert refused(link.client).code == UNEXPECTED


def test_a_client_message_from_the_host_is_unexpected():
    link = seated(0)
    link.raw_to_client(Play(1, C("AS"), ()))
    assert refused(link.client).code == UNEXPECTED


def test_a_fatal_error_from_the_peer_closes_the_connection_and_a_plain_one_does_not():
    link = seated(0)
    link.to_client(Error("illegal_move", "no"))
    assert not link.client.closed
    link.to_client(Error("timeout", "too slow"))
    assert link.client.closed


# --- end of stream --------------------------------------------------------------------------------


def test_eof_in_the_middle_of_a_frame_is_bad_frame():
    for connection in (HostConnection(), ClientConnection()):
        data = frame(Hello((1,), "Omar", NONCE))
        connection.receive_data(data[:6])
        assert connection.next_event() is None
        assert connection.in_partial_frame
        connection.receive_data(b"")
        error = refused(connection)
        assert error.code == BAD_FRAME and error.fatal


def test_eof_inside_the_length_header_is_bad_frame():
    host = HostConnection()
    host.receive_data(b"\x00\x00")
    host.receive_data(b"")
    assert refused(host).code == BAD_FRAME


def test_a_clean_eof_is_connection_closed_after_the_last_whole_message():
    link = seated(1)
    link.client.receive_data(link.host.send(Commit(1, bytes(32), bytes(64))))
    link.client.receive_data(b"")
    assert isinstance(link.client.next_event(), Commit)
    assert link.client.next_event() == ConnectionClosed()
    assert link.client.closed
    host = HostConnection()
    host.receive_data(b"")
    assert host.next_event() == ConnectionClosed()


def test_without_eof_an_empty_buffer_just_needs_more_bytes():
    link = seated(0)
    assert link.client.next_event() is None
    assert not link.client.closed


# --- our own mistakes -----------------------------------------------------------------------------


def test_a_client_cannot_send_a_play_without_an_open_request():
    link, _ = seat1_in_game_1()
    with pytest.raises(LocalProtocolError):
        link.client.send(Play(1, C("AS"), ()))


def test_a_client_cannot_answer_a_request_other_than_the_open_one_or_answer_twice():
    link, _ = seat1_in_game_1()
    link.to_client(YourTurn(4, (Move(C("AS"), (), "drop"),)))
    with pytest.raises(LocalProtocolError):
        link.client.send(Play(3, C("AS"), ()))
    link.to_host(Play(4, C("AS"), ()))
    with pytest.raises(LocalProtocolError):
        link.client.send(Play(4, C("AS"), ()))


def test_a_client_cannot_send_a_seed_without_a_commitment_or_twice():
    link = seated(1)
    with pytest.raises(LocalProtocolError):
        link.client.send(Seed(1, bytes(32)))
    link.to_client(Commit(1, bytes(32), bytes(64)))
    link.to_host(Seed(1, bytes(32)))
    with pytest.raises(LocalProtocolError):
        link.client.send(Seed(1, bytes(32)))


def test_a_client_says_hello_once_and_never_sends_host_messages():
    client = ClientConnection()
    client.send(Hello((1,), "Omar", NONCE))
    with pytest.raises(LocalProtocolError):
        client.send(Hello((1,), "Omar", NONCE))
    for message in (welcome(1), Deal(1, 1, 0, (), (), 36, (), 1), MatchEnd(0, (1, 0), "target")):
        with pytest.raises(LocalProtocolError):
            client.send(message)


def test_the_host_cannot_welcome_before_hello_or_twice():
    host = HostConnection()
    with pytest.raises(LocalProtocolError):
        host.send(welcome(0))
    link = seated(0)
    with pytest.raises(LocalProtocolError):
        link.host.send(welcome(0))


def test_the_host_cannot_send_game_messages_before_the_seat_is_taken():
    host = HostConnection()
    host.receive_data(frame(Hello((1,), "Omar", NONCE)))
    host.next_event()
    for message in (MatchStart(("a", "b")), YourTurn(1, ()), Commit(1, bytes(32), bytes(64))):
        with pytest.raises(LocalProtocolError):
            host.send(message)
    # An error or a refusal can always go out.
    assert host.send(Error("table_full", "full"))


def test_the_host_never_sends_client_messages():
    link = seated(0)
    for message in (Hello((1,), "x", NONCE), Seed(1, bytes(32)), Play(1, C("AS"), ())):
        with pytest.raises(LocalProtocolError):
            link.host.send(message)


# --- version 2: the identity key and the code exchange (PROTOCOL.md 14.7, 14.9) ------------------------

GUEST_KEY = bytes(range(1, 33))
V2_HOST_KEY = bytes(range(2, 34))


def exchange_link():
    """A version-2 first join with a code, up to the host's `pake`: (link, the client's and the host's exchange, the pake)."""
    link = Link()
    guest = GuestCodeExchange("K7M2QX", guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=V2_HOST_KEY)
    hello = link.to_host(Hello((2, 1), "Omar", NONCE, key=GUEST_KEY, pake=guest.start()))
    link.host.agree(2)
    host = HostCodeExchange("K7M2QX", host_key=V2_HOST_KEY)
    pake = link.to_client(Pake(*host.answer(hello.pake, guest_key=GUEST_KEY, guest_nonce=NONCE)))
    return link, guest, host, pake


def v2_welcome(seat: int = 1) -> Welcome:
    return Welcome(2, seat, MATCH_ID, V2_HOST_KEY, "egyptian", 60, bytes(16), 0)


def test_a_version_2_join_with_a_code_runs_hello_pake_pake_confirm_welcome():
    link, guest, host, pake = exchange_link()
    with pytest.raises(LocalProtocolError):
        link.host.send(v2_welcome())  # not before the key confirmation
    confirm = guest.answer(pake.pake, pake.confirm)
    link.to_host(PakeConfirm(confirm))
    host.check(confirm)
    link.to_client(v2_welcome())
    assert link.client.welcome is not None and link.host.seated
    link.raw_to_client(Pake(pake.pake, pake.confirm))
    assert refused(link.client).code == UNEXPECTED  # one exchange per connection


def test_a_welcome_without_the_exchange_its_hello_began_is_refused_by_the_client():
    """A man in the middle that skips the exchange (or answers with version 1) gets no seat from the client."""
    for version in (2, 1):
        link = Link()
        guest = GuestCodeExchange("K7M2QX", guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=V2_HOST_KEY)
        link.client.send(Hello((2, 1), "Omar", NONCE, key=GUEST_KEY, pake=guest.start()))
        link.raw_to_client(Welcome(version, 1, MATCH_ID, V2_HOST_KEY, "egyptian", 60, bytes(16), 0))
        assert refused(link.client).code == WRONG_CODE


def test_a_pake_that_answers_no_exchange_is_unexpected_on_both_sides():
    link = Link()
    link.to_host(Hello((2, 1), "Omar", NONCE, key=GUEST_KEY))
    link.raw_to_client(Pake(b"B" + bytes(32), bytes(32)))
    assert refused(link.client).code == UNEXPECTED
    link.raw_to_host(PakeConfirm(bytes(32)))
    assert refused(link.host).code == UNEXPECTED


@pytest.mark.parametrize(
    "hello, why",
    [
        (Hello((2, 1), "Omar", NONCE), "key"),
        (Hello((2, 1), "Omar", NONCE, key=bytes(32)), "weak"),
        (Hello((2, 1), "Omar", NONCE, code="K7M2QX", key=GUEST_KEY), "code"),
    ],
    ids=["no-key", "weak-key", "code"],
)
def test_a_hello_unfit_for_version_2_is_bad_message_once_version_2_is_chosen(hello, why):
    host = HostConnection()
    host.receive_data(frame(hello))
    assert host.next_event() == hello
    with pytest.raises(ProtocolError) as info:
        host.agree(2)
    assert info.value.code == BAD_MESSAGE and why in info.value.message


def test_a_version_2_hello_that_gives_the_hosts_own_key_is_bad_message():
    host = HostConnection()
    host.receive_data(frame(Hello((2, 1), "Omar", NONCE, key=V2_HOST_KEY)))
    host.next_event()
    with pytest.raises(ProtocolError) as info:
        host.agree(2, V2_HOST_KEY)
    assert info.value.code == BAD_MESSAGE and "host's own key" in info.value.message


def test_the_same_hellos_are_fine_in_version_1():
    for hello in (Hello((2, 1), "Omar", NONCE), Hello((1,), "Omar", NONCE, code="K7M2QX")):
        host = HostConnection()
        host.receive_data(frame(hello))
        host.next_event()
        host.agree(1)
        host.send(welcome(1))


def test_version_2_messages_are_unexpected_in_a_version_1_connection():
    link = Link()
    link.to_host(Hello((1,), "Omar", NONCE))
    link.host.agree(1)
    link.raw_to_host(PakeConfirm(bytes(32)))
    assert refused(link.host).code == UNEXPECTED
    with pytest.raises(LocalProtocolError):
        link.host.send(Pake(b"B" + bytes(32), bytes(32)))


# --- the deal modes (15.15) -------------------------------------------------------------------------


def hidden_link(seat: int = 1, deal: str | None = "hidden") -> Link:
    """A version-2 seat whose match has started with the given deal mode."""
    link = Link()
    link.to_host(Hello((2, 1), "Omar", NONCE, key=GUEST_KEY, deals=("hidden", "commit")))
    link.host.agree(2)
    link.to_client(v2_welcome(seat))
    link.to_client(MatchStart(("Hoda", "Omar"), deal=deal))
    return link


def test_a_hidden_match_runs_shuffle_lock_open_deal_hidden_turn_hidden_play_game_end_audit():
    link = hidden_link()
    assert link.client.match.hidden
    link.to_client(Shuffle(1, 0))
    link.to_client(Locked(1, 0, bytes(32), tuple(bytes([i]) * 32 for i in range(52)), 1, bytes(64)))
    link.to_host(Lock(1, bytes(32), tuple(bytes([i]) * 32 for i in range(52)), 0, bytes(64)))
    link.to_host(Open(1, ((4, bytes(96)),), (), 1, bytes(64)))
    link.to_client(Opened(1, 0, ((0, bytes(96)),), (), 1, bytes(64)))
    link.to_client(Deal(1, 1, 0, (), (), 40, (), 1))
    link.to_client(HiddenTurn(5, tuple((Option((), "drop"),) for _ in range(14))))
    link.to_host(HiddenPlay(5, 0, 0, 0, bytes(96)))
    link.raw_to_host(HiddenPlay(5, 0, 0, 0, bytes(96)))
    assert link.host.next_event() is None  # the repeat of a play taken is dropped, as for `play`
    link.to_client(GameEnd(1, None, (), (ZERO, ZERO), (0, 0)))
    link.to_host(Audit(1, bytes(32), 2, bytes(64)))
    link.to_client(Audited(1, 0, bytes(32), 2, bytes(64)))
    assert link.client.match.reveal_due is None  # no seed to reveal: the next game's shuffle may come
    link.to_client(Shuffle(2, 1))


@pytest.mark.parametrize(
    "deal, message",
    [
        ("hidden", Commit(1, bytes(32), bytes(64))),
        ("hidden", YourTurn(1, (Move(1, (), "drop"),))),
        ("hidden", Reveal(1, bytes(32), bytes(64))),
        (None, Shuffle(1, 0)),
        ("commit", Locked(1, 0, bytes(32), tuple(bytes([i]) * 32 for i in range(52)), 1, bytes(64))),
        ("commit", Opened(1, 0, ((0, bytes(96)),), (), 1, bytes(64))),
        ("commit", Audited(1, 0, bytes(32), 2, bytes(64))),
        ("commit", HiddenTurn(5, tuple((Option((), "drop"),) for _ in range(14)))),
    ],
    ids=[
        "commit-in-hidden", "your_turn-in-hidden", "reveal-in-hidden", "shuffle-in-commit", "locked-in-commit",
        "opened-in-commit", "audited-in-commit", "hidden_turn-in-commit",
    ],
)
def test_a_message_of_the_other_deal_mode_is_unexpected(deal, message):
    link = hidden_link(deal=deal)
    link.raw_to_client(message)
    assert refused(link.client).code == UNEXPECTED


def test_a_hidden_deal_before_its_shuffle_and_a_relay_of_the_seats_own_step_are_unexpected():
    link = hidden_link()
    link.raw_to_client(Deal(1, 1, 0, (), (), 40, (), 1))
    assert refused(link.client).code == UNEXPECTED
    link = hidden_link()
    link.to_client(Shuffle(1, 0))
    link.raw_to_client(Opened(1, 1, ((0, bytes(96)),), (), 1, bytes(64)))
    assert refused(link.client).code == UNEXPECTED
# --- checks the host may leave out -------------------------------------------------------------------


def seated_in_version(version: int, seat: int) -> HostConnection:
    host = HostConnection()
    host.receive_data(frame(Hello((version,), "Omar", NONCE, key=GUEST_KEY if version >= 2 else None)))
    assert isinstance(host.next_event(), Hello)
    host.agree(version)
    host.send(Welcome(version, seat, MATCH_ID, HOST_KEY, "egyptian", 60, bytes(16), 0))
    return host


def test_the_checks_the_host_leaves_out_never_open_a_request_or_a_seed():
    # What a seat's outbox carries most; never what a client's play or seed answers.
    assert {Played, Deal, GameEnd, MatchEnd} <= CHECK_FREE_WHEN_SEATED
    assert not {Commit, YourTurn, Welcome} & CHECK_FREE_WHEN_SEATED


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(sorted(CHECK_FREE_WHEN_SEATED, key=lambda cls: cls.TYPE)).flatmap(lambda cls: MESSAGE_STRATEGIES[cls]),
    st.sampled_from(PROTOCOL_VERSIONS),
    st.sampled_from((0, 1)),
)
def test_the_checks_the_host_leaves_out_pass_and_change_nothing_on_any_seated_connection(message, version, seat):
    host = seated_in_version(version, seat)
    before = dict(vars(host))
    host.check_send(message)
    assert vars(host) == before


def test_a_seat_taken_up_from_its_transcript_after_a_code_exchange_resumes():
    """The transcript holds the hello that began the exchange and the welcome, but not the exchange itself:
    taken up, that hello awaits no exchange, and the resume's welcome seats the player again."""
    guest = GuestCodeExchange("K7M2QX", guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=V2_HOST_KEY)
    first = Hello((2, 1), "Omar", NONCE, key=GUEST_KEY, pake=guest.start())
    taken_up = ClientConnection()
    taken_up.take_up_hello(first)
    taken_up.receive_message(v2_welcome())
    with pytest.raises(LocalProtocolError):
        taken_up.take_up_hello(first)
    taken_up.begin_resume(bytes(16))
    taken_up.send(Hello((2, 1), "Omar", bytes(32), token=bytes(16), received=0, key=GUEST_KEY))
    taken_up.receive_data(frame(v2_welcome()))
    assert taken_up.next_event() == v2_welcome() and not taken_up.resuming
    # Sent afresh instead, the same hello still awaits its exchange, and a welcome without it is refused.
    replayed = ClientConnection()
    replayed.send(first)
    with pytest.raises(ProtocolError) as info:
        replayed.receive_message(v2_welcome())
    assert info.value.code == WRONG_CODE


def frames_of(data: bytes) -> list[Message]:
    decoder = FrameDecoder()
    decoder.feed(data)
    found = []
    while (body := decoder.next_body()) is not None:
        found.append(from_wire(decoder.decode(body)))
    return found


def test_a_resume_sends_again_every_answer_whose_effect_has_not_come_in_the_order_section_5_8_gives():
    link = hidden_link()
    link.to_client(Shuffle(1, 1))
    link.to_client(Locked(1, 0, bytes(32), tuple(bytes([i]) * 32 for i in range(52)), 1, bytes(64)))
    lock = Lock(1, bytes(32), tuple(bytes([i]) * 32 for i in range(52)), 0, bytes(64))
    first_open = Open(1, ((4, bytes(96)),), (), 1, bytes(64))
    link.to_host(lock)
    link.to_host(first_open)
    assert frames_of(link.client.resend()) == [lock, first_open]
    link.to_client(Deal(1, 1, 0, (), (), 40, (), 1))  # the host had every step it awaited
    assert link.client.resend() == b""
    link.to_client(HiddenTurn(5, tuple((Option((), "drop"),) for _ in range(14))))
    play, later_open, sig = HiddenPlay(5, 0, 0, 0, bytes(96)), Open(1, ((8, bytes(96)),), (), 1, bytes(64)), Sig("game", 1, 9, bytes(64))
    for answer in (play, later_open, sig):
        link.client.send(answer)
    again = frames_of(link.client.resend())
    assert again == [later_open, play, sig]
    assert [type(m) for m in again] == sorted(map(type, again), key=SENT_AGAIN.index)
    # The commit-reveal deal's seed, at seat 1: sent again until its game's first deal comes.
    link = seated(1)
    link.to_client(Commit(1, bytes(32), bytes(64)))
    seed = link.to_host(Seed(1, bytes(32)))
    assert frames_of(link.client.resend()) == [seed]


# --- the next match on the same connection ----------------------------------------------------------


def test_the_next_match_starts_only_once_this_one_is_over_and_keeps_nothing_of_it():
    link, deal = seat1_in_game_1()
    link.to_client(YourTurn(7, (Move(C("AS"), (), "drop"),)))
    with pytest.raises(LocalProtocolError):
        link.host.start_next_match()
    with pytest.raises(LocalProtocolError):
        link.client.start_next_match()
    link.to_host(Play(7, C("AS"), ()))
    link.to_client(MatchEnd(winner=0, totals=(0, 0), reason="abandoned"))

    link.host.start_next_match()
    link.client.start_next_match()
    # The last match's answer is no repeat of the new one's: refused, not dropped.
    assert refused(link.host, frame(Play(7, C("AS"), ()))).code == NOT_YOUR_TURN
    assert not link.client.closed and link.client.match.game == 0
    link.to_client(MatchStart(("Hoda", "Omar")))
    link.to_client(Commit(1, bytes(32), bytes(64)))
    assert link.host.match.awaiting_seed == 1
    link.to_host(Seed(1, bytes(32)))
    link.to_client(deal)
    assert link.client.match.game_live


def test_in_version_2_the_next_match_waits_for_the_hosts_signature_of_the_result():
    client = ClientConnection()
    client.send(Hello((2,), "Omar", NONCE, key=bytes(range(1, 33))))
    client.receive_data(frame(Welcome(2, 1, MATCH_ID, HOST_KEY, "egyptian", 60, bytes(16), 0)))
    for message in (MatchStart(("Hoda", "Omar")), MatchEnd(winner=0, totals=(0, 0), reason="abandoned")):
        client.receive_data(frame(message))
    while client.next_event() is not None:
        pass
    with pytest.raises(LocalProtocolError):
        client.start_next_match()
    client.receive_data(frame(Sig("result", 0, 3, bytes(64))))
    assert isinstance(client.next_event(), Sig)
    client.start_next_match()
    assert not client.match.over and not client.match.result_signed

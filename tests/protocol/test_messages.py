"""Message records <-> wire maps: round trips, and every field's validation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basra_net.engine.cards import card_name, parse_card
from basra_net.engine.events import Move
from basra_net.engine.scoring import GameScore
from basra_net.protocol.errors import BAD_MESSAGE, UNKNOWN_TYPE, ProtocolError
from basra_net.protocol import messages
from basra_net.protocol.framing import FrameDecoder, decode_body, encode_frame
from basra_net.protocol.text import is_name, is_printable
from basra_net.protocol.messages import (
    MAX_MOVES,
    MAX_NAME,
    MAX_TEXT,
    MESSAGE_TYPES,
    PLAY_KINDS,
    Commit,
    Deal,
    Error,
    GameEnd,
    Away,
    Back,
    Chat,
    Hello,
    Leave,
    Ping,
    Pong,
    Pake,
    PakeConfirm,
    MatchEnd,
    MatchStart,
    Message,
    Play,
    Played,
    Reveal,
    Seed,
    Welcome,
    YourTurn,
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
    from_wire,
    to_wire,
)

# --- strategies for valid messages ---------------------------------------------------------

cards = st.integers(0, 51)


def card_tuples(max_size: int, *, sort: bool = False):
    lists = st.lists(cards, unique=True, max_size=max_size)
    return lists.map(lambda cs: tuple(sorted(cs)) if sort else tuple(cs))


def binary(size: int):
    return st.binary(min_size=size, max_size=size)


# Names are 1..32 printable characters with no outer spaces.
names = st.text(min_size=1, max_size=MAX_NAME).filter(lambda s: is_name(s, MAX_NAME))
# Other text shown to a player: printable, so it is valid however strictly text is checked.
texts = st.text(max_size=MAX_TEXT).filter(is_printable)
seats = st.integers(0, 1)
games = st.integers(1, 1 << 31)
points = st.integers(0, 1 << 31)
requests = st.integers(0, (1 << 63) - 1)
scores = st.builds(
    GameScore,
    cards=points, most_cards=points, basras=points, jack_basras=points,
    basra_points=points, card_bonus=points, total=points,
)
moves = st.builds(Move, cards, card_tuples(52, sort=True), st.sampled_from(PLAY_KINDS))

def strategy_for(field_type: messages.FieldType):
    """Every valid value of a field, from the type the message catalogue gives it."""
    match field_type:
        case messages.Nullable(inner):
            return st.none() | strategy_for(inner)
        case messages.Int(lo, hi):
            return st.integers(lo, hi)
        case messages.Name():
            return names
        case messages.Text(max_len, allow_empty, max_bytes):
            texts = st.text(min_size=0 if allow_empty else 1, max_size=max_len).filter(is_printable)
            return texts if max_bytes is None else texts.filter(lambda text: len(text.encode()) <= max_bytes)
        case messages.Choice(options):
            return st.sampled_from(options)
        case messages.Bin(length):
            return binary(length)
        case messages.CardField():
            return cards
        case messages.Cards(max_len, ordered):
            return card_tuples(max_len, sort=not ordered)
        case messages.Pair(inner):
            return st.tuples(strategy_for(inner), strategy_for(inner))
        case messages.Score(part):
            return st.builds(GameScore, **{name: strategy_for(part) for name in messages.SCORE_FIELDS})
        case messages.Moves(max_len):
            return st.lists(moves, max_size=min(max_len, 64)).map(tuple)
        case messages.Versions(max_len):
            return st.lists(strategy_for(messages.VERSION), min_size=1, max_size=max_len).map(tuple)
        case messages.Modes():
            mode = st.text(min_size=1, max_size=32).filter(is_printable)
            return st.lists(mode, min_size=1, max_size=messages.MAX_DEAL_MODES, unique=True).map(tuple)
        case messages.Points(length):
            return st.lists(binary(32), min_size=length, max_size=length).map(tuple)
        case messages.Steps(max_len):
            steps = st.tuples(strategy_for(messages.POSITION), binary(messages.STEP_SIZE))
            return st.lists(steps, max_size=max_len, unique_by=lambda s: s[0]).map(tuple)
        case messages.KindOptions(max_len):
            option = st.builds(Option, card_tuples(52, sort=True), st.sampled_from(PLAY_KINDS))
            by_kind = st.lists(option, min_size=1, max_size=min(max_len, 4)).map(tuple)
            return st.lists(by_kind, min_size=messages.KINDS_OF_CARD, max_size=messages.KINDS_OF_CARD).map(tuple)
        case messages.Evidence():
            event = st.tuples(st.sampled_from(messages.ABSENCE_KINDS), st.integers(0, (1 << 63) - 1), st.integers(0, messages.MAX_STREAM))
            events = st.lists(event, min_size=1, max_size=messages.MAX_ABSENCE_EVENTS).map(tuple)
            return st.builds(messages.AbsenceEvidence, st.integers(0, 86_400), events, binary(64))
    raise AssertionError(f"no strategy for {field_type!r}: add one")


def message_strategy(kind: messages.Kind):
    built = st.builds(kind.message, **{attr: strategy_for(t) for _, attr, t in kind.fields})
    together = [attr for wire_name, attr, _ in kind.fields if wire_name in kind.together]
    one_of = [attr for wire_name, attr, _ in kind.fields if wire_name in kind.one_of]
    return built.filter(
        lambda m: len({getattr(m, attr) is None for attr in together}) <= 1
        and (not one_of or sum(getattr(m, attr) is not None for attr in one_of) == 1)
    )


MESSAGE_STRATEGIES = {kind.message: message_strategy(kind) for kind in messages.CATALOGUE}

any_message = st.one_of(*MESSAGE_STRATEGIES.values())


def same_message(a: Message, b: Message) -> bool:
    """Equality that also compares each move's kind (Move equality ignores it)."""
    if a != b:
        return False
    if isinstance(a, YourTurn):
        return [(m.card, m.captures, m.kind) for m in a.moves] == [(m.card, m.captures, m.kind) for m in b.moves]
    return True


def test_the_strategies_cover_every_message_type():
    assert set(MESSAGE_STRATEGIES) == set(MESSAGE_TYPES)


@settings(max_examples=400, deadline=None)
@given(any_message)
def test_every_message_round_trips_through_its_wire_map(message):
    wire = to_wire(message)
    assert wire["type"] == message.TYPE
    assert same_message(from_wire(wire), message)


@settings(max_examples=400, deadline=None)
@given(any_message)
def test_a_wire_map_is_exactly_what_its_frame_decodes_to(message):
    # The host's signed record reads the wire map a frame was encoded from instead of decoding the frame:
    # the two must be equal, lists as lists and absent fields absent.
    wire = to_wire(message)
    assert decode_body(encode_frame(wire)[4:]) == wire


@settings(max_examples=100, deadline=None)
@given(st.lists(any_message, min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_messages_round_trip_through_frames_in_any_chunking(messages, rng):
    stream = b"".join(encode_frame(to_wire(m)) for m in messages)
    decoder = FrameDecoder()
    decoded = []
    position = 0
    while position < len(stream):
        step = rng.randint(1, 64)
        decoder.feed(stream[position : position + step])
        position += step
        decoded.extend(from_wire(wire) for wire in decoder)
    assert decoder.buffered == 0
    assert len(decoded) == len(messages)
    assert all(same_message(d, m) for d, m in zip(decoded, messages))


def test_cards_travel_as_their_names():
    wire = to_wire(Play(request=7, card=parse_card("10D"), captures=(parse_card("3S"), parse_card("7H"))))
    assert wire == {"type": "play", "request": 7, "card": "10D", "captures": ["3S", "7H"]}
    wire = to_wire(YourTurn(1, (Move(parse_card("QH"), (parse_card("QS"),), "capture"),)))
    assert wire["moves"] == [{"card": "QH", "captures": ["QS"], "kind": "capture"}]


def test_captures_arrive_sorted_whatever_order_the_sender_used():
    wire = {"type": "play", "request": 1, "card": "10D", "captures": ["7H", "3S"]}
    assert from_wire(wire).captures == (parse_card("3S"), parse_card("7H"))


# --- one valid sample of each message, to break field by field --------------------------------

C = parse_card
SCORE = GameScore(cards=30, most_cards=30, basras=1, jack_basras=0, basra_points=10, card_bonus=0, total=40)
SAMPLES: dict[type[Message], Message] = {
    Hello: Hello(
        versions=(2, 1), name="Samira", nonce=bytes(range(32)), table="main", token=bytes(range(16)), received=7,
        key=bytes(range(1, 33)), pake=b"A" + bytes(32),
    ),
    Welcome: Welcome(version=1, seat=1, match_id=bytes(16), host_key=bytes(32), scoring="egyptian", target=101, token=bytes(range(16)), sent=0),
    MatchStart: MatchStart(names=("Hoda", "Omar")),
    Commit: Commit(game=1, commitment=bytes(32), signature=bytes(64)),
    Seed: Seed(game=1, seed=bytes(32)),
    Deal: Deal(
        game=1, hand_no=1, dealer=0, hand=(C("AS"), C("2H"), C("3D"), C("4C")),
        table=(C("5S"), C("6H"), C("8D"), C("9C")), stock_left=36, moved=(C("JS"),), turn=1,
    ),
    YourTurn: YourTurn(request=3, moves=(Move(C("5H"), (C("5S"),), "capture"), Move(C("KD"), (), "drop"))),
    Play: Play(request=3, card=C("5H"), captures=(C("5S"),)),
    Played: Played(
        game=1, seat=1, card=C("5H"), captures=(C("5S"),), kind="capture",
        table=(C("6H"), C("8D"), C("9C")), turn=0,
    ),
    GameEnd: GameEnd(game=1, last_taker=0, rest=(C("6H"),), scores=(SCORE, SCORE), totals=(40, 40)),
    Reveal: Reveal(game=1, seed=bytes(32), signature=bytes(64)),
    MatchEnd: MatchEnd(winner=0, totals=(120, 40), reason="target"),
    Error: Error(code="illegal_move", message="5H is not in your hand"),
    Leave: Leave(reason="bye"),
    Away: Away(seat=0, grace=120),
    Back: Back(seat=0),
    Ping: Ping(id=1),
    Pong: Pong(id=1),
    Pake: Pake(pake=b"B" + bytes(32), confirm=bytes(32)),
    PakeConfirm: PakeConfirm(confirm=bytes(32)),
    Shuffle: Shuffle(game=1, dealer=0),
    Lock: Lock(game=1, public=bytes(32), deck=tuple(bytes([i]) * 32 for i in range(52)), seen=0, sig=bytes(64)),
    Locked: Locked(game=1, seat=0, public=bytes(32), deck=tuple(bytes([i]) * 32 for i in range(52)), seen=0, sig=bytes(64)),
    Open: Open(game=1, unmaskings=((0, bytes(96)), (8, bytes(96))), reveals=((9, bytes(96)),), seen=1, sig=bytes(64)),
    Opened: Opened(game=1, seat=0, unmaskings=((0, bytes(96)),), reveals=((9, bytes(96)),), seen=2, sig=bytes(64)),
    HiddenTurn: HiddenTurn(
        request=4, options=tuple((Option((), "drop"),) if k else (Option((C("AH"),), "capture"),) for k in range(14))
    ),
    HiddenPlay: HiddenPlay(request=4, kind=0, option=0, position=5, reveal=bytes(96)),
    Audit: Audit(game=1, scalar=bytes(32), seen=3, sig=bytes(64)),
    Audited: Audited(game=1, seat=1, scalar=bytes(32), seen=3, sig=bytes(64)),
    messages.Sig: messages.Sig(of="game", game=1, count=57, signature=bytes(64)),
    Chat: Chat(text="well played, يا صاحبي"),
}

# Fields whose value may be nil on the wire.
# Fields a sender may leave out altogether.
ABSENT_ALLOWED = {("hello", f) for f in ("table", "code", "token", "received", "key", "pake", "deals")} | {
    ("match_start", "deal"), ("played", "position"), ("played", "reveal"), ("match_end", "evidence"),
}
OPTIONAL_FIELDS = {
    ("played", "turn"), ("game_end", "last_taker"), ("match_end", "winner"), ("hidden_play", "reveal"),
} | ABSENT_ALLOWED

# One value of each wire type; a field must refuse every one whose type differs from its own.
WRONG_TYPED_VALUES = [None, True, 1, "AS", b"\x00" * 32, [], {}, [1, 1]]


def wire_of(cls: type[Message], **changes) -> dict:
    wire = to_wire(SAMPLES[cls])
    wire.update(changes)
    return wire


def refused(wire: dict, code: str = BAD_MESSAGE) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        from_wire(wire)
    assert info.value.code == code, info.value
    return info.value


def test_the_samples_cover_every_message_type_and_are_valid():
    assert set(SAMPLES) == set(MESSAGE_TYPES)
    for message in SAMPLES.values():
        assert same_message(from_wire(to_wire(message)), message)


def _wrong_type_cases():
    for cls, message in SAMPLES.items():
        for field, value in to_wire(message).items():
            if field == "type":
                continue
            for wrong in WRONG_TYPED_VALUES:
                if type(wrong) is type(value):
                    continue
                if wrong is None and (cls.TYPE, field) in OPTIONAL_FIELDS:
                    continue
                yield pytest.param(cls, field, wrong, id=f"{cls.TYPE}.{field}={wrong!r:.12}")


@pytest.mark.parametrize("cls, field, wrong", list(_wrong_type_cases()))
def test_a_field_of_the_wrong_type_is_bad_message(cls, field, wrong):
    error = refused(wire_of(cls, **{field: wrong}))
    assert f"'{field}'" in error.message


@pytest.mark.parametrize(
    "cls, field, value",
    [
        (Hello, "versions", []),
        (Hello, "versions", [0]),
        (Hello, "versions", [0x10000]),
        (Hello, "versions", [1] * 17),
        (Hello, "versions", [True]),
        (Welcome, "version", 0),
        (Welcome, "seat", 2),
        (Welcome, "seat", -1),
        (Welcome, "target", 0),
        (Welcome, "target", 1_000_001),
        (Welcome, "sent", -1),
        (Welcome, "sent", 1 << 31),
        (Hello, "received", -1),
        (Away, "grace", 86_401),
        (Away, "seat", 2),
        (Back, "seat", 2),
        (Commit, "game", 0),
        (Commit, "game", (1 << 31) + 1),
        (Seed, "game", -1),
        (Deal, "hand_no", 0),
        (Deal, "hand_no", 7),
        (Deal, "dealer", 2),
        (Deal, "stock", 41),
        (Deal, "turn", -1),
        (YourTurn, "request", -1),
        (YourTurn, "request", 1 << 63),
        (Play, "request", -1),
        (Played, "seat", 2),
        (Played, "turn", 2),
        (GameEnd, "last_taker", 2),
        (GameEnd, "totals", [-1, 0]),
        (GameEnd, "totals", [0, (1 << 31) + 1]),
        (GameEnd, "scores", [{**SCORE.to_dict(), "total": -1}, SCORE.to_dict()]),
        (GameEnd, "scores", [SCORE.to_dict(), {**SCORE.to_dict(), "basras": True}]),
        (MatchEnd, "winner", 2),
        (MatchEnd, "totals", [0, -5]),
        (Shuffle, "dealer", 2),
        (Open, "unmaskings", [[52, bytes(96)]]),
        (Open, "reveals", [[-1, bytes(96)]]),
        (HiddenPlay, "kind", 14),
        (HiddenPlay, "option", MAX_MOVES),
        (HiddenPlay, "position", 52),
        (Played, "position", 52),
    ],
    ids=lambda v: repr(v)[:20],
)
def test_an_integer_out_of_range_is_bad_message(cls, field, value):
    refused(wire_of(cls, **{field: value}))


@pytest.mark.parametrize("name", ["1S", "as", "TD", "10d", "1D", "AS ", " AS", "A S", "ZZ", "", "11S", "AJ"])
@pytest.mark.parametrize(
    "cls, build",
    [
        (Play, lambda n: {"card": n}),
        (Played, lambda n: {"card": n}),
        (Deal, lambda n: {"hand": ["AS", n]}),
        (Deal, lambda n: {"table": [n]}),
        (Deal, lambda n: {"moved": [n]}),
        (Played, lambda n: {"captures": [n]}),
        (GameEnd, lambda n: {"rest": [n]}),
        (YourTurn, lambda n: {"moves": [{"card": n, "captures": [], "kind": "drop"}]}),
        (YourTurn, lambda n: {"moves": [{"card": "5H", "captures": [n], "kind": "capture"}]}),
    ],
    ids=["play.card", "played.card", "deal.hand", "deal.table", "deal.moved", "played.captures",
         "game_end.rest", "your_turn.card", "your_turn.captures"],
)
def test_a_bad_card_name_is_bad_message(cls, build, name):
    refused(wire_of(cls, **build(name)))


def test_every_canonical_card_name_is_accepted():
    for card in range(52):
        assert from_wire(wire_of(Play, card=card_name(card))).card == card


@pytest.mark.parametrize(
    "cls, changes",
    [
        (Deal, {"hand": ["AS", "AS"]}),
        (Deal, {"table": ["5S", "6H", "5S"]}),
        (Deal, {"moved": ["JS", "JS"]}),
        (Play, {"captures": ["3S", "3S"]}),
        (Played, {"captures": ["5S", "5S"]}),
        (Played, {"table": ["6H", "6H"]}),
        (GameEnd, {"rest": ["6H", "6H"]}),
        (YourTurn, {"moves": [{"card": "5H", "captures": ["5S", "5S"], "kind": "capture"}]}),
    ],
    ids=lambda v: repr(v)[:24],
)
def test_a_card_named_twice_in_one_list_is_bad_message(cls, changes):
    error = refused(wire_of(cls, **changes))
    assert "twice" in error.message


@pytest.mark.parametrize(
    "cls, changes",
    [
        (Deal, {"hand": ["AS", "2S", "3S", "4S", "5S"]}),  # a hand holds at most 4 cards
        (Deal, {"moved": ["JS", "JH", "JD", "JC", "7D", "AS"]}),
        (YourTurn, {"moves": [{"card": "5H", "captures": [], "kind": "drop"}] * (MAX_MOVES + 1)}),
        (Error, {"message": "x" * (MAX_TEXT + 1)}),
        (Error, {"code": ""}),
        (Error, {"code": "c" * 65}),
        (Leave, {"reason": "x" * (MAX_TEXT + 1)}),
        (MatchStart, {"names": ["Hoda"]}),
        (MatchStart, {"names": ["Hoda", "Omar", "Zaki"]}),
        (GameEnd, {"totals": [1]}),
        (GameEnd, {"scores": [SCORE.to_dict()]}),
        (GameEnd, {"scores": [{"total": 1}, SCORE.to_dict()]}),  # a score lacking its items
        (Played, {"kind": "steal"}),
        (YourTurn, {"moves": [{"card": "5H", "captures": []}]}),  # a move without its kind
        (YourTurn, {"moves": ["5H"]}),
        (MatchEnd, {"reason": "quit"}),
        (Welcome, {"scoring": "american"}),
        (Hello, {"deals": []}),
        (Hello, {"deals": ["hidden", "hidden"]}),
        (Hello, {"deals": ["m"] * 9}),
        (MatchStart, {"deal": "open"}),
        (Lock, {"deck": [bytes(32)] * 51}),
        (Lock, {"deck": [bytes(32)] * 53}),
        (Open, {"unmaskings": [[p, bytes(96)] for p in range(9)]}),
        (Open, {"reveals": [[p, bytes(96)] for p in range(5)]}),
        (Open, {"unmaskings": [[3, bytes(96)], [3, bytes(96)]]}),
        (Open, {"unmaskings": [[3]]}),
        (HiddenTurn, {"options": [[{"captures": [], "kind": "drop"}]] * 13}),
        (HiddenTurn, {"options": [[]] * 14}),
    ],
    ids=lambda v: repr(v)[:24],
)
def test_lists_texts_and_choices_out_of_bounds_are_bad_message(cls, changes):
    refused(wire_of(cls, **changes))


@pytest.mark.parametrize(
    "cls, field, size",
    [
        (Hello, "nonce", 32),
        (Welcome, "match", 16),
        (Welcome, "host_key", 32),
        (Welcome, "token", 16),
        (Hello, "token", 16),
        (Commit, "commitment", 32),
        (Commit, "signature", 64),
        (Seed, "seed", 32),
        (Reveal, "seed", 32),
        (Reveal, "signature", 64),
        (Lock, "public", 32),
        (Audit, "scalar", 32),
        (HiddenPlay, "reveal", 96),
        (Played, "reveal", 96),
    ],
)
def test_a_binary_field_of_the_wrong_length_is_bad_message(cls, field, size):
    for length in (0, size - 1, size + 1):
        refused(wire_of(cls, **{field: bytes(length)}))
    # Text is never accepted in place of binary, even of the right length.
    refused(wire_of(cls, **{field: "x" * size}))


@pytest.mark.parametrize(
    "name",
    ["a\x00b", "\tSamira", "Sam\nira", "Sam\x1bira", "Sam\x7f", "Sam\u2028", "x" * (MAX_NAME + 1), "", " Sam", "Sam "],
    ids=repr,
)
def test_a_name_that_is_not_1_to_32_printable_characters_is_bad_message(name):
    refused(wire_of(Hello, name=name))
    refused(wire_of(MatchStart, names=["Hoda", name]))


def test_a_name_of_32_printable_characters_is_accepted():
    name = "Ø" * MAX_NAME
    assert from_wire(wire_of(Hello, name=name)).name == name
    assert from_wire(wire_of(MatchStart, names=[name, "x y"])).names == (name, "x y")


@pytest.mark.parametrize(
    "cls, field",
    [
        pytest.param(cls, f, id=f"{cls.TYPE}.{f}")
        for cls, m in SAMPLES.items()
        for f in to_wire(m)
        if f != "type" and (cls.TYPE, f) not in ABSENT_ALLOWED
    ],
)
def test_a_missing_field_is_bad_message(cls, field):
    wire = wire_of(cls)
    del wire[field]
    error = refused(wire)
    assert f"'{field}'" in error.message


def test_a_hello_may_leave_out_the_table_and_then_names_none():
    wire = wire_of(Hello)
    del wire["table"]
    assert from_wire(wire).table is None
    assert "table" not in to_wire(Hello((1,), "Samira", bytes(32)))  # absent, not nil
    refused(wire_of(Hello, table="bad\x00name"))


def test_a_missing_optional_field_is_not_the_same_as_nil():
    # nil is a value; leaving the field out is still a missing field.
    assert from_wire(wire_of(Played, turn=None)).turn is None
    wire = wire_of(Played)
    del wire["turn"]
    refused(wire)


@pytest.mark.parametrize("kind", ["bogus", "Hello", "HELLO", "transcript", "", "hello "])
def test_an_unknown_type_is_unknown_type(kind):
    refused({"type": kind}, UNKNOWN_TYPE)


def test_a_type_that_is_missing_or_not_a_string_is_unknown_type():
    refused({}, UNKNOWN_TYPE)
    refused({"type": 1}, UNKNOWN_TYPE)
    refused({"type": b"hello"}, UNKNOWN_TYPE)


def test_the_unknown_type_error_never_echoes_unprintable_text():
    error = refused({"type": "\x1b[2Jboom"}, UNKNOWN_TYPE)
    assert "\x1b" not in error.message
    assert "(unprintable)" in error.message


def test_unknown_extra_fields_are_ignored():
    extras = {"future": {"nested": [1, "x", b"\x00"]}, "flag": True, "note": None}
    for cls, message in SAMPLES.items():
        wire = {**to_wire(message), **extras}
        assert same_message(from_wire(wire), message), cls


def test_every_sample_survives_framing_fed_one_byte_at_a_time():
    frames = b"".join(encode_frame(to_wire(m)) for m in SAMPLES.values())
    decoder = FrameDecoder()
    out = []
    for i in range(len(frames)):
        decoder.feed(frames[i : i + 1])
        out.extend(from_wire(w) for w in decoder)
    assert [type(m) for m in out] == list(SAMPLES)
    assert all(same_message(a, b) for a, b in zip(out, SAMPLES.values()))


@pytest.mark.parametrize("absent", ["token", "received"])
def test_a_resume_hello_gives_its_token_and_count_together(absent):
    wire = wire_of(Hello)
    del wire[absent]
    error = refused(wire)
    assert error.code == BAD_MESSAGE and "together" in error.message
    del wire["token" if absent == "received" else "received"]
    assert from_wire(wire).token is None  # neither: a fresh join


def test_a_resume_hello_with_a_nil_count_is_refused_not_taken_for_a_fresh_join():
    wire = wire_of(Hello)
    wire["received"] = None
    assert refused(wire).code == BAD_MESSAGE


# --- chat (section 6.23) -------------------------------------------------------------------


def test_a_chat_carries_a_text_or_a_reaction_and_never_both_or_neither():
    assert from_wire({"type": "chat", "reaction": "good_game"}) == Chat(reaction="good_game")
    assert from_wire({"type": "chat", "text": "hi"}) == Chat(text="hi")
    assert to_wire(Chat(reaction="oops")) == {"type": "chat", "reaction": "oops"}  # the other field absent, not nil
    for wire in ({"type": "chat"}, {"type": "chat", "text": "hi", "reaction": "nice"}, {"type": "chat", "text": None, "reaction": None}):
        assert "exactly one of" in refused(wire).message


@pytest.mark.parametrize(
    "changes",
    [
        {"text": ""},
        {"text": "x" * (messages.MAX_CHAT + 1)},
        {"text": "\U0001F600" * (messages.MAX_CHAT_BYTES // 4 + 1)},  # few characters, too many bytes
        {"text": "bell\x07"},
        {"text": "\x1b[2J"},
        {"text": "abc\u202edcba"},  # a right-to-left override, which would reorder what follows on screen
        {"text": "line\nbreak"},
        {"reaction": "laugh"},
    ],
    ids=repr,
)
def test_a_chat_line_too_long_or_not_printable_or_an_unknown_reaction_is_bad_message(changes):
    wire = {"type": "chat", **changes}
    refused(wire)


def test_a_chat_line_at_its_limits_is_accepted():
    longest = "x" * messages.MAX_CHAT
    assert from_wire({"type": "chat", "text": longest}).text == longest
    widest = "\U0001F600" * (messages.MAX_CHAT_BYTES // 4)
    assert from_wire({"type": "chat", "text": widest}).text == widest
    assert set(messages.REACTIONS) == {from_wire({"type": "chat", "reaction": r}).reaction for r in messages.REACTIONS}

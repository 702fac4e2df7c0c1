"""Signed records: a real match's stream, signed by both sides, verifies; every forgery built from it fails with its own error."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.host.identity import public_key_bytes
from basra_net.protocol import transcript
from basra_net.protocol.framing import decode_body, encode_frame
from basra_net.protocol.messages import Hello, Seed, Welcome, to_wire
from basra_net.protocol.record import (
    STREAM_TYPES,
    AbsenceAccount,
    AbsenceEvent,
    ChannelContext,
    ChannelRecord,
    RecordError,
    Status,
    account_contradictions,
    check_channel,
    disputed_abandonment,
    evidence_map,
)
from basra_net.protocol.shuffle import SMALL_ORDER_KEYS

GUEST_IDENTITY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"test guest key").digest())
GUEST_KEY = public_key_bytes(GUEST_IDENTITY)

Records = list[tuple[str, bytes]]


def _body(message: dict) -> bytes:
    return encode_frame(message)[4:]


def sign_channel(
    context: ChannelContext,
    host_identity: Ed25519PrivateKey,
    messages: list[tuple[str, dict]],
    *,
    countersign: Callable[[str, int], bool] = lambda of, game: True,
    evidence: AbsenceAccount | None = None,
) -> Records:
    """The format-2 records of a channel, as an honest host and guest would write them.

    `messages` are the v1 records as wire maps; the host's signatures go into
    the stream after each checkpoint and after match_end, and the guest's
    countersignatures follow them unless `countersign` says no.
    """
    host_side = ChannelRecord(context)
    guest_side = ChannelRecord(context)
    records: Records = []

    def host_sends(message: dict) -> None:
        frame = encode_frame(message)
        host_side.host_frame(frame)
        guest_side.host_frame(frame)
        records.append(("host", frame[4:]))
        if host_side.owed_by_host is not None:
            of, game, _ = host_side.owed_by_host
            host_sends(host_side.host_signature(host_identity))
            if countersign(of, game):
                answer = guest_side.countersignature(GUEST_IDENTITY)
                host_side.guest_sig(answer)
                records.append(("guest", _body(answer)))

    for sender, message in messages:
        if sender == "host" and message["type"] in STREAM_TYPES:
            if message["type"] == "match_end" and evidence is not None:
                message = {**message, "reason": "abandoned", "evidence": evidence_map(context, evidence, host_identity)}
            host_sends(message)
        else:
            if sender == "guest" and message["type"] == "seed":
                host_side.guest_seed(message["game"], message["seed"])
                guest_side.guest_seed(message["game"], message["seed"])
            records.append((sender, _body(message)))
    return records


@pytest.fixture(scope="module")
def real_match(honest_match):
    """The honest match's seat-1 channel: its context, its v1 records as wire maps, and the host key."""
    parsed = transcript.parse(honest_match.host_transcript.read_bytes())
    hello = next(m for s, m in parsed.records if isinstance(m, Hello))
    welcome = next(m for s, m in parsed.records if isinstance(m, Welcome))
    context = ChannelContext(welcome.match_id, welcome.host_key, GUEST_KEY, welcome.seat, hello.nonce, welcome.scoring, welcome.target)
    # The real match signed its channel with the real guest's key; the forgeries sign it again under GUEST_KEY.
    messages = [(sender, to_wire(message)) for sender, message in parsed.records if message.TYPE != "sig"]
    assert sum(isinstance(m, Seed) for _, m in parsed.records) >= 2, "the forgeries need a match of several games"
    return context, welcome, messages, honest_match.identity


@pytest.fixture(scope="module")
def signed(real_match) -> Records:
    context, welcome, messages, identity = real_match
    return sign_channel(context, identity, messages)


def check(real_match, records: Records, *, context: ChannelContext | None = None, partial: bool = False) -> ChannelRecord:
    own_context, welcome, _, _ = real_match
    return check_channel(context or own_context, records, partial=partial)


def replace_host(records: Records, index: int, change: Callable[[dict], dict]) -> Records:
    """The records with the index-th host stream message of the given records changed, re-encoded."""
    hosts = [i for i, (sender, body) in enumerate(records) if sender == "host" and decode_body(body)["type"] in STREAM_TYPES]
    position = hosts[index]
    forged = list(records)
    forged[position] = ("host", _body(change(decode_body(records[position][1]))))
    return forged


def host_positions(records: Records, kind: str) -> list[int]:
    return [i for i, (sender, body) in enumerate(records) if sender == "host" and decode_body(body)["type"] == kind]


def test_an_honest_record_is_signed_throughout_by_both(real_match, signed):
    channel = check(real_match, signed)
    assert len(channel.games) >= 2
    assert all(g.host is Status.VALID and g.guest is Status.VALID for g in channel.games)
    assert channel.result.host is Status.VALID and channel.result.guest is Status.VALID
    result = channel.result.result
    assert result.names == ("Hoda", "Omar") and result.reason == "target"
    assert [link.game for link in result.games] == list(range(1, len(channel.games) + 1))
    # the checkpoints are the reveals, and the chain runs on to the end
    assert len(host_positions(signed, "reveal")) == len(channel.games)
    assert result.end_count == channel.chain.count - 1  # only the host's result sig follows match_end


def test_a_changed_play_breaks_the_hosts_signature_of_that_game(real_match, signed):
    """The guest's re-play: every signed commit, deal and reveal kept, one play changed."""
    played = [i for i, (s, b) in enumerate(signed) if s == "host" and decode_body(b)["type"] == "played"]
    position = played[3]
    message = decode_body(signed[position][1])
    forged = list(signed)
    forged[position] = ("host", _body({**message, "seat": 1 - message["seat"]}))
    with pytest.raises(RecordError, match="host signature: the host's signature of game 1 does not verify"):
        check(real_match, forged)


def test_plays_reordered_break_the_signature(real_match, signed):
    a, b = [i for i, (s, body) in enumerate(signed) if s == "host" and decode_body(body)["type"] == "played"][:2]
    forged = list(signed)
    forged[a], forged[b] = forged[b], forged[a]
    with pytest.raises(RecordError, match="game 1 does not verify"):
        check(real_match, forged)


def test_swapped_names_break_every_signature(real_match, signed):
    forged = replace_host(signed, 0, lambda m: {**m, "names": m["names"][::-1]})
    with pytest.raises(RecordError, match="game 1 does not verify"):
        check(real_match, forged)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda c: replace(c, host_key=c.guest_key, guest_key=c.host_key), id="keys-swapped"),
        pytest.param(lambda c: replace(c, guest_seat=0), id="seat-changed"),
        pytest.param(lambda c: replace(c, match_id=bytes(16)), id="other-match"),
        pytest.param(lambda c: replace(c, guest_nonce=bytes(32)), id="other-nonce"),
        pytest.param(lambda c: replace(c, scoring=c.scoring + "-other"), id="other-scoring"),
        pytest.param(lambda c: replace(c, target=c.target + 1), id="other-target"),
    ],
)
def test_the_record_holds_only_in_its_own_context(real_match, signed, change):
    """Roles swapped (host and guest keys, or the seat), or the record claimed for another match, hello or rules."""
    with pytest.raises(RecordError):
        check(real_match, signed, context=change(real_match[0]))


def test_a_game_moved_from_another_match_is_refused(real_match, signed):
    context, welcome, messages, identity = real_match
    other_context = replace(context, match_id=bytes(range(100, 116)))
    other = sign_channel(other_context, identity, messages)
    # game 2 onwards from the other match, whose frames and host are the same, behind this match's game 1
    cut = host_positions(signed, "commit")[1]
    with pytest.raises(RecordError, match="game 2 does not verify"):
        check(real_match, signed[:cut] + other[cut:])
    with pytest.raises(RecordError, match="game 1 does not verify"):
        check(real_match, other)


def test_a_record_cut_short_fails_unless_partial(real_match, signed):
    cut = host_positions(signed, "commit")[1]
    with pytest.raises(RecordError, match="cut short: the record ends before the match ended, after 1 signed game"):
        check(real_match, signed[:cut])
    channel = check(real_match, signed[:cut], partial=True)
    assert [(g.host, g.guest) for g in channel.games] == [(Status.VALID, Status.VALID)]
    assert channel.result is None
    end = host_positions(signed, "match_end")[0]
    with pytest.raises(RecordError, match="before the host signed the result"):
        check(real_match, signed[: end + 1])


def test_a_removed_host_signature_is_refused(real_match, signed):
    sig = next(i for i, (s, b) in enumerate(signed) if s == "host" and decode_body(b)["type"] == "sig")
    with pytest.raises(RecordError, match="bad_signature: the guest signed game 1 before the host did"):
        check(real_match, signed[:sig] + signed[sig + 1 :])
    with pytest.raises(RecordError, match="host signature: the stream goes on without the host's signature of game 1"):
        check(real_match, signed[:sig] + signed[sig + 2 :])


def test_a_missing_countersignature_is_shown_as_missing(real_match):
    context, welcome, messages, identity = real_match
    records = sign_channel(context, identity, messages, countersign=lambda of, game: of == "game" and game != 2
    )
    channel = check(real_match, records)
    assert [g.guest for g in channel.games][:3] == [Status.VALID, Status.MISSING, Status.VALID]
    assert all(g.host is Status.VALID for g in channel.games)
    assert channel.result.host is Status.VALID and channel.result.guest is Status.MISSING


def test_a_bad_countersignature_is_refused(real_match, signed):
    guest_sigs = [i for i, (s, b) in enumerate(signed) if s == "guest" and decode_body(b)["type"] == "sig"]
    first, second = decode_body(signed[guest_sigs[0]][1]), decode_body(signed[guest_sigs[1]][1])
    host_sig = decode_body(signed[guest_sigs[0] - 1][1])
    cases = [
        (guest_sigs[0], {**first, "signature": bytes(64)}, "the guest's signature of game 1 does not verify"),
        (guest_sigs[0], {**first, "signature": host_sig["signature"]}, "the guest's signature of game 1 does not verify"),
        (guest_sigs[1], {**second, "signature": first["signature"]}, "the guest's signature of game 2 does not verify"),
        (guest_sigs[1], first, "the guest signed game 1 at .*, the signature owed is of game 2"),
    ]
    for index, message, error in cases:
        forged = list(signed)
        forged[index] = ("guest", _body(message))
        with pytest.raises(RecordError, match=f"bad_signature: {error}"):
            check(real_match, forged)


def test_a_signature_nobody_owes_is_refused(real_match, signed):
    guest_sig = next(i for i, (s, b) in enumerate(signed) if s == "guest" and decode_body(b)["type"] == "sig")
    doubled = signed[: guest_sig + 1] + [signed[guest_sig]] + signed[guest_sig + 1 :]
    with pytest.raises(RecordError, match="bad_signature: a signature from the guest where none is owed"):
        check(real_match, doubled)
    host_sig = guest_sig - 1
    doubled = signed[: host_sig + 1] + [signed[host_sig]] + signed[host_sig + 1 :]
    with pytest.raises(RecordError, match="host signature: a signature from the host where none is owed"):
        check(real_match, doubled)


def test_the_result_fields_are_those_of_the_stream(real_match, signed):
    end = host_positions(signed, "match_end")[0]
    for change in ({"totals": [0, 200]}, {"winner": 1}):
        forged = list(signed)
        forged[end] = ("host", _body({**decode_body(signed[end][1]), **change}))
        with pytest.raises(RecordError, match="the host's signature of the result does not verify"):
            check(real_match, forged)


def test_nothing_may_follow_the_signed_result(real_match, signed):
    with pytest.raises(RecordError, match="the stream goes on after the host signed the result"):
        check(real_match, signed + [("host", _body({"type": "played", "seat": 0}))])


ACCOUNT = AbsenceAccount(1, 120, (AbsenceEvent("away", 1_700_000_000_000, 40), AbsenceEvent("resume", 1_700_000_030_000, 40), AbsenceEvent("grace_over", 1_700_000_120_000, 41)))


@pytest.fixture(scope="module")
def abandoned(real_match) -> Records:
    context, welcome, messages, identity = real_match
    return sign_channel(context, identity, messages, evidence=ACCOUNT)


def test_an_abandonment_carries_the_hosts_signed_account(real_match, abandoned):
    channel = check(real_match, abandoned)
    assert channel.result.account == ACCOUNT
    assert channel.result.result.reason == "abandoned" and channel.result.host is Status.VALID


def _forge_end(real_match, records: Records, change: Callable[[dict], dict]) -> Records:
    end = host_positions(records, "match_end")[0]
    forged = list(records)
    forged[end] = ("host", _body(change(decode_body(records[end][1]))))
    return forged


def test_a_changed_or_removed_account_is_refused(real_match, abandoned):
    def later(end):
        events = [list(e) for e in end["evidence"]["events"]]
        events[0][1] += 60_000
        return {**end, "evidence": {**end["evidence"], "events": events}}

    cases = {
        "the host gave no account": lambda end: {k: v for k, v in end.items() if k != "evidence"},
        "its account of the absence does not verify": later,
        "which ends no match": lambda end: {**end, "evidence": {**end["evidence"], "events": end["evidence"]["events"][:2]}},
        "evidence of an absence in a match that was not abandoned": lambda end: {**end, "reason": "target"},
    }
    for error, change in cases.items():
        with pytest.raises(RecordError, match=error):
            check(real_match, _forge_end(real_match, abandoned, change))


def test_an_abandonment_added_by_anyone_but_the_host_is_refused(real_match, signed):
    """An abandonment claimed afterwards, with an account signed by the guest's key, fails twice over."""
    context = real_match[0]
    fake = evidence_map(context, AbsenceAccount(0, 120, (AbsenceEvent("left", 1, 3),)), GUEST_IDENTITY)
    forged = _forge_end(real_match, signed, lambda end: {**end, "reason": "abandoned", "winner": 1, "evidence": fake})
    with pytest.raises(RecordError, match="its account of the absence does not verify"):
        check(real_match, forged)


def test_notes_change_nothing_in_the_record(real_match, signed, honest_match):
    """Notes are not in the stream: the record proves the same with notes added, and no note can supply a signature."""
    note = ("guest", _body({"type": "note", "kind": "abandoned_deal", "game": 1, "text": "the host abandoned a fixed deal"}))
    channel = check(real_match, signed[:5] + [note] + signed[5:])
    assert all(g.host is Status.VALID for g in channel.games)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"host_key": next(iter(SMALL_ORDER_KEYS))}, "small order"),
        ({"guest_key": bytes(31)}, "must be 32 bytes"),
        ({"guest_key": "same"}, "the same key"),
        ({"guest_seat": 2}, "seat"),
    ],
)
def test_a_context_that_proves_nothing_is_refused(real_match, kwargs, error):
    context = real_match[0]
    fields = {
        "match_id": context.match_id, "host_key": context.host_key, "guest_key": context.guest_key, "guest_seat": 1,
        "guest_nonce": context.guest_nonce, "scoring": context.scoring, "target": context.target,
    }
    if kwargs.get("guest_key") == "same":
        kwargs = {"guest_key": context.host_key}
    with pytest.raises(RecordError, match=error):
        ChannelContext(**(fields | kwargs))


def test_malformed_stream_input_is_refused(real_match):
    context, welcome, _, _ = real_match
    channel = ChannelRecord(context)
    with pytest.raises(RecordError, match="length prefix"):
        channel.host_frame(b"\x00\x00\x00\x05\x80")
    with pytest.raises(RecordError, match="not a stream message"):
        channel.host_frame(encode_frame({"type": "ping"}))
    with pytest.raises(RecordError, match="cannot be read"):
        channel.host_frame(b"\x00\x00\x00\x01\xc1")
    with pytest.raises(RecordError, match="seed"):
        channel.guest_seed(1, b"short")
    channel.host_frame(encode_frame({"type": "deal", "game": 2}))
    with pytest.raises(RecordError, match="checkpoint: game 2 ends where game 1 was due"):
        channel.host_frame(encode_frame({"type": "reveal", "game": 2}))


def test_a_game_whose_seed_is_unknown_cannot_be_signed(real_match):
    context, welcome, _, _ = real_match
    channel = ChannelRecord(context)
    channel.host_frame(encode_frame({"type": "deal", "game": 1}))
    with pytest.raises(RecordError, match="game 1 ends with no seed from the guest"):
        channel.host_frame(encode_frame({"type": "reveal", "game": 1}))


def test_the_reveal_of_a_game_never_dealt_is_no_checkpoint(real_match):
    # The match ended between the commitment and the deal (7.3): the guest's seed may have crossed the end.
    context, _, _, _ = real_match
    for seed in (None, bytes(32)):
        channel = ChannelRecord(context)
        channel.host_frame(encode_frame({"type": "commit", "game": 1}))
        if seed is not None:
            channel.guest_seed(1, seed)
        channel.host_frame(encode_frame({"type": "reveal", "game": 1}))
        assert channel.games == [] and channel.owed_by_host is None


def account(*events, grace=120) -> AbsenceAccount:
    return AbsenceAccount(1, grace, tuple(AbsenceEvent(kind, time, sent) for kind, time, sent in events))


HONEST_ABSENCE = account(("away", 0, 40), ("resume", 5_000, 40), ("back", 6_000, 41), ("away", 10_000, 50), ("grace_over", 130_000, 51))


def test_an_honest_account_holds_together():
    assert account_contradictions(HONEST_ABSENCE) == []
    # the seat resumed only after the match ended: the match_end (51) came in the replay of a welcome with sent 51
    assert disputed_abandonment(HONEST_ABSENCE, end_number=51, welcome_sent=51, left=False, countersigned=True) is None
    assert disputed_abandonment(account(("left", 0, 9)), end_number=10, welcome_sent=0, left=True, countersigned=True) is None


def test_an_account_that_starts_with_the_hosts_restart_holds_together():
    # `basra host --resume`: every seat is away from the restart, whose sent is 0 (the stopped process's count is lost).
    restarted = account(("restart", 0, 0), ("resume", 5_000, 40), ("back", 5_000, 40), ("away", 9_000, 45), ("grace_over", 129_000, 46))
    never_back = account(("restart", 0, 0), ("grace_over", 120_000, 40))
    for held in (restarted, never_back):
        assert account_contradictions(held) == []
        assert disputed_abandonment(held, end_number=47, welcome_sent=47, left=False, countersigned=True) is None
    assert account_contradictions(account(("restart", 0, 0), ("grace_over", 60_000, 40))) == [
        "the account shows a wait of 60 seconds for a grace period of 120 seconds"
    ]


@pytest.mark.parametrize(
    "events, contradiction",
    [
        ((("away", 10_000, 40), ("grace_over", 5_000, 41)), "goes back in time"),
        ((("away", 0, 40), ("grace_over", 130_000, 39)), "goes back in time or in messages"),
        ((("back", 0, 40), ("grace_over", 130_000, 41)), "come back without going away"),
        ((("away", 0, 40), ("back", 1_000, 41), ("grace_over", 130_000, 42)), "a seat that was not away"),
        ((("away", 0, 40), ("grace_over", 30_000, 41)), "a wait of 30 seconds for a grace period of 120 seconds"),
    ],
)
def test_an_account_that_contradicts_itself_is_named(events, contradiction):
    with_contradiction = account(*events)
    assert any(contradiction in problem for problem in account_contradictions(with_contradiction))
    assert contradiction in disputed_abandonment(with_contradiction, end_number=60, welcome_sent=60, left=False, countersigned=False)


def test_a_seat_that_was_there_disputes_its_abandonment():
    """The host that is losing ends the match 'abandoned' while the guest is connected and leading."""
    live = disputed_abandonment(HONEST_ABSENCE, end_number=51, welcome_sent=41, left=False, countersigned=True)
    assert live == "the host says this seat was away past its grace period, and said so on a connection the seat held"
    left = disputed_abandonment(account(("left", 0, 9)), end_number=10, welcome_sent=0, left=False, countersigned=True)
    assert left == "the host says this seat left the match, and it did not"
    unsigned = account(("unsigned", 0, 84))
    assert disputed_abandonment(unsigned, end_number=85, welcome_sent=0, left=False, countersigned=True) == (
        "the host says this seat did not countersign, and it did"
    )
    assert disputed_abandonment(unsigned, end_number=85, welcome_sent=0, left=False, countersigned=False) is None
    withheld = account(("withheld", 0, 57))
    assert disputed_abandonment(withheld, end_number=58, welcome_sent=0, left=False, countersigned=True, stepped=True) == (
        "the host says this seat withheld a step of the deal, and it sent every step it owed"
    )
    assert disputed_abandonment(withheld, end_number=58, welcome_sent=0, left=False, countersigned=True, stepped=False) is None


def test_the_hosts_replay_of_the_guests_plays_lacks_the_guests_signatures(real_match, signed):
    """The host re-signs a stream in which a play of the guest's is changed: its own signatures hold, the guest's cannot."""
    context, welcome, messages, identity = real_match
    first_guest_play = next(i for i, (s, m) in enumerate(messages) if m["type"] == "played" and m["seat"] == 1)
    forged_messages = list(messages)
    sender, played = messages[first_guest_play]
    forged_messages[first_guest_play] = (sender, {**played, "seat": 0})
    host_only = sign_channel(context, identity, forged_messages, countersign=lambda of, game: False)
    channel = check(real_match, host_only)
    assert all(g.host is Status.VALID and g.guest is Status.MISSING for g in channel.games)
    assert channel.result.guest is Status.MISSING  # shown as the host's word alone, never as agreed
    # Pasting the guest's real countersignatures after the host's new signatures does not make them fit.
    guest_sigs = {(m["of"], m["game"]): body for s, body in signed if s == "guest" and (m := decode_body(body))["type"] == "sig"}
    pasted: Records = []
    for sender, body in host_only:
        pasted.append((sender, body))
        message = decode_body(body)
        if sender == "host" and message["type"] == "sig":
            pasted.append(("guest", guest_sigs[(message["of"], message["game"])]))
    with pytest.raises(RecordError, match="bad_signature: the guest's signature of game 1 does not verify"):
        check(real_match, pasted)


def _covered(records: Records) -> list[int]:
    """The records the signatures cover: the host's stream, the guest's seeds and the signatures."""
    return [
        i for i, (sender, body) in enumerate(records)
        if (kind := decode_body(body)["type"]) in STREAM_TYPES and sender == "host" or sender == "guest" and kind in ("seed", "sig")
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_change_to_what_is_signed_is_refused(real_match, signed, data):
    """A byte changed, a record dropped, doubled or moved: never a record that verifies as it stands, but a
    dropped countersignature, which is shown as missing."""
    covered = _covered(signed)
    index = data.draw(st.sampled_from(covered), label="record")
    sender, body = signed[index]
    kind = data.draw(st.sampled_from(["flip", "drop", "double", "swap"]), label="change")
    forged = list(signed)
    if kind == "flip":
        at = data.draw(st.integers(0, len(body) - 1), label="byte")
        bit = data.draw(st.integers(0, 7), label="bit")
        forged[index] = (sender, body[:at] + bytes([body[at] ^ (1 << bit)]) + body[at + 1 :])
    elif kind == "drop":
        del forged[index]
    elif kind == "double":
        forged.insert(index, signed[index])
    else:
        other = data.draw(st.sampled_from([i for i in covered if signed[i][1] != body]), label="swapped with")
        forged[index], forged[other] = forged[other], forged[index]
    if kind == "double" and sender == "guest" and decode_body(body)["type"] == "seed":
        return  # a seed sent again is dropped as a repeat (section 5.8, rule 6): nothing changes
    try:
        channel = check(real_match, forged)
    except RecordError:
        return
    assert kind == "drop" and sender == "guest" and decode_body(body)["type"] == "sig"
    statuses = [g.guest for g in channel.games] + [channel.result.guest]
    assert statuses.count(Status.MISSING) == 1 and statuses.count(Status.INVALID) == 0


def test_the_guests_seed_answers_the_commitment_and_nothing_else(real_match, signed):
    """The host committed before the seed was sent, and dealt after: a record that shows otherwise is refused."""
    commit = host_positions(signed, "commit")[0]
    seed = next(i for i, (s, b) in enumerate(signed) if s == "guest" and decode_body(b)["type"] == "seed")
    assert seed == commit + 1
    before_commit = signed[:commit] + [signed[seed], signed[commit]] + signed[seed + 1 :]
    after_deal = signed[:seed] + [signed[seed + 1], signed[seed]] + signed[seed + 2 :]
    for forged in (before_commit, after_deal):
        with pytest.raises(RecordError, match="seed: a seed for game 1 where none was asked for"):
            check(real_match, forged)
    other_seed = ("guest", _body({**decode_body(signed[seed][1]), "seed": bytes(32)}))
    with pytest.raises(RecordError, match="seed: a second, different seed for game 1"):
        check(real_match, signed[: seed + 1] + [other_seed] + signed[seed + 1 :])


def _context_at_its_first_checkpoint(host_identity: Ed25519PrivateKey) -> ChannelRecord:
    """A seat-0 channel (no fair deal) whose first game just ended: the host owes its signature."""
    context = ChannelContext(bytes(16), public_key_bytes(host_identity), GUEST_KEY, 0, bytes(32), "egyptian", 101)
    record = ChannelRecord(context)
    record.host_frame(encode_frame({"type": "match_start", "names": ["Hoda", "Omar"]}))
    record.host_frame(encode_frame({"type": "game_end", "game": 1}))
    assert record.owed_by_host == ("game", 1, 2)
    return record


def test_the_hosts_own_signature_is_taken_unverified_and_anything_else_is_verified(monkeypatch):
    import basra_net.protocol.record as record_module

    verified = []
    real_verify = record_module.verify_signature
    monkeypatch.setattr(record_module, "verify_signature", lambda *args: verified.append(args) or real_verify(*args))
    host = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"test host key").digest())

    # Signed here with the context's host key: no verification, and the signature holds.
    own = _context_at_its_first_checkpoint(host)
    own.host_frame(encode_frame(own.host_signature(host)))
    assert own.games[0].host is Status.VALID and not verified
    assert own.open_for_countersignature == ("game", 1, 2)

    # Signed here with another key: verified, and refused.
    impostor = _context_at_its_first_checkpoint(host)
    with pytest.raises(RecordError, match="does not verify"):
        impostor.host_frame(encode_frame(impostor.host_signature(GUEST_IDENTITY)))
    assert impostor.games[0].host is Status.INVALID and len(verified) == 1

    # Other bytes than the ones signed here, under the right key's name: verified, and refused.
    altered = _context_at_its_first_checkpoint(host)
    sig = altered.host_signature(host)
    with pytest.raises(RecordError, match="does not verify"):
        altered.host_frame(encode_frame({**sig, "signature": bytes(64)}))
    assert altered.games[0].host is Status.INVALID and len(verified) == 2

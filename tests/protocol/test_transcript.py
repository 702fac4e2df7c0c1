"""The transcript file format: writing, reading, and refusing what is not a transcript."""

from __future__ import annotations

import pytest

from basra_net.protocol import transcript
from basra_net.protocol.framing import encode_frame
from basra_net.protocol.messages import Commit, Hello, MatchEnd, MatchStart, Reveal, Seed, Sig, Welcome, to_wire
from basra_net.protocol.transcript import Note, TranscriptError
from basra_net.protocol.verify import GUEST, HOST


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path))


def encode(parsed: transcript.Transcript) -> bytes:
    """A transcript's bytes: header, records, then notes."""
    if parsed.format == transcript.SIGNED_FORMAT:
        records = b"".join(transcript.body_record(sender, body) for sender, body in parsed.bodies)
    else:
        records = b"".join(transcript.record(sender, message) for sender, message in parsed.records)
    return (
        transcript.header(parsed.role, parsed.format)
        + records
        + b"".join(transcript.note(n.kind, n.game, n.text) for n in parsed.notes)
    )


def test_the_hosts_transcript_holds_the_seat_1_channel_in_order(honest_match):
    parsed = transcript.parse(honest_match.host_transcript.read_bytes())
    assert parsed.role == HOST and parsed.notes == [] and parsed.format == transcript.SIGNED_FORMAT
    (first_sender, hello), (second_sender, welcome) = parsed.records[:2]
    assert (first_sender, type(hello)) == (GUEST, Hello)
    assert (second_sender, type(welcome)) == (HOST, Welcome)
    assert welcome.seat == 1 and welcome.match_id == honest_match.match_id
    assert isinstance(parsed.records[2][1], MatchStart)
    # The match's end, then the host's signature of the result and the guest's countersignature (14.6).
    end, host_sig, guest_sig = parsed.records[-3:]
    assert end == (HOST, MatchEnd(honest_match.table.winner, honest_match.table.totals, "target"))
    assert [(s, m.TYPE, m.of) for s, m in (host_sig, guest_sig)] == [(HOST, "sig", "result"), (GUEST, "sig", "result")]
    games = max(m.game for _, m in parsed.records if isinstance(m, Commit))
    assert games >= 3
    # Each game's exchange: the host commits, seat 1 answers with a seed, the host reveals and signs, seat 1 countersigns.
    for game in range(1, games + 1):
        kinds = [
            (s, type(m)) for s, m in parsed.records
            if isinstance(m, (Commit, Seed, Reveal)) and m.game == game or isinstance(m, Sig) and m.of == "game" and m.game == game
        ]
        assert kinds == [(HOST, Commit), (GUEST, Seed), (HOST, Reveal), (HOST, Sig), (GUEST, Sig)]


def test_the_guests_transcript_records_the_same_channel_and_a_verification_note_per_game(honest_match):
    host = transcript.parse(honest_match.host_transcript.read_bytes())
    guest = transcript.parse(honest_match.guest_transcript.read_bytes())
    assert guest.role == GUEST
    # Both ends saw the same messages; only the hello nonce is the guest's own to know first.
    assert guest.records == host.records
    games = sum(isinstance(m, Reveal) for _, m in guest.records)
    assert [(n.kind, n.game) for n in guest.notes] == [("verification", g) for g in range(1, games + 1)]
    assert all("deal verified" in n.text for n in guest.notes)


def test_a_transcript_re_encodes_to_the_same_bytes(honest_match):
    data = honest_match.host_transcript.read_bytes()
    assert encode(transcript.parse(data)) == data


def test_notes_survive_a_round_trip():
    data = transcript.header(GUEST) + transcript.note("abandoned_deal", 2, "no reveal") + transcript.note("connection", None, "lost")
    parsed = transcript.parse(data)
    assert parsed.notes == [Note("abandoned_deal", 2, "no reveal"), Note("connection", None, "lost")]
    assert parsed.records == []


def test_the_writers_refuse_unknown_roles_senders_and_note_kinds():
    with pytest.raises(ValueError):
        transcript.header("referee")
    with pytest.raises(ValueError):
        transcript.record("referee", Seed(1, bytes(32)))
    with pytest.raises(ValueError):
        transcript.note("gossip", None, "x")


def test_a_transcript_cut_inside_a_frame_is_refused_as_truncated(honest_match):
    data = honest_match.host_transcript.read_bytes()
    with pytest.raises(TranscriptError, match="truncated"):
        transcript.parse(data[:-3])
    with pytest.raises(TranscriptError, match="truncated"):
        transcript.parse(data[:2])


def test_a_transcript_cut_at_a_frame_boundary_still_parses(honest_match):
    data = honest_match.host_transcript.read_bytes()
    last = transcript.body_record(*transcript.parse(data).bodies[-1])
    assert data.endswith(last)
    shorter = transcript.parse(data[: -len(last)])
    assert len(shorter.records) == len(transcript.parse(data).records) - 1


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not a transcript at all, just text",
        bytes(range(256)),
        b"\xff\xff\xff\xff" + b"\x00" * 16,
        b"\x00\x00\x00\x01\xc1",
    ],
    ids=["empty", "text", "bytes", "huge-length", "bad-msgpack"],
)
def test_garbage_is_a_transcript_error(data):
    with pytest.raises(TranscriptError):
        transcript.parse(data)


def record_frame(sender: str, wire: dict) -> bytes:
    return encode_frame({"type": "record", "from": sender, "message": wire})


HELLO = Hello((1,), "Omar", bytes(32))


@pytest.mark.parametrize(
    "data, reason",
    [
        (transcript.record(GUEST, HELLO), "header"),
        (encode_frame({"type": "transcript", "format": 3, "role": "host"}), "format"),
        (encode_frame({"type": "transcript", "format": 1}), "role"),
        (encode_frame({"type": "transcript", "format": 1, "role": "judge"}), "role"),
        (encode_frame({"type": "transcript", "role": "host"}), "format"),
    ],
    ids=["no-header", "format-3", "no-role", "bad-role", "no-format"],
)
def test_a_wrong_header_is_a_transcript_error(data, reason):
    with pytest.raises(TranscriptError, match=reason):
        transcript.parse(data + transcript.record(GUEST, HELLO))


def test_a_format_2_record_keeps_a_body_and_a_format_1_record_a_message():
    body = encode_frame(to_wire(HELLO))[4:]
    assert transcript.parse(transcript.header(GUEST, 2) + transcript.body_record(GUEST, body)).records == [(GUEST, HELLO)]
    with pytest.raises(TranscriptError, match="'body'"):
        transcript.parse(transcript.header(GUEST, 2) + transcript.record(GUEST, HELLO))
    with pytest.raises(TranscriptError, match="'message'"):
        transcript.parse(transcript.header(GUEST, 1) + transcript.body_record(GUEST, body))


@pytest.mark.parametrize(
    "frame",
    [
        encode_frame({"type": "chapter"}),
        record_frame("referee", to_wire(HELLO)),
        encode_frame({"type": "record", "from": "guest", "message": "hello"}),
        record_frame(GUEST, {**to_wire(HELLO), "nonce": b"short"}),
        record_frame(GUEST, {"type": "whisper"}),
        encode_frame({"type": "note", "kind": "gossip", "game": 1, "text": "x"}),
        encode_frame({"type": "note", "kind": "verification", "game": "one", "text": "x"}),
        encode_frame({"type": "note", "kind": "verification", "game": 1, "text": b"x"}),
    ],
    ids=["unknown-frame", "bad-sender", "message-not-map", "invalid-message", "unknown-message",
         "bad-note-kind", "bad-note-game", "bad-note-text"],
)
def test_a_malformed_frame_after_the_header_names_its_frame_number(frame):
    data = transcript.header(HOST) + transcript.record(GUEST, HELLO) + frame
    with pytest.raises(TranscriptError, match="frame 3"):
        transcript.parse(data)


def test_a_verified_report_lists_one_check_per_game(honest_match):
    report = transcript.verify(transcript.parse(honest_match.host_transcript.read_bytes()))
    assert report.ok and report.problems == []
    assert [c.game for c in report.checks] == list(range(1, len(report.checks) + 1))
    assert report.verifier.match_end == MatchEnd(honest_match.table.winner, honest_match.table.totals, "target")


@pytest.mark.parametrize("format", transcript.FORMATS)
def test_a_message_recorded_as_its_wire_map_and_frame_is_the_record_of_the_message(tmp_path, format):
    from basra_net.match_files import TranscriptFile

    messages = [MatchStart(("Hoda", "Omar")), Seed(1, bytes(range(32))), MatchEnd(winner=0, totals=(101, 60), reason="target")]
    by_message, by_wire = TranscriptFile(tmp_path / "a.basra", "host", format), TranscriptFile(tmp_path / "b.basra", "host", format)
    for sender, message in zip((HOST, GUEST, HOST), messages):
        wire = to_wire(message)
        by_message.record(sender, message)
        by_wire.record_sent(sender, wire, encode_frame(wire))
    by_message.close()
    by_wire.close()
    written = (tmp_path / "b.basra").read_bytes()
    assert written == (tmp_path / "a.basra").read_bytes()
    assert transcript.parse(written).format == format and len(transcript.parse(written).records) == 3

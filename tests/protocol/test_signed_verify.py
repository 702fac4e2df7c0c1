"""`basra verify` on signed records: forgeries built from real matches, each refused with its exit status and reason.

Two real matches are played through the table and the client with the same
match id, seeds and nonce, so that they have the same signed deals: match A
by two greedy bots, match B with other plays by both seats.  Their records
are signed as the format-2 wire signs them (record.py), written as format-2
transcripts, then tampered with as a cheating guest or host would.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import types
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.client import session as client_session
from basra_net.client.players import BotPlayer
from basra_net.client.replay import load_replay
from basra_net.client.screen import CardStyle
from basra_net.host.identity import public_key_bytes
from basra_net.protocol import transcript
from basra_net.protocol.fingerprint import key_fingerprint
from basra_net.protocol.framing import decode_body, encode_frame
from basra_net.protocol.messages import Commit, Hello, Reveal, Sig, Welcome
from basra_net.protocol.record import GUEST_SIGNER, HOST_SIGNER, AbsenceAccount, AbsenceEvent, ChannelContext, Status, result_statement
from basra_net.protocol.signed_verify import Verdict, verify_signed
from tests.conftest import play_match
from tests.host.test_lying_host import AbandoningTable, join_lying_host
from tests.protocol.test_record import GUEST_IDENTITY, GUEST_KEY, sign_channel

HOST_IDENTITY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"test host key").digest())
HOST_KEY = public_key_bytes(HOST_IDENTITY)
MATCH_ID = bytes(range(16))
NONCE = hashlib.sha256(b"fixed guest nonce").digest()
Records = list[tuple[str, bytes]]


class Played:
    """One real match's seat-1 channel as the host recorded it: its signed records, and its messages to sign again."""

    def __init__(self, path: Path) -> None:
        parsed = transcript.parse(path.read_bytes())
        assert parsed.format == transcript.SIGNED_FORMAT
        self.parsed = parsed
        self.records: Records = parsed.bodies
        hello = next(m for s, m in parsed.records if isinstance(m, Hello))
        self.welcome = next(m for s, m in parsed.records if isinstance(m, Welcome))
        assert (hello.nonce, hello.key) == (NONCE, GUEST_KEY)
        self.context = ChannelContext(MATCH_ID, self.welcome.host_key, GUEST_KEY, 1, NONCE, self.welcome.scoring, self.welcome.target)
        self.messages = [(s, decode_body(b)) for s, b in self.records if kind_of(b) != "sig"]

    def signed(self) -> Records:
        """The records exactly as the real match wrote them."""
        return list(self.records)

    def resigned(self, host_identity: Ed25519PrivateKey = HOST_IDENTITY, **options) -> Records:
        """The same messages signed again, as a host holding host_identity (and the guest, unless told not to) would."""
        context = replace(self.context, host_key=public_key_bytes(host_identity))
        return sign_channel(context, host_identity, self.messages, **options)


def _fixed_nonce_os() -> types.SimpleNamespace:
    """The client's os module with a fixed urandom, so that both matches are bound to the same nonce."""
    return types.SimpleNamespace(**{**vars(os), "urandom": lambda n: NONCE[:n]})


@pytest.fixture(scope="module")
def matches(tmp_path_factory) -> tuple[Played, Played]:
    folder = tmp_path_factory.mktemp("signed_matches")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BASRA_HOME", str(folder / "home"))
        patch.setattr(client_session, "os", _fixed_nonce_os())
        a = trio.run(play_match, folder / "a", HOST_IDENTITY, MATCH_ID, None, GUEST_IDENTITY)
        others = (BotPlayer("random", rng=random.Random(1)), BotPlayer("random", rng=random.Random(2)))
        b = trio.run(play_match, folder / "b", HOST_IDENTITY, MATCH_ID, others, GUEST_IDENTITY)
    return Played(a.host_transcript), Played(b.host_transcript)


def write(path: Path, records: Records, *, role: str = "guest", notes: tuple[tuple[str, int | None, str], ...] = ()) -> Path:
    path.write_bytes(
        transcript.header(role, transcript.SIGNED_FORMAT)
        + b"".join(transcript.body_record(sender, body) for sender, body in records)
        + b"".join(transcript.note(*note) for note in notes)
    )
    return path


def basra_verify(basra_command, path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*basra_command, "verify", str(path), *args], capture_output=True, text=True, timeout=60)


def kind_of(body: bytes) -> str:
    return decode_body(body)["type"]


def positions(records: Records, sender: str, kind: str) -> list[int]:
    return [i for i, (s, body) in enumerate(records) if s == sender and kind_of(body) == kind]


def body(message: dict) -> bytes:
    return encode_frame(message)[4:]


def change_first(records: Records, sender: str, kind: str, change: Callable[[dict], None]) -> Records:
    """The records with the first of this sender's messages of this kind changed in place, re-encoded."""
    at = positions(records, sender, kind)[0]
    message = decode_body(records[at][1])
    change(message)
    return [*records[:at], (sender, body(message)), *records[at + 1 :]]


# --- the honest record ----------------------------------------------------------------------------


def test_the_two_matches_share_their_signed_deals_and_differ_in_their_plays(matches):
    a, b = matches
    deals = lambda m: [(s, x) for s, x in m.messages if x["type"] in ("commit", "reveal")]  # noqa: E731
    plays = lambda m: [x for s, x in m.messages if x["type"] == "played"]  # noqa: E731
    assert deals(a) == deals(b) and len(deals(a)) >= 4
    assert plays(a) != plays(b)
    # Version 1 proves the deals only: either match's record verifies around the same signed deals.
    assert transcript.verify(a.parsed).ok and transcript.verify(b.parsed).ok


def test_an_honest_signed_transcript_is_proven_with_both_fingerprints(matches, basra_command, tmp_path):
    a, _ = matches
    done = basra_verify(basra_command, write(tmp_path / "a.basra", a.signed()))
    assert done.returncode == 0, done.stdout
    assert "PROVEN: the host committed to its seed before the guest's seed was sent; each deck follows from both seeds; " \
        "every play was legal, every score right; both players signed this record" in done.stdout
    assert f"host key fingerprint  {key_fingerprint(HOST_KEY)}  (seat 0, Hoda)" in done.stdout
    assert f"guest key fingerprint {key_fingerprint(GUEST_KEY)}  (seat 1, Omar)" in done.stdout
    assert "host signature valid, guest signature valid" in done.stdout
    assert "result: seat" in done.stdout and "(target)" in done.stdout
    assert "Traceback" not in done.stderr


# --- forgeries --------------------------------------------------------------------------------------


def test_the_guests_whole_match_replay_with_the_same_signed_deals_is_not_proven(matches, basra_command, tmp_path):
    a, b = matches
    honest = a.signed()
    # The guest cannot sign for the host: it puts the host's signatures of match A on the stream of match B,
    # which it countersigns itself.
    forged = b.signed()
    host_sigs = iter(honest[i] for i in positions(honest, "host", "sig"))
    forged = [next(host_sigs) if s == "host" and kind_of(x) == "sig" else (s, x) for s, x in forged]
    done = basra_verify(basra_command, write(tmp_path / "forged.basra", forged))
    assert done.returncode == 1, done.stdout
    assert "NOT PROVEN: host signature:" in done.stdout
    # Every play of the re-play follows the rules: only the signatures tell it from the match played.
    assert "game 2: deal and plays check out (under no valid host signature: this proves nothing)" in done.stdout


def test_the_guests_replay_signed_with_another_key_for_the_host_is_not_proven(matches, tmp_path):
    _, b = matches
    report = verify_signed(transcript.parse(write(tmp_path / "f.basra", b.resigned(host_identity=Ed25519PrivateKey.generate())).read_bytes()))
    assert report.verdict is Verdict.NOT_PROVEN
    assert "the host's signature of game 1 does not verify" in report.reason
    assert report.games[0].host is Status.INVALID


def test_the_hosts_replay_of_the_guests_plays_is_not_proven(matches, basra_command, tmp_path):
    a, b = matches
    honest = a.signed()
    # The host signs match B's stream itself, and keeps the guest's countersignatures of match A.
    forged = b.resigned(countersign=lambda of, game: False)
    guest_sigs = [honest[i] for i in positions(honest, "guest", "sig")]
    for at, sig in zip(positions(forged, "host", "sig"), guest_sigs):
        forged.insert(at + 1 + guest_sigs.index(sig), sig)
    done = basra_verify(basra_command, write(tmp_path / "forged.basra", forged))
    assert done.returncode == 1, done.stdout
    assert "NOT PROVEN: bad_signature: the guest signed game" in done.stdout or "NOT PROVEN: bad_signature: the guest's signature of game 1 does not verify" in done.stdout


def test_the_hosts_replay_without_the_guests_countersignatures_is_not_proven(matches, basra_command, tmp_path):
    _, b = matches
    done = basra_verify(basra_command, write(tmp_path / "forged.basra", b.resigned(countersign=lambda of, game: False)))
    assert done.returncode == 1, done.stdout
    assert "host signature valid, guest signature missing" in done.stdout
    assert "NOT PROVEN: not signed by both players: the guest did not countersign game 1" in done.stdout
    # --partial says what holds, and whose word it is.
    partial = basra_verify(basra_command, tmp_path / "forged.basra", "--partial")
    assert partial.returncode == 0, partial.stdout
    assert "the host alone signed game 1, game 2, game 3 and the result" in partial.stdout
    assert "both players signed" not in partial.stdout


def test_a_missing_countersignature_of_the_result_alone_is_named(matches, basra_command, tmp_path):
    a, _ = matches
    done = basra_verify(basra_command, write(tmp_path / "r.basra", a.resigned(countersign=lambda of, game: of != "result")))
    assert done.returncode == 1, done.stdout
    assert "NOT PROVEN: not signed by both players: the guest did not countersign the result" in done.stdout


@pytest.mark.parametrize("change", ["changed", "swapped"])
def test_names_changed_or_swapped_are_not_proven(matches, basra_command, tmp_path, change):
    a, _ = matches

    def rename(start: dict) -> None:
        start["names"] = ["Mallory", start["names"][1]] if change == "changed" else start["names"][::-1]

    records = change_first(a.signed(), "host", "match_start", rename)
    done = basra_verify(basra_command, write(tmp_path / "names.basra", records))
    assert done.returncode == 1, done.stdout
    assert "NOT PROVEN: host signature: the host's signature of game 1 does not verify" in done.stdout


def test_the_header_role_is_a_claim_that_changes_no_verdict(matches, basra_command, tmp_path):
    a, _ = matches
    as_guest = basra_verify(basra_command, write(tmp_path / "g.basra", a.signed(), role="guest"))
    as_host = basra_verify(basra_command, write(tmp_path / "h.basra", a.signed(), role="host"))
    assert as_guest.returncode == as_host.returncode == 0
    assert "the header says the host wrote it (a claim, not signed)" in as_host.stdout
    assert as_guest.stdout.splitlines()[1:] == as_host.stdout.splitlines()[1:]


def test_the_roles_keys_swapped_are_not_proven(matches, basra_command, tmp_path):
    a, _ = matches
    records = change_first(a.signed(), "guest", "hello", lambda hello: hello.update(key=HOST_KEY))
    records = change_first(records, "host", "welcome", lambda welcome: welcome.update(host_key=GUEST_KEY))
    done = basra_verify(basra_command, write(tmp_path / "roles.basra", records))
    assert done.returncode == 1, done.stdout
    assert "NOT PROVEN:" in done.stdout


def cut_after_game(records: Records, game: int) -> Records:
    """The records up to the guest's countersignature of the game."""
    return records[: positions(records, "guest", "sig")[game - 1] + 1]


def test_a_record_cut_short_fails_and_partial_says_what_holds(matches, basra_command, tmp_path):
    a, _ = matches
    path = write(tmp_path / "cut.basra", cut_after_game(a.signed(), 1))
    done = basra_verify(basra_command, path)
    assert done.returncode == 1, done.stdout
    assert "NOT PROVEN: the record is cut short: it ends after the host's signature of game 1, before the match ended" in done.stdout
    partial = basra_verify(basra_command, path, "--partial")
    assert partial.returncode == 0, partial.stdout
    assert "game 1: deal and plays check out; host signature valid, guest signature valid" in partial.stdout
    assert "PROVEN (up to the cut):" in partial.stdout and "; both players signed game 1;" in partial.stdout
    assert "nothing after the cut is proven: the record ends after the host's signature of game 1, before the match ended" in partial.stdout


@pytest.mark.parametrize("notes", [
    (("abandoned_deal", 2, "the host abandoned a fixed deal"),),
    (("verification", 1, "deal FAILED: the host cheated"), ("connection", None, "the host cut the connection")),
], ids=["fake-abandoned-deal", "fake-failure"])
def test_added_notes_change_no_verdict(matches, basra_command, tmp_path, notes):
    a, _ = matches
    done = basra_verify(basra_command, write(tmp_path / "notes.basra", a.signed(), notes=notes))
    assert done.returncode == 0, done.stdout
    assert "the writer's, not signed, not evidence" in done.stdout
    assert "PROVEN: " in done.stdout


def test_removed_notes_change_no_verdict(matches, tmp_path):
    a, _ = matches
    with_note = write(tmp_path / "n.basra", a.signed(), notes=(("verification", 1, "deal verified"),))
    without = write(tmp_path / "w.basra", a.signed())
    reports = [verify_signed(transcript.parse(p.read_bytes())) for p in (with_note, without)]
    assert [r.verdict for r in reports] == [Verdict.PROVEN, Verdict.PROVEN]
    assert reports[0].holds == reports[1].holds


def test_a_game_moved_from_another_match_is_not_proven(matches, basra_command, tmp_path):
    a, b = matches
    honest, other = a.signed(), b.signed()
    # Game 2 of the forgery is match B's game 2, with both players' real signatures of it.
    start = lambda r: positions(r, "host", "commit")[1]  # noqa: E731
    end = lambda r: positions(r, "guest", "sig")[1] + 1  # noqa: E731
    forged = honest[: start(honest)] + other[start(other) : end(other)] + honest[end(honest) :]
    done = basra_verify(basra_command, write(tmp_path / "moved.basra", forged))
    assert done.returncode == 1, done.stdout
    assert "NOT PROVEN: host signature:" in done.stdout


def test_a_result_signed_with_other_fields_than_the_streams_is_not_proven(matches, basra_command, tmp_path):
    a, _ = matches
    records = a.signed()
    end = verify_signed(transcript.parse(write(tmp_path / "a.basra", records).read_bytes())).channel.result.result
    # Both sign a result that names other totals than the match_end they follow.
    other = replace(end, totals=end.totals[::-1], winner=1 - end.winner)
    for sender, identity, signer in (("host", HOST_IDENTITY, HOST_SIGNER), ("guest", GUEST_IDENTITY, GUEST_SIGNER)):
        signature = identity.sign(result_statement(a.context, signer, other))
        at = [i for i in positions(records, sender, "sig") if decode_body(records[i][1])["of"] == "result"][0]
        records[at] = (sender, body({**decode_body(records[at][1]), "signature": signature}))
    done = basra_verify(basra_command, write(tmp_path / "other.basra", records))
    assert done.returncode == 1, done.stdout
    assert "NOT PROVEN: host signature: the host's signature of the result does not verify under the host key" in done.stdout


def test_a_commit_with_an_invalid_signature_and_no_reveal_is_named(matches, basra_command, tmp_path):
    a, _ = matches
    records = cut_after_game(a.signed(), 1)
    commit_at = positions(a.signed(), "host", "commit")[1]
    commit = decode_body(a.signed()[commit_at][1])
    commit["signature"] = bytes(64)
    records.append(("host", body(commit)))
    done = basra_verify(basra_command, write(tmp_path / "commit.basra", records), "--partial")
    assert done.returncode == 1, done.stdout
    assert "NOT PROVEN: game 2: commit signature: expected valid under the host key, found invalid (a commitment never revealed)" in done.stdout


def test_a_fake_abandonment_note_is_not_an_abandonment(matches, basra_command, tmp_path):
    a, _ = matches
    note = (("connection", None, "the match ended as abandoned by seat 1: seat 0 wins"),)
    done = basra_verify(basra_command, write(tmp_path / "fake.basra", a.signed(), notes=note))
    assert done.returncode == 0
    assert "abandonment" not in done.stdout.replace(note[0][2], "")
    assert "(target)" in done.stdout


# --- abandonment ----------------------------------------------------------------------------------


def abandoned(a: Played, events: tuple[AbsenceEvent, ...], grace: int = 120) -> Records:
    return a.resigned(evidence=AbsenceAccount(absent_seat=1, grace=grace, events=events))


def test_an_abandonment_is_asserted_by_the_host_with_its_evidence(matches, basra_command, tmp_path):
    a, _ = matches
    events = (AbsenceEvent("away", 1_764_500_000_000, 40), AbsenceEvent("grace_over", 1_764_500_120_000, 40))
    done = basra_verify(basra_command, write(tmp_path / "ab.basra", abandoned(a, events)))
    assert "abandonment: ASSERTED BY THE HOST, not proven: seat 1 abandoned the match (grace period 120 s); the host's signature of its account is valid" in done.stdout
    assert "2025-11-30T10:53:20.000Z  away        after 40 stream messages" in done.stdout
    assert "2025-11-30T10:55:20.000Z  grace_over  after 40 stream messages" in done.stdout
    assert "the host asserts that seat 1 abandoned the match: a transcript cannot prove that" in done.stdout
    assert "(abandoned)" not in done.stdout and " wins " not in done.stdout
    assert "result: the host names seat 0 (Hoda) the winner at 70-40, the match abandoned" in done.stdout
    assert done.returncode == 0, done.stdout


def test_an_account_that_contradicts_itself_is_a_proven_cheat(matches, basra_command, tmp_path):
    a, _ = matches
    events = (AbsenceEvent("away", 1_764_500_000_000, 40), AbsenceEvent("grace_over", 1_764_500_005_000, 40))
    done = basra_verify(basra_command, write(tmp_path / "short.basra", abandoned(a, events)))
    assert done.returncode == 3, done.stdout
    assert "abandonment DISPUTED: the host's signed account contradicts itself: the account shows a wait of 5 seconds for a grace period of 120 seconds" in done.stdout
    assert "CHEAT PROVEN:" in done.stdout


def test_a_leave_the_record_does_not_hold_is_disputed(matches, basra_command, tmp_path):
    a, _ = matches
    events = (AbsenceEvent("left", 1_764_500_000_000, 40),)
    done = basra_verify(basra_command, write(tmp_path / "left.basra", abandoned(a, events)))
    assert done.returncode == 1, done.stdout
    assert "NOT PROVEN: the abandonment is disputed: the host says seat 1 left, and the record holds no leave from it (the seat's word)" in done.stdout


def test_an_account_whose_signature_does_not_verify_is_not_proven(matches, basra_command, tmp_path):
    a, _ = matches
    events = (AbsenceEvent("left", 1_764_500_000_000, 40),)

    def later(end: dict) -> None:
        end["evidence"]["events"][0][1] += 1000

    records = change_first(abandoned(a, events), "host", "match_end", later)
    done = basra_verify(basra_command, write(tmp_path / "bad.basra", records))
    assert done.returncode == 1, done.stdout
    assert "NOT PROVEN: abandonment: the host's signature of its account of the absence does not verify" in done.stdout


async def test_a_connected_guest_declared_abandoned_shows_the_dispute_it_noted(tmp_path, basra_command, monkeypatch):
    join, verify, _ = await join_lying_host(AbandoningTable, tmp_path, basra_command, monkeypatch)
    assert join.returncode == 3
    shown = verify.stdout.decode()
    assert "abandonment: ASSERTED BY THE HOST, not proven: seat 1 abandoned the match" in shown
    assert "grace_over" in shown and " wins " not in shown
    assert "abandonment DISPUTED by the writer's note (its word, not signed, not proven): " in shown
    assert "disputed abandonment: the host says this seat was away past its grace period" in shown


# --- a proven cheat -------------------------------------------------------------------------------


def test_a_wrong_score_the_host_signed_is_a_proven_cheat(matches, basra_command, tmp_path):
    a, _ = matches
    messages = list(a.messages)
    at = next(i for i, (s, m) in enumerate(messages) if m["type"] == "game_end")
    end = dict(messages[at][1])
    end["totals"] = [end["totals"][0] + 1, end["totals"][1]]
    messages[at] = ("host", end)
    cheat = sign_channel(a.context, HOST_IDENTITY, messages)
    done = basra_verify(basra_command, write(tmp_path / "cheat.basra", cheat))
    assert done.returncode == 3, done.stdout
    assert "CHEAT PROVEN: the host signed it: game 1: match totals" in done.stdout


@pytest.mark.parametrize("options", [(), ("--partial",)], ids=["whole", "partial"])
def test_a_cheat_in_a_record_cut_right_after_its_games_signature_is_proven(matches, basra_command, tmp_path, options):
    # The context names the scoring and target, so the game's signature alone fixes the rules the score is judged by.
    a, _ = matches
    messages = list(a.messages)
    at = next(i for i, (s, m) in enumerate(messages) if m["type"] == "game_end")
    messages[at] = ("host", {**messages[at][1], "totals": [messages[at][1]["totals"][0] + 1, messages[at][1]["totals"][1]]})
    cheat = sign_channel(a.context, HOST_IDENTITY, messages)
    host_sig = positions(cheat, "host", "sig")[0]
    done = basra_verify(basra_command, write(tmp_path / "cut-cheat.basra", cheat[: host_sig + 1]), *options)
    assert done.returncode == 3, done.stdout
    assert "CHEAT PROVEN: the host signed it: game 1: match totals: expected (30, 0), found (31, 0)" in done.stdout


# --- format 1 ---------------------------------------------------------------------------------------


def format_1(path: Path, records) -> Path:
    """A format-1 transcript of these records (what version 1 recorded: no signatures of the record)."""
    kept = [(s, m) for s, m in records if not isinstance(m, Sig)]
    path.write_bytes(transcript.header("guest") + b"".join(transcript.record(s, m) for s, m in kept))
    return path


def test_a_format_1_transcript_says_it_proves_the_deals_only(honest_match, basra_command, tmp_path):
    parsed = transcript.parse(honest_match.guest_transcript.read_bytes())
    done = basra_verify(basra_command, format_1(tmp_path / "v1.basra", parsed.records))
    assert done.returncode == 0, done.stdout
    assert done.stdout.startswith("format 1: this transcript proves the deals only, not the plays, the result or who played\n")


def test_a_format_1_commit_with_an_invalid_signature_and_no_reveal_is_named(honest_match, basra_command, tmp_path):
    parsed = transcript.parse(honest_match.host_transcript.read_bytes())
    last_reveal = max(i for i, (_, m) in enumerate(parsed.records) if isinstance(m, Reveal))
    kept = parsed.records[: last_reveal + 1]
    game = kept[-1][1].game + 1
    forged = Commit(game, bytes(32), bytes(64))
    done = basra_verify(basra_command, format_1(tmp_path / "v1.basra", [*kept, ("host", forged)]))
    assert done.returncode == 1, done.stdout
    assert f"FAILED: game {game}: commit signature: expected valid under the host key, found invalid (a commitment never revealed)" in done.stdout


def walked_away_after_the_seed(a: Played, *, dealt: bool) -> Records:
    """Match A's records to game 2's seed (and its first deal), then the host's own seat gone: the result signed by both."""
    last = "deal" if dealt else "seed"
    messages = a.messages[: next(i for i, (s, m) in enumerate(a.messages) if m["type"] == last and m["game"] == 2) + 1]
    end = next(m for s, m in a.messages if m["type"] == "match_end")
    totals = next(m for s, m in reversed(messages) if m["type"] == "game_end")["totals"]
    messages.append(("host", {**end, "winner": 1, "totals": totals}))
    account = AbsenceAccount(absent_seat=0, grace=20, events=(AbsenceEvent("left", 1_764_500_000_000, 80),))
    return sign_channel(a.context, HOST_IDENTITY, messages, evidence=account)


def test_a_fixed_deal_left_unrevealed_is_a_cheat_only_once_the_host_dealt_from_it(matches, basra_command, tmp_path):
    a, _ = matches
    seed_only = basra_verify(basra_command, write(tmp_path / "seed.basra", walked_away_after_the_seed(a, dealt=False)))
    assert seed_only.returncode == 1, seed_only.stdout
    assert "NOT PROVEN: game 2: reveal: expected the host seed after the seed exchange" in seed_only.stdout
    dealt = basra_verify(basra_command, write(tmp_path / "dealt.basra", walked_away_after_the_seed(a, dealt=True)))
    assert dealt.returncode == 3, dealt.stdout
    assert "CHEAT PROVEN: the host signed it: game 2: reveal: expected the host seed after the seed exchange" in dealt.stdout


# --- basra replay ---------------------------------------------------------------------------------


def test_replay_shows_the_verdict_of_a_signed_record(matches, tmp_path):
    a, b = matches
    proven = load_replay(write(tmp_path / "a.basra", a.signed()), CardStyle())
    assert (proven.verdict, proven.ok) == ("proven", True)
    assert len(proven.decks) == 3 and proven.frames
    forged = load_replay(write(tmp_path / "b.basra", b.resigned(host_identity=Ed25519PrivateKey.generate())), CardStyle())
    assert not forged.ok
    assert forged.verdict == "NOT PROVEN: host signature: the host's signature of game 1 does not verify under the host key"


# --- unreadable files ------------------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"", b"\x00\x00\x00\x05hello", encode_frame({"type": "transcript", "format": 2, "role": "guest"}) + encode_frame({"type": "record", "from": "host", "body": b"\x80"})])
def test_a_malformed_file_is_one_line_and_exit_2(basra_command, tmp_path, content):
    path = tmp_path / "bad.basra"
    path.write_bytes(content)
    done = basra_verify(basra_command, path)
    assert done.returncode == 2
    assert len(done.stdout.strip().splitlines()) == 1 and "not a readable transcript" in done.stdout
    assert "Traceback" not in done.stderr

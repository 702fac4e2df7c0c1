"""Forged records: `basra verify` convicts no one but under that party's own signature (PROTOCOL.md 14.11, 15.16).

One real match is played the way README tells people to play: `basra host`
and `basra join` as processes, over TLS, with a join code and hidden hands.
Each side's transcript is then forged as its writer could, holding its own
key only: the guest (its transcript, its key) and the host (its transcript,
the host key).  Every forgery is refused, or convicts only the party whose
valid signature covers the false data: a host that signs a false score
proves its own cheat; no one can make a record that proves the other one
cheated.  Each party signs its own steps of the hidden deal (`lock`,
`open`, `audit`: 15.17) over the other party's steps it received: a step
that fails its check under its party's own signature convicts that party,
whoever holds the record, and a party that changes its own step, even
signing it again, breaks the other party's signatures after it, so its
record then names no one.  What stays the guest's unsigned word (its
`hidden_play`) names no one.
"""

from __future__ import annotations

import os
import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.client.verify_file import verify_file
from basra_net.exits import EXIT_CHEAT, EXIT_FAILURE, EXIT_OK
from basra_net.identity import load_or_create_key, public_key_bytes
from basra_net.identity import local_seat_key
from basra_net.protocol import transcript
from basra_net.protocol.deal_signing import StepContext, StepLedger
from basra_net.protocol.framing import decode_body, encode_frame
from basra_net.protocol.messages import Hello, MatchStart, Welcome, from_wire
from basra_net.protocol.record import (
    STREAM_TYPES, AbsenceAccount, AbsenceEvent, ChannelContext, ChannelRecord, RecordError, evidence_map,
)

from .processes import basra_command, finish, port_said, start_basra, wait_for_line

CODE = "tulip-42"
MATCH_TIMEOUT = 120
Records = list[tuple[str, bytes]]


@dataclass
class Kept:
    """One side's transcript of the real match, with what its writer holds: its own key."""

    path: Path
    role: str
    records: Records
    context: ChannelContext
    key: Ed25519PrivateKey


@dataclass
class Match:
    host: Kept
    guest: Kept


@pytest.fixture(scope="module")
def match(tmp_path_factory) -> Match:
    folder = tmp_path_factory.mktemp("forged_records")
    env = {**os.environ, "BASRA_HOME": str(folder / "home"), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    host = start_basra(env, "host", "--name", "Sam", "--auto", "greedy", "--bind", "127.0.0.1", "--port", "0",
                       "--code", CODE, "--no-announce", "--transcript", str(folder / "host.basra"))
    try:
        started_lines = wait_for_line(host, "Waiting for the second player")
        started, port = "".join(started_lines), port_said(started_lines)
        join = start_basra(env, "join", f"127.0.0.1:{port}", "--code", CODE, "--name", "Omar", "--auto", "greedy",
                           "--transcript", str(folder / "join.basra"))
        code, out = finish(join, MATCH_TIMEOUT)
        assert code == 0, out
    finally:
        host_code, host_out = finish(host, MATCH_TIMEOUT)
    assert host_code == 0 and "(hidden hands)" in host_out and "(TLS, host key fingerprint" in started, started + host_out
    home = folder / "home"
    return Match(
        kept(folder / "host.basra", load_or_create_key(home / "host_identity.pem")),
        kept(folder / "join.basra", load_or_create_key(home / "guest_identity.pem")),
    )


def kept(path: Path, key: Ed25519PrivateKey) -> Kept:
    parsed = transcript.parse(path.read_bytes())
    assert parsed.format == transcript.SIGNED_FORMAT
    hello = next(m for s, m in parsed.records if isinstance(m, Hello))
    welcome = next(m for s, m in parsed.records if isinstance(m, Welcome))
    context = ChannelContext(welcome.match_id, welcome.host_key, hello.key, welcome.seat, hello.nonce, welcome.scoring, welcome.target)
    return Kept(path, parsed.role, list(parsed.bodies), context, key)


# --- forging ------------------------------------------------------------------------------------


def body(message: dict) -> bytes:
    return encode_frame(message)[4:]


def kind_of(record: tuple[str, bytes]) -> str:
    return decode_body(record[1])["type"]


def where(records: Records, sender: str, kind: str, **fields) -> list[int]:
    """The positions of this sender's messages of this kind whose fields are as given."""
    found = []
    for i, (s, b) in enumerate(records):
        if s == sender:
            message = decode_body(b)
            if message["type"] == kind and all(message.get(k) == v for k, v in fields.items()):
                found.append(i)
    return found


def changed(records: Records, at: int, change: Callable[[dict], None]) -> Records:
    message = decode_body(records[at][1])
    change(message)
    return [*records[:at], (records[at][0], body(message)), *records[at + 1:]]


def change_first(records: Records, sender: str, kind: str, change: Callable[[dict], None], **fields) -> Records:
    return changed(records, where(records, sender, kind, **fields)[0], change)


def signed_again(records: Records, context: ChannelContext, *, host: Ed25519PrivateKey | None = None,
                 guest: Ed25519PrivateKey | None = None) -> Records:
    """The records with the host's signatures (given the host key) or the guest's (given the guest's) made anew over
    what the records now hold, as a writer holding that key would; the other party's are kept as they were."""
    channel = ChannelRecord(context)
    out: Records = []
    for sender, b in records:
        message = decode_body(b)
        kind = message["type"]
        if sender == "host" and kind == "sig" and host is not None and channel.owed_by_host is not None:
            message = channel.host_signature(host)
            b = body(message)
        elif sender == "guest" and kind == "sig" and guest is not None and channel.open_for_countersignature is not None:
            message = channel.countersignature(guest)
            b = body(message)
        out.append((sender, b))
        try:
            if sender == "host" and kind in STREAM_TYPES:
                channel.host_frame(struct.pack(">I", len(b)) + b, message)
            elif sender == "guest" and kind == "sig":
                channel.guest_sig(message)
        except RecordError:
            pass  # a signature of the other party's that no longer holds: kept, as the forger must keep it
    return out


STEPS = {"lock": None, "open": None, "audit": None, "locked": 0, "opened": 0, "audited": 0}


def steps_signed_again(records: Records, context: ChannelContext, seat: int, key: Ed25519PrivateKey) -> Records:
    """The records with every step of seat's party signed anew over what the records now hold (15.17), as that
    party, holding its key, would sign them; the other party's steps keep their signatures."""
    start = from_wire(decode_body(records[where(records, "host", "match_start")[0]][1]))
    assert isinstance(start, MatchStart) and start.keys is not None
    ledgers: dict[int, StepLedger] = {}
    out: Records = []
    for sender, b in records:
        message = decode_body(b)
        kind = message["type"]
        if kind in STEPS and (sender == "guest") == (STEPS[kind] is None):
            step = from_wire(message)
            ledger = ledgers.setdefault(step.game, StepLedger(StepContext(context.match_id, start.keys), step.game))
            party = context.guest_seat if sender == "guest" else message["seat"]
            if party == seat:
                message["sig"] = key.sign(ledger.statement(seat, step))
                b = body(message)
            ledger.signatures[party].append(message["sig"])
        out.append((sender, b))
    return out


def own_steps_signed_again(kept_: Kept, records: Records) -> Records:
    """A writer's forgery signed as its writer could: the guest its own steps, the host its own seat's (whose key it
    makes from its own, 15.17), and then every signature of its own role over the stream."""
    seat, role = (kept_.context.guest_seat, "guest") if kept_.role == "guest" else (0, "host")
    key = kept_.key if role == "guest" else local_seat_key(kept_.key, 0)
    return signed_again(steps_signed_again(records, kept_.context, seat, key), kept_.context, **{role: kept_.key})


def swap_lock_entries(message: dict) -> None:
    """One entry of a locked list changed, the list still a list of 52 different points: entries 0 and 1 swapped."""
    deck = message["deck"]
    deck[0], deck[1] = deck[1], deck[0]


def swap_first_unmaskings(message: dict) -> None:
    first, second = message["unmaskings"][:2]
    first[1], second[1] = second[1], first[1]


def swap_scores(message: dict) -> None:
    message["scores"].reverse()
    message["totals"].reverse()


def add_ten(seat: int) -> Callable[[dict], None]:
    def change(message: dict) -> None:
        message["scores"][seat]["total"] += 10
        message["totals"][seat] += 10
    return change


def game_records(records: Records, game: int) -> tuple[int, int]:
    """Where game `game` begins (its `shuffle`) and ends (after its countersignature), in the records."""
    start = where(records, "host", "shuffle", game=game)[0]
    after = where(records, "guest", "sig", of="game", game=game)[0] + 1
    return start, after


def games_swapped(records: Records, first: int, second: int) -> Records:
    a, b = game_records(records, first), game_records(records, second)
    assert a[1] == b[0]
    return [*records[:a[0]], *records[b[0]:b[1]], *records[a[0]:a[1]], *records[b[1]:]]


def without_own_steps(records: Records, game: int) -> Records:
    """The guest's own steps of the deal of one game left out (its `lock`, `open` and `audit`)."""
    return [r for r in records if not (r[0] == "guest" and kind_of(r) in ("lock", "open", "audit")
                                       and decode_body(r[1]).get("game") == game)]


def naming_another_host_key(records: Records) -> Records:
    """The record made to name another host key: every host signature in it now fails."""
    other = public_key_bytes(Ed25519PrivateKey.generate())
    return change_first(records, "host", "welcome", lambda m: m.update(host_key=other))


def cut_after_game(records: Records, game: int) -> Records:
    return records[:game_records(records, game)[1]]


def ended_as_abandoned(records: Records, kept_: Kept, ending: str) -> Records:
    """The records ended as the host would end them for an absence of the guest: a `match_end` abandoned, with an
    account of one event (`ending`) the host signs, and its signature of the result."""
    account = AbsenceAccount(kept_.context.guest_seat, 120, (AbsenceEvent(ending, 1_700_000_000_000, 100),))
    totals = decode_body(records[where(records, "host", "game_end")[-1]][1])["totals"]
    end = {"type": "match_end", "winner": 1 - kept_.context.guest_seat, "totals": totals, "reason": "abandoned",
           "evidence": evidence_map(kept_.context, account, kept_.key)}
    placeholder = {"type": "sig", "of": "result", "game": 0, "count": 0, "signature": bytes(64)}  # signed below
    return signed_again([*records, ("host", body(end)), ("host", body(placeholder))], kept_.context, host=kept_.key)


def abandoned_by_the_guest(kept_: Kept) -> Records:
    """The host's forgery: the match ended after game 1 as the guest having left."""
    return ended_as_abandoned(cut_after_game(kept_.records, 1), kept_, "left")


def withheld_by_the_guest(kept_: Kept) -> Records:
    """The host's forgery: the guest's steps of game 2 dropped from its record, and the match ended as the guest
    withholding its step there."""
    start, _ = game_records(kept_.records, 2)
    first_own = next(i for i in range(start, len(kept_.records)) if kept_.records[i][0] == "guest" and kind_of(kept_.records[i]) == "lock")
    return ended_as_abandoned(kept_.records[:first_own], kept_, "withheld")


def write(path: Path, role: str, records: Records, notes=()) -> Path:
    path.write_bytes(transcript.header(role, transcript.SIGNED_FORMAT)
                     + b"".join(transcript.body_record(s, b) for s, b in records)
                     + b"".join(transcript.note(*n) for n in notes))
    return path


def verdict(path: Path, *options: str) -> tuple[int, list[str]]:
    lines: list[str] = []
    code = verify_file(path, verbose="--verbose" in options, partial="--partial" in options, say=lines.append)
    return code, lines


# --- the honest records -------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["host", "guest"])
def test_both_honest_records_of_a_default_match_are_proven(match, side):
    code, lines = verdict(getattr(match, side).path)
    assert code == EXIT_OK, lines
    assert lines[-1].startswith("PROVEN: no one saw a card before its time") and "both players signed this record" in lines[-1]


@pytest.mark.parametrize("side", ["host", "guest"])
def test_verbose_prints_the_hidden_deals_own_trace(match, side, tmp_path):
    """Each game: the dealer, both public points, both locked lists' digests, both audit scalars, the deck; no seeds."""
    run = subprocess.run(basra_command("verify", "--verbose", str(getattr(match, side).path)), capture_output=True, text=True, timeout=60)
    assert run.returncode == EXIT_OK, run.stdout + run.stderr
    out = run.stdout
    assert "Traceback" not in out + run.stderr and "bug" not in out + run.stderr and "host seed" not in out
    games = out.count("deal and plays check out")
    assert games >= 2
    assert out.count("  dealer      seat ") == games and out.count("audit scalar") == 2 * games
    assert out.count("the dealer's locked list") == games and out.count("  deck[39:52] ") == games
    assert out.count("104 unmaskings and reveals checked") == games


# --- forgeries ------------------------------------------------------------------------------------

# name -> (whose file, the forgery, the exit status, words in the verdict's line).  The guest forges with its own
# key; the host with the host key.  Neither can convict the other; a host that signs false data convicts itself.
Forgery = Callable[[Kept], Records]
NOT_PROVEN = (EXIT_FAILURE, "NOT PROVEN")

GUEST_FORGERIES: dict[str, tuple[Forgery, str]] = {
    "its own game-1 lock, one entry changed": (
        lambda k: change_first(k.records, "guest", "lock", swap_lock_entries, game=1),
        "seat 1's signature of its 'lock' does not verify"),
    "its own game-1 lock changed, its countersignatures made again": (
        lambda k: signed_again(change_first(k.records, "guest", "lock", swap_lock_entries, game=1), k.context, guest=k.key),
        "the signature runs over its own step"),
    "its own game-1 lock changed, its own steps and countersignatures signed again": (
        lambda k: own_steps_signed_again(k, change_first(k.records, "guest", "lock", swap_lock_entries, game=1)),
        "seat 0's signature of its 'open' does not verify over the 1 step of seat 1's"),
    "its own first two unmaskings swapped between their positions": (
        lambda k: change_first(k.records, "guest", "open", swap_first_unmaskings, game=1), "names no one"),
    "its own audit scalar of game 1 changed": (
        lambda k: change_first(k.records, "guest", "audit", lambda m: m.update(scalar=bytes(31) + b"\x05"), game=1),
        "seat 1's signature of its 'audit' does not verify"),
    "its own first play's position changed": (
        lambda k: change_first(k.records, "guest", "hidden_play", lambda m: m.update(position=(m["position"] + 1) % 52)),
        "names no one"),
    "its own steps of game 1 left out": (lambda k: without_own_steps(k.records, 1), "names no one"),
    "10 added to its score in the host's game_end": (
        lambda k: change_first(k.records, "host", "game_end", add_ten(1), game=1),
        "under no valid host signature"),
    "the seats' scores swapped in the host's game_end": (
        lambda k: change_first(k.records, "host", "game_end", swap_scores, game=1), "under no valid host signature"),
    "the result flipped": (
        lambda k: change_first(k.records, "host", "match_end", lambda m: m.update(winner=1 - m["winner"], totals=m["totals"][::-1])),
        "not proven"),
    "the names swapped": (
        lambda k: change_first(k.records, "host", "match_start", lambda m: m["names"].reverse()), "not proven"),
    "cut after game 1": (lambda k: cut_after_game(k.records, 1), "cut short"),
    "games 1 and 2 swapped": (lambda k: games_swapped(k.records, 1, 2), "not proven"),
    "the host's party's game-1 locked list with a card twice": (
        lambda k: change_first(k.records, "host", "locked", lambda m: m["deck"].__setitem__(0, m["deck"][1]), seat=0, game=1),
        "under no valid host signature"),
    "a played card of the host's seat shown as another": (
        lambda k: change_first(k.records, "host", "played", lambda m: m.update(card="AC" if m["card"] != "AC" else "2C"), seat=0),
        "under no valid host signature"),
    "a fabricated record naming another host key, its own lock changed": (
        lambda k: naming_another_host_key(change_first(k.records, "guest", "lock", swap_lock_entries, game=1)),
        "under no valid host signature"),
    "a fabricated record with every host signature replaced": (
        lambda k: [(s, body({**decode_body(b), "signature": bytes(64)})) if s == "host" and kind_of((s, b)) == "sig" else (s, b)
                   for s, b in change_first(k.records, "host", "game_end", add_ten(1), game=1)],
        "not proven"),
    "the match ended as abandoned by the host, unsigned": (
        lambda k: change_first(k.records, "host", "match_end", lambda m: m.update(reason="abandoned", winner=1, evidence={
            "grace": 120, "events": [["left", 1_700_000_000_000, 50]], "signature": bytes(64)})),
        "not proven"),
}

HOST_FORGERIES: dict[str, tuple[Forgery, int, str]] = {
    "the guest's game-1 lock, one entry changed": (
        lambda k: change_first(k.records, "guest", "lock", swap_lock_entries, game=1), EXIT_FAILURE,
        "seat 1's signature of its 'lock' does not verify"),
    "the guest's game-1 lock changed, every host signature and its own seat's steps signed again": (
        lambda k: own_steps_signed_again(k, change_first(k.records, "guest", "lock", swap_lock_entries, game=1)),
        EXIT_FAILURE, "seat 1's signature of its 'lock' does not verify"),
    "the guest's audit scalar of game 1 changed": (
        lambda k: change_first(k.records, "guest", "audit", lambda m: m.update(scalar=bytes(31) + b"\x05"), game=1),
        EXIT_FAILURE, "seat 1's signature of its 'audit' does not verify"),
    "the guest's first play's position changed": (
        lambda k: change_first(k.records, "guest", "hidden_play", lambda m: m.update(position=(m["position"] + 1) % 52)),
        EXIT_FAILURE, "names no one"),
    "the guest's steps of game 2 left out, and a signed account of its withholding": (
        withheld_by_the_guest, EXIT_FAILURE, "not countersign"),
    "10 added to the host's score, unsigned": (
        lambda k: change_first(k.records, "host", "game_end", add_ten(0), game=1), EXIT_FAILURE, "under no valid host signature"),
    "a false abandonment by the guest, the account signed": (
        abandoned_by_the_guest, EXIT_FAILURE, "not countersign"),
    "the names swapped, signed again": (
        lambda k: signed_again(change_first(k.records, "host", "match_start", lambda m: m["names"].reverse()), k.context, host=k.key),
        EXIT_FAILURE, "guest's signature"),
    "cut after game 2": (lambda k: cut_after_game(k.records, 2), EXIT_FAILURE, "cut short"),
    "its own party's audit scalar of game 1 changed, signed again": (  # its signature runs over the guest's steps
        lambda k: signed_again(change_first(k.records, "host", "audited", lambda m: m.update(scalar=bytes(31) + b"\x05"), seat=0, game=1),
                               k.context, host=k.key),
        EXIT_FAILURE, "seat 0's signature of its 'audit' does not verify"),
    # What the host signs is its own word: a false score or result it signs proves its own cheat, no one else's;
    # so does a step of its own party it relays that an honest host refuses, and a step its own party signed.
    "its own party's game-1 locked list with a card twice, signed again": (
        lambda k: signed_again(change_first(k.records, "host", "locked", lambda m: m["deck"].__setitem__(0, m["deck"][1]), seat=0, game=1),
                               k.context, host=k.key),
        EXIT_CHEAT, "seat 0's signature of its 'lock' does not verify"),
    "its own party's game-1 locked list with a card twice, its own seat's steps signed again": (
        lambda k: own_steps_signed_again(k, change_first(k.records, "host", "locked", lambda m: m["deck"].__setitem__(0, m["deck"][1]),
                                                         seat=0, game=1)),
        EXIT_CHEAT, "seat 0's locked list holds one card twice"),
    "10 added to the host's score, signed again": (
        lambda k: signed_again(change_first(k.records, "host", "game_end", add_ten(0), game=1), k.context, host=k.key),
        EXIT_CHEAT, "the host signed it: game 1: game_end"),
    "the result flipped, signed again": (
        lambda k: signed_again(change_first(k.records, "host", "match_end",
                                            lambda m: m.update(winner=1 - m["winner"], totals=m["totals"][::-1])), k.context, host=k.key),
        EXIT_CHEAT, "the host signed it: match result"),
    "games 1 and 2 swapped, signed again": (
        lambda k: signed_again(games_swapped(k.records, 1, 2), k.context, host=k.key), EXIT_FAILURE, "game 2 ends where game 1 was due"),
}


@pytest.mark.parametrize("case", list(GUEST_FORGERIES))
def test_a_guest_forging_its_record_convicts_no_one(case, match, tmp_path):
    forge, words = GUEST_FORGERIES[case]
    code, lines = verdict(write(tmp_path / "forged.basra", match.guest.role, forge(match.guest)))
    said = "\n".join(lines)
    assert code == EXIT_FAILURE, said
    assert lines[-1].startswith("NOT PROVEN") or "also:" in lines[-1], said
    assert words.lower() in said.lower(), said
    assert "cheated" not in said and "CHEAT PROVEN" not in said, said


@pytest.mark.parametrize("case", list(HOST_FORGERIES))
def test_a_host_forging_its_record_convicts_the_guest_never_and_itself_only_under_its_own_signature(case, match, tmp_path):
    forge, expected, words = HOST_FORGERIES[case]
    code, lines = verdict(write(tmp_path / "forged.basra", match.host.role, forge(match.host)))
    said = "\n".join(lines)
    assert code == expected, said
    assert words in said, said
    assert "seat 1 cheated" not in said and "seat 1's" not in said.splitlines()[-1].split(":")[0], said
    if code == EXIT_CHEAT:
        assert any(line.startswith(("CHEAT PROVEN: the host signed it: ", "CHEAT PROVEN: seat 0 signed it: ")) for line in lines), said


def test_a_party_whose_own_signed_step_is_bad_is_convicted_by_its_own_signature(match, tmp_path):
    """The guest's own game-1 lock with a card twice, signed by the guest: the check fails at that step, before the
    other party's, under the guest's own key; the record proves seat 1 cheated, whoever wrote it."""
    forged = own_steps_signed_again(match.guest, change_first(match.guest.records, "guest", "lock",
                                                              lambda m: m["deck"].__setitem__(0, m["deck"][1]), game=1))
    code, lines = verdict(write(tmp_path / "forged.basra", match.guest.role, forged))
    said = "\n".join(lines)
    assert code == EXIT_CHEAT, said
    assert any(line.startswith("CHEAT PROVEN: seat 1 signed it: game 1: the deal:") and "seat 1's locked list holds one card twice"
               in line for line in lines), said


@pytest.mark.quick
def test_the_first_framing_now_names_no_one_and_says_why(match, tmp_path):
    """The guest that edits one entry of its own game-1 lock: its own signature of the lock then fails, and a
    signature over its own step is its writer's word, so the verdict is not proven and says so in one line."""
    forged = write(tmp_path / "forged.basra", match.guest.role,
                   change_first(match.guest.records, "guest", "lock", swap_lock_entries, game=1))
    run = subprocess.run(basra_command("verify", str(forged)), capture_output=True, text=True, timeout=60)
    assert run.returncode == EXIT_FAILURE and "Traceback" not in run.stdout + run.stderr, run.stdout + run.stderr
    last = run.stdout.splitlines()[-1]
    assert last.startswith("NOT PROVEN: game 1: the deal:") and "seat 1's signature of its 'lock' does not verify" in last, last
    assert "this names no one: the signature runs over its own step, which this record's writer could have changed" in last, last


def test_a_record_cut_short_is_proven_up_to_the_cut_with_partial(match, tmp_path):
    forged = write(tmp_path / "cut.basra", match.guest.role, cut_after_game(match.guest.records, 1))
    code, lines = verdict(forged, "--partial")
    assert code == EXIT_OK and lines[-1].startswith("PROVEN (up to the cut)"), lines


def test_notes_claiming_an_abandonment_change_no_verdict(match, tmp_path):
    notes = (("connection", None, "disputed abandonment: the host says this seat left; it never did"),
             ("abandoned_deal", 1, "the host withheld its step: the host cheated"))
    code, lines = verdict(write(tmp_path / "noted.basra", match.guest.role, match.guest.records, notes))
    assert code == EXIT_OK and lines[-1].startswith("PROVEN"), lines

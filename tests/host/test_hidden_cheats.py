"""Cheating at a hidden-hands match over real sockets: each cheat is caught, named, and proven by the record.

The cheater is a hostile party: a ClientSession whose steps of the deal are
changed, or withheld, on their way out (HostileParty, used by these tests
only); a party whose own software locks a point that is no card's into its
list (a substituted card); or a modified host that relays a forged step of
its own party, or drops a party's step and says it was withheld.  The honest
side catches each; then both transcripts, the host's and the guest's (both
players' at `basra serve`), go through the real `basra verify` command,
which shows the same cheat in one line.  It exits 3 only under the
accused's own signature: the host's over its stream, or a party's over its
own step of the deal (PROTOCOL.md 15.17), which a cheating party signs as
it sends it; a step whose signature fails names no one (exit 1), and a
withholding is the host's assertion of an abandonment (PROTOCOL.md 14.11).
An honest match's transcripts verify completely.

A party that withholds a step stays connected and says nothing; the table's
wait for a step owed (30 s, PROTOCOL.md 15.15) is cut to a fraction of a
second here, so that the tests are fast.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import trio

from nacl import bindings as sodium

from basra_net.client.players import BotPlayer, PlayerLeft
from basra_net.client.session import ClientSession
from basra_net.exits import EXIT_CHEAT, EXIT_FAILURE, EXIT_OK
from basra_net.host import table as table_module
from basra_net.host.server import HostSettings, ServeSettings, run_host, run_serve
from basra_net.protocol import hidden_deal, hidden_game, transcript
from basra_net.protocol.errors import BAD_DEAL
from basra_net.protocol.framing import decode_body, encode_frame
from basra_net.protocol.hidden_deal import GROUP_ORDER, Proof, card_of, scalar_bytes
from basra_net.protocol.messages import Audit, Audited, Lock, Locked, MatchEnd, Message, Open, Opened

from .test_hidden_hands import signed_as_seat_0

TEST_DEADLINE = 120


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path))


STEP_WAIT = 0.5  # the table's wait for a step owed, in these tests
WITHHELD = object()  # what a cheat returns for a step the party keeps to itself, staying connected


@pytest.fixture(autouse=True)
def _short_step_wait(monkeypatch):
    monkeypatch.setattr(table_module, "STEP_WAIT", STEP_WAIT)


class HostileParty(ClientSession):
    """A seat whose party cheats: ``cheat`` may change each step of the deal as it goes out.

    A cheat that returns None withholds the step, and the seat walks away
    instead of sending it; one that returns WITHHELD withholds it, and the
    seat stays at the table without a word.
    """

    def __init__(self, *args, cheat, signs_cheat: bool = True, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.cheat = cheat
        self.signs_cheat = signs_cheat  # a step it changes is signed as it goes (15.17), or left with the old signature

    async def _send(self, message: Message) -> None:
        if isinstance(message, (Lock, Open, Audit)):
            made, message = message, self.cheat(message)
            if message is None:
                raise PlayerLeft("the party walks away rather than unmask")
            if message is WITHHELD:
                return
            if self.signs_cheat and message is not made:
                message = self._party.ledger.signed_again(self._identity, self._party.seat, message, made.sig)
        await super()._send(message)


async def play(tmp_path: Path, *, guest_class=ClientSession, target: int = 1, **guest_options):
    """A `basra host` with hidden hands and a bot, and one guest: the guest's result and the host's outcome."""
    settings = HostSettings(port=0, bind="127.0.0.1", name="Hoda", target=target, transcript=tmp_path / "host.basra",
                            tls=False, grace=1)
    outcomes: list = []
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:

            async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
                outcomes.append(await run_host(settings, BotPlayer("greedy"), say=lambda line: None, task_status=task_status))

            port = await nursery.start(host)
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            guest = guest_class(stream, "Omar", BotPlayer("greedy"), transcript_path=tmp_path / "guest.basra",
                                keep_transcript=True, countersigns=True, **guest_options)
            result = await guest.run()
    return result, outcomes[0]


async def serve(tmp_path: Path, cheat_at: int | None = None, **cheater_options) -> dict[int, object]:
    """Two guests at a `basra serve` table with hidden hands, seat 0's the first seated; each seat's result.

    With ``cheat_at``, that seat's guest is a HostileParty (``cheater_options`` its cheat).  The server keeps
    each seat's channel as a transcript (in the data directory), and each seat its own as seatN.basra.
    """
    settings = ServeSettings(bind="127.0.0.1", port=0, tables=1, target=1, tls=False, grace=1, journal=False)
    results: dict[int, object] = {}
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(lambda task_status: run_serve(settings, task_status=task_status))
            async with trio.open_nursery() as players:
                for seat, name in enumerate(("Amr", "Dina")):
                    cheating = seat == cheat_at
                    seated = trio.Event()  # the next player is let in once this one holds its seat
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                    session = (HostileParty if cheating else ClientSession)(
                        stream, name, BotPlayer("greedy"), transcript_path=tmp_path / f"seat{seat}.basra", keep_transcript=True,
                        countersigns=True, on_welcome=lambda welcome, path, seated=seated: seated.set(),
                        **(cheater_options if cheating else {}))

                    async def run(seat=seat, session=session) -> None:
                        results[seat] = await session.run()

                    players.start_soon(run)
                    await seated.wait()
            nursery.cancel_scope.cancel()
    return results


VERDICTS = ("PROVEN", "NOT PROVEN", "CHEAT PROVEN")


def verdicts(tmp_path: Path, basra_command: list[str], paths: list[Path] | None = None, *options: str) -> dict[str, tuple[int, str]]:
    """`basra verify` run on each transcript (the host's and the guest's unless named): its exit status, and its verdict's
    line with the other things found that follow it, each an "also"."""
    found = {}
    for path in paths or [tmp_path / "host.basra", tmp_path / "guest.basra"]:
        run = subprocess.run([*basra_command, "verify", str(path), *options], capture_output=True, text=True,
                             timeout=60, env={**os.environ, "BASRA_HOME": str(tmp_path), "NO_COLOR": "1"})
        assert "Traceback" not in run.stdout + run.stderr
        lines = run.stdout.splitlines()
        at = max((i for i, line in enumerate(lines) if line.startswith(VERDICTS)), default=len(lines) - 1)
        found[path.name] = (run.returncode, "\n".join(lines[at:]))
    return found


def names_no_one(code: int, said: str, reason: str) -> bool:
    """A finding shown and no one named: it rests on a party's own steps, which no one signs, or on nothing signed
    at all (a record that stopped at the step, before any signature of the host's)."""
    return (code == EXIT_FAILURE and said.startswith("NOT PROVEN") and "cheated" not in said and "CHEAT" not in said
            and any(reason in line and "this names no one" in line for line in said.splitlines()))


def convicts(code: int, said: str, reason: str, seat: int) -> bool:
    """A cheat proven against the seat whose own signature covers the step that fails (PROTOCOL.md 15.17)."""
    return code == EXIT_CHEAT and any(
        line.startswith(f"CHEAT PROVEN: seat {seat} signed it: ") and reason in line for line in said.splitlines())


def convicts_where_vouched(found: dict[str, tuple[int, str]], reason: str, seat: int) -> bool:
    """Every record convicts the seat under its own signature, but one that stopped before any host signature
    vouched for that seat's key (the other seat's, named by match_start), which names no one; one at least convicts."""
    for code, said in found.values():
        if not (convicts(code, said, reason, seat) or names_no_one(code, said, "under no valid host signature")):
            return False
    return any(convicts(code, said, reason, seat) for code, said in found.values())


def served_transcripts(tmp_path: Path) -> list[Path]:
    """The server's transcripts of the table's two channels, and the honest seat 1's own."""
    served = sorted(path for path in tmp_path.rglob("*.basra") if "-host-" in path.name)
    assert [path.stem[-5:] for path in served] == ["seat0", "seat1"], served
    return [*served, tmp_path / "seat1.basra"]


def broken_proof(step: bytes) -> bytes:
    proof = Proof.from_bytes(step[32:], "proof")
    return step[:32] + Proof(proof.challenge, (proof.response + 1) % GROUP_ORDER).to_bytes()


def first_unmasking(change):
    return lambda m: replace(m, unmaskings=(change(m.unmaskings), *m.unmaskings[1:])) if isinstance(m, Open) and m.unmaskings else m


CHEATS = {
    "a card twice in its locked deck": (
        lambda m: replace(m, deck=(m.deck[1], *m.deck[1:])) if isinstance(m, Lock) else m,
        "seat 1's locked list holds one card twice"),
    "a wrong unmasking (another entry's point)": (
        first_unmasking(lambda steps: (steps[0][0], steps[1][1][:32] + steps[0][1][32:])),
        "seat 1's unmasking of position"),
    "a bad proof": (
        first_unmasking(lambda steps: (steps[0][0], broken_proof(steps[0][1]))),
        "seat 1's unmasking of position"),
    "a proof replayed at another position": (
        lambda m: replace(m, unmaskings=((m.unmaskings[1][0], m.unmaskings[0][1]), (m.unmaskings[0][0], m.unmaskings[1][1]),
                                         *m.unmaskings[2:])) if isinstance(m, Open) and len(m.unmaskings) > 1 else m,
        "seat 1's unmasking of position"),
    "an audit scalar not behind its public point": (
        lambda m: replace(m, scalar=scalar_bytes(5)) if isinstance(m, Audit) else m,
        "seat 1's audit scalar is not the one behind its public point"),
}


async def test_an_honest_hidden_match_verifies_from_both_transcripts(tmp_path, basra_command):
    guest, outcome = await play(tmp_path, target=101)
    assert guest.exit_code == 0 and guest.state.hidden_hands, guest.reason
    assert len(guest.state.results) >= 2  # both seats have dealt
    for name, (code, last) in verdicts(tmp_path, basra_command).items():
        assert code == EXIT_OK, (name, last)


@pytest.mark.parametrize("case", list(CHEATS))
async def test_a_cheating_guest_is_refused_and_both_records_prove_its_signed_step(case, tmp_path, basra_command):
    cheat, reason = CHEATS[case]
    guest, outcome = await play(tmp_path, guest_class=HostileParty, cheat=cheat)
    assert guest.refusal == BAD_DEAL and guest.exit_code != 0
    assert not outcome.table.completed and outcome.table.winner == 0
    assert absence_account(tmp_path / "host.basra").events[-1][0] == "bad_deal"  # not an absence: a failed step
    for name, (code, last) in verdicts(tmp_path, basra_command).items():
        assert convicts(code, last, reason, 1), (name, last)


@pytest.mark.parametrize("case", ["a card twice in its locked deck", "an audit scalar not behind its public point"])
async def test_a_guests_changed_step_under_its_old_signature_is_refused_and_both_records_show_its_unsigned_step(
        case, tmp_path, basra_command):
    """The step changed after it was signed: the host refuses it for its signature, and it names no one."""
    cheat, _ = CHEATS[case]
    guest, outcome = await play(tmp_path, guest_class=HostileParty, cheat=cheat, signs_cheat=False)
    assert guest.refusal == BAD_DEAL and guest.exit_code != 0 and outcome.table.winner == 0
    assert "seat 1's signature of its" in outcome.table.reason, outcome.table.reason
    for name, (code, last) in verdicts(tmp_path, basra_command).items():
        assert names_no_one(code, last, "seat 1's signature of its"), (name, last)


async def test_at_a_served_table_the_other_player_is_told_the_step_failed_and_its_record_shows_the_hosts_account(tmp_path, basra_command):
    """Seat 0's bad unmasking is refused and not relayed: seat 1's record holds the host's account, ending
    `bad_deal`, shown as the host's assertion; the server's record of seat 0's channel proves the step false."""
    results = await serve(tmp_path, cheat_at=0, cheat=CHEATS["a bad proof"][0])
    honest = results[1]
    assert honest.exit_code == EXIT_FAILURE and honest.state.winner == 1, honest.reason
    assert honest.reason == "the match was abandoned: Amr sent a step of the deal that failed its check"
    assert absence_account(tmp_path / "seat1.basra").events[-1][0] == "bad_deal"
    run = subprocess.run([*basra_command, "verify", "--partial", str(tmp_path / "seat1.basra")], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "BASRA_HOME": str(tmp_path), "NO_COLOR": "1"})
    assert run.returncode == EXIT_OK and "cheated" not in run.stdout, run.stdout
    assert "ASSERTED BY THE HOST, not proven: seat 0 sent a step of the deal that failed its check" in run.stdout, run.stdout
    served_seat0 = served_transcripts(tmp_path)[0]  # seat 0's own step, under its own signature: seat 0's cheat
    ((code, last),) = verdicts(tmp_path, basra_command, [served_seat0]).values()
    assert convicts(code, last, "seat 0's unmasking of position", 0), last


async def test_a_host_that_refuses_a_sound_step_is_disputed_by_the_guests_steps_on_record(tmp_path, basra_command, monkeypatch):
    """A host that answers a sound step with `bad_deal` signs an account its own record of the channel disputes:
    every step of the guest in it passes (PROTOCOL.md 14.6)."""
    honest = hidden_game.RefereeGame.take

    def refusing(self, seat, message):
        if seat == 1 and isinstance(message, Open):
            raise hidden_deal.HiddenDealError("a check that does not exist", seat=1)
        return honest(self, seat, message)

    monkeypatch.setattr(hidden_game.RefereeGame, "take", refusing)
    guest, outcome = await play(tmp_path)
    assert guest.refusal == BAD_DEAL and outcome.table.winner == 0
    assert absence_account(tmp_path / "host.basra").events[-1][0] == "bad_deal"
    run = subprocess.run([*basra_command, "verify", "--partial", str(tmp_path / "host.basra")], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "BASRA_HOME": str(tmp_path), "NO_COLOR": "1"})
    assert "cheated" not in run.stdout, run.stdout
    assert any(line.startswith("abandonment DISPUTED: the host says a step of the deal seat 1 sent failed its check")
               for line in run.stdout.splitlines()), run.stdout
    assert run.returncode == EXIT_FAILURE, run.stdout


async def test_a_guest_that_walks_away_rather_than_unmask_has_left_and_is_named_by_no_one(tmp_path, basra_command):
    """Leaving (Ctrl-C: a `leave`) while a step of the deal is owed is an absence, not a withheld step: the seat
    loses the match, and neither record calls it a cheat (PROTOCOL.md 15.16)."""
    guest, outcome = await play(tmp_path, guest_class=HostileParty, cheat=lambda m: None if isinstance(m, Open) else m)
    assert not outcome.table.completed and outcome.table.winner == 0
    assert absence_account(tmp_path / "host.basra").events[-1][0] == "left"
    for name, (code, last) in verdicts(tmp_path, basra_command, None, "--partial").items():
        assert code == EXIT_OK and "cheat" not in last.lower(), (name, last)
    # Nor can a forger make it one by rewriting the account's ending to `withheld`: unsigned, that proves nothing.
    forged = tmp_path / "forged.basra"
    forged.write_bytes(with_account_ending(tmp_path / "host.basra", "withheld"))
    ((code, last),) = verdicts(tmp_path, basra_command, [forged], "--partial").values()
    assert code == EXIT_FAILURE and "cheat" not in last.lower(), last


def with_account_ending(path: Path, ending: str) -> bytes:
    """A format-2 transcript with the last event of its match_end's account of the absence rewritten."""
    kept = transcript.parse(path.read_bytes())
    rewritten = []
    for sender, body in kept.bodies:
        wire = decode_body(body)
        if wire.get("type") == "match_end" and wire.get("evidence"):
            wire["evidence"]["events"][-1][0] = ending
            body = encode_frame(wire)[4:]
        rewritten.append(transcript.body_record(sender, body))
    return transcript.header(kept.role, transcript.SIGNED_FORMAT) + b"".join(rewritten)


def forged_unmasking(relay):
    (position, step), *rest = relay.unmaskings
    return replace(relay, unmaskings=((position, broken_proof(step)), *rest))


FORGED_RELAYS = {  # a step of seat 0's party, as a modified host relays it to the guest; what the guest's check says
    "a card twice in its locked deck": (
        lambda relay: replace(relay, deck=(relay.deck[1], *relay.deck[1:])) if isinstance(relay, Locked) else relay,
        "seat 0's locked list holds one card twice"),
    "an unmasking with a bad proof": (
        lambda relay: forged_unmasking(relay) if isinstance(relay, Opened) and relay.unmaskings else relay,
        "seat 0's unmasking of position"),
    "an audit scalar not behind its public point": (
        lambda relay: replace(relay, scalar=scalar_bytes(5)) if isinstance(relay, Audited) else relay,
        "seat 0's audit scalar is not the one behind its public point"),
}


@pytest.mark.parametrize("case", list(FORGED_RELAYS))
async def test_a_host_that_forges_its_own_partys_step_is_caught_and_the_guests_record_shows_it(case, tmp_path, monkeypatch, basra_command):
    """The guest stops at the forged relay, before the host signs anything that covers it: its record shows the step
    and names no one, for nothing signed holds it (PROTOCOL.md 14.11)."""
    forge, reason = FORGED_RELAYS[case]
    honest = hidden_game.RefereeGame.take

    def forging(self, seat, message):
        relay = honest(self, seat, message)
        forged = forge(relay) if seat == 0 else relay
        return relay if forged is relay else signed_as_seat_0(self, forged)

    monkeypatch.setattr(hidden_game.RefereeGame, "take", forging)
    guest, _ = await play(tmp_path)
    assert guest.exit_code == EXIT_CHEAT and reason in guest.reason, guest.reason
    run = subprocess.run([*basra_command, "verify", str(tmp_path / "guest.basra")], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "BASRA_HOME": str(tmp_path), "NO_COLOR": "1"})
    assert run.returncode == EXIT_FAILURE and "cheated" not in run.stdout, run.stdout
    assert any(reason in line and "under no valid host signature: this names no one" in line for line in run.stdout.splitlines()), run.stdout


# --- a party that withholds a step it owes, connected (PROTOCOL.md 15.15) ---------------------------

WITHHOLDINGS = {  # seat 1 does not deal game 1: it locks second, unmasks the dealer's hand, reveals the table
    "its locked list": lambda m: WITHHELD if isinstance(m, (Lock, Open)) else m,  # and what follows from it
    "its unmasking of positions 4, 5, 6, 7": lambda m: WITHHELD if isinstance(m, Open) and m.unmaskings else m,
    "its reveal of table positions 8, 9, 10, 11": lambda m: WITHHELD if isinstance(m, Open) and m.reveals else m,
    "its audit scalar": lambda m: WITHHELD if isinstance(m, Audit) else m,
}


def withheld_verdicts(tmp_path: Path, basra_command: list[str], paths: list[Path] | None = None) -> dict[str, tuple[int, str, str]]:
    """`basra verify --partial` of each transcript of a match ended by a withholding (the withholder countersigned
    nothing after it): exit status, verdict line, everything said."""
    found = {}
    for path in paths or [tmp_path / "host.basra", tmp_path / "guest.basra"]:
        run = subprocess.run([*basra_command, "verify", "--partial", str(path)], capture_output=True, text=True,
                             timeout=60, env={**os.environ, "BASRA_HOME": str(tmp_path), "NO_COLOR": "1"})
        assert "Traceback" not in run.stdout + run.stderr
        lines = run.stdout.splitlines()
        found[path.name] = (run.returncode, next((line for line in reversed(lines) if line.startswith(VERDICTS)), lines[-1]), run.stdout)
    return found


def absence_account(path: Path):
    """The host's signed account of the absence, as the transcript's match_end carries it."""
    end = next(m for _, m in transcript.parse(path.read_bytes()).records if isinstance(m, MatchEnd))
    return end.evidence


@pytest.mark.parametrize("step", list(WITHHOLDINGS))
async def test_a_connected_guest_that_withholds_a_step_loses_and_both_records_name_it(step, tmp_path, basra_command):
    guest, outcome = await play(tmp_path, guest_class=HostileParty, cheat=WITHHOLDINGS[step])
    assert not outcome.table.completed and outcome.table.winner == 0
    assert outcome.table.reason == f"Omar did not send {step} for game 1 within {STEP_WAIT:g} s"
    assert outcome.own_seat.exit_code == EXIT_FAILURE  # the host's own seat: no channel, and no account of the absence
    evidence = absence_account(tmp_path / "host.basra")
    assert evidence.events[-1][0] == "withheld"
    for name, (code, last, said) in withheld_verdicts(tmp_path, basra_command).items():
        # The host's word, and the record shows the step owed: an abandonment it asserts, proven up to there.
        assert code == EXIT_OK and last.startswith("PROVEN") and "cheat" not in said.lower(), (name, said)
        assert "ASSERTED BY THE HOST, not proven: seat 1 withheld a step of the deal it owed" in said, (name, said)
        assert f"game 1: not complete: the match ended with seat 1 withholding {step}" in said, (name, said)


async def test_a_connected_first_seat_that_withholds_at_a_served_table_loses_and_both_records_name_it(tmp_path, basra_command):
    results = await serve(tmp_path, cheat_at=0, cheat=lambda m: WITHHELD if isinstance(m, Open) else m)
    honest = results[1]
    assert honest.exit_code == EXIT_FAILURE and honest.state.winner == 1, honest.reason
    assert honest.reason == "the match was abandoned: Amr withheld a step of the deal"
    for name, (code, last, said) in withheld_verdicts(tmp_path, basra_command, served_transcripts(tmp_path)).items():
        assert code == EXIT_OK and "cheat" not in said.lower(), (name, said)
        assert "ASSERTED BY THE HOST, not proven: seat 0 withheld a step of the deal it owed" in said, (name, said)
        assert "seat 0 withholding its unmasking of positions 0, 1, 2, 3, 8, 9, 10, 11" in said, (name, said)


async def test_a_host_that_drops_a_step_and_calls_it_withheld_is_disputed_by_the_guest(tmp_path, basra_command, monkeypatch):
    honest = table_module.Table.feed

    def dropping(self, seat, item):  # the guest's audit scalar never reaches the match
        if not (seat == 1 and isinstance(item, Audit)):
            honest(self, seat, item)

    monkeypatch.setattr(table_module.Table, "feed", dropping)
    guest, outcome = await play(tmp_path)
    assert outcome.table.reason.startswith("Omar did not send its audit scalar for game 1")
    assert guest.exit_code == EXIT_CHEAT and "disputed abandonment" in guest.reason
    assert "withheld a step of the deal, and it sent every step it owed" in guest.reason
    run = subprocess.run([*basra_command, "verify", str(tmp_path / "guest.basra")], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "BASRA_HOME": str(tmp_path), "NO_COLOR": "1"})
    lines = run.stdout.splitlines()
    assert any("ASSERTED BY THE HOST" in line and "seat 1 withheld a step of the deal" in line for line in lines), run.stdout
    assert any(line.startswith("abandonment DISPUTED") and "the record holds every step it owed" in line for line in lines)
    # The host holds back its own party's scalar too, to relay with the guest's: seat 0 owes it in the guest's
    # record, but the host's account names no withholding by seat 0, so no one is named a cheat (15.16).
    assert run.returncode == EXIT_FAILURE and "cheated" not in run.stdout, run.stdout


# --- a substituted card: shown at once, then both scalars, and the audit names who (15.7, 15.10) -------


def substituting(monkeypatch, culprit: int, entry: int = 8) -> None:
    """The party at seat ``culprit`` locks, in place of ``entry`` of its list, a point that is no card's: its own
    software is modified (at `basra host` seat 0's is the host's).  Seat 0 deals game 1, so it substitutes in the
    dealer's list, and the card lands where seat 1's shuffle puts it; seat 1 in the deck itself, at that position."""
    honest = hidden_deal.Party.lock_deck
    stranger = sodium.crypto_scalarmult_ed25519_base_noclamp(scalar_bytes(424242))

    def lock_deck(self, previous):
        deck = list(honest(self, previous))
        if self.seat == culprit:
            deck[entry] = sodium.crypto_scalarmult_ed25519_noclamp(self.audit_scalar, stranger)
        return tuple(deck)

    monkeypatch.setattr(hidden_deal.Party, "lock_deck", lock_deck)


def shows_no_card(path: Path) -> bool:
    """The record holds a proven reveal of a point that is no card's: the evidence that set the audit due."""
    steps = [m for _, m in transcript.parse(path.read_bytes()).records if isinstance(m, (Open, Opened))]
    return any(card_of(reveal[:32]) is None for m in steps for _, reveal in m.reveals)


SUBSTITUTIONS = {  # (culprit, entry of its list): where the card that is no card shows, and who shows it
    "by seat 0, landing where seat 1's shuffle puts it": (0, 8),
    "by seat 1, on the table (seat 1 reveals it)": (1, 8),
    "by seat 1, in its own first hand (seat 1 learns it)": (1, 2),
    "by seat 1, in seat 0's first hand (seat 0 learns it while seat 1 owes the table)": (1, 5),
    "by seat 1, in a later hand (shown during the plays)": (1, 30),
}


@pytest.mark.parametrize("case", list(SUBSTITUTIONS))
async def test_a_substituted_card_at_basra_host_is_laid_at_the_seat_that_substituted_it(case, tmp_path, basra_command, monkeypatch):
    culprit, entry = SUBSTITUTIONS[case]
    substituting(monkeypatch, culprit, entry)
    guest, outcome = await play(tmp_path)
    honest, cheat = (guest, outcome.own_seat) if culprit == 0 else (outcome.own_seat, guest)
    assert not outcome.table.completed and outcome.table.winner == 1 - culprit
    assert f"seat {culprit}'s locked list is not the list before it" in outcome.table.reason
    assert honest.exit_code == EXIT_CHEAT and f"seat {culprit}'s locked list is not the list before it" in honest.reason
    assert cheat.refusal == BAD_DEAL
    assert shows_no_card(tmp_path / "guest.basra") and shows_no_card(tmp_path / "host.basra")
    found = verdicts(tmp_path, basra_command)  # its own software signed its list
    assert convicts_where_vouched(found, f"seat {culprit}'s locked list is not the list before it", culprit), found


@pytest.mark.parametrize("culprit", [0, 1], ids=["by seat 0", "by seat 1"])
async def test_a_substituted_card_at_basra_serve_is_laid_at_the_seat_that_substituted_it(culprit, tmp_path, basra_command, monkeypatch):
    substituting(monkeypatch, culprit)
    results = await serve(tmp_path)
    honest, cheat = results[1 - culprit], results[culprit]
    assert honest.exit_code == EXIT_CHEAT and f"seat {culprit}'s locked list is not the list before it" in honest.reason
    assert cheat.refusal == BAD_DEAL
    found = verdicts(tmp_path, basra_command, served_transcripts(tmp_path))
    assert convicts_where_vouched(found, f"seat {culprit}'s locked list is not the list before it", culprit), found


async def test_a_substitutor_that_withholds_its_audit_scalar_is_the_one_at_fault(tmp_path, basra_command, monkeypatch):
    substituting(monkeypatch, 1)
    guest, outcome = await play(tmp_path, guest_class=HostileParty, cheat=lambda m: WITHHELD if isinstance(m, Audit) else m)
    assert not outcome.table.completed and outcome.table.winner == 0
    assert outcome.table.reason == f"Omar did not send its audit scalar for game 1 within {STEP_WAIT:g} s"
    for name, (code, last, said) in withheld_verdicts(tmp_path, basra_command).items():
        assert code == EXIT_OK and "cheat" not in said.lower(), (name, said)
        assert "ASSERTED BY THE HOST, not proven: seat 1 withheld a step of the deal it owed" in said, (name, said)
        assert "seat 1 withholding its audit scalar" in said, (name, said)

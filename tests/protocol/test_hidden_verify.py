"""`basra verify` on a hidden-hands transcript: an honest one checks out completely; the replay finds each cheat.

The transcripts are made by a referee (RefereeGame) and two parties
(PartyGame) passing real messages, each through the wire encoding, and kept
as seat 1 keeps its channel: what it sent, and what the host sent it.  One
party may cheat, with its own secret, as a modified client would; or the
record is changed afterwards, as a forger would.  Each transcript goes
through the file format and `verify_file`, as `basra verify` runs it.  These
records are unsigned (format 1), so `basra verify` names no one (status 1);
the party the replay finds at fault is checked on the replay's finding, which
is what a signed record weighs (tests/e2e/test_forged_records.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from nacl import bindings as sodium

from basra_net.client.verify_file import verify_file
from basra_net.exits import EXIT_FAILURE, EXIT_OK
from basra_net.protocol import transcript
from basra_net.protocol.hidden_deal import GROUP_ORDER, HiddenDealError, NotAPermutation, Proof, card_of, scalar_bytes
from basra_net.protocol.hidden_game import PartyGame
from basra_net.protocol.messages import (
    HIDDEN_DEAL,
    AbsenceEvidence,
    Audit,
    Audited,
    Deal,
    GameEnd,
    Hello,
    HiddenPlay,
    HiddenTurn,
    Leave,
    Lock,
    Locked,
    MatchEnd,
    MatchStart,
    Message,
    Open,
    Opened,
    Played,
    Shuffle,
    Welcome,
)
from basra_net.protocol.transcript import parse
from basra_net.protocol.verify import MatchVerifier

from .hidden_table import KEYS, MATCH_ID, HiddenTable, wire

GUEST_SEAT = 1


class HiddenMatch(HiddenTable):
    """A hidden-hands match with seat 1's channel kept as its transcript records.

    ``cheat(seat, message)`` may change what a party sends before the referee
    sees it; a party that returns None from it stops answering, and the host
    ends the match as abandoned by it, its account ending `withheld`.  Seat 0 is the host's own party: when
    it cheats, the host is the modified one and relays its step unchecked.
    """

    def __init__(self, seed: int = 1, target: int = 1, cheat=None, tamper_parties=None) -> None:
        super().__init__(seed, target)
        self.cheat = cheat or (lambda seat, message: message)
        self.records: list[tuple[str, Message]] = [
            ("guest", Hello((2,), "Layla", bytes(32), deals=(HIDDEN_DEAL,))),
            ("host", Welcome(2, GUEST_SEAT, MATCH_ID, bytes(range(32)), "egyptian", target, bytes(16), 0)),
            ("host", MatchStart(("Omar", "Layla"), deal=HIDDEN_DEAL, keys=KEYS)),
        ]
        self.tamper_parties = tamper_parties or (lambda parties: None)  # a party's own software, modified

    def sent(self, seat: int, message: Message) -> Message | None:
        message = self.signed_as_sent(seat, message, self.cheat(seat, message))
        if message is not None and seat == GUEST_SEAT:
            self.records.append(("guest", wire(message)))
        return message

    def told(self, seat: int, message: Message) -> None:
        if seat == GUEST_SEAT:
            self.records.append(("host", wire(message)))

    def make_parties(self) -> list[PartyGame]:
        parties = super().make_parties()
        self.tamper_parties(parties)
        return parties

    def referee_take(self, seat: int, step: Message) -> Message:
        try:
            return super().referee_take(seat, step)
        except HiddenDealError:
            if seat != GUEST_SEAT:
                self.told(GUEST_SEAT, unchecked_relay(seat, step))
            raise

    def play(self) -> list[tuple[str, Message]]:
        while not self.match.over and self.stopped is None:
            self.play_game()
        if self.stopped is not None:
            totals = tuple(self.match.totals)
            self.told(GUEST_SEAT, abandoned_by(self.stopped, "withheld", totals))
        else:
            self.told(GUEST_SEAT, MatchEnd(self.match.winner, tuple(self.match.totals), "target"))
        self.records.append(("guest", Leave("the match is over")))
        return self.records


def abandoned_by(seat: int, ending: str, totals: tuple[int, int] = (0, 0)) -> MatchEnd:
    """The host's end of a match abandoned by ``seat``, its account of the absence ending with ``ending``
    (a format-1 record, whose signatures no one checks, holds the account all the same)."""
    return MatchEnd(1 - seat, totals, "abandoned", evidence=AbsenceEvidence(2, ((ending, 0, 0),), bytes(64)))


def unchecked_relay(seat: int, step: Message) -> Message:
    """What a modified host sends the guest for its own party's step, without checking it."""
    if isinstance(step, Lock):
        return Locked(step.game, seat, step.public, step.deck, step.seen, step.sig)
    if isinstance(step, Open):
        return Opened(step.game, seat, step.unmaskings, step.reveals, step.seen, step.sig)
    return Audited(step.game, seat, step.scalar, step.seen, step.sig)


def save(records, path: Path) -> Path:
    path.write_bytes(transcript.header("guest") + b"".join(transcript.record(s, m) for s, m in records))
    return path


def verify(records, tmp_path: Path) -> tuple[int, list[str]]:
    lines: list[str] = []
    code = verify_file(save(records, tmp_path / "match.basra"), say=lines.append)
    return code, lines


def found(records, tmp_path: Path, reason: str) -> str | None:
    """The party the replay finds at fault, once `basra verify` has shown the finding and named no one for it."""
    code, lines = verify(records, tmp_path)
    assert code == EXIT_FAILURE and reason in lines[-1], lines
    assert "this names no one" in lines[-1] and "cheated" not in lines[-1], lines
    return transcript.verify(parse((tmp_path / "match.basra").read_bytes())).problems[0].culprit


@pytest.fixture(scope="module")
def honest_records():
    return HiddenMatch(seed=11, target=80).play()


# --- the honest match -------------------------------------------------------------------------------


def test_an_honest_hidden_match_verifies_completely(honest_records, tmp_path):
    code, lines = verify(honest_records, tmp_path)
    assert code == EXIT_OK, lines
    verifier = MatchVerifier()
    for sender, message in parse(save(honest_records, tmp_path / "m.basra").read_bytes()).records:
        verifier.observe(sender, message)
    assert verifier.finish() == []
    games = sum(isinstance(m, Shuffle) for _, m in honest_records)
    assert games >= 2 and len(verifier.checks) == games
    for check in verifier.checks:
        assert check.ok and check.complete and sorted(check.deck) == list(range(52))
        assert check.proofs == 104  # every unmasking and every reveal of the game, both parties'
    assert verifier.match.over


def test_the_verifier_checks_every_play_and_score(honest_records, tmp_path):
    """The referee's announcements must be the replay's: a score or a play changed after the fact fails."""
    scores = next(i for i, (s, m) in enumerate(honest_records) if isinstance(m, GameEnd))
    sender, end = honest_records[scores]
    changed = replace(end, totals=(end.totals[0] + 10, end.totals[1]))
    assert found([*honest_records[:scores], (sender, changed), *honest_records[scores + 1:]], tmp_path, "game_end") == "the host"


# --- cheats by a party, with its own secret ------------------------------------------------------


def corrupt_proof(step: bytes) -> bytes:
    proof = Proof.from_bytes(step[32:], "proof")
    return step[:32] + Proof(proof.challenge, (proof.response + 1) % GROUP_ORDER).to_bytes()


def first(kind, seat_wanted):
    """A cheat that changes the first message of a kind a seat sends, once."""
    done = []

    def wrap(change):
        def cheat(seat, message):
            if seat == seat_wanted and isinstance(message, kind) and not done and (changed := change(message)) is not message:
                done.append(changed)
                return changed
            return message
        return cheat
    return wrap


CHEATS = {
    "a card twice in a locked deck, by the host's party": (
        0, first(Lock, 0)(lambda m: replace(m, deck=(m.deck[1], *m.deck[1:]))),
        "seat 0's locked list holds one card twice"),
    "a card twice in a locked deck, by the guest": (
        1, first(Lock, 1)(lambda m: replace(m, deck=(m.deck[1], *m.deck[1:]))),
        "seat 1's locked list holds one card twice"),
    "a bad unmasking proof": (
        1, first(Open, 1)(lambda m: replace(m, unmaskings=((m.unmaskings[0][0], corrupt_proof(m.unmaskings[0][1])),
                                                           *m.unmaskings[1:])) if m.unmaskings else m),
        "seat 1's unmasking of position"),
    "an unmasking replayed at another position": (
        0, first(Open, 0)(lambda m: replace(m, unmaskings=((m.unmaskings[1][0], m.unmaskings[0][1]),
                                                           (m.unmaskings[0][0], m.unmaskings[1][1]),
                                                           *m.unmaskings[2:])) if len(m.unmaskings) > 1 else m),
        "seat 0's unmasking of position"),
    "an audit scalar not behind the public point, by the guest": (
        1, first(Audit, 1)(lambda m: replace(m, scalar=scalar_bytes(5))),
        "seat 1's audit scalar is not the one behind its public point"),
    "an audit scalar not behind the public point, by the host's party": (
        0, first(Audit, 0)(lambda m: replace(m, scalar=scalar_bytes(5))),
        "seat 0's audit scalar is not the one behind its public point"),
}


@pytest.mark.parametrize("case", list(CHEATS))
def test_a_cheating_party_is_found_by_the_replay(case, tmp_path):
    cheater, cheat, reason = CHEATS[case]
    table = HiddenMatch(seed=3, target=1, cheat=cheat)
    with pytest.raises(Exception) as refused:  # the referee refuses the step at once...
        table.play()
    assert reason in str(refused.value) and refused.value.seat == cheater
    # ...and the record the guest kept up to the cheat proves it offline: its own step as sent, or the
    # step of the host's party as the host relayed it.
    assert found([*table.records, ("host", abandoned_by(cheater, "left"))], tmp_path, reason) == f"seat {cheater}"


def test_a_played_card_shown_as_another_is_named(tmp_path):
    """Seat 0 (the other party, as the guest's record shows it) plays a card and relays another card's reveal."""
    honest = HiddenMatch(seed=5, target=1).play()
    i = next(i for i, (s, m) in enumerate(honest) if isinstance(m, Played) and m.seat == 0 and m.reveal)
    j = next(j for j, (s, m) in enumerate(honest) if j > i and isinstance(m, Played) and m.seat == 0 and m.reveal)
    forged = replace(honest[i][1], reveal=honest[j][1].reveal)  # a valid reveal, of another position's card
    assert found([*honest[:i], ("host", forged)], tmp_path, "seat 0's reveal of position") == "seat 0"


def substituting(culprit: int):
    """The party at seat ``culprit`` locks a point that is no card's into its list (entry 8), as a modified
    client would: seat 0 deals game 1 and substitutes in the dealer's list, seat 1 in the deck itself."""

    def tamper(parties) -> None:
        party = parties[culprit].party
        honest_lock = party.lock_deck
        stranger = sodium.crypto_scalarmult_ed25519_base_noclamp(scalar_bytes(424242))

        def lock_deck(previous):
            deck = list(honest_lock(previous))
            deck[8] = sodium.crypto_scalarmult_ed25519_noclamp(party.audit_scalar, stranger)
            return tuple(deck)

        party.lock_deck = lock_deck

    return tamper


def shows_no_card(message: Message) -> bool:
    """An `open` (or its relay) with a proven reveal of a point that is no card's: the evidence of 15.7."""
    return isinstance(message, (Open, Opened)) and any(card_of(step[:32]) is None for _, step in message.reveals)


@pytest.mark.parametrize("culprit", [0, 1], ids=["by seat 0", "by seat 1"])
def test_a_substituted_card_is_shown_at_once_and_the_audit_that_follows_names_its_author(culprit, tmp_path):
    table = HiddenMatch(seed=5, target=1, tamper_parties=substituting(culprit))
    with pytest.raises(NotAPermutation) as caught:  # both scalars are owed at once; the culprit's shows its list
        table.play()
    assert caught.value.seat == culprit and table.referee.corrupted is not None
    records = table.records
    shown = next(i for i, (s, m) in enumerate(records) if shows_no_card(m))
    assert not any(isinstance(m, (Deal, HiddenTurn)) for _, m in records[shown:])  # the game goes no further
    reason = f"seat {culprit}'s locked list is not the list before it"
    assert found([*records, ("host", abandoned_by(culprit, "left"))], tmp_path, reason) == f"seat {culprit}"


def test_a_substitution_whose_audit_is_withheld_names_the_seat_that_withheld_it(tmp_path):
    table = HiddenMatch(seed=5, target=1, tamper_parties=substituting(1))
    with pytest.raises(NotAPermutation):
        table.play()
    records = [(s, m) for s, m in table.records if not isinstance(m, (Audit, Audited))]
    assert any(shows_no_card(m) for _, m in records)
    code, lines = verify(records, tmp_path)  # the record stops: no one is named
    assert code == EXIT_FAILURE and "no audit to say whose" in lines[-1] and "cheated" not in lines[-1], lines
    assert found([*records, ("host", abandoned_by(1, "withheld"))], tmp_path, "seat 1 withheld its audit scalar") == "seat 1"
    code, lines = verify([*records, ("host", abandoned_by(1, "grace_over"))], tmp_path)  # away instead: no one is named
    assert code == EXIT_FAILURE and "no audit to say whose" in lines[-1] and "cheated" not in lines[-1], lines


@pytest.mark.parametrize("stopper", [0, 1], ids=["the host's party", "the guest"])
def test_a_party_that_refuses_to_unmask_leaves_an_abandoned_deal_naming_it(stopper, tmp_path):
    def refuse(seat, message):
        return None if seat == stopper and isinstance(message, Open) else message

    records = HiddenMatch(seed=3, target=1, cheat=refuse).play()
    assert found(records, tmp_path, f"an abandoned deal: expected every step of the deal until the match ended, found seat {stopper} "
                 "withheld its unmasking of positions") == f"seat {stopper}"


@pytest.mark.parametrize("leaver", [0, 1], ids=["the host's party", "the guest"])
@pytest.mark.parametrize("how", ["leave", "left", "grace_over"])
def test_a_party_absent_while_it_owes_a_step_withheld_nothing(leaver, how, tmp_path):
    """The match ends while a step of the deal is owed, by an absence: a `leave` (from either seat), or the host's
    account ending `left` or `grace_over`.  That is no withholding: no one is named, and the game is shown as
    ended before its audit, every step and play up to there checked."""
    records = HiddenMatch(seed=3, target=1).play()
    i = next(i for i, (s, m) in enumerate(records) if isinstance(m, (Open, Opened)))
    end = (
        [("guest" if leaver == 1 else "host", Leave("Ctrl-C"))] if how == "leave"
        else [("host", abandoned_by(leaver, how)), ("guest", Leave("the match is over"))]
    )
    code, lines = verify([*records[:i], *end], tmp_path)
    assert code == EXIT_OK and "cheated" not in "\n".join(lines), lines
    assert any(line.startswith("game 1: not complete: the match ended before its audit") for line in lines), lines


def test_a_record_that_stops_mid_deal_names_no_one(tmp_path):
    records = HiddenMatch(seed=3, target=1).play()
    i = next(i for i, (s, m) in enumerate(records) if isinstance(m, Open))
    code, lines = verify(records[:i], tmp_path)
    assert code == EXIT_FAILURE and "cheated" not in lines[-1]


def test_a_deal_before_the_steps_are_in_is_the_hosts_fault(tmp_path):
    records = HiddenMatch(seed=3, target=1).play()
    first_open = next(i for i, (s, m) in enumerate(records) if isinstance(m, (Open, Opened)))
    deal = next(r for r in records if isinstance(r[1], Deal))
    assert found([*records[:first_open], deal], tmp_path, "a deal while seat") == "the host"


def test_this_seats_own_choice_changed_after_the_fact_rests_on_its_unsigned_step(tmp_path):
    """The seat's own `hidden_play` is signed by no one: a choice among its card's options changed in its record makes
    the host's `played` differ from it, and the replay lays that at the host's door only as resting on this seat's
    own steps (a signed record names no one for it: PROTOCOL.md 14.11).  The play replayed is the host's."""
    for seed in range(1, 60):
        records = HiddenMatch(seed=seed, target=1).play()
        turn = None
        for at, (sender, message) in enumerate(records):
            if isinstance(message, HiddenTurn):
                turn = message
            elif sender == "guest" and isinstance(message, HiddenPlay) and len(turn.options[message.kind]) > 1:
                break
        else:
            continue
        break
    else:
        pytest.fail("no seed gave the guest a card with two options")
    sender, play = records[at]
    records[at] = (sender, replace(play, option=1 - min(play.option, 1)))
    first = transcript.verify(parse(save(records, tmp_path / "changed.basra").read_bytes())).problems[0]
    assert first.culprit == "the host" and "as this seat played it" in first.expected, first
    assert first.unsigned == "it rests on seat 1's own steps of the deal, which no signature covers", first

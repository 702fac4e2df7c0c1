"""`basra verify FILE`: re-check a saved transcript offline, and say what it proves."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from ..engine.cards import card_name
from ..exits import EXIT_CHEAT, EXIT_FAILURE, EXIT_OK, EXIT_UNREADABLE
from ..protocol import shuffle, transcript
from ..protocol.fingerprint import key_fingerprint
from ..protocol.hidden_verify import ABANDONED_DEAL
from ..protocol.record import Status
from ..protocol.signed_verify import SignedReport, Verdict, verify_signed
from ..protocol.termination import Termination

MAX_TRANSCRIPT = 64 * 1024 * 1024  # far beyond any real match; bounds the work a hostile file can cause
VERDICT_EXITS = {Verdict.PROVEN: EXIT_OK, Verdict.NOT_PROVEN: EXIT_FAILURE, Verdict.CHEAT: EXIT_CHEAT}


def read_transcript(path: Path) -> transcript.Transcript:
    """The parsed transcript; OSError or TranscriptError when it cannot be read."""
    if path.stat().st_size > MAX_TRANSCRIPT:
        raise transcript.TranscriptError(f"larger than any transcript ({MAX_TRANSCRIPT} bytes at most)")
    return transcript.parse(path.read_bytes())


def verdict_in_words(parsed: transcript.Transcript) -> tuple[str, bool, transcript.VerifyReport]:
    """basra verify's verdict in a few words, whether it holds (for a title line), and the deals' report."""
    if parsed.format == transcript.FORMAT:
        report = transcript.verify(parsed)
        return ("deals verified" if report.ok else f"FAILED: {report.problems[0]}"), report.ok, report
    signed = verify_signed(parsed)
    words = {Verdict.PROVEN: "proven", Verdict.NOT_PROVEN: "NOT PROVEN", Verdict.CHEAT: "CHEAT PROVEN"}[signed.verdict]
    return (words if signed.reason is None else f"{words}: {signed.reason}"), signed.verdict is Verdict.PROVEN, signed.deals


def verify_file(path: Path, *, verbose: bool = False, partial: bool = False, say: Callable[[str], None] = print) -> int:
    try:
        parsed = read_transcript(path)
    except OSError as err:
        say(f"basra verify: cannot read {path}: {err.strerror or err}")
        return EXIT_UNREADABLE
    except transcript.TranscriptError as err:
        say(f"basra verify: {path} is not a readable transcript: {err}")
        return EXIT_UNREADABLE
    if parsed.format != transcript.FORMAT:
        return _say_signed(path, verify_signed(parsed, partial=partial), parsed, verbose, say)
    say("format 1: this transcript proves the deals only, not the plays, the result or who played")
    report = transcript.verify(parsed)
    verifier = report.verifier
    if verifier.welcome is not None:
        say(f"match {verifier.welcome.match_id.hex()}  host key fingerprint {key_fingerprint(verifier.welcome.host_key)}")
    if verifier.names is not None:
        say(f"players: {verifier.names[0]} (seat 0, host) v {verifier.names[1]} (seat 1)")
        say(_deal_mode(verifier))
    for check in report.checks:
        say(f"game {check.game}: {_checked(check, verifier.hidden, 'verified')}")
        if verbose and (check.deck or check.hidden):
            _print_details(check, verifier.welcome.match_id if verifier.welcome else b"", say)
    for game, why in verifier.unchecked:
        say(f"game {game}: not checked: {why}")
    for note in parsed.notes:
        if note.kind != "verification":
            say(f"note ({note.kind}{'' if note.game is None else f', game {note.game}'}): {note.text}")
    if not report.ok:
        for extra in report.problems[1:]:
            say(f"  also: {extra}")
        # Only the deal is signed in a format-1 transcript: a failure in it names no one (PROTOCOL.md 11.5).
        first = report.problems[0]
        unsigned = "" if first.culprit is None else " (no signature in a format-1 record covers it: this names no one)"
        say(f"FAILED: {replace(first, culprit=None)}{unsigned}")
        return EXIT_FAILURE
    end = verifier.match_end
    if end is not None:
        winner = "nobody" if end.winner is None else f"seat {end.winner}"
        say(f"result: {winner} wins {end.totals[0]}-{end.totals[1]} ({end.reason})")
    else:
        say("the transcript ends before the match did")
    if verifier.hidden:
        proofs = sum(check.proofs for check in report.checks)
        say(f"{path}: hidden hands: all {proofs} proofs, both locked decks of every game, every play and score check out")
    else:
        say(f"{path}: every signature, commitment, deal, play and score checks out")
    return EXIT_OK


def _checked(check, hidden: bool, ok: str) -> str:
    """A game's check in words; a hidden game the match ended in, by an absence or a withholding the host's account
    asserts, has had no audit (PROTOCOL.md 15.16)."""
    if check.discrepancies and all(p.field == ABANDONED_DEAL for p in check.discrepancies):
        seat, _, owed = check.discrepancies[0].found.partition(" withheld ")
        return (f"not complete: the match ended with {seat} withholding {owed}, as the host's account says; "
                "every step of the deal and every play up to there check out")
    if not check.ok:
        return "FAILED"
    if hidden and not check.complete:
        return "not complete: the match ended before its audit; every step of the deal and every play up to there check out"
    return ok


def _deal_mode(verifier) -> str:
    """The deal mode the match's match_start names (PROTOCOL.md 15.15)."""
    return "deal: hidden hands (PROTOCOL.md 15)" if verifier.hidden else "deal: commit-reveal (PROTOCOL.md 9)"


def _print_details(check, match_id: bytes, say: Callable[[str], None]) -> None:
    if check.hidden is not None:
        _print_hidden_details(check, say)
        return
    trace = shuffle.shuffle_trace(match_id, check.game, check.host_seed, check.client_seed)
    say(f"  commitment  {check.commitment.hex()}")
    say(f"  host seed   {check.host_seed.hex()}")
    say(f"  client seed {check.client_seed.hex()}")
    say(f"  deck key    {check.deck_key.hex()}")
    say(f"  draws       {len(trace.draws)} ({sum(not d.accepted for d in trace.draws)} rejected), "
        f"{trace.words_consumed} words from {trace.block_count} HMAC blocks")
    _print_deck(check.deck, say)


def _print_hidden_details(check, say: Callable[[str], None]) -> None:
    """A hidden game's own trace (PROTOCOL.md 15.5, 15.10): no seeds, but each party's point, both locked lists
    (as SHA-256 digests of their points in order), the audit scalars and the deck the reveals proved."""
    trace = check.hidden
    non_dealer = 1 - trace.dealer
    say(f"  dealer      seat {trace.dealer}")
    for seat in (trace.dealer, non_dealer):
        point = trace.public[seat]
        say(f"  seat {seat} point Y {point.hex() if point is not None else '(not published)'}")
    for seat, points in zip((trace.dealer, non_dealer), trace.lists):
        what = "the dealer's locked list" if seat == trace.dealer else "the deck (its locked list)"
        say(f"  seat {seat} list  SHA-256 {hashlib.sha256(b''.join(points)).hexdigest()}  {what}")
    for seat, scalar in trace.scalars:
        say(f"  seat {seat} audit scalar {scalar.hex()}")
    say(f"  proofs      {check.proofs} unmaskings and reveals checked")
    if check.deck:
        _print_deck(check.deck, say)
    else:
        say("  deck        not every position revealed: the game ended before its audit")


def _print_deck(deck, say: Callable[[str], None]) -> None:
    names = [card_name(c) for c in deck]
    for start in range(0, 52, 13):
        say(f"  deck[{start:2}:{start + 13:2}] {' '.join(names[start:start + 13])}")


_STATUS = {None: "not reached", Status.VALID: "valid", Status.MISSING: "missing", Status.INVALID: "INVALID"}


def _signatures(host: Status | None, guest: Status | None) -> str:
    return f"host signature {_STATUS[host]}, guest signature {_STATUS[guest]}"


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _say_signed(path: Path, report: SignedReport, parsed: transcript.Transcript, verbose: bool, say: Callable[[str], None]) -> int:
    verifier = report.deals.verifier
    say(f"format 2 (signed records); the header says the {parsed.role} wrote it (a claim, not signed)")
    context = report.context
    if context is not None:
        names = verifier.names or ("?", "?")
        host_seat = 1 - context.guest_seat
        say(f"match {context.match_id.hex()}")
        say(f"host key fingerprint  {key_fingerprint(context.host_key)}  (seat {host_seat}, {names[host_seat]})")
        say(f"guest key fingerprint {key_fingerprint(context.guest_key)}  (seat {context.guest_seat}, {names[context.guest_seat]})")
    if verifier.names is not None:
        say(_deal_mode(verifier))
    for game in report.games:
        if game.check is None:
            deal = "deal not checked (no fair deal on this channel)" if context is not None and not context.fair_deal else "deal not revealed"
        else:
            deal = _checked(game.check, verifier.hidden, "deal and plays check out")
        if game.host is not Status.VALID:
            deal += " (under no valid host signature: this proves nothing)"
        say(f"game {game.game}: {deal}; {_signatures(game.host, game.guest)}")
        if verbose and game.check is not None and (game.check.deck or game.check.hidden):
            _print_details(game.check, context.match_id if context else b"", say)
    for game, why in verifier.unchecked:
        say(f"game {game}: not checked: {why}")
    channel = report.channel
    if channel is not None and channel.result is not None:
        result = channel.result.result
        winner = "nobody" if result.winner is None else f"seat {result.winner} ({result.names[result.winner]})"
        signatures = _signatures(channel.result.host, channel.result.guest)
        if report.account is None:
            say(f"result: {winner} wins {result.totals[0]}-{result.totals[1]} ({result.reason}); {signatures}")
        else:
            say(f"result: the host names {winner} the winner at {result.totals[0]}-{result.totals[1]}, the match abandoned; {signatures}")
            _say_abandonment(report, say)
    for note in parsed.notes:
        where = "" if note.game is None else f", game {note.game}"
        say(f"note ({note.kind}{where}; the writer's, not signed, not evidence): {note.text}")
    if report.verdict is Verdict.PROVEN:
        say(f"{'PROVEN (up to the cut)' if report.cut_short else 'PROVEN'}: {'; '.join(report.holds)}")
    else:
        say(f"{'CHEAT PROVEN' if report.verdict is Verdict.CHEAT else 'NOT PROVEN'}: {report.reason}")
        for problem in report.also:
            say(f"  also: {problem}")
    return VERDICT_EXITS[report.verdict]


# How the host's account says the seat abandoned the match, by its last event (PROTOCOL.md 14.6).
ABANDONED_AS = {
    Termination.LEFT: "abandoned",
    Termination.GRACE_OVER: "abandoned",
    Termination.UNSIGNED: "abandoned",
    Termination.WITHHELD: "withheld a step of the deal it owed, and so abandoned",
    Termination.BAD_DEAL: "sent a step of the deal that failed its check, and so abandoned",
}


def _say_abandonment(report: SignedReport, say: Callable[[str], None]) -> None:
    account = report.account
    assert account is not None
    how = ABANDONED_AS[Termination(account.events[-1].kind)]
    say(f"abandonment: ASSERTED BY THE HOST, not proven: seat {account.absent_seat} {how} the match "
        f"(grace period {account.grace} s); the host's signature of its account is valid")
    for event in account.events:
        say(f"  {_time(event.time_ms)}  {event.kind:<10}  after {event.sent} stream messages")
    if report.dispute is not None:
        say(f"abandonment DISPUTED: {report.dispute}")
    for text in report.disputed_in_notes:
        say(f"abandonment DISPUTED by the writer's note (its word, not signed, not proven): {text}")

"""`basra verify FILE`: re-check a saved transcript offline."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..engine.cards import card_name
from ..protocol import shuffle, transcript
from ..protocol.fingerprint import key_fingerprint

EXIT_VERIFIED = 0
EXIT_FAILED = 1
EXIT_UNREADABLE = 2
EXIT_CHEAT = 3  # the record proves who cheated
MAX_TRANSCRIPT = 64 * 1024 * 1024  # far beyond any real match; bounds the work a hostile file can cause


def verify_file(path: Path, *, verbose: bool = False, say: Callable[[str], None] = print) -> int:
    try:
        if path.stat().st_size > MAX_TRANSCRIPT:
            say(f"basra verify: {path} is larger than any transcript ({MAX_TRANSCRIPT} bytes at most)")
            return EXIT_UNREADABLE
        data = path.read_bytes()
    except OSError as err:
        say(f"basra verify: cannot read {path}: {err.strerror or err}")
        return EXIT_UNREADABLE
    try:
        parsed = transcript.parse(data)
    except transcript.TranscriptError as err:
        say(f"basra verify: {path} is not a readable transcript: {err}")
        return EXIT_UNREADABLE
    report = transcript.verify(parsed)
    verifier = report.verifier
    if verifier.welcome is not None:
        say(f"match {verifier.welcome.match_id.hex()}  host key fingerprint {key_fingerprint(verifier.welcome.host_key)}")
    if verifier.names is not None:
        say(f"players: {verifier.names[0]} (seat 0, host) v {verifier.names[1]} (seat 1)")
    for check in report.checks:
        say(f"game {check.game}: {'verified' if check.ok else 'FAILED'}")
        if verbose and check.deck:
            _print_details(check, verifier.welcome.match_id if verifier.welcome else b"", say)
    for game, why in verifier.unchecked:
        say(f"game {game}: not checked: {why}")
    for note in parsed.notes:
        if note.kind != "verification":
            say(f"note ({note.kind}{'' if note.game is None else f', game {note.game}'}): {note.text}")
    if not report.ok:
        for extra in report.problems[1:]:
            say(f"  also: {extra}")
        first = report.problems[0]
        say(f"{'CHEATED' if first.culprit is not None else 'FAILED'}: {first}")
        return EXIT_CHEAT if first.culprit is not None else EXIT_FAILED
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
    return EXIT_VERIFIED


def _print_details(check, match_id: bytes, say: Callable[[str], None]) -> None:
    trace = shuffle.shuffle_trace(match_id, check.game, check.host_seed, check.client_seed)
    say(f"  commitment  {check.commitment.hex()}")
    say(f"  host seed   {check.host_seed.hex()}")
    say(f"  client seed {check.client_seed.hex()}")
    say(f"  deck key    {check.deck_key.hex()}")
    say(f"  draws       {len(trace.draws)} ({sum(not d.accepted for d in trace.draws)} rejected), "
        f"{trace.words_consumed} words from {trace.block_count} HMAC blocks")
    names = [card_name(c) for c in check.deck]
    for start in range(0, 52, 13):
        say(f"  deck[{start:2}:{start + 13:2}] {' '.join(names[start:start + 13])}")

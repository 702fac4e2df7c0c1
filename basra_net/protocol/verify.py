"""Checking a whole deal after the host reveals its seed (PROTOCOL.md, section 9.10).

A MatchVerifier is fed the messages of the seat-1 channel in order, each with
its sender ("host" or "guest").  When a game's reveal arrives it recomputes
the deck from both seeds and replays the game through the rules engine,
comparing every deal, every list of legal moves offered to the guest, every
play and the scores with what the host announced.  The live client and
`basra verify` use the same class, so a transcript is checked exactly as the
game was.  A match of the hidden deal is replayed game by game through the
referee's own game instead (hidden_verify.py): there is no seed to reveal,
and every step of both parties is on record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..engine import IllegalMove, Match, Move
from ..engine.cards import card_name
from ..engine.events import Dealt, GameEnded, MatchEnded, TableTaken
from . import shuffle
from .hidden_verify import HIDDEN_GAME_MESSAGES, HiddenGameCheck, HiddenGameReplay, HiddenTrace, withholder_of
from .termination import Termination
from .messages import (
    Commit,
    Deal,
    HIDDEN_DEAL,
    GameEnd,
    Hello,
    Leave,
    MatchEnd,
    MatchStart,
    Message,
    Play,
    Played,
    Reveal,
    Seed,
    Shuffle,
    Welcome,
    YourTurn,
)

HOST, GUEST = "host", "guest"


@dataclass(frozen=True)
class Discrepancy:
    """One thing that does not hold, named precisely enough to show to others."""

    game: int | None
    field: str
    expected: str
    found: str
    culprit: str | None = None  # who the replay finds at fault ("seat 1", "the host"); signed_verify weighs whether it is proven
    unsigned: str | None = None  # what unsigned it rests on, in words (a hidden deal's steps no one signs), if anything
    signed_by: int | None = None  # the seat whose own valid signature of its step of the hidden deal covers it (15.17)

    def __str__(self) -> str:
        where = f"game {self.game}: " if self.game is not None else ""
        blame = f" ({self.culprit} cheated)" if self.culprit is not None else ""
        return f"{where}{self.field}: expected {self.expected}, found {self.found}{blame}"


@dataclass
class GameCheck:
    """The result of checking one game, with the values an independent check can compare."""

    game: int
    discrepancies: list[Discrepancy]
    commitment: bytes = b""
    host_seed: bytes = b""
    client_seed: bytes = b""
    deck_key: bytes = b""
    deck: tuple[int, ...] = ()
    complete: bool = True  # False for a game revealed when the match was abandoned part way
    proofs: int = 0  # hidden deal: the unmaskings and reveals checked
    hidden: HiddenTrace | None = None  # hidden deal: the deal's values (no seeds: section 15)

    @property
    def ok(self) -> bool:
        return not self.discrepancies


@dataclass
class _PendingGame:
    commit: Commit | None = None
    client_seed: bytes | None = None
    messages: list[tuple[str, Message]] = field(default_factory=list)


def _cards(cards) -> str:
    return "[" + " ".join(card_name(c) for c in cards) + "]"


def _moves(moves) -> str:
    return "{" + ", ".join(f"{card_name(m.card)}->{_cards(m.captures)}" for m in sorted(moves, key=_move_key)) + "}"


def _move_key(move: Move) -> tuple:
    return (move.card, move.captures)


@dataclass(frozen=True)
class FairDeal:
    """What the records of one game say about its deal (section 9): the host's commitment, both seeds, the reveal."""

    match_id: bytes
    host_key: bytes
    nonce: bytes
    commit: Commit
    client_seed: bytes | None  # None for a game revealed before its deal: only the commitment is checked
    reveal: Reveal


def check_fair_deal(check: GameCheck, deal: FairDeal) -> None:
    """Check a game's deal from its records: the signatures, the commitment, then the deck (section 9.10).

    Fills in the check's values, and its deck when the deal holds; each thing
    that does not hold goes into its discrepancies.  MatchVerifier takes
    another function of this shape for another kind of deal.
    """
    game, reveal, commit = check.game, deal.reveal, deal.commit
    check.commitment, check.host_seed, check.client_seed = commit.commitment, reveal.seed, deal.client_seed or b""
    if not shuffle.verify_signature(deal.host_key, commit.signature, shuffle.commit_signed_bytes(deal.match_id, game, commit.commitment)):
        check.discrepancies.append(Discrepancy(game, "commit signature", "valid under the host key", "invalid"))
    if not shuffle.verify_signature(deal.host_key, reveal.signature, shuffle.reveal_signed_bytes(deal.match_id, game, reveal.seed)):
        check.discrepancies.append(Discrepancy(game, "reveal signature", "valid under the host key", "invalid"))
    recomputed = shuffle.commitment(deal.match_id, game, deal.nonce, reveal.seed)
    if recomputed != commit.commitment:
        check.discrepancies.append(Discrepancy(game, "commitment", commit.commitment.hex(), f"{recomputed.hex()} from the revealed seed"))
    if not check.discrepancies and deal.client_seed is not None:
        check.deck_key = shuffle.deck_key(deal.match_id, game, reveal.seed, deal.client_seed)
        check.deck = shuffle.shuffled_deck(deal.match_id, game, reveal.seed, deal.client_seed)


class MatchVerifier:
    def __init__(self, deal_check: Callable[[GameCheck, FairDeal], None] = check_fair_deal) -> None:
        self.deal_check = deal_check
        self.nonce: bytes | None = None
        self.welcome: Welcome | None = None
        self.names: tuple[str, str] | None = None
        self.match: Match | None = None
        self.pending: dict[int, _PendingGame] = {}
        self.checks: list[GameCheck] = []
        self.match_end: MatchEnd | None = None
        self.left: tuple[str, Leave] | None = None  # the first leave on record, with its sender, before any match_end
        self.unchecked: list[tuple[int, str]] = []  # fixed deals the guest's own absence left unrevealed, and why (after finish())
        self.failed = False  # after a failed game the replay cannot go on
        self._current: int | None = None
        self.hidden = False  # the match deals with hidden hands, as its match_start says
        self._hidden_game: HiddenGameReplay | None = None
        self.step_keys: tuple[bytes, bytes] | None = None  # the hidden deal: each seat's key for its steps (15.17)

    # --- feeding ---------------------------------------------------------------------------

    def observe(self, sender: str, message: Message) -> GameCheck | None:
        """Take the next message of the channel; return a GameCheck when a reveal completes a game."""
        if isinstance(message, Hello) and sender == GUEST:
            self.nonce = message.nonce
        elif isinstance(message, Welcome) and sender == HOST:
            self.welcome = message
            self.match = Match(scoring=message.scoring, target=message.target)
        elif isinstance(message, MatchStart):
            self.names = message.names
            self.hidden = message.deal == HIDDEN_DEAL
            self.step_keys = message.keys
        elif self.hidden and isinstance(message, HIDDEN_GAME_MESSAGES):
            return self._observe_hidden(sender, message)
        elif isinstance(message, Commit) and sender == HOST:
            self.pending.setdefault(message.game, _PendingGame()).commit = message
        elif isinstance(message, Seed) and sender == GUEST:
            self.pending.setdefault(message.game, _PendingGame()).client_seed = message.seed
        elif isinstance(message, Deal) and message.hand_no == 1:
            self._current = message.game
            self.pending.setdefault(message.game, _PendingGame()).messages.append((sender, message))
        elif isinstance(message, (Deal, YourTurn, Play, Played, GameEnd)) and self._current is not None:
            self.pending[self._current].messages.append((sender, message))
        elif isinstance(message, Reveal) and sender == HOST:
            return self._check_game(message)
        elif isinstance(message, MatchEnd):
            self.match_end = message
        elif isinstance(message, Leave) and self.left is None and self.match_end is None:
            self.left = (sender, message)
        return None

    def _observe_hidden(self, sender: str, message: Message) -> GameCheck | None:
        """A message of a hidden game: the game's check once it is complete or has failed."""
        if isinstance(message, Shuffle) and sender == HOST:
            done = self._end_hidden_game()
            if self.failed or self.welcome is None or self.match is None:
                return done
            self._hidden_game = HiddenGameReplay(self.welcome.match_id, self.match, self.welcome.seat, message, self.step_keys)
            return done
        replay = self._hidden_game
        if replay is None or self.failed:
            return None
        replay.observe(sender, message)
        if replay.failed or replay.result.complete:
            return self._end_hidden_game()
        return None

    def _end_hidden_game(self) -> GameCheck | None:
        replay, self._hidden_game = self._hidden_game, None
        if replay is None:
            return None
        check = _game_check(replay.finish(withholder_of(self.match_end)))
        self.checks.append(check)
        return self._done(check)

    def finish(self) -> list[Discrepancy]:
        """Checks that need the whole match: every fixed deal revealed, the announced result."""
        problems: list[Discrepancy] = []
        ended = self.match_end is not None or self.left is not None
        if self._hidden_game is not None:
            problems.extend(self._end_hidden_game().discrepancies)
        self.unchecked = []
        revealed = {c.game for c in self.checks}
        for game, pending in sorted(self.pending.items()):
            # A commitment never revealed is still the host's signed word: a forged one is named too.
            if pending.commit is not None and game not in revealed and self.welcome is not None:
                signed = shuffle.commit_signed_bytes(self.welcome.match_id, game, pending.commit.commitment)
                if not shuffle.verify_signature(self.welcome.host_key, pending.commit.signature, signed):
                    problems.append(Discrepancy(game, "commit signature", "valid under the host key", "invalid (a commitment never revealed)"))
            if pending.client_seed is not None and game not in revealed:
                guest_absent = self._guest_absent()
                if guest_absent is not None:
                    self.unchecked.append((game, guest_absent))
                else:
                    problems.append(Discrepancy(game, "reveal", "the host seed after the seed exchange", self._why_unrevealed()))
        end = self.match_end
        # The match stopped in its last game: abandoned, or the host left after revealing the deal in play.
        cut_short = end.termination.abandoned if end is not None else self.left is not None and self.left[0] == HOST
        for check in self.checks:
            # A hidden game ends wherever the match did; a deal step withheld is its own failure.
            if check.ok and not check.complete and not (check is self.checks[-1] and (cut_short or self.hidden and ended)):
                plays = self.match.game.plays if self.match and self.match.game else 0
                problems.append(Discrepancy(check.game, "game end", "a complete game of 48 plays", f"{plays} plays"))
        if end is not None and self.match is not None and not self.failed and self.replays_the_match:
            if end.termination is Termination.TARGET:
                expected = (self.match.winner, tuple(self.match.totals))
                if (end.winner, end.totals) != expected:
                    problems.append(
                        Discrepancy(None, "match result", f"winner {expected[0]}, totals {expected[1]}", f"winner {end.winner}, totals {end.totals}")
                    )
            elif end.totals != tuple(self.match.totals):
                problems.append(Discrepancy(None, "totals when the match was abandoned", str(tuple(self.match.totals)), str(end.totals)))
        return problems

    @property
    def replays_the_match(self) -> bool:
        """The channel shows every card, so the match can be replayed: either seat's of the hidden deal, seat 1's of
        the commit-reveal deal (its reveals); seat 0 of a commit-reveal match at `basra serve` sees no deal to check."""
        return self.hidden or self.welcome is None or self.welcome.seat == 1

    def _guest_absent(self) -> str | None:
        """Why a reveal could not come, when the record shows it was the guest that went (no failure of the host)."""
        end = self.match_end
        if end is None and self.left is not None and self.left[0] == GUEST:
            return "the guest left the match before the host revealed its seed, so this record cannot show the deal"
        if end is not None and end.termination.abandoned and end.winner == 0:
            # A host reveals a game cut off after its commitment (section 7.3), into a stream the absent seat may never have taken.
            return "the host ended the match as abandoned by the guest (away past the grace period, or gone) before any reveal"
        return None

    def _why_unrevealed(self) -> str:
        """Who left a fixed deal unrevealed, as far as the record shows it."""
        end = self.match_end
        if end is not None and end.termination.abandoned and end.winner == 1:
            return "none: the host left the match after this seat's seed went out, without revealing it (an abandoned fixed deal)"
        if end is not None:
            return "none: the host ended the match without revealing it (it abandoned a fixed deal)"
        if self.left is not None:
            return "none: the host left the match without revealing it (it abandoned a fixed deal)"
        return "none: the record stops after the seed exchange (the connection ended and was not resumed), so the deal cannot be checked"

    # --- one game ----------------------------------------------------------------------------

    def _check_game(self, reveal: Reveal) -> GameCheck:
        game = reveal.game
        check = GameCheck(game, [])
        self.checks.append(check)
        problems = check.discrepancies
        pending = self.pending.get(game)
        if self.welcome is None or self.nonce is None or self.match is None:
            problems.append(Discrepancy(game, "handshake", "hello and welcome before the reveal", "missing"))
            return self._done(check)
        if self.failed:
            problems.append(Discrepancy(game, "replay", "an intact earlier game", "a failed earlier game"))
            return self._done(check)
        if pending is not None and pending.commit is not None and not pending.messages:
            # Revealed before any deal: the match ended between the commitment and the deal (section 7.3).
            self.deal_check(check, FairDeal(self.welcome.match_id, self.welcome.host_key, self.nonce, pending.commit, None, reveal))
            check.complete = False
            return self._done(check)
        if pending is None or pending.commit is None or pending.client_seed is None:
            problems.append(Discrepancy(game, "seed exchange", "a commitment and a client seed", "missing"))
            return self._done(check)
        self.deal_check(check, FairDeal(self.welcome.match_id, self.welcome.host_key, self.nonce, pending.commit, pending.client_seed, reveal))
        if problems:
            return self._done(check)
        if self.match.game_number + 1 != game or not self.match.awaiting_deal:
            problems.append(Discrepancy(game, "game number", str(self.match.game_number + 1), str(game)))
            return self._done(check)
        self._replay(check, pending.messages)
        return self._done(check)

    def _done(self, check: GameCheck) -> GameCheck:
        if check.discrepancies:
            self.failed = True
        return check

    def _replay(self, check: GameCheck, messages: list[tuple[str, Message]]) -> None:
        game, match, problems = check.game, self.match, check.discrepancies
        assert match is not None
        expected: list = list(match.start_game(check.deck))  # engine events not yet matched to messages
        for sender, message in messages:
            if isinstance(message, Play):
                continue  # the host's Played that follows is what counts
            if isinstance(message, YourTurn):
                offered = set(message.moves)
                legal = set(match.legal_moves())
                if match.turn != 1 or offered != legal:
                    problems.append(Discrepancy(game, "moves offered to seat 1", _moves(legal), _moves(offered)))
                    return
                continue
            if isinstance(message, Played):
                if expected:
                    problems.append(Discrepancy(game, "play", f"{type(expected[0]).__name__} first", f"a play by seat {message.seat}"))
                    return
                if match.turn != message.seat:
                    problems.append(Discrepancy(game, "play", f"seat {match.turn} to play", f"seat {message.seat} played"))
                    return
                try:
                    applied = match.play(message.seat, Move(message.card, message.captures))
                except IllegalMove as err:
                    problems.append(
                        Discrepancy(game, f"play by seat {message.seat}", "a legal move", f"{card_name(message.card)}->{_cards(message.captures)} ({err})")
                    )
                    return
                event, expected = applied[0], list(applied[1:])
                if (event.kind, event.table) != (message.kind, message.table):
                    problems.append(
                        Discrepancy(game, f"play by seat {message.seat}", f"{event.kind} leaving {_cards(event.table)}", f"{message.kind} leaving {_cards(message.table)}")
                    )
                    return
                continue
            if not expected:
                problems.append(Discrepancy(game, message.TYPE, "nothing more this game", "another message"))
                return
            event = expected.pop(0)
            if isinstance(message, Deal):
                if not isinstance(event, Dealt):
                    problems.append(Discrepancy(game, "deal", type(event).__name__, f"deal of hand {message.hand_no}"))
                    return
                theirs = (message.hand_no, message.dealer, message.hand, message.table, message.stock_left, message.moved)
                ours = (event.hand_no, event.dealer, event.hands[1], event.table, event.stock_left, event.moved_to_bottom)
                labels = ("hand number", "dealer", "seat 1 cards", "table", "stock", "cards moved to the stock")
                for label, a, b in zip(labels, ours, theirs):
                    if a != b:
                        shown = (_cards(a), _cards(b)) if isinstance(a, tuple) else (str(a), str(b))
                        problems.append(Discrepancy(game, f"deal of hand {event.hand_no}: {label}", *shown))
                        return
            elif isinstance(message, GameEnd):
                if isinstance(event, TableTaken):
                    if (event.seat, event.cards) != (message.last_taker, message.rest):
                        problems.append(
                            Discrepancy(game, "cards left on the table", f"seat {event.seat} takes {_cards(event.cards)}", f"seat {message.last_taker} takes {_cards(message.rest)}")
                        )
                        return
                    event = expected.pop(0) if expected else None
                if not isinstance(event, GameEnded):
                    problems.append(Discrepancy(game, "game end", "48 plays first", "an early game end"))
                    return
                for seat in (0, 1):
                    if event.scores[seat] != message.scores[seat]:
                        problems.append(
                            Discrepancy(game, f"score of seat {seat}", str(event.scores[seat].to_dict()), str(message.scores[seat].to_dict()))
                        )
                        return
                if event.totals != message.totals:
                    problems.append(Discrepancy(game, "match totals", str(event.totals), str(message.totals)))
                    return
                if expected and isinstance(expected[0], MatchEnded):
                    expected.pop(0)
        # A game cut short is only right if the match was abandoned in it (checked by finish()).
        check.complete = match.awaiting_deal or match.over


def _game_check(hidden: HiddenGameCheck) -> GameCheck:
    finding = hidden.finding
    problems = [] if finding is None else [
        Discrepancy(hidden.game, finding.check, finding.expected, finding.found, finding.culprit, finding.unsigned, finding.signed_by)
    ]
    return GameCheck(hidden.game, problems, deck=hidden.deck, complete=hidden.complete, proofs=hidden.proofs, hidden=hidden.trace)

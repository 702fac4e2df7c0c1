"""`basra replay FILE`: step through a saved match as the seat that recorded it saw it.

A transcript is seat 1's channel, kept by the guest and by the host alike;
the replay shows the screen of the seat whose file it is (seat 0 for the
host's), one event at a time (each deal, play and game end).  A hidden-hands
deal, or the host's own seat, leaves that seat's cards out of the channel,
but once a game is over its deal is public (the reveal or the audit fixes the
deck order, which `basra verify` checks): the seat's hand is filled in from
it, and every hand of both seats can be shown.  `basra verify`'s verdict is on
the title line throughout.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..engine.game import HAND_SIZE, Game
from ..engine.scoring import PRESETS
from ..exits import EXIT_OK, EXIT_UNREADABLE
from ..protocol import transcript
from ..protocol.messages import Chat, Deal, GameEnd, MatchEnd, MatchStart, Message, Played, Welcome
from ..protocol.verify import HOST
from .narration import describe
from .screen import CardStyle
from .state import ClientState
from .verify_file import read_transcript, verdict_in_words

SHOWN = (Welcome, MatchStart, Deal, Played, GameEnd, MatchEnd)  # the messages a step stops at
RECORDED_SEAT = 1  # the channel every transcript holds


@dataclass
class Frame:
    """The recording seat's view just after one message, and the log up to it."""

    state: ClientState
    log: list[str]
    game: int


@dataclass
class Replay:
    frames: list[Frame]
    verdict: str  # basra verify's, in a few words
    ok: bool
    decks: dict[int, tuple[tuple[int, ...], int]] = field(default_factory=dict)  # game -> (deck order, dealer), once revealed
    game_ends: dict[int, int] = field(default_factory=dict)  # game -> the frame of its end

    def game_start(self, game: int) -> int | None:
        return next((i for i, frame in enumerate(self.frames) if frame.game == game), None)

    def every_hand(self, game: int, scoring: str) -> list[tuple[int, tuple[int, ...], tuple[int, ...]]]:
        """(hand number, seat 0's cards, seat 1's cards) for each of the game's six hands."""
        deck, dealer = self.decks[game]
        dealt = Game(game, deck, dealer, PRESETS[scoring])
        first = 1 - dealer
        hands = [(1, tuple(dealt.hands[0]), tuple(dealt.hands[1]))]
        stock = list(dealt.stock)
        for hand_no in range(2, 7):
            cards: list[tuple[int, ...]] = [(), ()]
            cards[first], cards[dealer] = tuple(stock[:HAND_SIZE]), tuple(stock[HAND_SIZE : 2 * HAND_SIZE])
            del stock[: 2 * HAND_SIZE]
            hands.append((hand_no, cards[0], cards[1]))
        return hands


def load_replay(path: Path, style: CardStyle) -> Replay:
    """The frames of a transcript; OSError or TranscriptError when it cannot be read."""
    parsed = read_transcript(path)
    verdict, ok, report = verdict_in_words(parsed)
    replay = Replay([], verdict, ok)
    for check in report.checks:
        if check.deck:
            deal = next(m for s, m in parsed.records if isinstance(m, Deal) and m.game == check.game and m.hand_no == 1)
            replay.decks[check.game] = (check.deck, deal.dealer)
    viewer = 0 if parsed.role == "host" else RECORDED_SEAT
    state = ClientState(name="")
    log: list[str] = []
    for sender, message in parsed.records:
        if isinstance(message, Chat):  # the host relays seat 0's lines; the others are seat 1's own
            state.chat.append((1 - RECORDED_SEAT if sender == HOST else RECORDED_SEAT, message))
            log.extend(describe(state, message, style))
            continue
        if sender != HOST:
            continue
        if isinstance(message, Deal):
            message = dataclasses.replace(message, hand=_hand_seen(replay, message, viewer, state.scoring))
        state.apply(message)
        if isinstance(message, Welcome):
            state.seat, state.name = viewer, f"seat {viewer}"
        if isinstance(message, MatchStart):
            state.name = message.names[viewer]
        log.extend(describe(state, message, style))
        if isinstance(message, SHOWN):
            _step(replay, state, log, message)
    return replay


def _hand_seen(replay: Replay, deal: Deal, viewer: int, scoring: str) -> tuple[int, ...]:
    """The cards the viewing seat was dealt: from the game's deck once known, else as the channel carries them."""
    if deal.game in replay.decks:
        _, first, second = replay.every_hand(deal.game, scoring)[deal.hand_no - 1]
        return (first, second)[viewer]
    return deal.hand if viewer == RECORDED_SEAT else ()


def _step(replay: Replay, state: ClientState, log: list[str], message: Message) -> None:
    replay.frames.append(Frame(copy.deepcopy(state), list(log), state.game))
    if isinstance(message, GameEnd):
        replay.game_ends[message.game] = len(replay.frames) - 1


def replay_file(path: Path) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("basra replay: needs a terminal to show the match in (basra verify checks a transcript anywhere)", file=sys.stderr)
        return EXIT_UNREADABLE
    from .tui import ReplayApp, screen_style

    try:
        replay = load_replay(path, screen_style())
    except OSError as err:
        print(f"basra replay: cannot read {path}: {err.strerror or err}", file=sys.stderr)
        return EXIT_UNREADABLE
    except transcript.TranscriptError as err:
        print(f"basra replay: {path} is not a readable transcript: {err}", file=sys.stderr)
        return EXIT_UNREADABLE
    if not replay.frames:
        print(f"basra replay: {path} holds no match to show", file=sys.stderr)
        return EXIT_UNREADABLE
    ReplayApp(replay, path.name).run()
    return EXIT_OK

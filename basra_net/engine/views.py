"""What one seat may see of a match, so nobody above the engine filters state by hand."""

from __future__ import annotations

from dataclasses import dataclass

from .cards import Card
from .events import Dealt, Event, Move
from .game import HAND_SIZE, Game
from .match import Match


@dataclass(frozen=True)
class SeatView:
    seat: int
    game: int  # 0 before the first deal
    hand_no: int
    dealer: int | None
    turn: int | None
    hand: tuple[Card, ...]
    opponent_hand_size: int
    table: tuple[Card, ...]
    stock_left: int
    captured: tuple[int, int]  # pile sizes, by seat
    basras: tuple[int, int]  # this game, by seat
    jack_basras: tuple[int, int]
    totals: tuple[int, int]
    target: int
    scoring: str
    legal_moves: tuple[Move, ...]  # empty unless this seat is to act
    winner: int | None
    # Public knowledge a searching bot needs: every captured card by seat, the
    # cards sent to the bottom of the stock at the deal, the last capturer.
    piles: tuple[tuple[Card, ...], tuple[Card, ...]] = ((), ())
    moved_to_bottom: tuple[Card, ...] = ()
    last_capturer: int | None = None
    # The opponent's plays in this hand so far, oldest first: the table each was played on (sorted), and the card.
    opponent_plays: tuple[tuple[tuple[Card, ...], Card], ...] = ()


def seat_view(match: Match, seat: int) -> SeatView:
    game = match.game
    if game is None:
        return SeatView(
            seat=seat, game=0, hand_no=0, dealer=None, turn=None, hand=(), opponent_hand_size=0,
            table=(), stock_left=0, captured=(0, 0), basras=(0, 0), jack_basras=(0, 0),
            totals=(match.totals[0], match.totals[1]), target=match.target,
            scoring=match.preset.name, legal_moves=(), winner=match.winner,
        )
    turn = match.turn
    return SeatView(
        seat=seat,
        game=game.number,
        hand_no=game.hand_no,
        dealer=game.dealer,
        turn=turn,
        hand=tuple(game.hands[seat]),
        opponent_hand_size=len(game.hands[1 - seat]),
        table=tuple(game.table),
        stock_left=len(game.stock),
        captured=(len(game.piles[0]), len(game.piles[1])),
        basras=(game.basras[0], game.basras[1]),
        jack_basras=(game.jack_basras[0], game.jack_basras[1]),
        totals=(match.totals[0], match.totals[1]),
        target=match.target,
        scoring=match.preset.name,
        legal_moves=tuple(game.legal_moves()) if turn == seat else (),
        winner=match.winner,
        piles=(tuple(game.piles[0]), tuple(game.piles[1])),
        moved_to_bottom=game.moved_to_bottom,
        last_capturer=game.last_capturer,
        opponent_plays=_plays_this_hand(game, 1 - seat),
    )


def _plays_this_hand(game: Game, seat: int) -> tuple[tuple[tuple[Card, ...], Card], ...]:
    """The seat's plays in the hand being played, each with the table it met: the table walked back from now."""
    made = 2 * HAND_SIZE - len(game.hands[0]) - len(game.hands[1])
    if game.finished or not made:
        return ()
    table = list(game.table)
    met = []
    for move in reversed(game.history[-made:]):
        if move.captures:
            table.extend(move.captures)
        else:
            table.remove(move.card)
        met.append(tuple(sorted(table)))
    met.reverse()
    first = 1 - game.dealer  # the non-dealer leads every hand
    return tuple(
        (met[i], move.card) for i, move in enumerate(game.history[-made:]) if (first if i % 2 == 0 else 1 - first) == seat
    )


def event_for_seat(event: Event, seat: int) -> Event:
    """The event as this seat may see it: a deal shows only the seat's own hand."""
    if isinstance(event, Dealt):
        hidden = ()
        hands = (event.hands[0], hidden) if seat == 0 else (hidden, event.hands[1])
        return Dealt(
            game=event.game,
            hand_no=event.hand_no,
            dealer=event.dealer,
            hands=hands,
            table=event.table,
            stock_left=event.stock_left,
            moved_to_bottom=event.moved_to_bottom,
        )
    return event

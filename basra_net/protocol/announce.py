"""Engine events -> the messages each seat is sent (PROTOCOL.md, sections 6 and 7.3).

The table calls this after every engine step, so what each seat learns is
decided in one place: a deal shows a seat only its own hand, and with the
hidden deal (PROTOCOL.md 15.15) no hand at all, each party knowing its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..engine.events import Dealt, Event, GameEnded, MatchEnded, Played as PlayedEvent, TableTaken
from .termination import Termination
from .messages import Deal, GameEnd, MatchEnd, Message, Played, deal_wires, played_wire, to_wire

T = TypeVar("T")


def messages_for_seat(
    events: list[Event], seat: int, turn: int | None, *, hidden: bool = False, played_from: tuple[int, bytes | None] | None = None
) -> list[Message]:
    """The messages announcing these events to one seat; ``turn`` is who acts after them."""
    return [pair[seat] for pair in announcements(events, turn, hidden=hidden, played_from=played_from)]


def announcements(
    events: list[Event], turn: int | None, *, hidden: bool = False, played_from: tuple[int, bytes | None] | None = None
) -> list[tuple[Message, Message]]:
    """Each message announcing these events, as seat 0 and seat 1 are sent it.

    Only a deal differs between the seats (each sees its own hand); every other
    message is one object for both, so its frame can be encoded once.  ``hidden``:
    the hidden deal, whose deals carry no hand; ``played_from`` is then the deck
    position and reveal of the card played.
    """
    position, reveal = played_from or (None, None)

    def played(event: PlayedEvent) -> Played:
        return Played(
            game=event.game,
            seat=event.seat,
            card=event.card,
            captures=event.captured,
            kind=event.kind,
            table=event.table,
            turn=turn,
            position=position,
            reveal=reveal,
        )

    return _pairs(events, hidden, played, _deals)


def announcement_wires(
    events: list[Event], turn: int | None, *, hidden: bool = False, played_from: tuple[int, bytes | None] | None = None
) -> list[tuple[dict, dict]]:
    """announcements() as the wire maps the host sends; a map both seats are sent is one object.

    A `played`, most of what a match sends, and a `deal` are built straight from their events (played_wire, deal_wires)."""
    position, reveal = played_from or (None, None)
    if len(events) == 1 and type(events[0]) is PlayedEvent:  # most plays: one `played`, one map for both seats
        wire = played_wire(events[0], turn, position, reveal)
        return [(wire, wire)]
    wires: list[tuple[dict, dict]] = []
    for first, second in _pairs(events, hidden, lambda event: played_wire(event, turn, position, reveal), deal_wires):
        if type(first) is dict:
            wires.append((first, second))
        else:
            wire = to_wire(first)
            wires.append((wire, wire if second is first else to_wire(second)))
    return wires


def _pairs(
    events: list[Event], hidden: bool, played: Callable[[PlayedEvent], T], dealt: Callable[[Dealt, bool], tuple[T, T]]
) -> list[tuple[Message | T, Message | T]]:
    """What each seat is sent for each event, a played event made into whatever ``played`` makes of it and a deal
    into the pair ``dealt`` makes of it."""
    pairs: list[tuple[Message | T, Message | T]] = []
    taken: TableTaken | None = None
    for event in events:
        if isinstance(event, PlayedEvent):
            sent = played(event)
            pairs.append((sent, sent))
        elif isinstance(event, Dealt):
            pairs.append(dealt(event, hidden))
        elif isinstance(event, TableTaken):
            taken = event
        elif isinstance(event, GameEnded):
            end = GameEnd(
                game=event.game,
                last_taker=taken.seat if taken else None,
                rest=taken.cards if taken else (),
                scores=event.scores,
                totals=event.totals,
            )
            pairs.append((end, end))
        elif isinstance(event, MatchEnded):
            match_end = MatchEnd(winner=event.winner, totals=event.totals, reason=Termination.TARGET.value)
            pairs.append((match_end, match_end))
    return pairs


def _deals(event: Dealt, hidden: bool) -> tuple[Deal, Deal]:
    """The deal each seat is sent: its own hand only, and with the hidden deal none."""
    seat_0, seat_1 = (
        Deal(
            game=event.game,
            hand_no=event.hand_no,
            dealer=event.dealer,
            hand=() if hidden else hand,
            table=event.table,
            stock_left=event.stock_left,
            moved=event.moved_to_bottom,
            turn=1 - event.dealer,
        )
        for hand in event.hands
    )
    return seat_0, seat_1

"""Building engine states by hand: cards by name, games from explicit hands, table and stock."""

from __future__ import annotations

from collections.abc import Iterable

from basra_net.engine import CANONICAL_DECK, Game, Match, card_name, parse_card
from basra_net.engine.game import HAND_SIZE, HANDS_PER_GAME, PLAYS_PER_GAME
from basra_net.engine.scoring import EGYPTIAN, ScoringPreset

Cards = str | Iterable[int]


def cards(spec: Cards) -> tuple[int, ...]:
    """'AS 2H 10D' -> those card ints in that order; a sequence of ints passes through."""
    if isinstance(spec, str):
        return tuple(parse_card(name) for name in spec.split())
    return tuple(spec)


def names(spec: Iterable[int]) -> str:
    """The cards' names, sorted by card int, space-separated: the form the tests compare."""
    return " ".join(card_name(c) for c in sorted(spec))


def unplaced(*groups: Cards) -> tuple[int, ...]:
    """Every card not in any of the groups, in canonical order."""
    placed = {c for group in groups for c in cards(group)}
    return tuple(c for c in CANONICAL_DECK if c not in placed)


def make_game(
    hands: tuple[Cards, Cards],
    table: Cards,
    *,
    stock: Cards | None = None,
    piles: tuple[Cards, Cards] = ((), ()),
    turn: int = 0,
    dealer: int = 1,
    preset: ScoringPreset = EGYPTIAN,
    last_capturer: int | None = None,
    basras: tuple[int, int] = (0, 0),
) -> Game:
    """A game in exactly this position, built through Game.from_dict.

    When ``stock`` is None every card not placed elsewhere goes to the stock;
    otherwise the given cards must account for all 52 (from_dict checks).
    The play count follows from the cards still to be played, so a position
    with an empty stock ends after the hands are played out.
    """
    hand_cards = (cards(hands[0]), cards(hands[1]))
    table_cards = cards(table)
    pile_cards = (cards(piles[0]), cards(piles[1]))
    if stock is None:
        stock_cards = unplaced(*hand_cards, table_cards, *pile_cards)
    else:
        stock_cards = cards(stock)
    to_play = len(hand_cards[0]) + len(hand_cards[1]) + len(stock_cards)
    return Game.from_dict(
        {
            "number": 1,
            "deck": list(CANONICAL_DECK),
            "dealer": dealer,
            "hands": [list(h) for h in hand_cards],
            "table": list(table_cards),
            "stock": list(stock_cards),
            "piles": [list(p) for p in pile_cards],
            "basras": list(basras),
            "jack_basras": [0, 0],
            "turn": turn,
            "hand_no": max(1, HANDS_PER_GAME - len(stock_cards) // (2 * HAND_SIZE)),
            "plays": max(0, PLAYS_PER_GAME - to_play),
            "last_capturer": last_capturer,
            "moved_to_bottom": [],
            "history": [],
        },
        preset,
    )


def deck_order(top: str) -> tuple[int, ...]:
    """A deck order starting with the named cards, the rest in canonical order."""
    head = cards(top)
    return head + unplaced(head)


def match_at(game: Game, totals: tuple[int, int] = (0, 0), target: int = 101) -> Match:
    """A match whose current game is this one, with these totals so far."""
    return Match.from_dict({
        "scoring": game.preset.name,
        "target": target,
        "totals": list(totals),
        "results": [],
        "winner": None,
        "game": game.to_dict(),
    })

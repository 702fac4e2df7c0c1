"""Cards as small integers, and their human-readable names.

A card is an int 0..51: ``suit_index * 13 + (rank - 1)`` with suits in the
order spades, hearts, diamonds, clubs and ranks Ace=1 .. King=13.  Ints keep
capture enumeration fast; names appear only at the edges (wire, screen).
"""

from __future__ import annotations

SUITS = "SHDC"
RANK_NAMES = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")

ACE, JACK, QUEEN, KING = 1, 11, 12, 13

Card = int

CANONICAL_DECK: tuple[Card, ...] = tuple(range(52))
SEVEN_OF_DIAMONDS: Card = SUITS.index("D") * 13 + 6

# Each card's name, by card: what the wire encoders index without card_name's check of the card.
CARD_NAMES: tuple[str, ...] = tuple(RANK_NAMES[c % 13] + SUITS[c // 13] for c in CANONICAL_DECK)
_BY_NAME = {name: card for card, name in enumerate(CARD_NAMES)}


def rank(card: Card) -> int:
    """1 (Ace) .. 13 (King)."""
    return card % 13 + 1


def suit(card: Card) -> str:
    """One of 'S', 'H', 'D', 'C'."""
    return SUITS[card // 13]


def value(card: Card) -> int:
    """Worth in sums: Ace..10 count their pip value; J, Q, K count nothing (0)."""
    r = card % 13 + 1
    return r if r <= 10 else 0


def is_numeral(card: Card) -> bool:
    return card % 13 < 10


def card_name(card: Card) -> str:
    """'AS', '10D', 'JC' ...; raises ValueError for anything but a card."""
    if type(card) is not int or not 0 <= card < 52:
        raise ValueError(f"not a card: {card!r}")
    return CARD_NAMES[card]


def parse_card(name: str) -> Card:
    """Inverse of card_name; accepts only the exact canonical spelling."""
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        raise ValueError("not a card name") from None


def card_names(cards) -> list[str]:
    return [CARD_NAMES[c] for c in cards]

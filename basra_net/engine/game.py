"""One game of Basra: six hands dealt from one deck order (rules 1-9)."""

from __future__ import annotations

from .captures import (
    BASRA,
    CAPTURE,
    DROP,
    JACK_BASRA,
    SWEEP,
    NumeralGroups,
    whole_table_as_some_rank,
)
from .cards import JACK, SEVEN_OF_DIAMONDS, Card, card_name, rank
from .errors import IllegalMove
from .events import Dealt, Move, Played, TableTaken
from .scoring import GameScore, ScoringPreset, score_game

HAND_SIZE = 4
HANDS_PER_GAME = 6
PLAYS_PER_GAME = 48


def must_leave_table(card: Card) -> bool:
    """Rule 1: a Jack or the 7D may not start on the table."""
    return card == SEVEN_OF_DIAMONDS or card % 13 + 1 == JACK


def moves_for(table: list[Card] | tuple[Card, ...], cards: list[Card] | tuple[Card, ...], preset: ScoringPreset) -> list[Move]:
    """Every legal way to play each of these cards on this table, card by card, captures in order.

    What depends on the table alone (its sorted cards, a lone Jack or 7D,
    its numerals by value) is worked out once for all the cards.
    """
    if not table:
        return [Move(card, (), DROP) for card in cards]
    whole = tuple(sorted(table))
    n = len(table)
    if n == 1 and table[0] == SEVEN_OF_DIAMONDS:  # rule 7
        jack = JACK_BASRA if preset.jacks_make_basras else SWEEP
        return [Move(card, whole, jack if card % 13 + 1 == JACK else BASRA) for card in cards]
    lone_jack = n == 1 and rank(table[0]) == JACK
    jack = JACK_BASRA if lone_jack and preset.jacks_make_basras else SWEEP
    moves = []
    groups: NumeralGroups | None = None
    for card in cards:
        r = card % 13 + 1
        if r == JACK:  # rule 5
            moves.append(Move(card, whole, jack))
        elif card == SEVEN_OF_DIAMONDS:  # rule 6
            if preset.seven_of_diamonds_basra == "any_rank":
                kind = whole_table_as_some_rank(whole) or SWEEP
            else:
                numerals = all(c % 13 < 10 for c in table)
                kind = BASRA if numerals and sum(c % 13 + 1 for c in table) <= 10 else SWEEP
            moves.append(Move(card, whole, kind))
        else:
            if r > 10:  # rule 4: Queen or King
                captures = [tuple(c for c in whole if c % 13 + 1 == r)]
            else:
                if groups is None:
                    groups = NumeralGroups(whole)
                captures = groups.captures(r)
            for taken in captures:
                moves.append(Move(card, taken, DROP if not taken else BASRA if len(taken) == n else CAPTURE))
    return moves


class Game:
    """The state of one game, advanced one legal move at a time.

    Seats are 0 and 1; the non-dealer plays first.  Cards leave the deck in
    this order: deck[0:4] to the non-dealer, deck[4:8] to the dealer,
    deck[8:12] to the table, and the rest is the stock, top first.  Then each
    table position in turn, while it holds a Jack or the 7D, sends that card to
    the bottom of the stock and takes the top card of the stock.  Later hands
    deal 4 cards from the top of the stock to the non-dealer, then 4 to the
    dealer.
    """

    __slots__ = (
        "number",
        "preset",
        "deck",
        "dealer",
        "hands",
        "table",
        "stock",
        "piles",
        "basras",
        "jack_basras",
        "turn",
        "hand_no",
        "plays",
        "last_capturer",
        "moved_to_bottom",
        "history",
        "_legal",
    )

    def __init__(self, number: int, deck: tuple[Card, ...], dealer: int, preset: ScoringPreset) -> None:
        if sorted(deck) != list(range(52)):
            raise ValueError("a deck order must hold each of the 52 cards once")
        if dealer not in (0, 1):
            raise ValueError("dealer must be seat 0 or 1")
        self.number = number
        self.preset = preset
        self.deck = tuple(deck)
        self.dealer = dealer
        first = 1 - dealer
        hands: list[list[Card]] = [[], []]
        hands[first] = list(deck[0:4])
        hands[dealer] = list(deck[4:8])
        table = list(deck[8:12])
        stock = list(deck[12:])
        moved = []
        for i in range(len(table)):
            while must_leave_table(table[i]):
                moved.append(table[i])
                stock.append(table[i])
                table[i] = stock.pop(0)
        self.hands = hands
        self.table = table
        self.stock = stock
        self.piles: list[list[Card]] = [[], []]
        self.basras = [0, 0]
        self.jack_basras = [0, 0]
        self.turn = first
        self.hand_no = 1
        self.plays = 0
        self.last_capturer: int | None = None
        self.moved_to_bottom = tuple(moved)
        self.history: list[Move] = []
        self._legal: list[Move] | None = None

    # --- queries -----------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self.plays == PLAYS_PER_GAME

    @property
    def plays_left(self) -> int:
        """Plays until the game ends: 1 when the next ends it."""
        return PLAYS_PER_GAME - self.plays

    def first_deal(self) -> Dealt:
        return Dealt(
            game=self.number,
            hand_no=1,
            dealer=self.dealer,
            hands=(tuple(self.hands[0]), tuple(self.hands[1])),
            table=tuple(self.table),
            stock_left=len(self.stock),
            moved_to_bottom=self.moved_to_bottom,
        )

    def options(self, card: Card) -> list[Move]:
        """Every legal way to play this card on the current table."""
        return moves_for(self.table, (card,), self.preset)

    def legal_moves(self) -> list[Move]:
        """The moves open to the seat to act, hand order first, then capture order."""
        legal = self._legal
        if legal is None:
            legal = self._legal = [] if self.finished else moves_for(self.table, self.hands[self.turn], self.preset)
        return legal

    def scores(self) -> tuple[GameScore, GameScore]:
        return score_game(
            self.preset,
            (self.piles[0], self.piles[1]),
            (self.basras[0], self.basras[1]),
            (self.jack_basras[0], self.jack_basras[1]),
        )

    def swap_unseen(self, a: Card, b: Card) -> None:
        """Two cards still hidden (in a hand or the stock) trade places.

        The referee of a hidden deal plays the rules with a stand-in at each
        position no one has revealed; a revealed card trades places with the
        stand-in of its position.  Unseen cards are interchangeable, so this
        changes nothing anyone can know.
        """
        places = (self.hands[0], self.hands[1], self.stock)
        if not all(any(c in place for place in places) for c in (a, b)):
            raise ValueError("only cards in a hand or the stock can trade places")
        swap = {a: b, b: a}
        for place in places:
            place[:] = [swap.get(c, c) for c in place]
        self.deck = tuple(swap.get(c, c) for c in self.deck)
        self._legal = None

    # --- the one mutation --------------------------------------------------------

    def play(self, seat: int, move: Move) -> list[Dealt | Played | TableTaken]:
        """Apply a move; raise IllegalMove (state untouched) when the rules forbid it."""
        if self.finished:
            raise IllegalMove(IllegalMove.NO_GAME, "the game is over")
        if seat != self.turn:
            raise IllegalMove(IllegalMove.NOT_YOUR_TURN, f"it is seat {self.turn}'s turn, not seat {seat}'s")
        hand = self.hands[seat]
        if move.card not in hand:
            raise IllegalMove(IllegalMove.NOT_IN_HAND, f"{_name(move.card)} is not in your hand")
        card, wanted = move.card, tuple(sorted(move.captures))
        # The moves listed for this turn (legal_moves, once a turn): the one asked for, if the rules allow it.
        for chosen in self.legal_moves():
            if chosen.card == card and chosen.captures == wanted:
                break
        else:
            legal = [m for m in self.legal_moves() if m.card == card]
            allowed = " or ".join("[" + " ".join(_name(c) for c in m.captures) + "]" for m in legal)
            raise IllegalMove(
                IllegalMove.WRONG_CAPTURE,
                f"{_name(move.card)} must take {allowed}",
            )
        end = self.advance(chosen)
        # The table as the play left it: what the last play leaves is what the end of the game hands out.
        table = end.cards if isinstance(end, TableTaken) else tuple(self.table)
        events: list[Dealt | Played | TableTaken] = [Played(self.number, seat, chosen.card, chosen.captures, chosen.kind, table)]
        if end is not None:
            events.append(end)
        return events

    def advance(self, move: Move) -> Dealt | TableTaken | None:
        """Apply one of legal_moves() for the seat to act, unchecked: play's step, and the searching bot's.

        Returns the deal of the next hand or the end of the game when the move brings one.
        """
        seat = self.turn
        self.hands[seat].remove(move.card)
        taken = move.captures
        if taken:
            taken_set = set(taken)
            self.table = [c for c in self.table if c not in taken_set]
            pile = self.piles[seat]
            pile.extend(taken)
            pile.append(move.card)
            self.last_capturer = seat
            if move.kind == BASRA:
                self.basras[seat] += 1
            elif move.kind == JACK_BASRA:
                self.jack_basras[seat] += 1
        else:
            self.table.append(move.card)
        self.history.append(move)
        self.plays += 1
        self.turn = 1 - seat
        self._legal = None
        if self.hands[0] or self.hands[1]:
            return None
        return self._deal_next_hand() if self.stock else self._take_the_rest()

    def _deal_next_hand(self) -> Dealt:
        first = 1 - self.dealer
        self.hands[first] = self.stock[0:4]
        self.hands[self.dealer] = self.stock[4:8]
        del self.stock[0:8]
        self.hand_no += 1
        self.turn = first
        return Dealt(
            game=self.number,
            hand_no=self.hand_no,
            dealer=self.dealer,
            hands=(tuple(self.hands[0]), tuple(self.hands[1])),
            table=tuple(self.table),
            stock_left=len(self.stock),
        )

    def _take_the_rest(self) -> TableTaken:
        rest = tuple(self.table)
        if self.last_capturer is not None:
            self.piles[self.last_capturer].extend(rest)
            self.table = []
        return TableTaken(self.number, self.last_capturer, rest)

    # --- plain data --------------------------------------------------------------

    def to_dict(self) -> dict:
        return {
            "number": self.number,
            "deck": list(self.deck),
            "dealer": self.dealer,
            "hands": [list(h) for h in self.hands],
            "table": list(self.table),
            "stock": list(self.stock),
            "piles": [list(p) for p in self.piles],
            "basras": list(self.basras),
            "jack_basras": list(self.jack_basras),
            "turn": self.turn,
            "hand_no": self.hand_no,
            "plays": self.plays,
            "last_capturer": self.last_capturer,
            "moved_to_bottom": list(self.moved_to_bottom),
            "history": [[m.card, list(m.captures), m.kind] for m in self.history],
        }

    @classmethod
    def from_dict(cls, data: dict, preset: ScoringPreset) -> "Game":
        game = cls.__new__(cls)
        game.number = int(data["number"])
        game.preset = preset
        game.deck = tuple(data["deck"])
        game.dealer = data["dealer"]
        game.hands = [list(h) for h in data["hands"]]
        game.table = list(data["table"])
        game.stock = list(data["stock"])
        game.piles = [list(p) for p in data["piles"]]
        game.basras = list(data["basras"])
        game.jack_basras = list(data["jack_basras"])
        game.turn = data["turn"]
        game.hand_no = data["hand_no"]
        game.plays = data["plays"]
        game.last_capturer = data["last_capturer"]
        game.moved_to_bottom = tuple(data["moved_to_bottom"])
        game.history = [Move(c, tuple(t), k) for c, t, k in data["history"]]
        game._legal = None
        held = [*game.hands[0], *game.hands[1], *game.table, *game.stock, *game.piles[0], *game.piles[1]]
        if sorted(game.deck) != list(range(52)) or sorted(held) != list(range(52)):
            raise ValueError("game state does not account for the 52 cards exactly once")
        return game


def _name(card: Card) -> str:
    try:
        return card_name(card)
    except ValueError:
        return "that card"

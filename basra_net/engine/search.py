"""The searching bot: determinized playouts over what the seat has seen, and the last hand solved exactly.

While cards are hidden it samples worlds consistent with the seat's view
(the opponent's hand and the stock drawn from the unseen cards, with the
Jacks and 7D sent to the bottom at the deal kept there), and plays every
candidate move out in each world, both sides following a defensive
heuristic (``playout_choice``).  Every candidate meets the same worlds and
the same playout noise (common random numbers): the luck of the deal is
shared, so what differs between candidates' means is the moves.  Moves that
differ only in interchangeable cards (two fives that score alike) are one
candidate, and a candidate clearly behind the leader on the worlds both
have met gets no more playouts (``contenders``).  A world is weighed by how likely the opponent, holding the hand
the world gives it, was to make the plays it made this hand (a basra it
passed up makes a hand that had one unlikely: ``world_likelihood``).  Once
the stock is empty nothing is hidden and the last hand is solved exactly
(``endgame.py``).

The value of an ending is the seat's points minus the opponent's, and a
match won or lost besides when the game can end the match.  Randomness and
the time budget come from the caller, so a given random source and
playout count always give the same move.
"""

from __future__ import annotations

import math
import random
from typing import Callable

from .captures import BASRA, DROP, JACK_BASRA, SWEEP, whole_table_as_some_rank
from .cards import SEVEN_OF_DIAMONDS, Card
from .endgame import Utility, solve_last_hand
from .events import Move
from .game import Game, moves_for
from .match import match_winner
from .scoring import PRESETS
from .views import SeatView

# What a match won is worth against points, in a game that can end the match.
MATCH_WON = 200.0
# The opponent model that weighs sampled worlds: a play this much worse by move_worth than the best the
# sampled hand offered is e^-1 times as likely, and none less likely than UNLIKELY_PLAY (a player may see
# what the model does not).
PLAY_TEMPERATURE = 20.0
UNLIKELY_PLAY = 0.05
# How far behind the leader, in standard errors of the difference over shared worlds, a candidate is dropped.
PRUNE_SIGMAS = 3.0
# The playout policy's choices a search keeps at most (a few hundred bytes each), so that a long budget stays small.
MAX_CHOICES_KEPT = 200_000


def search_move(
    view: SeatView,
    rng: random.Random,
    *,
    max_playouts: int = 4000,
    should_stop: Callable[[], bool] = lambda: False,
) -> Move:
    """The move with the best mean outcome over sampled worlds, or the best move outright in the last hand.

    Playouts go world by world, every candidate played out in each, until
    ``max_playouts`` or until ``should_stop()`` says time is up (checked
    after every playout; a world not every candidate has met is left out).
    """
    moves = view.legal_moves
    if len(moves) == 1:
        return moves[0]
    utility = match_utility(view)
    if view.stock_left == 0:
        _, best = solve_last_hand(sample_world(view, rng), view.seat, utility)
        return _listed(moves, best)
    candidates = distinct_moves(moves, view.scoring)
    if len(candidates) == 1:
        return candidates[0]
    alive = list(range(len(candidates)))
    results: list[list[float]] = [[] for _ in candidates]  # each candidate's weighed outcome, world by world
    playouts = worlds = 0
    choices: dict = {}
    while playouts < max_playouts:
        world = sample_world(view, rng)
        weight = world_likelihood(view, world.hands[1 - view.seat])
        noise = [rng.random() for _ in range(48)]
        outcomes = []
        for index in alive:
            game = clone(world)
            game.advance(candidates[index])
            outcomes.append(weight * playout(game, view.seat, noise, utility, choices))
            playouts += 1
            if should_stop():
                break
        if len(outcomes) < len(alive):
            break
        worlds += 1
        for index, outcome in zip(alive, outcomes):
            results[index].append(outcome)
        if worlds >= 8 and worlds & (worlds - 1) == 0:  # at 8, 16, 32 ... worlds
            alive = contenders(alive, results)
            if len(alive) == 1:
                break
    if not worlds:  # stopped before one world was played out: the playout policy's own move
        return _listed(moves, playout_choice(sample_world(view, rng), 0.5))
    return candidates[max(alive, key=lambda i: sum(results[i]))]


def contenders(alive: list[int], results: list[list[float]]) -> list[int]:
    """The candidates not clearly worse than the leader, on the worlds they shared.

    Both met the same worlds, so the difference world by world is what the
    moves make of them; a candidate whose mean difference from the leader is
    more than PRUNE_SIGMAS standard errors gets no more playouts.
    """
    leader = max(alive, key=lambda i: sum(results[i]))
    kept = []
    for index in alive:
        differences = [a - b for a, b in zip(results[leader], results[index])]
        n = len(differences)
        mean = sum(differences) / n
        spread = math.sqrt(sum((d - mean) ** 2 for d in differences) / (n - 1))
        if index == leader or mean <= PRUNE_SIGMAS * spread / math.sqrt(n):
            kept.append(index)
    return kept


def world_likelihood(view: SeatView, opponent_hand: list[Card]) -> float:
    """How likely the opponent, holding this hand now, was to make the plays it made this hand.

    Its hand at each of those plays was this one and the cards it has played
    since; a play that hand's best looks much better than (a basra passed up,
    a capture not taken) makes the world less likely.
    """
    if not view.opponent_plays:
        return 1.0
    preset = PRESETS[view.scoring]
    hand = list(opponent_hand)
    likelihood = 1.0
    for table, card in reversed(view.opponent_plays):
        hand.append(card)
        worths = [(move.card, move_worth(move, table)) for move in moves_for(table, hand, preset)]
        best = max(worth for _, worth in worths)
        played = max(worth for held, worth in worths if held == card)
        likelihood *= max(UNLIKELY_PLAY, math.exp((played - best) / PLAY_TEMPERATURE))
    return likelihood


def match_utility(view: SeatView) -> Utility:
    """How the seat values a game's ending: points, and a match won or lost when this game can end it."""
    mine_before, theirs_before = view.totals[view.seat], view.totals[1 - view.seat]
    target = view.target

    def utility(mine: int, theirs: int) -> float:
        value = float(mine - theirs)
        winner = match_winner((mine_before + mine, theirs_before + theirs), target)
        if winner is not None:
            value += MATCH_WON if winner == 0 else -MATCH_WON
        return value

    return utility


def distinct_moves(moves: tuple[Move, ...] | list[Move], scoring: str) -> list[Move]:
    """The moves with one kept of each set that differ only in cards of the same rank and worth.

    Suits matter only for the 7D and for cards a preset scores, so two such
    moves lead to games that are the same for both players.
    """
    points = PRESETS[scoring].card_points

    def kind_of(card: Card) -> int:
        return card + 100 if card == SEVEN_OF_DIAMONDS or card in points else card % 13

    seen: set = set()
    distinct = []
    for move in moves:
        key = (kind_of(move.card), tuple(sorted(kind_of(c) for c in move.captures)))
        if key not in seen:
            seen.add(key)
            distinct.append(move)
    return distinct


def sample_world(view: SeatView, rng: random.Random) -> Game:
    """A full game state that agrees with everything this seat has seen."""
    seat, other = view.seat, 1 - view.seat
    seen = {*view.hand, *view.table, *view.piles[0], *view.piles[1]}
    # The Jacks and 7D moved at the deal are dealt with the last hand: until
    # then they lie at the bottom of the stock, afterwards any not yet seen
    # are in the opponent's hand.
    moved = [c for c in view.moved_to_bottom if c not in seen]
    unseen = [c for c in range(52) if c not in seen and c not in moved]
    rng.shuffle(unseen)
    if view.stock_left:
        opponent_hand = unseen[: view.opponent_hand_size]
        stock = unseen[view.opponent_hand_size :] + moved
    else:
        opponent_hand = moved + unseen[: view.opponent_hand_size - len(moved)]
        stock = []
    game = Game.__new__(Game)
    game.number = view.game
    game.preset = PRESETS[view.scoring]
    game.deck = ()
    game.dealer = view.dealer if view.dealer is not None else 0
    hands: list[list[int]] = [[], []]
    hands[seat], hands[other] = list(view.hand), opponent_hand
    game.hands = hands
    game.table = list(view.table)
    game.stock = stock
    game.piles = [list(view.piles[0]), list(view.piles[1])]
    game.basras = list(view.basras)
    game.jack_basras = list(view.jack_basras)
    game.turn = view.turn if view.turn is not None else seat
    game.hand_no = view.hand_no
    game.plays = 48 - len(hands[0]) - len(hands[1]) - len(stock)
    game.last_capturer = view.last_capturer
    game.moved_to_bottom = view.moved_to_bottom
    game.history = []
    game._legal = None
    return game


def clone(game: Game) -> Game:
    """A copy of a sampled world to play out, sharing nothing that play changes."""
    copy = Game.__new__(Game)
    copy.number = game.number
    copy.preset = game.preset
    copy.deck = game.deck
    copy.dealer = game.dealer
    copy.hands = [list(game.hands[0]), list(game.hands[1])]
    copy.table = list(game.table)
    copy.stock = list(game.stock)
    copy.piles = [list(game.piles[0]), list(game.piles[1])]
    copy.basras = list(game.basras)
    copy.jack_basras = list(game.jack_basras)
    copy.turn = game.turn
    copy.hand_no = game.hand_no
    copy.plays = game.plays
    copy.last_capturer = game.last_capturer
    copy.moved_to_bottom = game.moved_to_bottom
    copy.history = []
    copy._legal = None
    return copy


def playout(game: Game, seat: int, noise: list[float], utility: Utility, choices: dict) -> float:
    """Play the world to its end with the playout policy for both sides; the ending's value for ``seat``.

    ``choices`` keeps the policy's best moves for each (table, hand) met, for
    the rest of the search: about half the positions a search's playouts meet
    have been met before, the first plays of every world above all.
    """
    hands, preset = game.hands, game.preset
    while game.plays < 48:
        table = game.table
        hand = hands[game.turn]
        key = (tuple(table), tuple(hand))
        best = choices.get(key)
        if best is None:
            if len(choices) >= MAX_CHOICES_KEPT:
                choices.clear()
            best = choices[key] = best_by_worth(moves_for(table, hand, preset), table)
        game.advance(best[0][0] if len(best) == 1 else tie_broken(best, noise[game.plays]))
    scores = game.scores()
    return utility(scores[seat].total, scores[1 - seat].total)


def playout_choice(game: Game, noise: float) -> Move:
    """A cheap stand-in for a careful player: the move ``move_worth`` likes best, ``noise`` (0 to 1) breaking ties."""
    return tie_broken(best_by_worth(game.legal_moves(), game.table), noise)


def best_by_worth(moves: list[Move], table: list[Card]) -> tuple[tuple[Move, int], ...]:
    """The moves ``move_worth`` rates highest, each with its place in ``moves``.

    Worths are whole numbers and the tie-breaking noise less than 1, so the
    policy's choice is always one of these.
    """
    if len(moves) == 1:
        return ((moves[0], 0),)
    worths = [move_worth(move, table) for move in moves]
    top = max(worths)
    return tuple((move, index) for index, (move, worth) in enumerate(zip(moves, worths)) if worth == top)


def tie_broken(best: tuple[tuple[Move, int], ...], noise: float) -> Move:
    """One of moves worth the same: ``noise``, moved along the list by each move's place, decides."""
    return max(best, key=lambda entry: (noise + entry[1] * 0.618) % 1.0)[0]


def move_worth(move: Move, table: list[Card] | tuple[Card, ...]) -> float:
    """What a careful player sees in a move at a glance: basras first, then big captures that leave no
    basra behind, and drops that leave no basra and keep the Jacks and the 7D."""
    kind = move.kind
    if kind == JACK_BASRA:
        return 2000.0
    if kind == BASRA:
        return 1000.0
    if kind == DROP:
        worth = -5.0
        if move.card == SEVEN_OF_DIAMONDS or move.card % 13 == 10:
            worth -= 40.0  # a Jack or the 7D kept takes a table later
        if offers_basra((*table, move.card)):
            worth -= 30.0  # a table one card takes whole: a basra offered
        return worth
    taken = move.captures
    worth = 10.0 * (len(taken) + 1)
    if kind == SWEEP:
        worth -= 15.0 * max(0, 4 - len(taken))  # a Jack or the 7D spent on a small table
    elif len(taken) < len(table):
        taken_set = set(taken)
        if offers_basra(tuple(c for c in table if c not in taken_set)):
            worth -= 30.0
    return worth


_OFFERS_BASRA: dict[tuple[int, ...], bool] = {}


def offers_basra(table: tuple[Card, ...]) -> bool:
    """Whether some single card would take this whole table as a basra (a lone 7D or Jack included).

    Only the ranks matter (on a table of two cards or more the 7D is a 7),
    so the answer is kept by sorted ranks: playouts ask it at every drop.
    """
    key = tuple(sorted(c % 13 for c in table))
    known = _OFFERS_BASRA.get(key)
    if known is None:
        known = _OFFERS_BASRA[key] = whole_table_as_some_rank(table) is not None
    return known


def _listed(moves: tuple[Move, ...], chosen: Move | None) -> Move:
    """The entry of ``moves`` that is the chosen move (the same card and captures)."""
    for move in moves:
        if chosen is not None and move.card == chosen.card and move.captures == chosen.captures:
            return move
    return moves[0]

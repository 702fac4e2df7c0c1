"""What happened, in words: one log line per event, worded for the seat that reads it.

A sum capture is written as the groups the rules made of it (9♥+A♠ 7♥+3♦,
not A♠ 3♦ 7♥ 9♥), so a reader can check it at a glance, and a basra is
called out.
"""

from __future__ import annotations

from ..engine.cards import Card, is_numeral, rank, value
from ..protocol.messages import Chat, Deal, GameEnd, MatchEnd, MatchStart, Message, Played, Reveal, Welcome
from ..protocol.text import displayable
from .screen import ANNOUNCEMENT, CardStyle, how_it_ended
from .state import ClientState


def capture_groups(card: Card, captures: tuple[Card, ...]) -> list[tuple[Card, ...]]:
    """The captured cards split into the groups that each make the played numeral's value.

    A face card, or cards that do not split (a 7♦'s sweep), make one group.
    """
    if not is_numeral(card) or not all(is_numeral(c) for c in captures):
        return [captures]
    target = value(card)
    cards = sorted(captures, key=value, reverse=True)

    def split(left: list[Card]) -> list[tuple[Card, ...]] | None:
        if not left:
            return []
        first, rest = left[0], left[1:]
        for group in _groups_with(first, rest, target - value(first)):
            remaining = list(rest)
            for c in group[1:]:
                remaining.remove(c)
            tail = split(remaining)
            if tail is not None:
                return [group, *tail]
        return None

    return split(cards) or [captures]


def _groups_with(first: Card, rest: list[Card], needed: int):
    """Every group that starts with ``first`` and adds up to its target, fewest cards first."""
    if needed == 0:
        yield (first,)
        return
    if needed < 0:
        return
    for index, card in enumerate(rest):
        if value(card) <= needed:
            for group in _groups_with(card, rest[index + 1 :], needed - value(card)):
                yield (first, *group)


# The quick reactions (PROTOCOL.md 6.23) as a screen shows them, in the order of their keys.
REACTION_WORDS = {
    "good_game": "good game!",
    "nice": "nice one!",
    "oops": "oops!",
    "wow": "wow!",
    "thanks": "thanks!",
    "your_move": "your move...",
}


def chat_line(state: ClientState, seat: int, chat: Chat) -> str:
    """One chat line as shown: who said it, then the words, with nothing a terminal would act on."""
    if chat.reaction is not None:
        words = f"({REACTION_WORDS.get(chat.reaction, chat.reaction)})"
    else:
        words = displayable(chat.text or "")
    return f"{_player(state, seat)}: {words}"


def _player(state: ClientState, seat: int) -> str:
    return "You" if seat == state.seat else state.names[seat] or "Your opponent"


def describe(state: ClientState, message: Message, style: CardStyle) -> list[str]:
    """Log lines for one message, worded for this seat; the state has already taken the message."""
    you = state.seat or 0
    them = 1 - you
    if isinstance(message, Welcome):
        return [f"Seated at the table: {message.scoring} scoring, first to {message.target} points"]
    if isinstance(message, MatchStart):
        return [f"Match start: you against {state.opponent_name}"]
    if isinstance(message, Deal):
        if message.hand_no == 1:
            dealer = "you deal" if message.dealer == you else f"{_player(state, message.dealer)} deals"
            lines = [f"Game {message.game}: new deal, {dealer}"]
            if message.moved:
                lines.append(f"{style.names(message.moved)} from the first table went to the bottom of the stock")
            return lines
        stock = f"{message.stock_left} cards left in the stock" if message.stock_left else "the last hand of the game"
        return [f"Hand {message.hand_no} dealt; {stock}"]
    if isinstance(message, Played):
        return [_describe_play(state, message, style)]
    if isinstance(message, GameEnd):
        lines = []
        if message.last_taker is not None and message.rest:
            taken = f"{len(message.rest)} cards" if len(message.rest) > 1 else "card"
            lines.append(f"{_player(state, message.last_taker)} took the last {taken} from the table")
        mine, theirs = message.scores[you].total, message.scores[them].total
        lines.append(
            f"Game {message.game} over: you scored {mine}, {state.opponent_name} {theirs};"
            f" match: you {message.totals[you]}, {state.opponent_name} {message.totals[them]}"
        )
        return lines
    if isinstance(message, Reveal):
        summary = next((r for r in state.results if r.game == message.game), None)
        if summary is None or summary.verified is None:
            return []
        return [f"Game {message.game}: deal verified" if summary.verified else f"Game {message.game}: DEAL CHECK FAILED"]
    if isinstance(message, Chat):
        said = [seat for seat, line in reversed(state.chat) if line is message]
        return [chat_line(state, said[0] if said else them, message)]
    if isinstance(message, MatchEnd):
        score = f"{message.totals[you]} to {message.totals[them]}"
        if message.termination.abandoned:
            return [f"Match abandoned at {score}: {how_it_ended(state)}"]
        if message.winner is None:
            return [f"Match over: no winner, {score}"]
        if message.winner == you:
            return [f"Match over: you win, {score}"]
        return [f"Match over: {_player(state, message.winner)} wins, {score}"]
    return []


def _describe_play(state: ClientState, played: Played, style: CardStyle) -> str:
    who = _player(state, played.seat)
    card = style.name(played.card)
    if played.kind == "drop":
        return f"{who} played {card} onto the table"
    took = "swept the table:" if played.kind == "sweep" else "took"
    if played.kind == "sweep":
        taken = style.names(sorted(played.captures, key=rank))
    else:
        taken = "  ".join("+".join(style.name(c) for c in group) for group in capture_groups(played.card, played.captures))
    text = f"{who} played {card} and {took} {taken}"
    if played.kind == "basra":
        return f"{ANNOUNCEMENT} BASRA! {ANNOUNCEMENT} {text}"
    if played.kind == "jack_basra":
        return f"{ANNOUNCEMENT} JACK BASRA! {ANNOUNCEMENT} {text}"
    return text

"""The terminal screen: one seat's view of the match as text that fits 80x24.

Pure rendering: it reads a ClientState and the log of what happened and
returns a string.  No input and no terminal control, so every screen can be
tested without a terminal.  rich does the colouring (and the cropping to 80
cells); the layout is plain string work.
"""

from __future__ import annotations

import io
import os
import textwrap
from dataclasses import dataclass
from typing import TextIO

from rich.cells import cell_len, set_cell_size
from rich.console import Console
from rich.text import Text

from ..engine.cards import Card, card_name, suit
from ..protocol.fingerprint import key_fingerprint
from ..protocol.termination import Termination
from .state import ClientState, GameSummary

WIDTH = 80
ROWS = 23  # a 24-row terminal keeps its last row for the input prompt
HANDS_PER_GAME = 6  # the 48 cards left after the first table, 8 to a hand
SUIT_SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
RED_SUITS = ("H", "D")
NAME_CELLS = 32  # the protocol's longest name
CARD_CELLS = 3  # "10♦"
TABLE_INDENT = "   "
CARDS_PER_ROW = (WIDTH - 2 - len(TABLE_INDENT)) // (CARD_CELLS + 2)
MAX_HINT_ROWS = 3
MAX_VERIFICATION_ROWS = 3
ANNOUNCEMENT = "***"  # log entries that start with this are shouted (basras)


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed or detached stream
        return False


def can_encode(text: str, encoding: str | None) -> bool:
    if not encoding:
        return False
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


@dataclass(frozen=True)
class CardStyle:
    """How cards look: colour (red hearts and diamonds) and suit symbols or letters."""

    colour: bool = False
    symbols: bool = False

    @classmethod
    def detect(cls, stream: TextIO) -> CardStyle:
        """Colour only on a terminal without NO_COLOR; symbols only where the encoding has them."""
        colour = is_terminal(stream) and not os.environ.get("NO_COLOR")
        symbols = can_encode("".join(SUIT_SYMBOLS.values()), getattr(stream, "encoding", None))
        return cls(colour=colour, symbols=symbols)

    def name(self, card: Card) -> str:
        """'7♦' or '7D'; no colour, for log lines."""
        text = card_name(card)
        return text[:-1] + SUIT_SYMBOLS[text[-1]] if self.symbols else text

    def names(self, cards) -> str:
        return " ".join(self.name(c) for c in cards)

    def text(self, card: Card) -> Text:
        # The style is always attached; a plain console simply does not print it.
        return Text(self.name(card), style="red" if suit(card) in RED_SUITS else "")


PLAIN = CardStyle()


def render(
    state: ClientState,
    log: list[str],
    prompt_hint: str | None = None,
    style: CardStyle = PLAIN,
    game_over: GameSummary | None = None,
    fingerprint: bool = True,
) -> str:
    """The whole screen for this state: at most ROWS lines of at most WIDTH cells.

    ``log`` is what happened, oldest first; as many of its last entries as
    fit are shown.  ``prompt_hint`` is shown under the status line (help, a
    complaint about the last input, or capture choices).  ``game_over`` shows
    that game's breakdown whatever the state has moved on to.  ``fingerprint``
    shows the host key's fingerprint, for two people to compare over TLS.
    """
    top = [_title(state, fingerprint), _rule()]
    if game_over is not None:
        body = _game_over(state, game_over)
    elif state.termination is not None:
        body = _match_over(state)
    elif state.game == 0:
        body = _waiting(state)
    elif _game_just_ended(state):
        body = _game_over(state, state.results[-1])
    else:
        body = _in_game(state, style)
    footer = [_rule(), _status(state), *_hint(prompt_hint)]
    news = _log(log, ROWS - len(top) - len(body) - len(footer) - 1)
    lines = top + body + ([_rule(), *news] if news else []) + footer
    return _export(lines, style)


def _game_just_ended(state: ClientState) -> bool:
    return state.turn is None and bool(state.results) and state.results[-1].game == state.game


def _export(lines: list[Text], style: CardStyle) -> str:
    console = Console(
        file=io.StringIO(),
        width=WIDTH,
        color_system="standard" if style.colour else None,
        force_terminal=style.colour,
        no_color=not style.colour,
        highlight=False,
        markup=False,
        emoji=False,
        legacy_windows=False,
    )
    for line in lines:
        line.rstrip()
    console.print(Text("\n").join(lines), no_wrap=True, overflow="crop", end="")
    return console.file.getvalue()


# --- pieces ------------------------------------------------------------------------------


def _fit(text: str, cells: int) -> str:
    """Cut to a width in terminal cells (names may hold wide characters)."""
    if cell_len(text) <= cells:
        return text
    return set_cell_size(text, cells - 3) + "..."


def _right(text: str, cells: int) -> str:
    return " " * (cells - cell_len(text)) + text


def _spread(left: str, right: str) -> Text:
    gap = max(2, WIDTH - 1 - cell_len(left) - cell_len(right))
    return Text(left + " " * gap + right)


def _rule() -> Text:
    return Text("-" * (WIDTH - 1), style="dim")  # a full 80th column makes some terminals wrap


def _wrapped(text: str, indent: str = " ") -> list[str]:
    return textwrap.wrap(text, WIDTH - 1, initial_indent=indent, subsequent_indent=indent + "  ") or [indent]


def _you_and_them(state: ClientState) -> tuple[int, int]:
    seat = state.seat or 0
    return seat, 1 - seat


def title_right(state: ClientState, fingerprint: bool, room: int) -> str:
    """The title line's right side: the target, the scoring, the match's deal mode, the host key's fingerprint.

    The scoring's name, then the target, are left out when it all does not fit in ``room`` cells: the mode
    and the fingerprint are what a player checks there.
    """
    # The same on both players' screens when nobody is between them (PROTOCOL.md 5.5).
    key = f"  key {key_fingerprint(state.host_key)}" if state.host_key and fingerprint else ""
    mode = ("hidden hands" if state.hidden_hands else "commit-reveal") if any(state.names) else ""  # once match_start is in
    target = f"first to {state.target}" if state.target else ""
    right = ""
    for parts in ((target, state.scoring if target else "", mode), (target, mode), (mode,)):
        right = ", ".join(part for part in parts if part) + key
        if cell_len(right) <= room:
            break
    return right


def _title(state: ClientState, fingerprint: bool) -> Text:
    left = "BASRA"
    if state.game:
        left += f"   Game {state.game}, hand {state.hand_no}/{HANDS_PER_GAME}"
    right = title_right(state, fingerprint, WIDTH - 3 - cell_len(left))
    title = _spread(left, right)
    title.stylize("bold", 0, len("BASRA"))
    return title


def _waiting(state: ClientState) -> list[Text]:
    if state.seat is None:
        return [Text(" Connecting to the table...")]
    if not all(state.names):
        return [Text(" Waiting for the other player to join...")]
    return [Text(f" Match starting: you against {_fit(state.opponent_name, NAME_CELLS)}")]


def _in_game(state: ClientState, style: CardStyle) -> list[Text]:
    you, them = _you_and_them(state)
    header = f"  {'':<{NAME_CELLS}}  {'Hand':>4}  {'Captured':>8}  {'Basras':>6}  {'Jack basras':>11}  {'Match':>5}"

    def row(seat: int, name: str, in_hand: int) -> Text:
        marker = ">" if state.turn == seat else " "
        cells = (
            f"{marker} {set_cell_size(_fit(name, NAME_CELLS), NAME_CELLS)}  {in_hand:>4}  {state.captured[seat]:>8}"
            f"  {state.basras[seat]:>6}  {state.jack_basras[seat]:>11}  {state.totals[seat]:>5}"
        )
        return Text(cells, style="bold" if state.turn == seat else "")

    lines = [
        Text(header, style="dim"),
        row(them, state.opponent_name, state.opponent_hand_size),
        row(you, "You", len(state.hand)),
        _rule(),
        _spread(f" Table ({_count(len(state.table), 'card')})", f"Stock: {_count(state.stock_left, 'card')} left"),
    ]
    if not state.table:
        lines.append(Text(TABLE_INDENT + "(empty)"))
    for start in range(0, len(state.table), CARDS_PER_ROW):
        lines.append(_card_row(state.table[start : start + CARDS_PER_ROW], style))
    lines.append(Text())
    hand = Text()
    hand.append(" Your hand: ", style="bold")
    for number, card in enumerate(state.hand, 1):
        hand.append(f"  {number}) ")
        hand.append_text(style.text(card))
        hand.append(" " * (CARD_CELLS - cell_len(style.name(card)) + 2))
    if not state.hand:
        hand.append("(empty)")
    lines.append(hand)
    return lines


def _card_row(cards, style: CardStyle) -> Text:
    row = Text(TABLE_INDENT)
    for card in cards:
        row.append_text(style.text(card))
        row.append(" " * (CARD_CELLS - cell_len(style.name(card)) + 2))
    return row


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _game_over(state: ClientState, summary: GameSummary) -> list[Text]:
    you, them = _you_and_them(state)
    column = 22
    mine, theirs = summary.scores[you], summary.scores[them]

    def row(label: str, pick, bold: bool = False) -> Text:
        return Text(f" {label:<{column}}{pick(mine, you):>{column}}{pick(theirs, them):>{column}}", style="bold" if bold else "")

    opponent = _fit(state.opponent_name, column - 2)
    lines = [
        Text(f" {'Game ' + str(summary.game) + ' result':<{column}}{'You':>{column}}{_right(opponent, column)}", style="bold"),
        row("Cards taken", lambda s, _: s.cards),
        row("Most cards", lambda s, _: s.most_cards),
        row("Basras", lambda s, _: s.basras),
        row("Jack basras", lambda s, _: s.jack_basras),
        row("Basra points", lambda s, _: s.basra_points),
        row("Card bonus", lambda s, _: s.card_bonus),
        row("Game total", lambda s, _: s.total, bold=True),
        row(f"Match (to {state.target})", lambda _, seat: summary.totals[seat], bold=True),
    ]
    return lines + _verification(summary)


def _verification(summary: GameSummary) -> list[Text]:
    """Seat 1 checks each deal after the reveal; seat 0 has nothing to say here."""
    if summary.verified is None:
        return []
    text = summary.verification or ("deal verified" if summary.verified else "DEAL CHECK FAILED")
    text = text[:1].upper() + text[1:]
    rows = _wrapped(text)
    if len(rows) > MAX_VERIFICATION_ROWS:
        rows = rows[: MAX_VERIFICATION_ROWS - 1] + [_fit(rows[MAX_VERIFICATION_ROWS - 1] + " ...", WIDTH - 1)]
    colour = "bold green" if summary.verified else "bold red"
    return [Text(r, style=colour) for r in rows]


def _match_over(state: ClientState) -> list[Text]:
    you, them = _you_and_them(state)
    opponent = _fit(state.opponent_name, NAME_CELLS)
    if state.winner is None:
        outcome = "no winner"
    else:
        outcome = "YOU WIN!" if state.winner == you else f"{opponent} wins"
    why = how_it_ended(state)
    lines = [
        Text(f" {match_headline(state)}: {outcome}", style="bold"),
        *([Text(f" {why}.")] if why else []),
        Text(f" Final totals: you {state.totals[you]}, {opponent} {state.totals[them]} (first to {state.target})"),
    ]
    if state.results:
        lines += [Text(), *_game_over(state, state.results[-1])]
    return lines


# How a match ended, in the screens' words (PROTOCOL.md 6.14, 14.6); {who} is the seat the end goes against.
# A match played to its target needs no word of why.
ENDINGS = {
    Termination.TARGET: "",
    Termination.ABANDONED: "{who} dropped out of the match",
    Termination.LEFT: "{who} left the match",
    Termination.GRACE_OVER: "{who} lost the connection and did not come back in time",
    Termination.UNSIGNED: "{who} did not countersign the record in time",
    Termination.WITHHELD: "{who} held back a step of the hidden deal",
    Termination.BAD_DEAL: "a step of the hidden deal from {who} failed its check",
}


def match_headline(state: ClientState) -> str:
    """The result screen's first words: whether the match was played out or abandoned."""
    return "MATCH ABANDONED" if state.termination is not None and state.termination.abandoned else "MATCH OVER"


def how_it_ended(state: ClientState) -> str:
    """Why the match ended, in a sentence: who dropped out and how, as far as the host's account says; empty for
    a match played to its target, or one still on."""
    out = None if state.winner is None else 1 - state.winner
    who = "a player" if out is None else "you" if out == state.seat else state.names[out] or "your opponent"
    words = ENDINGS[state.termination].format(who=who) if state.termination is not None else ""
    return words[:1].upper() + words[1:]


def match_summary(state: ClientState) -> str | None:
    """The match's result in one line, for the terminal to keep once the screen is gone; None before its end."""
    if state.termination is None or state.seat is None:
        return None
    you, them = _you_and_them(state)
    score, opponent = f"{state.totals[you]} to {state.totals[them]}", state.opponent_name
    if state.winner is None:
        outcome = f"no winner against {opponent}, {score}"
    elif state.winner == you:
        outcome = f"you won {score} against {opponent}"
    else:
        outcome = f"{opponent} won, {state.totals[them]} to {state.totals[you]}"
    games = len(state.results)
    text = f"{outcome} (first to {state.target}, {_count(games, 'game')})"
    why = how_it_ended(state)
    if why:
        return f"{match_headline(state).lower()}: {text}; {why[:1].lower()}{why[1:]}"
    return f"match over: {text}"


def _status(state: ClientState) -> Text:
    you, them = _you_and_them(state)
    if state.termination is not None:
        return Text(" Match over.", style="bold")
    if _game_just_ended(state):
        return Text(f" Game {state.game} over.", style="bold")
    if state.turn == you and state.game:
        return Text(" Your turn", style="bold green")
    if state.turn == them and state.game:
        return Text(f" {_fit(state.opponent_name, NAME_CELLS)} is thinking...")
    # Between plays no one acts: the seat is being seated or dealt to.  Worded for either seat, the host's own too.
    if state.seat is None:
        return Text(" Connecting to the table...")
    if not all(state.names):
        return Text(" Waiting for the other player to join...")
    return Text(" Dealing the first game..." if not state.game else " Dealing...")


def _hint(prompt_hint: str | None) -> list[Text]:
    if not prompt_hint:
        return []
    rows = [row for line in prompt_hint.splitlines() for row in _wrapped(line)]
    return [Text(row) for row in rows[:MAX_HINT_ROWS]]


def _log(log: list[str], room: int) -> list[Text]:
    """The newest log entries that fit in ``room`` rows, wrapped, oldest first."""
    rows: list[Text] = []
    for entry in reversed(log):
        if len(rows) >= room:
            break
        style = "bold yellow" if entry.startswith(ANNOUNCEMENT) else ""
        rows[:0] = [Text(row, style=style) for row in _wrapped(entry)]
    return rows[-room:] if room > 0 else []

"""The full-screen interface: Textual draws and reads the keyboard and mouse, trio plays the match.

Textual owns the asyncio event loop; the match (the session, its connection,
the host's table) runs on trio in guest mode (`trio.lowlevel.start_guest_run`),
its ticks scheduled as callbacks on that loop.  So both run on one thread:
the session hands the screen what happened through `App.call_later` (in
the app's own message order), and the screen hands the session the player's
actions through the trio token, never touching trio's state itself.

A key counts only on the player's own turn and only if it was pressed after
the turn was drawn: nothing typed while the opponent thinks is ever played.
Chat has a line of its own, opened with `/`: what is typed there is words,
never a card.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable, Generic, TypeVar

import trio
from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, RichLog, Static

from ..engine import Move
from ..engine.cards import SEVEN_OF_DIAMONDS, Card, card_name, parse_card, suit
from ..engine.scoring import PRESETS
from ..protocol.messages import MAX_CHAT, REACTIONS, Chat, Commit, GameEnd, MatchEnd, Message, YourTurn
from .narration import REACTION_WORDS, describe
from .players import Controls, PlayerLeft
from .screen import ANNOUNCEMENT, SUIT_SYMBOLS, CardStyle, can_encode, how_it_ended, match_headline, title_right
from .state import ClientState, GameSummary

if TYPE_CHECKING:
    from .replay import Replay

T = TypeVar("T")
CARDS_TO_WIN_MOST = 27  # of the 52, more than the other player can have
TILE_CELLS = 8  # a card tile's width with its margin
NAME_CELLS = 14
KEEP_LOG = 500
REACTION_KEYS = dict(zip("!@#$%^", REACTIONS))  # shift and 1 to 6 on most keyboards: no card name uses them

HELP = """\
[b]Basra in short[/b]
Play one card a turn. A numeral (A=1 to 10) takes every card of its own rank, and as many other numerals as split into groups that each add up to it. A Queen takes Queens, a King takes Kings. A card that takes nothing stays on the table. One card taking the whole table is a [b]basra[/b]: 10 points.

[b]The Jack[/b] takes the whole table. That is a plain sweep, except a Jack on a lone Jack: a [b]jack basra[/b], 30 points.
[b]The 7{d}[/b] (marked *) takes the whole table too: a basra when some rank could have taken it all, else a plain sweep. A lone 7{d} on the table is a basra for whatever card takes it.

After a game's 48 plays the last player to capture takes what is left. Taking 27 or more of the 52 cards scores 30 ("most cards"). The first to the target wins the match.

[b]Keys[/b] left/right, a digit or a card's name (7d, 10h, qs) picks a card, and the table shows what it would take; Enter plays it. A click picks a card, a second click plays it. With several equal captures the table shows one: left/right or its letter picks another, Enter takes it, Esc goes back. ? this help, q leave (asks first; q then a suit letter is a Queen).
[b]Chat[/b] / opens a line to the other player: Enter sends it, Esc drops it. Reactions: {reactions}.

Up/down scroll this help; Esc, Enter or ? closes it."""


# --- the player ----------------------------------------------------------------------------


class ScreenPlayer:
    """The Player behind the screen, on trio's side: it forwards what happens and carries the actions back."""

    def __init__(self, app: BasraApp) -> None:
        self.app = app

    async def act(self, state: ClientState, controls: Controls) -> None:
        token = trio.lowlevel.current_trio_token()
        self.app.call_later(self.app.seat_taken, state, controls, token)
        async for request in controls.requests:
            self.app.call_later(self.app.turn_opened, request)

    def show(self, state: ClientState, message: Message) -> None:
        lines = describe(state, message, self.app.style)
        self.app.call_later(self.app.match_changed, state, message, lines)

    def notice(self, state: ClientState, text: str) -> None:
        self.app.call_later(self.app.match_changed, state, None, [text])

    def say(self, line: str) -> None:
        """A line the person at the host must see before the match (addresses, the join command, the code)."""
        self.app.call_later(self.app.lobby_line, line)

    async def _answer(self, question: Dialog[T]) -> T | None:
        """The person's answer to a question on the screen, handed back to the match's trio run."""
        answered = trio.Event()
        answer: list[T | None] = [None]
        token = trio.lowlevel.current_trio_token()

        def given(value: T | None) -> None:
            answer[0] = value
            token.run_sync_soon(answered.set)

        self.app.call_later(self.app.push_screen, question, given)
        await answered.wait()
        return answer[0]

    async def ask_code(self, reason: str) -> str | None:
        """The join code typed; None when the person left instead (Esc, Ctrl-C)."""
        return await self._answer(CodeScreen(reason))

    async def accept_commit_reveal(self) -> bool:
        """Whether the person says yes to the commit-reveal deal of a table that will not deal hidden hands."""
        return bool(await self._answer(DealScreen()))

    async def confirm_fingerprint(self, fingerprint: str) -> bool:
        """Whether the person says the host's screen shows this fingerprint (a new key no join code vouched for).

        PlayerLeft when the person leaves instead (Esc, Ctrl-C): the question holds the session up, so a leave
        cannot wait in the session's queue of actions behind it.
        """
        same = await self._answer(FingerprintScreen(fingerprint))
        if same is None:
            raise PlayerLeft("you left the match")
        return same


# --- widgets -------------------------------------------------------------------------------


class Tile(Static):
    """One card, as a small bordered tile; clicking it acts on it."""

    def __init__(self, card: Card, label: str, style: CardStyle, **kwargs) -> None:
        name = style.name(card) + ("*" if card == SEVEN_OF_DIAMONDS else "")
        super().__init__(name, **kwargs)
        self.card = card
        self.label = label
        self.add_class("red" if suit(card) in ("H", "D") else "black")
        if card == SEVEN_OF_DIAMONDS:
            self.add_class("komi")

    def on_mount(self) -> None:
        self.border_title = self.label

    def on_click(self, event: events.Click) -> None:
        self.app.tile_clicked(self)  # type: ignore[attr-defined]


class Dialog(ModalScreen[T]):
    """A question or a panel over the match: drawn with ASCII borders where the terminal's encoding lacks box drawing."""

    def on_mount(self) -> None:
        self.set_class(not self.app.style.symbols, "ascii")  # type: ignore[attr-defined]


class ResultScreen(Dialog[None]):
    """A game's score, line by line with what each line means; Enter goes on, and q asks to leave (``leave``)."""

    def __init__(self, body: Text, leave: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.body = body
        self.leave = leave

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="result"):  # a short terminal scrolls it with the arrows
            yield Static(self.body)

    def on_mount(self) -> None:
        panel = self.query_one("#result")
        panel.styles.width = max(map(cell_len, self.body.plain.splitlines() or [""])) + 4  # its border and padding
        panel.focus()

    def on_key(self, event: events.Key) -> None:
        event.stop()  # the key that closes it is not also a move
        if self.is_current and event.key in ("enter", "space", "escape"):
            self.dismiss()
        elif self.is_current and event.key == "q" and self.leave is not None:
            self.leave()  # asked over the score: staying comes back to it


class HelpScreen(Dialog[None]):
    """The rules and keys, scrolled with the arrows where the terminal is too short for them; only a closing key closes it."""

    CLOSING_KEYS = ("escape", "enter", "question_mark", "q")

    def compose(self) -> ComposeResult:
        reactions = ",  ".join(f"{key} {REACTION_WORDS[name]}" for key, name in REACTION_KEYS.items())
        with VerticalScroll(id="help") as scroll:
            scroll.border_subtitle = "up/down scroll, Esc closes"
            yield Static(HELP.format(d="♦" if self.app.style.symbols else "D", reactions=reactions))  # type: ignore[attr-defined]

    def on_mount(self) -> None:
        self.query_one("#help").focus()  # the arrows and page keys scroll it

    def on_key(self, event: events.Key) -> None:
        if event.key in ("up", "down", "pageup", "pagedown", "home", "end"):
            return  # the scroll's own keys
        event.stop()
        if self.is_current and event.key in self.CLOSING_KEYS:  # not a key already on its way after the closing one
            self.dismiss()


class LeaveScreen(Dialog[str]):
    """Asks before leaving; answers with the key pressed (a suit letter after q names a Queen)."""

    def compose(self) -> ComposeResult:
        yield Static("Leave the match?  The other player is told and the match ends.\n\n[b]y[/b] leave    [b]n[/b] stay", id="leave")

    def on_key(self, event: events.Key) -> None:
        event.stop()
        if self.is_current:
            self.dismiss((event.character or "").lower())


class CodeScreen(Dialog[str | None]):
    """The join code asked for; None when the person leaves instead (Esc, Ctrl-C)."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason

    def compose(self) -> ComposeResult:
        with Vertical(id="code"):
            yield Static(f"{self.reason}\nType the join code shown on the host's screen (Esc leaves):")
            yield Input(id="code-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():  # Enter on an empty line is no answer: only Esc or Ctrl-C leaves
            self.dismiss(event.value.strip())

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            self.dismiss(None)


class FingerprintScreen(Dialog[bool | None]):
    """A host key met for the first time without a join code: the person compares fingerprints before it is pinned.

    Answers True (y) or False (n), or None when the person leaves (Esc, Ctrl-C).
    """

    def __init__(self, fingerprint: str) -> None:
        super().__init__()
        self.fingerprint = fingerprint

    def compose(self) -> ComposeResult:
        with Vertical(id="code"):
            yield Static(
                "This host is new to you and no join code vouched for its key. Its fingerprint is\n\n"
                f"    {self.fingerprint}\n\n"
                "The host's screen shows its own fingerprint: if the two differ, someone is between you.\n"
                "Does the host's screen show the same fingerprint? (y / n)"
            )

    def on_key(self, event: events.Key) -> None:
        if event.key in ("y", "n"):
            event.stop()  # the answer is no key of the match's
            self.dismiss(event.key == "y")
        elif event.key == "escape":
            self.dismiss(None)


class DealScreen(Dialog[bool | None]):
    """A table that will not deal hidden hands: the person says yes to its commit-reveal deal, or no (n, Esc) and goes."""

    def compose(self) -> ComposeResult:
        with Vertical(id="code"):
            yield Static(
                "This table will not deal hidden hands.\n\n"
                "It can deal the commit-reveal deal instead: the deal is still checked as fair after each game,\n"
                "but the host's program sees your cards as they are dealt.\n\n"
                "Play the commit-reveal deal at this table? (y / n)"
            )

    def on_key(self, event: events.Key) -> None:
        if event.key in ("y", "n"):
            event.stop()
            self.dismiss(event.key == "y")
        elif event.key == "escape":
            self.dismiss(None)


# --- the app -------------------------------------------------------------------------------


@dataclass
class CaptureChoice:
    """The equal captures one card could make, and the one now shown on the table."""

    options: list[Move]
    shown: int = 0


class TableView(App):
    """The match screen, drawn from a ClientState: the live game and the replay both show it."""
    CSS = """
    Screen { layout: vertical; }
    #title { height: 1; background: $primary; color: $text; }
    #board { height: 3; }
    #lobby { height: auto; padding: 0 1; display: none; }
    #table-label, #hand-label { height: 1; }
    #table { layout: grid; grid-size: 8; grid-columns: 7; grid-gutter: 0 1; height: auto; max-height: 9; padding-left: 1; }
    #hand { height: 3; padding-left: 1; }
    Tile { width: 7; height: 3; border: round $secondary; content-align: center middle; text-style: bold; }
    #hand Tile { margin-right: 1; }
    Tile.red { color: red; }
    Tile.komi { border: double $warning; }
    Tile.selected { border: heavy $accent; background: $boost; }
    Tile.option { border: heavy $accent; background: $boost; }
    #prompt { height: auto; max-height: 2; padding: 0 1; }
    #middle { height: 1fr; min-height: 2; }
    #log { width: 1fr; padding: 0 1; }
    #chat { width: 40%; max-width: 48; border-left: solid $secondary; padding: 0 1; display: none; }
    #chat-input { height: 1; border: none; padding: 0 1; display: none; }
    #status { height: 1; background: $panel; padding: 0 1; }
    #result, #help, #leave, #code { width: auto; max-width: 100%; height: auto; max-height: 100%; border: round $accent; padding: 0 1; background: $surface; }
    Dialog { align: center middle; }
    Dialog.ascii #result, Dialog.ascii #help, Dialog.ascii #leave, Dialog.ascii #code, Dialog.ascii Input { border: ascii $accent; }
    #help { width: 78; max-width: 100%; }
    #help, #result { scrollbar-size-vertical: 1; }
    Dialog.ascii #help, Dialog.ascii #result { scrollbar-size-vertical: 0; }
    #help Static, #result Static { height: auto; }
    #code { width: 76; max-width: 100%; }
    #code Static { height: auto; }
    """
    ENABLE_COMMAND_PALETTE = False

    def __init__(self, *, fingerprint: bool, ascii: bool | None = None) -> None:
        # Under NO_COLOR, Textual strips every colour from what it draws when it uses the terminal's
        # own ANSI colours; with colours of its own it only turns them grey.
        super().__init__(ansi_color="NO_COLOR" in os.environ)
        self.show_fingerprint = fingerprint
        self.style = screen_style(ascii, colour=not self.no_color)
        self.state = ClientState(name="")
        self.lobby: list[str] = []
        self.cursor = 0
        self.typed = ""
        self.hint = ""
        self.choice: CaptureChoice | None = None
        self.previewed: Card | None = None  # the card picked on this turn, whose captures are shown before it is played

    # --- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield Static(id="lobby")
        yield Static(id="board")
        yield Static(id="table-label")
        yield Container(id="table")
        yield Static(id="hand-label")
        yield Horizontal(id="hand")
        yield Static(id="prompt")
        with Horizontal(id="middle"):
            for name in ("log", "chat"):
                log = RichLog(id=name, wrap=True, markup=False, max_lines=KEEP_LOG)
                if not self.style.symbols:
                    log.styles.scrollbar_size_vertical = 0  # a scrollbar is drawn in block characters
                yield log
        # Disabled while closed, so that it never takes the focus, nor the keys that pick cards.
        yield Input(id="chat-input", max_length=MAX_CHAT, placeholder="say something; Enter sends, Esc drops it", disabled=True)
        yield Static(id="status")

    def on_resize(self, event: events.Resize) -> None:
        self.query_one("#table").styles.grid_size_columns = max(1, (event.size.width - 2) // TILE_CELLS)
        # Both lines are laid out for the new width, which the app's own size may not show yet while it is resized.
        self._draw_title(event.size.width)
        self._draw_status(event.size.width)

    def _my_turn(self, event: events.Event | None = None) -> bool:
        return False

    def _previewed_moves(self) -> list[Move]:
        """The moves of the card picked on this turn; none when no card is."""
        if self.previewed is None or not self._my_turn():
            return []
        return [move for move in self.state.moves if move.card == self.previewed]

    def tile_clicked(self, tile: Tile) -> None:
        """A card clicked: only the live match acts on it."""

    # --- drawing ------------------------------------------------------------------------------

    def _draw(self) -> None:
        self._draw_title()
        self._draw_board()
        self._draw_cards()
        self._draw_prompt()
        self._draw_status()
        # The log's height changes with the table's: keep its newest lines in view once laid out again.
        self.call_after_refresh(self.query_one("#log", RichLog).scroll_end, animate=False)

    def _draw_title(self, columns: int | None = None) -> None:
        columns = columns or self.size.width
        state = self.state
        left = "BASRA"
        if state.game:
            left += f"  game {state.game}, hand {state.hand_no}/6"
        width = columns - 2
        right = title_right(state, self.show_fingerprint, width - len(left) - 2)
        gap = max(2, width - len(left) - len(right))
        self.query_one("#title", Static).update(Text(f" {left}{' ' * gap}{right}"[:columns]))

    def _draw_board(self) -> None:
        state = self.state
        in_match = bool(all(state.names) and state.seat is not None)
        lobby = self.query_one("#lobby", Static)
        lobby.display = not in_match
        if not in_match:
            waiting = "Connecting to the table..." if state.seat is None else "Waiting for the other player to sit down..."
            lobby.update(Text("\n".join([*self.lobby, "", waiting]).strip()))
        board = self.query_one("#board", Static)
        board.display = in_match and state.game > 0
        if board.display:
            board.update(scoreboard(state))

    def _draw_cards(self) -> None:
        state = self.state
        playing = state.game > 0 and state.termination is None
        for part in ("#table-label", "#table", "#hand-label", "#hand"):
            self.query_one(part).display = playing
        if not playing:
            return
        previewed = self._previewed_moves()
        if self.choice:
            option = set(self.choice.options[self.choice.shown].captures)
        else:
            option = set(previewed[0].captures) if len(previewed) == 1 else set()
        stock = f"stock {state.stock_left}" if state.stock_left else "stock empty: last hand"
        cards = {0: "empty", 1: "1 card"}.get(len(state.table), f"{len(state.table)} cards")
        label = f" Table ({cards})   {stock}   {state.opponent_name}: {state.opponent_hand_size} in hand"
        self.query_one("#table-label", Static).update(Text(label, style="dim"))
        self._fill("#table", state.table, lambda i, card: "", lambda card: card in option)
        turn = "  YOUR TURN" if self._my_turn() else ""
        self.query_one("#hand-label", Static).update(Text(f" Your hand{turn}", style="bold green" if turn else "bold"))
        self._fill("#hand", state.hand, lambda i, card: str(i + 1), lambda card: state.hand.index(card) == self.cursor)

    def _fill(self, where: str, cards, label, marked) -> None:
        container = self.query_one(where)
        container.remove_children()
        tiles = []
        for index, card in enumerate(cards):
            tile = Tile(card, label(index, card), self.style)
            if not self.style.symbols:
                tile.styles.border = ("ascii", "white")
            if marked(card):
                tile.add_class("option" if where == "#table" else "selected")
            tiles.append(tile)
        container.mount_all(tiles)

    def _draw_prompt(self) -> None:
        state = self.state
        prompt = self.query_one("#prompt", Static)
        if self.choice is not None:
            card = self.style.name(self.choice.options[0].card)
            listing = "  ".join(
                f"{'>' if i == self.choice.shown else ' '}{chr(ord('a') + i)}) {self.style.names(move.captures)}"
                for i, move in enumerate(self.choice.options)
            )
            prompt.update(Text(f"{card} can take (Enter takes the one marked, Esc goes back): {listing}"))
            return
        text = self.hint
        previewed = self._previewed_moves()
        if not text and previewed:
            text = preview(previewed, self.style, state.scoring)
        elif not text and self._my_turn():
            places = "1" if len(state.hand) == 1 else f"1-{len(state.hand)}"
            text = f"Pick a card (left/right, {places} or its name) to see what it takes.  ? help"
        elif not text and state.game and state.turn is not None and state.termination is None:
            text = f"waiting for {state.opponent_name} to come back..." if state.opponent in state.away else f"{state.opponent_name} is thinking..."
        if self.typed:
            text = f"typed: {self.typed}   {text}"
        prompt.update(Text(text))

    def _draw_status(self, columns: int | None = None) -> None:
        width = columns or self.size.width
        state = self.state
        now = time.monotonic()
        parts = []
        if state.reconnecting_until is not None:
            parts.append(f"connection lost: reconnecting ({max(0, int(state.reconnecting_until - now))} s left)")
        for seat, until in sorted(state.away.items()):
            name = "You" if seat == state.seat else state.names[seat] or f"seat {seat}"
            parts.append(f"{name} is away: waiting {max(0, int(until - now))} s more")
        if not parts:
            parts.append("connected" if state.seat is not None else "connecting...")
        totals = ""
        if state.seat is not None and all(state.names):
            totals = f"match: you {state.totals[state.seat]}, {state.opponent_name} {state.totals[state.opponent]}"
        text = "   ".join(parts)
        keys = "/ chat  ? help  q leave"
        right = f"{totals}   {keys}" if len(totals) + len(keys) + 5 <= width - 2 - len(text) else keys
        room = width - 4 - len(right)  # the keys always show; what happened is cut to fit beside them
        if len(text) > room:
            text = text[: max(0, room - 3)] + "..."
        gap = max(2, width - 2 - len(text) - len(right))
        self.query_one("#status", Static).update(Text(f"{text}{' ' * gap}{right}"))



class BasraApp(TableView, Generic[T]):
    """The live match: the session runs on trio in guest mode; keys and clicks become the seat's actions."""

    BINDINGS = [
        Binding("question_mark", "help", "help", priority=True),
        Binding("ctrl+c", "leave_now", "leave", priority=True),
        Binding("ctrl+q", "leave_now", "leave", priority=True),
    ]

    def __init__(self, main: Callable[[ScreenPlayer, trio.Event], Awaitable[T]], *, fingerprint: bool, ascii: bool | None = None) -> None:
        super().__init__(fingerprint=fingerprint, ascii=ascii)
        self.main = main
        self.player = ScreenPlayer(self)
        self.controls: Controls | None = None
        self.token: trio.lowlevel.TrioToken | None = None
        self.stop = trio.Event()
        self._match_scope = trio.CancelScope()
        self.result: T | None = None
        self.failure: BaseException | None = None
        self.done = False
        self.closing = False  # the match is over and the person closed its screen: it closes once the session ends
        self.turn_drawn_at: float | None = None  # on Textual's clock, as a key event's time
        self.chatting = False  # the chat line is open: keys are words until Enter or Esc

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)
        self._draw()
        self.call_after_refresh(self._start_match)  # the first screen shows before the match's modules load

    def _tick(self) -> None:
        """The status line's countdowns, each second; not once the screen is being taken down (a tick may still come)."""
        if self.is_running and self.screen_stack and self.screen_stack[0].query("#status"):
            self._draw_status()

    def _start_match(self) -> None:
        loop = asyncio.get_running_loop()
        trio.lowlevel.start_guest_run(
            self._run_match,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=loop.call_soon,
            done_callback=self._match_done,
            host_uses_signal_set_wakeup_fd=True,
        )

    async def _run_match(self) -> T | None:
        self.token = trio.lowlevel.current_trio_token()
        with self._match_scope:
            return await self.main(self.player, self.stop)
        return None  # cancelled: the screen closed first

    async def on_unmount(self) -> None:
        # A guest run left behind would hold trio's run state on this thread for good.
        if self.done or self.token is None:
            return
        try:
            self.token.run_sync_soon(self._match_scope.cancel)
        except trio.RunFinishedError:
            pass  # ended already: its done callback is on its way
        while not self.done:
            await asyncio.sleep(0.01)

    def _match_done(self, outcome) -> None:
        self.done = True
        try:
            self.result = outcome.unwrap()
        except BaseException as err:  # re-raised by run_on_screen, once the terminal is given back
            self.failure = err
        if self.state.termination is None or self.failure is not None or self.closing:
            self.exit()
            return
        self.hint = "The match is over.  Press Enter to close."
        self._draw()

    # --- from the session --------------------------------------------------------------------

    def seat_taken(self, state: ClientState, controls: Controls, token: trio.lowlevel.TrioToken) -> None:
        self.state, self.controls, self.token = state, controls, token
        self._draw()

    def lobby_line(self, line: str) -> None:
        self.lobby.append(line)
        self._draw()

    def match_changed(self, state: ClientState, message: Message | None, lines: list[str]) -> None:
        self.state = state
        log = self.query_one("#chat" if isinstance(message, Chat) else "#log", RichLog)
        log.display = True
        for line in lines:
            log.write(Text(line, style="bold yellow" if line.startswith(ANNOUNCEMENT) else ""))
        if isinstance(message, GameEnd) and state.results:
            self.push_screen(ResultScreen(game_result(state, state.results[-1], self.style), self.action_leave), self._result_read)
        elif isinstance(message, MatchEnd):
            if isinstance(self.screen, ResultScreen):
                self.pop_screen()  # the last game's score: the match's result holds it, and the close is one key
            self.push_screen(ResultScreen(match_result(state, self.style), self.action_leave), self._close_finished_match)
        if isinstance(message, (YourTurn, Commit)):
            return  # a request is drawn by turn_opened; a commitment changes nothing on screen
        self._draw()

    def turn_opened(self, request: int) -> None:
        if self.state.request != request:
            return
        self.typed, self.hint, self.choice, self.previewed = "", "", None, None
        self.cursor = min(self.cursor, max(0, len(self.state.hand) - 1))
        self.turn_drawn_at = self._now()  # keys stamped before this were typed ahead: they never play
        self._draw()

    def _close_finished_match(self, _: None = None) -> None:
        """The match's result was read: the screen closes, at once or as soon as the session has finished."""
        if self.done:
            self.exit()
        else:
            self._close_once_done()

    def _result_read(self, _: None = None) -> None:
        # Keys pressed while a result was up were not meant for the next turn.
        if self.turn_drawn_at is not None:
            self.turn_drawn_at = self._now()

    @staticmethod
    def _now() -> float:
        from textual._time import time as textual_time  # the clock key events are stamped with

        return textual_time()

    # --- input ---------------------------------------------------------------------------------

    def _my_turn(self, event: events.Event | None = None) -> bool:
        state = self.state
        if state.request is None or not state.moves or self.turn_drawn_at is None or self.controls is None:
            return False
        return event is None or event.time >= self.turn_drawn_at

    def on_key(self, event: events.Key) -> None:
        key = event.key
        if self.chatting:
            # The chat line takes every key; only Esc is left to this screen, to drop the line.
            if key == "escape":
                self._close_chat()
                event.stop()
            return
        if self.done and key in ("enter", "q"):
            self.exit()
        elif self.state.termination is not None and key == "q":
            self._close_once_done()
        elif key == "q":
            self.action_leave()
        elif event.character == "/" and self.controls is not None and not self.done:
            self._open_chat()
        elif event.character in REACTION_KEYS and self.controls is not None and not self.done:
            self._say(Chat(reaction=REACTION_KEYS[event.character]))
        elif self.choice is not None:
            self._choice_key(event)
        elif key in ("left", "right"):
            if self.state.hand:
                self.cursor = (self.cursor + (1 if key == "right" else -1)) % len(self.state.hand)
                self.typed = ""
                self._preview(self._cursor_card(), event)
        elif key == "enter":
            self._enter(self._cursor_card(), event)
        elif key == "backspace":
            self.typed = self.typed[:-1]
        elif key == "escape":
            self.typed = ""
        elif event.character and event.character.isalnum() and len(self.typed) < 3:
            self._type(event.character.upper())
            self._preview(self._cursor_card(), event)
        else:
            return
        event.stop()
        self._draw_cards()
        self._draw_prompt()

    def _type(self, character: str) -> None:
        """A digit picks a card by its place; a card's name (7D, 10H, QS) picks that card, even one starting with a digit."""
        self.typed += character
        hand = self.state.hand
        named = [index for index, card in enumerate(hand) if card_name(card) == self.typed]
        if named:
            self.cursor, self.typed = named[0], ""
            return
        place = int(self.typed) if self.typed.isdigit() and len(self.typed) == 1 else 0
        if 1 <= place <= len(hand):
            self.cursor = place - 1  # a place, unless a suit letter follows and names a card
        if not any(card_name(card).startswith(self.typed) for card in hand):
            if not 1 <= place <= len(hand):
                self.hint = f"{self.typed!r} is not a card in your hand"
            self.typed = ""

    def _cursor_card(self) -> Card | None:
        hand = self.state.hand
        return hand[self.cursor] if 0 <= self.cursor < len(hand) else None

    def _preview(self, card: Card | None, event: events.Event) -> None:
        """Show what the picked card would take; only on the seat's turn, with a key or click made after it was drawn."""
        self.previewed = card if self._my_turn(event) else None
        if self.previewed is not None:
            self.hint = ""

    def _enter(self, card: Card | None, event: events.Event) -> None:
        """Enter plays the card whose captures are shown; on a card not yet shown, it shows them first."""
        if card is not None and card == self.previewed:
            self._play_card(card, event)
        elif card is not None and not self._my_turn(event):
            self.hint = "Not your turn yet: nothing is played until it is."
        else:
            self._preview(card, event)

    def _play_card(self, card: Card | None, event: events.Event) -> None:
        if card is None:
            return
        if not self._my_turn(event):
            self.hint = "Not your turn yet: nothing is played until it is."
            return
        options = [move for move in self.state.moves if move.card == card]
        if not options:
            self.hint = f"{self.style.name(card)} cannot be played now."
        elif len(options) == 1:
            self._send(options[0])
        else:
            self.choice = CaptureChoice(options)
            self.hint = ""

    def _choice_key(self, event: events.Key) -> None:
        choice = self.choice
        assert choice is not None
        count = len(choice.options)
        if event.key in ("left", "up"):
            choice.shown = (choice.shown - 1) % count
        elif event.key in ("right", "down", "tab"):
            choice.shown = (choice.shown + 1) % count
        elif event.key == "escape":
            self.choice = None
        elif event.key == "enter":
            if self._my_turn(event):
                self._send(choice.options[choice.shown])
        elif event.character and event.character.isalpha() and event.character.islower():
            index = ord(event.character) - ord("a")
            if index < count:
                choice.shown = index
        event.stop()

    def tile_clicked(self, tile: Tile) -> None:
        click = events.Event()  # stamped now: a click counts only after the turn was drawn
        if tile.parent is not None and tile.parent.id == "hand":
            if tile.card in self.state.hand:
                self.cursor = self.state.hand.index(tile.card)
                self.choice = None
                self._enter(tile.card, click)  # a second click on the card shown plays it
        else:
            if self.choice is None and len(self._previewed_moves()) > 1:  # a click on the table picks among the captures shown
                self.choice = CaptureChoice(self._previewed_moves())
            if self.choice is None:
                return
            containing = [i for i, move in enumerate(self.choice.options) if tile.card in move.captures]
            if containing:
                later = [i for i in containing if i > self.choice.shown]
                self.choice.shown = (later or containing)[0]
        self._draw_cards()
        self._draw_prompt()

    def _send(self, move: Move) -> None:
        request, controls, token = self.state.request, self.controls, self.token
        assert request is not None and controls is not None and token is not None
        self.choice, self.previewed, self.turn_drawn_at, self.hint = None, None, None, ""
        token.run_sync_soon(controls.play, request, move)

    # --- chat ------------------------------------------------------------------------------------

    def _open_chat(self) -> None:
        line = self.query_one("#chat-input", Input)
        line.value, line.display, line.disabled, self.chatting = "", True, False, True
        line.focus()

    def _close_chat(self) -> None:
        line = self.query_one("#chat-input", Input)
        line.value, line.display, line.disabled, self.chatting = "", False, True, False
        self.set_focus(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "chat-input":
            return  # a modal screen's own line (the join code)
        event.stop()
        text = event.value.strip()
        self._close_chat()
        if text:
            self._say(Chat(text=text))

    def _say(self, chat: Chat) -> None:
        controls, token = self.controls, self.token
        assert controls is not None and token is not None
        token.run_sync_soon(controls.say, chat)

    def action_help(self) -> None:
        if self.chatting:
            self.query_one("#chat-input", Input).insert_text_at_cursor("?")  # a question, in words
            return
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss()
        else:
            self.push_screen(HelpScreen())

    def action_leave(self) -> None:
        if self.done:
            self.exit()
        elif self.state.termination is not None:
            self._close_once_done()
        else:
            self.push_screen(LeaveScreen(), self._leave_answered)

    def _close_once_done(self) -> None:
        """The match is over (its end is in the state) but the session is still answering it: nothing is left to
        leave, so the screen closes as soon as the session has signed off, and no leave goes to the host."""
        self.closing = True
        self.hint = "The match is over.  Closing..."
        self._draw_prompt()

    def _leave_answered(self, answer: str | None) -> None:
        if answer == "y":
            self.action_leave_now()
        elif answer and answer in "shdc" and self.choice is None:
            self.typed = ""
            self._type("Q")
            self._type(answer.upper())
            self._preview(self._cursor_card(), events.Event())
            self._draw_cards()
            self._draw_prompt()

    def action_leave_now(self) -> None:
        if self.done:
            self.exit()
        elif isinstance(self.screen, (CodeScreen, FingerprintScreen, DealScreen)):
            self.screen.dismiss(None)  # the question holds up the join, so leaving is its answer
        elif self.state.termination is not None:
            self._close_once_done()
        elif self.token is not None:
            if self.controls is not None:
                self.token.run_sync_soon(self.controls.leave, "you left the match")
            else:
                self.token.run_sync_soon(self.stop.set)  # before the seat: stop connecting

def screen_style(ascii: bool | None = None, colour: bool = True) -> CardStyle:
    """Suit symbols where the terminal's encoding has them (or unless ``ascii`` says otherwise)."""
    symbols = can_encode("".join(SUIT_SYMBOLS.values()), sys.stdout.encoding) if ascii is None else not ascii
    return CardStyle(colour=colour, symbols=symbols)


class ReplayApp(TableView):
    """`basra replay`: the recording seat's screen, one event at a time, with basra verify's verdict on top."""

    def __init__(self, replay: Replay, file_name: str, *, ascii: bool | None = None) -> None:
        super().__init__(fingerprint=True, ascii=ascii)
        self.replay = replay
        self.file_name = file_name
        self.at = 0
        self.jump = ""  # digits of a game number being typed

    def on_mount(self) -> None:
        self.show_step(0)

    def show_step(self, index: int) -> None:
        self.at = max(0, min(index, len(self.replay.frames) - 1))
        frame = self.replay.frames[self.at]
        self.state = frame.state
        log = self.query_one("#log", RichLog)
        log.clear()
        for line in frame.log[-KEEP_LOG:]:
            log.write(Text(line, style="bold yellow" if line.startswith(ANNOUNCEMENT) else ""))
        self._draw()

    def on_key(self, event: events.Key) -> None:
        key, frames = event.key, self.replay.frames
        game = frames[self.at].game
        if key in ("q", "escape"):
            self.exit()
        elif key in ("right", "space"):
            self.show_step(self.at + 1)
        elif key == "left":
            self.show_step(self.at - 1)
        elif key == "home":
            self.show_step(0)
        elif key == "end":
            self.show_step(len(frames) - 1)
        elif key in ("n", "pagedown"):
            self.show_step(self.replay.game_start(game + 1) or self.at)
        elif key in ("p", "pageup"):
            start = self.replay.game_start(game) or 0
            self.show_step(self.replay.game_start(game - 1) if self.at == start and game > 1 else start)
        elif key == "h":
            self._every_hand(game)
        elif event.character and event.character.isdigit():
            self.jump += event.character
            self._draw_prompt()
        elif key == "enter" and self.jump:
            start = self.replay.game_start(int(self.jump))
            self.hint = "" if start is not None else f"no game {self.jump} in this match"
            self.jump = ""
            self.show_step(self.at if start is None else start)

    def _every_hand(self, game: int) -> None:
        end = self.replay.game_ends.get(game)
        if end is None or self.at < end or game not in self.replay.decks:
            self.hint = "Every hand is shown once the game is over and its deal revealed."
            self._draw_prompt()
            return
        names = self.state.names
        text = Text(f"Game {game}: every hand, as the revealed deal fixed it\n\n", style="bold")
        for hand_no, first, second in self.replay.every_hand(game, self.state.scoring):
            text.append(f"hand {hand_no}  {names[0][:NAME_CELLS]}: {self.style.names(first):<16} {names[1][:NAME_CELLS]}: {self.style.names(second)}\n")
        text.append("\nEnter: back", style="dim")
        self.push_screen(ResultScreen(text))

    def _draw_title(self, columns: int | None = None) -> None:
        state = self.state
        left = f"REPLAY {self.file_name}"
        if state.game:
            left += f"  game {state.game}, hand {state.hand_no}/6"
        verdict = self.replay.verdict
        width = (columns or self.size.width) - 2
        title = Text(f" {left}  ")
        title.append(verdict[: max(8, width - len(left) - 2)], style="bold green" if self.replay.ok else "bold red")
        self.query_one("#title", Static).update(title)

    def _draw_prompt(self) -> None:
        seat = self.state.name or "the seat"
        text = f"step {self.at + 1} of {len(self.replay.frames)}, as {seat} saw it"
        if self.jump:
            text += f"   game {self.jump}, Enter to go"
        if self.hint:
            text += f"   {self.hint}"
        self.query_one("#prompt", Static).update(Text(text))

    def _draw_status(self, columns: int | None = None) -> None:
        keys = "left/right step  n/p game  digits+Enter jump  h every hand  q quit"
        self.query_one("#status", Static).update(Text(keys))


# --- what the screens say --------------------------------------------------------------------


def preview(moves: list[Move], style: CardStyle, scoring: str) -> str:
    """What a picked card would take, said before it is played (``moves``: the card's legal moves, at least one)."""
    card = style.name(moves[0].card)
    if len(moves) > 1:
        ways = " or ".join(style.names(move.captures) for move in moves)
        return f"{card} can take {ways}.  Enter to choose."
    move, preset = moves[0], PRESETS[scoring]
    if not move.captures:
        return f"{card} takes nothing: it stays on the table.  Enter plays it."
    what = {
        "basra": f": a BASRA, {preset.basra_points} points",
        "jack_basra": f": a JACK BASRA, {preset.jack_basra_points} points",
        "sweep": ", the whole table (a sweep, not a basra)",
    }.get(move.kind or "", "")
    return f"{card} takes {style.names(move.captures)}{what}.  Enter plays it."


def running_points(state: ClientState, seat: int) -> int:
    """The points this game so far: basras, card bonuses, and most cards once a seat holds 27."""
    preset = PRESETS[state.scoring]
    points = state.basras[seat] * preset.basra_points + state.jack_basras[seat] * preset.jack_basra_points
    points += sum(preset.card_points.get(card, 0) for card in state.piles[seat])
    if state.captured[seat] >= CARDS_TO_WIN_MOST:
        points += preset.most_cards_points
    return points


def scoreboard(state: ClientState) -> Text:
    you = state.seat or 0
    header = f"  {'':<{NAME_CELLS}} {'in hand':>7} {'taken/27':>8} {'basras':>6} {'game':>5} {'match/' + str(state.target):>10}"
    rows = [Text(header, style="dim")]
    for seat, name in ((state.opponent, state.opponent_name), (you, "You")):
        in_hand = len(state.hand) if seat == you else state.opponent_hand_size
        basras = f"{state.basras[seat]}" + (f"+{state.jack_basras[seat]}J" if state.jack_basras[seat] else "")
        marker = ">" if state.turn == seat else " "
        row = (
            f"{marker} {name[:NAME_CELLS]:<{NAME_CELLS}} {in_hand:>7} {state.captured[seat]:>8} {basras:>6}"
            f" {running_points(state, seat):>5} {state.totals[seat]:>10}"
        )
        rows.append(Text(row, style="bold" if state.turn == seat else ""))
    return Text("\n").join(rows)


def game_result(state: ClientState, summary: GameSummary, style: CardStyle, footer: str = "Enter: next game") -> Text:
    """A game's score, each line with what it counts."""
    you, them = state.seat or 0, state.opponent
    preset = PRESETS[state.scoring]
    mine, theirs = summary.scores[you], summary.scores[them]
    name = state.opponent_name[:NAME_CELLS]
    bonus = f"aces, Jacks 1; {style.name(parse_card('2C'))} 2; {style.name(parse_card('10D'))} 3"
    lines = [
        (f"Game {summary.game}", "You", name, ""),
        ("Cards taken", mine.cards, theirs.cards, "of the 52"),
        ("Most cards", mine.most_cards, theirs.most_cards, f"{preset.most_cards_points} for 27 cards or more"),
        ("Basras", mine.basras, theirs.basras, f"a whole table in one card: {preset.basra_points} each"),
        ("Jack basras", mine.jack_basras, theirs.jack_basras, f"Jack on a lone Jack: {preset.jack_basra_points} each"),
        ("Basra points", mine.basra_points, theirs.basra_points, "basras and jack basras"),
        ("Card bonus", mine.card_bonus, theirs.card_bonus, bonus if preset.card_points else "none in this scoring"),
        ("Game total", mine.total, theirs.total, "the lines above added up"),
        ("Match", summary.totals[you], summary.totals[them], f"first to {state.target} wins"),
    ]
    text = Text()
    for index, (label, a, b, why) in enumerate(lines):
        row = f"{label:<13}{a!s:>6}{str(b)[:NAME_CELLS]:>{NAME_CELLS + 2}}  {why}\n"
        text.append(row, style="bold" if index in (0, 7, 8) else "")
    if summary.verified is not None:
        text.append(summary.verification or "", style="green" if summary.verified else "bold red")
        text.append("\n")
    text.append(footer, style="dim")
    return text


def match_result(state: ClientState, style: CardStyle) -> Text:
    you, them = state.seat or 0, state.opponent
    if state.winner is None:
        outcome = "no winner"
    else:
        outcome = "YOU WIN!" if state.winner == you else f"{state.opponent_name} wins"
    text = Text(f"{match_headline(state)}: {outcome}\n", style="bold")
    why = how_it_ended(state)
    if why:
        text.append(f"{why}.\n")
    text.append(f"Final totals: you {state.totals[you]}, {state.opponent_name} {state.totals[them]} (first to {state.target})\n")
    if state.results:
        text.append("\n")
        text.append_text(game_result(state, state.results[-1], style, footer="Enter: close"))
    else:
        text.append("\nEnter: close", style="dim")
    return text


# --- running it ------------------------------------------------------------------------------


def run_on_screen(main: Callable[[ScreenPlayer, trio.Event], Awaitable[T]], *, fingerprint: bool) -> T | None:
    """Run ``main`` on trio inside the full-screen interface; its result once the screen is closed.

    None when the screen closed before the match ended (the terminal went away).
    """
    app: BasraApp[T] = BasraApp(main, fingerprint=fingerprint)
    app.run()
    if app.failure is not None:
        raise app.failure
    return app.result

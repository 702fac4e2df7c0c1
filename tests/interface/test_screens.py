"""The full-screen interface, headless: every screen and every way of playing a card, through Textual's Pilot.

Most tests play a real match against the greedy bot (harness.match_against_bot);
the moments a deal rarely brings (equal captures, a game's end) are prepared
by hand (harness.scripted).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from basra_net.client.players import BotPlayer, Choice, Quit
from basra_net.client.tui import HelpScreen, LeaveScreen, ResultScreen
from basra_net.engine import Move
from basra_net.engine.cards import card_name, parse_card
from basra_net.engine.scoring import GameScore
from basra_net.client.state import ClientState
from basra_net.protocol.messages import Deal, GameEnd, MatchEnd, MatchStart, Welcome, YourTurn

from .harness import match_against_bot, my_turn, run_app, screen_text, scripted, until

SNAPSHOTS = Path(__file__).parent / "snapshots"


def card(name: str) -> int:
    return parse_card(name)


def cards(names: str) -> tuple[int, ...]:
    return tuple(card(n) for n in names.split())


def hand_names(app) -> list[str]:
    return [app.style.name(c) for c in app.state.hand]


def played_lines(app) -> list[str]:
    return [line.text for line in app.query_one("#log").lines if line.text.startswith("You played")]


class HeldBot(BotPlayer):
    """The greedy bot, thinking over its first move until the test lets it go (it polls: the test is on asyncio)."""

    def __init__(self) -> None:
        super().__init__("greedy")
        self.thinking = False
        self.released = False

    async def choose(self, state):
        self.thinking = True
        while not self.released:
            await trio.sleep(0.01)
        self.thinking = False
        return await super().choose(state)


# --- playing a card, every way ---------------------------------------------------------------


def test_the_game_screen_shows_table_hand_scores_log_and_status():
    seen = {}

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        seen["text"] = screen_text(app)
        seen["tiles"] = len(app.query("#hand Tile"))

    run_app(scenario)
    text = seen["text"]
    for part in ("BASRA  game 1, hand 1/6", "taken/27", "basras", "match/40", "Table (", "Bot: 3 in hand",
                 "Your hand  YOUR TURN", "─ 2 ─", "Bot played", "connected", "match: you 0, Bot 0", "? help  q leave"):
        assert part in text, (part, text)
    assert seen["tiles"] == 4


def first_play(index: int, pick) -> tuple[str, str]:
    """Play the first turn of the match with ``pick(app, pilot)``, meant to play the card at ``index``.

    Returns that card's name and the log's line for the play that followed.
    """
    seen = {}

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        seen["card"] = hand_names(app)[index]
        await pick(app, pilot)
        await until(pilot, lambda: played_lines(app), "the play")
        seen["played"] = played_lines(app)[0]

    run_app(scenario)
    return seen["card"], seen["played"]


def test_arrows_move_the_selection_and_enter_plays_the_selected_card():
    async def pick(app, pilot):
        await pilot.press("right")
        assert "selected" in app.query("#hand Tile")[1].classes
        await pilot.press("enter")

    card, played = first_play(1, pick)
    assert played.startswith(f"You played {card}")


def test_a_digit_selects_a_card_and_enter_plays_it():
    async def pick(app, pilot):
        await pilot.press("3", "enter")

    card, played = first_play(2, pick)
    assert played.startswith(f"You played {card}")


def test_a_card_typed_by_name_is_the_one_played():
    async def pick(app, pilot):
        await pilot.press(*card_name(app.state.hand[3]).lower(), "enter")

    card, played = first_play(3, pick)
    assert played.startswith(f"You played {card}")


def test_a_name_that_starts_with_a_digit_picks_the_named_card_not_that_place():
    state = capture_choice_state()  # hand 7S 2C KD QH: "2" alone is the second place, "2c" the 2 of clubs
    state.hand = cards("2C 7S KD QH")

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        await pilot.press("2")
        assert app.cursor == 1
        await pilot.press("c")
        assert app.cursor == 0
        await pilot.press("enter")

    app = run_app(scenario, main=scripted(state))
    assert app.result == Choice(1, Move(card("2C"), ()))


def test_a_click_on_a_card_in_the_hand_shows_what_it_takes_and_a_second_click_plays_it():
    async def pick(app, pilot):
        picked = app.state.hand[2]
        await pilot.click(app.query("#hand Tile")[2])
        selected = lambda: [t for t in app.query("#hand Tile.selected") if t.card == picked]  # noqa: E731
        await until(pilot, selected, "the hand redrawn with the card picked")
        assert app.previewed == picked and "Enter plays it" in str(app.query_one("#prompt").render())
        assert not played_lines(app)
        await pilot.click(selected()[0])

    card, played = first_play(2, pick)
    assert played.startswith(f"You played {card}")


def test_keys_typed_while_the_opponent_thinks_are_never_played():
    bot = HeldBot()
    seen = {}

    async def scenario(app, pilot):
        await until(pilot, lambda: bot.thinking and app.state.hand, "the bot thinking over its first move")
        await pilot.press("1", "enter", "2", "enter", "right", "enter")
        bot.released = True
        await my_turn(app, pilot)
        await pilot.pause(0.3)
        seen["hand"], seen["open"] = len(app.state.hand), app.state.request is not None
        seen["played"] = played_lines(app)
        await pilot.press("enter", "enter")  # now they count: the first shows what the card takes, the second plays it
        await until(pilot, lambda: played_lines(app), "the play")

    run_app(scenario, main=match_against_bot(opponent=bot))
    assert seen == {"hand": 4, "open": True, "played": []}


# --- choices, help, leaving --------------------------------------------------------------------


def capture_choice_state() -> ClientState:
    state = ClientState(name="Tess", seat=0, names=("Tess", "Sam"), target=101, game=1, hand_no=1, dealer=1, turn=0)
    state.hand, state.table, state.opponent_hand_size, state.stock_left = cards("7S 2C KD QH"), cards("3H 4S 3D QC"), 4, 40
    state.request = 1
    state.moves = (Move(card("7S"), cards("3H 4S")), Move(card("7S"), cards("4S 3D")), Move(card("2C"), ()),
                   Move(card("KD"), ()), Move(card("QH"), cards("QC")))
    return state


def test_a_picked_card_shows_what_it_would_take_before_enter_plays_it():
    state = capture_choice_state()
    seen = {}

    def shown(app):
        return sorted(app.style.name(t.card) for t in app.query("#table Tile.option")), str(app.query_one("#prompt").render())

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        seen["start"] = shown(app)
        for key in ("4", "2", "c", "1", "right", "right"):
            await pilot.press(key)
            await pilot.pause()
            seen[key if key != "right" else f"right{len(seen)}"] = shown(app)
        seen["played before enter"] = app.result
        await pilot.press("enter")

    app = run_app(scenario, main=scripted(state))
    assert seen["start"] == ([], "Pick a card (left/right, 1-4 or its name) to see what it takes.  ? help")
    assert seen["4"] == (["Q♣"], "Q♥ takes Q♣.  Enter plays it.")
    assert seen["2"] == ([], "typed: 2   2♣ takes nothing: it stays on the table.  Enter plays it.")  # 2c would name it too
    assert seen["c"] == ([], "2♣ takes nothing: it stays on the table.  Enter plays it.")
    assert seen["1"] == ([], "7♠ can take 3♥ 4♠ or 4♠ 3♦.  Enter to choose.")
    assert seen["right5"][1].startswith("2♣ takes nothing") and seen["right6"][1].startswith("K♦ takes nothing")
    assert seen["played before enter"] is None
    assert app.result == Choice(1, Move(card("KD"), ()))


def test_a_basra_is_announced_before_the_card_is_played():
    state = capture_choice_state()
    state.table, state.moves = cards("QC"), (Move(card("QH"), cards("QC"), "basra"), Move(card("7S"), ()))
    state.hand = cards("7S QH")
    seen = {}

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        await pilot.press("q", "h")  # q asks to leave; a suit letter after it names a Queen
        await pilot.pause()
        seen["prompt"] = str(app.query_one("#prompt").render())
        await pilot.press("enter")

    app = run_app(scenario, main=scripted(state))
    assert seen["prompt"] == "Q♥ takes Q♣: a BASRA, 10 points.  Enter plays it."
    assert app.result == Choice(1, Move(card("QH"), cards("QC")))


def test_equal_captures_are_shown_on_the_table_to_pick_from_with_keys():
    seen = {}

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        await pilot.press("1", "enter")
        await pilot.pause()
        highlighted = lambda: sorted(app.style.name(t.card) for t in app.query("#table Tile.option"))  # noqa: E731
        seen["first"] = highlighted()
        seen["prompt"] = str(app.query_one("#prompt").render())
        await pilot.press("right")
        await pilot.pause()
        seen["second"] = highlighted()
        await pilot.press("enter")

    app = run_app(scenario, main=scripted(capture_choice_state()))
    assert seen["first"] == ["3♥", "4♠"] and seen["second"] == ["3♦", "4♠"]
    assert "7♠ can take" in seen["prompt"] and "a) " in seen["prompt"] and "b) " in seen["prompt"]
    assert app.result == Choice(1, Move(card("7S"), cards("4S 3D")))


def test_a_click_on_a_table_card_picks_the_capture_that_holds_it():
    async def scenario(app, pilot):
        await my_turn(app, pilot)
        await pilot.click(app.query("#hand Tile")[0])
        await pilot.pause()
        three_of_diamonds = next(t for t in app.query("#table Tile") if t.card == card("3D"))
        await pilot.click(three_of_diamonds)
        await pilot.press("enter")

    app = run_app(scenario, main=scripted(capture_choice_state()))
    assert app.result == Choice(1, Move(card("7S"), cards("4S 3D")))


def test_escape_goes_back_from_a_capture_choice_to_the_hand():
    async def scenario(app, pilot):
        await my_turn(app, pilot)
        await pilot.press("7", "s", "enter", "escape")
        assert app.choice is None
        await pilot.press("q", "h", "enter")

    app = run_app(scenario, main=scripted(capture_choice_state()))
    assert app.result == Choice(1, Move(card("QH"), cards("QC")))


def test_q_asks_first_n_stays_and_y_leaves():
    seen = {}

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        await pilot.press("q")
        assert isinstance(app.screen, LeaveScreen)
        seen["asked"] = screen_text(app)
        await pilot.press("n")
        assert not isinstance(app.screen, LeaveScreen) and app.result is None
        await pilot.press("q", "y")

    app = run_app(scenario, main=scripted(capture_choice_state()))
    assert "Leave the match?" in seen["asked"]
    assert app.result == Quit("you left the match")


def test_help_explains_the_rules_the_jack_and_the_seven_of_diamonds():
    seen = {}

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        seen["help"] = screen_text(app)
        await pilot.press("x", "7", "left")
        assert isinstance(app.screen, HelpScreen), "a key that is not a closing key leaves the help up"
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("enter", "enter", "enter")  # the help's keys played nothing; these show, choose and play the first card

    app = run_app(scenario, main=scripted(capture_choice_state()))
    text = " ".join(seen["help"].split())
    for part in ("The Jack takes the whole table", "jack basra", "The 7♦ (marked *)", "most cards", "q leave"):
        assert part in text, part
    assert isinstance(app.result, Choice) and app.result.move.card == card("7S")


# --- the other screens --------------------------------------------------------------------------


def game_end_state() -> tuple[ClientState, list]:
    state = ClientState(name="Tess")
    messages = [
        Welcome(1, 0, bytes(16), bytes(32), "egyptian", 101, bytes(16), 0),
        MatchStart(("Tess", "Sam")),
        Deal(1, 1, 1, cards("7S 2C KD QH"), cards("3H 4S 3D QC"), 40, (), 0),
        GameEnd(1, 1, cards("5C"), (GameScore(29, 30, 1, 0, 10, 0, 40), GameScore(23, 0, 0, 1, 30, 0, 30)), (40, 30)),
        Deal(2, 1, 0, cards("9S 2D KC QD"), cards("AH 4C 3C QS"), 40, (), 1),
        YourTurn(7, (Move(card("9S"), ()),)),
    ]
    for message in messages:
        state.apply(message)
    return state, messages


def finished_match(release: trio.Event | None = None):
    """The app's main for a match that ends: the last game's score, then the match's end; the session then
    finishes (once ``release`` is set, when given)."""

    async def main(player, stop: trio.Event):
        state = ClientState(name="Tess")
        messages = [
            Welcome(1, 0, bytes(16), bytes(32), "egyptian", 101, bytes(16), 0),
            MatchStart(("Tess", "Sam")),
            Deal(1, 1, 1, cards("7S 2C KD QH"), cards("3H 4S 3D QC"), 40, (), 0),
            GameEnd(1, 1, cards("5C"), (GameScore(29, 30, 1, 0, 10, 0, 101), GameScore(23, 0, 0, 1, 30, 0, 30)), (101, 30)),
            MatchEnd(0, (101, 30), "target"),
        ]
        for message in messages:
            state.apply(message)
            player.show(state, message)
        if release is not None:
            await release.wait()
        return "finished"

    return main


@pytest.mark.parametrize("session_still_running", [False, True])
def test_a_finished_match_shows_its_result_once_and_one_key_closes_the_screen(session_still_running):
    release = trio.Event() if session_still_running else None
    seen = {}

    async def scenario(app, pilot):
        await until(pilot, lambda: "MATCH OVER" in screen_text(app), "the match's result")
        if not session_still_running:
            await until(pilot, lambda: app.done, "the session's end")
        await pilot.pause()
        seen["result"] = screen_text(app)
        seen["panels"] = sum(isinstance(screen, ResultScreen) for screen in app.screen_stack)
        await pilot.press("enter")
        await pilot.pause()
        seen["closed at once"] = not app.is_running
        if release is not None:
            app.token.run_sync_soon(release.set)
            await until(pilot, lambda: not app.is_running, "the screen to close once the session finished")

    app = run_app(scenario, main=finished_match(release))
    assert seen["panels"] == 1, "the last game's score is not a second panel to close"
    assert "MATCH OVER: YOU WIN!" in seen["result"] and "Enter: close" in seen["result"] and "next game" not in seen["result"]
    assert seen["closed at once"] is not session_still_running
    assert app.result == "finished"


def test_a_game_s_end_explains_each_line_of_the_score_before_the_next_game():
    seen = {}

    async def scenario(app, pilot):
        await until(pilot, lambda: isinstance(app.screen, ResultScreen), "the game's result")
        seen["result"] = screen_text(app)
        await pilot.press("enter")
        await my_turn(app, pilot)
        await pilot.press("enter", "enter")

    app = run_app(scenario, main=scripted(*game_end_state()))
    text = seen["result"]
    for part in ("Cards taken", "29", "23", "Most cards", "30 for 27 cards or more", "Basras",
                 "a whole table in one card: 10 each", "Jack basras", "Card bonus", "none in this scoring",
                 "Game total", "40", "Match", "first to 101 wins"):
        assert part in text, (part, text)
    assert app.result == Choice(7, Move(card("9S"), ()))


def test_the_host_s_waiting_screen_keeps_the_join_command_and_code_until_the_guest_sits():
    say = ["basra host: listening on all interfaces, port 5252 (TLS, host key fingerprint bd8a f2e8 b72c 2eab)",
           "The other player types:  basra join 192.168.1.20 --code tulip-river-42", "Join code: tulip-river-42"]
    welcome = Welcome(1, 0, bytes(16), bytes(32), "egyptian", 101, bytes(16), 0)
    seen = {}

    async def scenario(app, pilot):
        await until(pilot, lambda: app.state.seat == 0 and app.lobby, "the seat and the lobby lines")
        await pilot.pause()
        seen["waiting"] = screen_text(app)
        await pilot.press("q", "y")

    state = ClientState(name="Tess")
    state.apply(welcome)
    run_app(scenario, main=scripted(state, [welcome], say=say, open_turn=False))
    text = seen["waiting"]
    assert "basra join 192.168.1.20 --code tulip-river-42" in text and "Join code: tulip-river-42" in text
    assert "Waiting for the other player to sit down" in text
    assert "Waiting for the host" not in text


@pytest.mark.parametrize("size", [(60, 20), (120, 40)])
def test_the_screen_fits_small_terminals_and_uses_the_room_of_large_ones(size):
    seen = {}

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        seen["text"] = screen_text(app)
        seen["log_rows"] = app.query_one("#log").size.height
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.resize_terminal(*size)
        await pilot.pause()
        seen["after_resize"] = screen_text(app)
        await pilot.press("enter", "enter")
        await until(pilot, lambda: played_lines(app), "the play")

    run_app(scenario, size=size)
    for text in (seen["text"], seen["after_resize"]):
        rows = text.rstrip("\n").split("\n")
        assert len(rows) == size[1] and all(len(row) <= size[0] for row in rows)
        for part in ("BASRA", "taken/27", "Your hand  YOUR TURN", "─ 2 ─", "? help  q leave"):
            assert part in text, (part, text)
    assert seen["log_rows"] >= (2 if size[1] == 20 else 15)


BOX_DRAWING = "╭╮╰╯─│━┏┓┗┛▊▎"


@pytest.mark.parametrize("ascii", [False, True])
def test_help_and_the_leave_question_fit_at_60x20_and_the_help_scrolls_to_its_end(ascii):
    seen = {}

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help to open")
        await pilot.pause()
        seen["help_top"] = screen_text(app)
        await pilot.press("end")
        # The scroll to the end is animated: the text is read once the help's last line is in view.
        await until(pilot, lambda: "closes it" in screen_text(app), "the help to scroll to its end")
        seen["help_end"] = screen_text(app)
        await pilot.press("question_mark")
        assert not isinstance(app.screen, HelpScreen), "? closes the help it opened"
        await pilot.press("q")
        await pilot.pause()
        seen["leave"] = screen_text(app)
        await pilot.press("n", "enter", "enter")

    run_app(scenario, size=(60, 20), main=scripted(capture_choice_state()), ascii=ascii)
    for text in seen.values():
        rows = text.rstrip("\n").split("\n")
        assert len(rows) == 20 and all(len(row) <= 60 for row in rows)
        assert not ascii or not any(symbol in text for symbol in BOX_DRAWING), text
    assert "Basra in short" in seen["help_top"] and "closes it" not in seen["help_top"]
    assert "closes it" in seen["help_end"] and "Basra in short" not in seen["help_end"]
    leave = " ".join(seen["leave"].replace("│", " ").replace("|", " ").split())
    assert "Leave the match?" in leave and "the match ends." in leave and "y leave n stay" in leave


def test_ascii_fallback_names_suits_by_letter_and_marks_the_seven_of_diamonds():
    seen = {}

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        seen["text"] = screen_text(app)
        await pilot.press("enter")

    state = capture_choice_state()
    state.hand = cards("7D 2C KD QH")
    state.moves = (Move(card("7D"), state.table), Move(card("2C"), ()), Move(card("KD"), ()), Move(card("QH"), cards("QC")))
    run_app(scenario, main=scripted(state), ascii=True)
    assert "7D*" in seen["text"] and "QC" in seen["text"]
    assert not any(symbol in seen["text"] for symbol in "♠♥♦♣╭━")


# --- snapshots at 80x24 -----------------------------------------------------------------------


def _compare(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("BASRA_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no snapshot {path}: run with BASRA_UPDATE_SNAPSHOTS=1 and read it before committing"
    assert text == path.read_text(), f"the screen differs from {path}"


def test_snapshot_of_the_game_screen():
    seen = {}

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        seen["text"] = screen_text(app)

    run_app(scenario)
    _compare("game", seen["text"])


def test_snapshots_of_the_capture_choice_the_game_end_and_the_help():
    seen = {}

    async def choice(app, pilot):
        await my_turn(app, pilot)
        await pilot.press("enter", "enter")
        await pilot.pause()
        seen["choice"] = screen_text(app)
        await pilot.press("question_mark")
        seen["help"] = screen_text(app)
        await pilot.press("escape", "enter")

    async def game_end(app, pilot):
        await until(pilot, lambda: isinstance(app.screen, ResultScreen), "the game's result")
        await pilot.pause()
        seen["game_end"] = screen_text(app)
        await pilot.press("enter")
        await my_turn(app, pilot)
        await pilot.press("enter")

    run_app(choice, main=scripted(capture_choice_state()))
    run_app(game_end, main=scripted(*game_end_state()))
    for name in ("choice", "help", "game_end"):
        _compare(name, seen[name])


def test_a_join_code_is_asked_for_on_the_screen():
    async def main(player, stop):
        return await player.ask_code("the host refused: code_required: this table needs its join code")

    seen = {}

    async def scenario(app, pilot):
        await until(pilot, lambda: len(app.screen_stack) > 1, "the question")
        await pilot.pause()
        seen["asked"] = screen_text(app)
        await pilot.press(*"tulip-42", "enter")
        await until(pilot, lambda: app.done, "the answer")

    app = run_app(scenario, main=main)
    assert "this table needs its join code" in seen["asked"] and "join code shown on the host's screen" in seen["asked"]
    assert app.result == "tulip-42"


GUESSES = 40  # each from an address of its own


def _host_whose_code_is_guessed(code: str, *, guest_first: bool):
    """The app's main: a real `basra host` table on loopback (plain TCP); a crowd then guesses its code.

    With ``guest_first``, a guest with the right code sits down before the guessing, so the game is on.
    """
    from basra_net.client.join import JoinSession
    from basra_net.host.server import HostSettings, run_host
    from basra_net.protocol.framing import encode_frame
    from basra_net.protocol.messages import Hello, to_wire

    async def main(player, stop: trio.Event):
        settings = HostSettings(bind="127.0.0.1", port=0, target=500, code=code, tls=False, announce=False)
        async with trio.open_nursery() as nursery:

            async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
                await run_host(settings, player, say=player.say, stop=stop, task_status=task_status)

            port = await nursery.start(host)
            if guest_first:
                guest = JoinSession("127.0.0.1", port, "Omar", BotPlayer("greedy"), None, code=code, plain=True)
                nursery.start_soon(guest.run)
                while player.app.state.game == 0:
                    await trio.sleep(0.05)
            for n in range(GUESSES):  # each from an address of its own, so no lockout slows them
                async with await trio.open_tcp_stream("127.0.0.1", port, local_address=f"127.7.{n}.1") as guesser:
                    await guesser.send_all(encode_frame(to_wire(Hello((1,), "guesser", bytes(32), code="AAA-AAA"))))
                    await guesser.receive_some(4096)
            await stop.wait()
            nursery.cancel_scope.cancel()

    return main


@pytest.mark.parametrize("guest_first", [False, True], ids=["waiting-screen", "game-on"])
def test_a_crowd_guessing_the_join_code_is_shown_and_leaves_the_code_the_host_reads_out_unchanged(guest_first, tmp_path, monkeypatch):
    """The code is never replaced (PROTOCOL.md 5.6): the one the host's player read aloud keeps working."""
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))  # the host's key and journal
    code = "tulip-river-42"
    seen = {}

    async def scenario(app, pilot):
        for shown in (GUESSES // 2, GUESSES):  # each half within the harness's wait, on a busy machine
            await until(pilot, lambda: sum("failed the join code" in line for line in app.lobby) >= shown, f"{shown} guesses to be shown")
        await pilot.pause()
        seen["text"] = screen_text(app)
        seen["lobby"] = list(app.lobby)
        seen["game"] = app.state.game
        app.stop.set()

    run_app(scenario, main=_host_whose_code_is_guessed(code, guest_first=guest_first))
    text, lobby = seen["text"], "\n".join(seen["lobby"])
    assert f"--code {code}" in lobby and f"Join code: {code}" in lobby and "changed" not in lobby, lobby
    if guest_first:
        assert seen["game"] >= 1, text  # the guest with the code plays on
    else:
        assert f"Join code: {code}" in text and "changed" not in text, text


def test_q_over_a_game_s_result_asks_before_leaving_and_n_comes_back_to_it():
    seen = {}

    async def scenario(app, pilot):
        await until(pilot, lambda: isinstance(app.screen, ResultScreen), "the game's result")
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, LeaveScreen), "the question")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, ResultScreen), "the result again")
        seen["back"] = True
        await pilot.press("enter")
        await my_turn(app, pilot)
        await pilot.press("enter")

    run_app(scenario, main=scripted(*game_end_state()))
    assert seen["back"]

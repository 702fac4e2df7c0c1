"""The chat line and the quick reactions on the full screen, headless through Textual's Pilot."""

from __future__ import annotations

from basra_net.client.state import ClientState
from basra_net.client.tui import HelpScreen, LeaveScreen
from basra_net.protocol.messages import Chat, MatchStart, Welcome

from .harness import match_against_bot, my_turn, run_app, screen_text, scripted, until
from .test_screens import HeldBot, played_lines


def chat_panel(app) -> list[str]:
    return [line.text for line in app.query_one("#chat").lines]


def test_the_chat_line_takes_every_key_as_words_and_never_plays_a_card():
    bot = HeldBot()
    seen = {}

    async def scenario(app, pilot):
        await until(pilot, lambda: bot.thinking and app.state.hand, "the bot thinking over its first move")
        # While the opponent thinks: a line of digits, q and ? that would play, leave or ask for help outside the line.
        await pilot.press("slash", "1", "space", "q", "question_mark", "enter")
        await until(pilot, lambda: app.state.chat, "the line sent")
        seen["while waiting"] = (list(app.state.chat), isinstance(app.screen, (HelpScreen, LeaveScreen)))
        bot.released = True
        await my_turn(app, pilot)
        # On the player's own turn: Enter in the chat line sends the line, not the selected card.
        await pilot.press("slash", "2", "enter")
        await until(pilot, lambda: len(app.state.chat) == 2, "the second line sent")
        await pilot.pause(0.3)
        seen["hand"], seen["played"] = len(app.state.hand), played_lines(app)
        seen["panel"] = chat_panel(app)
        await pilot.press("enter", "enter")  # out of the chat line, Enter shows the card's captures, then plays it
        await until(pilot, lambda: played_lines(app), "the play")

    run_app(scenario, main=match_against_bot(opponent=bot))
    assert seen["while waiting"] == ([(0, Chat(text="1 q?"))], False)
    assert seen["hand"] == 4 and seen["played"] == []
    assert seen["panel"] == ["You: 1 q?", "You: 2"]


def test_escape_drops_the_line_and_the_keys_play_cards_again():
    seen = {}

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        await pilot.press("slash", "h", "i", "escape")
        await pilot.pause(0.2)
        seen["dropped"] = (list(app.state.chat), app.query_one("#chat-input").display, app.chatting)
        await pilot.press("2", "enter")
        await until(pilot, lambda: played_lines(app), "the play")

    run_app(scenario)
    assert seen["dropped"] == ([], False, False)


def test_reaction_keys_send_a_reaction_and_the_help_lists_them():
    seen = {}

    async def scenario(app, pilot):
        await my_turn(app, pilot)
        await pilot.press("exclamation_mark", "percent_sign")
        await until(pilot, lambda: len(app.state.chat) == 2, "two reactions sent")
        await pilot.pause(0.1)
        seen["sent"], seen["panel"] = list(app.state.chat), chat_panel(app)
        seen["hand"] = len(app.state.hand)
        await pilot.press("question_mark")
        seen["help"] = screen_text(app)
        await pilot.press("escape")
        await my_turn(app, pilot)
        await pilot.press("enter", "enter")

    run_app(scenario, size=(100, 40))  # room for the whole help
    assert seen["sent"] == [(0, Chat(reaction="good_game")), (0, Chat(reaction="thanks"))]
    assert seen["panel"] == ["You: (good game!)", "You: (thanks!)"] and seen["hand"] == 4
    help_text = " ".join(seen["help"].replace("│", " ").split())
    assert "/ opens a line to the other player" in help_text and "! good game!" in help_text and "^ your move..." in help_text


def test_a_line_from_the_other_player_shows_beside_the_log_with_nothing_a_terminal_would_act_on():
    state = ClientState(name="Tess", seat=0, names=("Tess", "Sam"), target=101)
    state.request = 1
    line = Chat(text="hi\u202e there\x1b[2J")  # as no host would pass it on: the screen still cleans it
    state.apply(line)
    seen = {}

    async def scenario(app, pilot):
        await until(pilot, lambda: chat_panel(app), "the line shown")
        seen["panel"], seen["screen"] = chat_panel(app), screen_text(app)
        await pilot.press("ctrl+c")

    run_app(scenario, main=scripted(state, [Welcome(2, 0, bytes(16), bytes(32), "egyptian", 101, bytes(16), 0), MatchStart(("Tess", "Sam")), line], open_turn=False))
    assert seen["panel"] == ["Sam: hi there[2J"]
    assert "\u202e" not in seen["screen"] and "\x1b" not in seen["screen"]

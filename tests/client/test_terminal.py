"""The terminal player: reading moves from the keyboard, and the log it keeps of the match."""

from __future__ import annotations

import io
import os
import threading

import pytest
import trio

from basra_net.client.screen import CardStyle
from basra_net.client.state import ClientState
from basra_net.client.terminal import CLEAR_SCREEN, InputClosed, PlayerQuit, TerminalPlayer, letter_labels, typed_line
from basra_net.engine import Move
from basra_net.engine.cards import parse_card
from basra_net.engine.scoring import GameScore
from basra_net.protocol.messages import AbsenceEvidence, Chat, Deal, GameEnd, MatchEnd, MatchStart, Played, Reveal, Welcome, YourTurn

LETTERS = CardStyle(colour=False, symbols=False)
SYMBOLS = CardStyle(colour=False, symbols=True)


def card(name: str) -> int:
    return parse_card(name)


def cards(names: str) -> tuple[int, ...]:
    return tuple(sorted(parse_card(n) for n in names.split()))


# Table 3H 4S 3D QC: the 7S takes 3H+4S or 3D+4S (a tie); the QD takes QC; 9C and 2H take nothing.
HAND = tuple(card(n) for n in "7S 9C QD 2H".split())
MOVES = (
    Move(card("7S"), cards("3H 4S"), "capture"),
    Move(card("7S"), cards("3D 4S"), "capture"),
    Move(card("9C"), (), "drop"),
    Move(card("QD"), cards("QC"), "capture"),
    Move(card("2H"), (), "drop"),
)


def my_turn() -> ClientState:
    """Seat 0 to act, built the way the session builds it: from the host's messages."""
    state = ClientState(name="Ann")
    state.apply(Welcome(1, 0, b"m" * 16, b"k" * 32, "egyptian", 101, bytes(16), 0))
    state.apply(MatchStart(("Ann", "Sam")))
    state.apply(Deal(1, 1, 1, HAND, tuple(card(n) for n in "3H 4S 3D QC".split()), 40, (), 0))
    state.apply(YourTurn(7, MOVES))
    return state


def player(typed: str, style: CardStyle = LETTERS) -> tuple[TerminalPlayer, io.StringIO]:
    out = io.StringIO()
    return TerminalPlayer(out=out, inp=io.StringIO(typed), style=style), out


# --- choosing a move ---------------------------------------------------------------------------


async def test_a_number_picks_that_card():
    terminal, out = player("2\n")
    assert await terminal.choose(my_turn()) == Move(card("9C"), ())
    assert "Your move (1-4): " in out.getvalue()
    assert "1) 7S" in out.getvalue()


async def test_a_card_with_one_capture_plays_it():
    terminal, _ = player("3\n")
    move = await terminal.choose(my_turn())
    assert move == Move(card("QD"), cards("QC"))
    assert move.kind == "capture"  # the listed move itself, not a rebuilt one


async def test_a_tie_offers_letters_and_a_letter_picks_that_capture():
    terminal, out = player("1\nb\n")
    assert await terminal.choose(my_turn()) == Move(card("7S"), cards("3D 4S"))
    assert "7S can take: a) 3H 4S   b) 3D 4S" in out.getvalue()
    assert "Take which (a-b, Enter to go back): " in out.getvalue()

    terminal, _ = player("1\nA\n")  # letters in either case
    assert await terminal.choose(my_turn()) == Move(card("7S"), cards("3H 4S"))


async def test_tie_choices_use_the_card_style():
    terminal, out = player("1\na\n", SYMBOLS)
    await terminal.choose(my_turn())
    assert "7♠ can take: a) 3♥ 4♠   b) 3♦ 4♠" in out.getvalue()


@pytest.mark.parametrize("back", ["\n", "0\n", "  \n"])
async def test_going_back_from_a_tie_asks_for_the_card_again(back):
    terminal, out = player("1\n" + back + "4\n")
    assert await terminal.choose(my_turn()) == Move(card("2H"), ())
    assert out.getvalue().count("Your move (1-4): ") == 2


async def test_bad_card_numbers_reprompt_then_succeed():
    typed = ["abc", "", "   ", "0", "5", "-1", "99999999999999999999", "1.5", "\x1b[A", "two", "2"]
    terminal, out = player("".join(t + "\n" for t in typed))
    assert await terminal.choose(my_turn()) == Move(card("9C"), ())
    text = out.getvalue()
    assert text.count("Your move (1-4): ") == len(typed)
    assert "'abc' is not a card number" in text
    assert "'5' is not a card number" in text
    assert "'\\x1b[A' is not a card number" in text  # control characters are shown harmlessly
    assert "\x1b[A" not in text


async def test_absurd_input_reprompts():
    terminal, out = player("9" * 5000 + "\n" + "x" * 100_000 + "\n2\n")
    assert await terminal.choose(my_turn()) == Move(card("9C"), ())
    assert out.getvalue().count("is not a card number") == 2


async def test_bytes_that_are_not_text_reprompt():
    inp = io.TextIOWrapper(io.BytesIO(b"\xff\xfe\n"), encoding="utf-8")
    terminal = TerminalPlayer(out=(out := io.StringIO()), inp=inp, style=LETTERS)
    with pytest.raises(InputClosed):  # the bad bytes re-prompt; then the input ends
        await terminal.choose(my_turn())
    assert out.getvalue().count("Your move (1-4): ") == 2
    assert "is not a card number" in out.getvalue()


async def test_a_letter_out_of_range_reprompts():
    terminal, out = player("1\nc\nz\n7\nab\nb\n")
    assert await terminal.choose(my_turn()) == Move(card("7S"), cards("3D 4S"))
    text = out.getvalue()
    assert text.count("Take which (a-b, Enter to go back): ") == 5
    assert "'c' is not one of the letters" in text
    assert "'7' is not one of the letters" in text


async def test_the_prompt_follows_the_hand_size():
    state = my_turn()
    state.apply(Played(1, 0, card("2H"), (), "drop", state.table + (card("2H"),), 1))
    state.apply(Played(1, 1, card("5C"), (), "drop", state.table + (card("5C"),), 0))
    state.apply(YourTurn(8, (Move(card("9C"), (), "drop"), Move(card("QD"), cards("QC"), "capture"))))
    terminal, out = player("4\n3\n")
    assert await terminal.choose(state) == Move(card("QD"), cards("QC"))
    assert "Your move (1-3): " in out.getvalue()


async def test_end_of_input_raises_input_closed():
    for typed in ("", "abc\n", "1\n", "1\nz\n"):
        terminal, _ = player(typed)
        with pytest.raises(InputClosed):
            await terminal.choose(my_turn())


@pytest.mark.parametrize("typed", ["q\n", "Q\n", "quit\n", " q \n", "xyz\nq\n", "1\nq\n"])
async def test_q_quits(typed):
    terminal, _ = player(typed)
    with pytest.raises(PlayerQuit):
        await terminal.choose(my_turn())


async def test_waiting_for_input_leaves_the_event_loop_free():
    read_end, write_end = os.pipe()
    inp = os.fdopen(read_end, "r")
    # Should choose() ever block the loop, this thread unblocks it (with a quit) so the test fails instead of hanging.
    rescue = threading.Timer(5, lambda: os.write(write_end, b"q\n"))
    rescue.start()
    try:
        terminal = TerminalPlayer(out=io.StringIO(), inp=inp, style=LETTERS)
        result = []

        async def choose():
            result.append(await terminal.choose(my_turn()))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(choose)
            await trio.sleep(0.05)
            os.write(write_end, b"2\n")  # from the event loop, so it must still be running
        assert result == [Move(card("9C"), ())]
    finally:
        rescue.cancel()
        os.close(write_end)
        inp.close()


def test_a_line_read_from_a_descriptor_leaves_the_next_line_for_the_next_reader():
    """Read from the descriptor (as a terminal's is, so an abandoned read holds no lock of sys.stdin's): a pipe
    that holds several lines gives them one question at a time, a last line without its end, then None."""
    read_end, write_end = os.pipe()
    os.write(write_end, "1\n/salut à vous\n\xff\n".encode() + b"\xff\nq")
    os.close(write_end)
    with os.fdopen(read_end, "r", encoding="utf-8") as inp:
        assert [typed_line(inp) for _ in range(6)] == ["1", "/salut à vous", "\xff", "\ufffd", "q", None]


async def test_choose_can_be_cancelled_while_waiting_for_input():
    read_end, write_end = os.pipe()
    inp = os.fdopen(read_end, "r")
    terminal = TerminalPlayer(out=io.StringIO(), inp=inp, style=LETTERS)
    with trio.move_on_after(0.1) as scope:
        await terminal.choose(my_turn())
    assert scope.cancelled_caught
    os.close(write_end)  # lets the abandoned reader thread see end of file and finish


# --- drawing and the log -----------------------------------------------------------------------


def match_messages():
    """Seat 0's messages for the start of a match and one game, ending the match."""
    return [
        Welcome(1, 0, b"m" * 16, b"k" * 32, "egyptian", 101, bytes(16), 0),
        MatchStart(("Ann", "Sam")),
        Deal(1, 1, 1, HAND, tuple(card(n) for n in "3H 4S 3D QC".split()), 40, (card("JC"),), 0),
        Played(1, 0, card("QD"), cards("QC"), "capture", tuple(card(n) for n in "3H 4S 3D".split()), 1),
        Played(1, 1, card("10D"), cards("3H 4S 3D"), "basra", (), 0),
        Played(1, 0, card("9C"), (), "drop", (card("9C"),), 1),
        Played(1, 1, card("JH"), (card("9C"),), "sweep", (), 0),
        Played(1, 0, card("2H"), (), "drop", (card("2H"),), 1),
        Played(1, 1, card("JS"), (card("2H"),), "jack_basra", (), 0),
        Deal(1, 2, 1, HAND, (), 32, (), 0),
        Deal(1, 6, 1, HAND, (), 0, (), 0),
        GameEnd(1, 1, cards("5C"), (GameScore(2, 0, 0, 0, 0, 0, 0), GameScore(10, 30, 1, 1, 40, 0, 70)), (0, 70)),
        MatchEnd(1, (0, 110), "target"),
    ]


def test_show_logs_what_happened_in_words():
    state = ClientState(name="Ann")
    terminal, out = player("")
    for message in match_messages():
        state.apply(message)
        terminal.show(state, message)
    assert terminal.log == [
        "Seated at the table: egyptian scoring, first to 101 points",
        "Match start: you against Sam",
        "Game 1: new deal, Sam deals",
        "JC from the first table went to the bottom of the stock",
        "You played QD and took QC",
        "*** BASRA! *** Sam played 10D and took 4S+3H+3D",
        "You played 9C onto the table",
        "Sam played JH and swept the table: 9C",
        "You played 2H onto the table",
        "*** JACK BASRA! *** Sam played JS and took 2H",
        "Hand 2 dealt; 32 cards left in the stock",
        "Hand 6 dealt; the last hand of the game",
        "Sam took the last card from the table",
        "Game 1 over: you scored 0, Sam 70; match: you 0, Sam 70",
        "Match over: Sam wins, 0 to 110",
    ]
    screens = out.getvalue().split("\n\nBASRA")
    assert len(screens) == len(match_messages())  # one screen per message, a blank line apart
    assert "MATCH OVER: Sam wins" in screens[-1]
    assert "\x1b" not in out.getvalue()  # not a terminal: no clearing, no colour


def test_your_turn_is_drawn_by_choose_not_show():
    state = my_turn()
    terminal, out = player("")
    terminal.show(state, YourTurn(8, MOVES))
    assert out.getvalue() == ""


def test_a_notice_joins_the_log_and_redraws():
    state = my_turn()
    terminal, out = player("")
    terminal.notice(state, "the host refused that: not your turn")
    assert terminal.log[-1] == "the host refused that: not your turn"
    assert "the host refused that: not your turn" in out.getvalue()


def test_the_deal_check_is_logged_for_seat_one():
    state = ClientState(name="Sam")
    state.apply(Welcome(1, 1, b"m" * 16, b"k" * 32, "egyptian", 101, bytes(16), 0))
    state.apply(MatchStart(("Ann", "Sam")))
    state.apply(Deal(1, 1, 0, HAND, (), 40, (), 1))
    state.apply(GameEnd(1, None, (), (GameScore(0, 0, 0, 0, 0, 0, 0),) * 2, (0, 0)))
    terminal, out = player("")
    state.results[-1].verified, state.results[-1].verification = True, "deal verified: all good"
    terminal.show(state, Reveal(1, b"s" * 32, b"g" * 64))
    assert terminal.log == ["Game 1: deal verified"]
    assert "Deal verified: all good" in out.getvalue()

    state.results[-1].verified = False
    terminal.show(state, Reveal(1, b"s" * 32, b"g" * 64))
    assert terminal.log[-1] == "Game 1: DEAL CHECK FAILED"


def test_an_abandoned_match_is_logged():
    state = my_turn()
    terminal, _ = player("")
    message = MatchEnd(0, (30, 10), "abandoned")
    state.apply(message)
    terminal.show(state, message)
    assert terminal.log[-1] == "Match abandoned at 30 to 10: Sam dropped out of the match"  # version 1: no account of why

    evidence = AbsenceEvidence(60, (("away", 5, 40), ("grace_over", 65_005, 40)), b"s" * 64)
    message = MatchEnd(1, (30, 10), "abandoned", evidence)
    state.apply(message)
    terminal.show(state, message)
    assert terminal.log[-1] == "Match abandoned at 30 to 10: You lost the connection and did not come back in time"


def test_on_a_terminal_each_screen_is_cleared_first():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    terminal = TerminalPlayer(out=out, inp=io.StringIO(""), style=LETTERS)
    state = my_turn()
    terminal.notice(state, "one")
    terminal.notice(state, "two")
    assert out.getvalue().count(CLEAR_SCREEN) == 2
    assert out.getvalue().startswith(CLEAR_SCREEN)


def test_a_terminal_without_unicode_gets_letters_and_never_an_encoding_error():
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii")
    terminal = TerminalPlayer(out=out, inp=io.StringIO(""))
    assert terminal.style == CardStyle(colour=False, symbols=False)
    state = my_turn()
    state.names = ("Ann", "Zoë 名")
    terminal.notice(state, "Zoë 名 says hello")
    out.flush()
    assert b"Zo? ? says hello" in raw.getvalue()


def test_letter_labels():
    assert letter_labels(3) == ["a", "b", "c"]
    labels = letter_labels(60)
    assert labels[25:28] == ["z", "aa", "ab"]
    assert len(set(labels)) == 60


async def test_after_a_game_ends_its_breakdown_stays_up_until_enter():
    terminal, out = player("\n2\n3\n")
    state = ClientState(name="Ann")
    for message in (
        Welcome(1, 0, b"m" * 16, b"k" * 32, "egyptian", 101, bytes(16), 0),
        MatchStart(("Ann", "Sam")),
        Deal(1, 1, 1, HAND, tuple(card(n) for n in "3H 4S 3D QC".split()), 40, (), 0),
        GameEnd(1, 1, cards("5C"), (GameScore(2, 0, 0, 0, 0, 0, 0), GameScore(50, 30, 1, 1, 40, 0, 70)), (0, 70)),
    ):
        state.apply(message)
        terminal.show(state, message)
    # The next game is dealt at once; the player is still asked to read the last one first.
    for message in (Deal(2, 1, 0, HAND, tuple(card(n) for n in "3H 4S 3D QC".split()), 40, (), 1), YourTurn(8, MOVES)):
        state.apply(message)
        terminal.show(state, message)
    move = await terminal.choose(state)
    shown = out.getvalue()
    pause = shown.index("Next game (Enter): ")
    assert "Most cards" in shown[shown.rindex("BASRA", 0, pause):pause]  # the breakdown is what is on screen
    assert shown.index("Your move (1-4): ") > pause
    assert move == Move(card("9C"), ())
    # Only once per game: the next request goes straight to the move.
    before = len(out.getvalue())
    assert await terminal.choose(state) == Move(card("QD"), cards("QC"))
    assert "Next game" not in out.getvalue()[before:]


# --- chat at the line prompt ---------------------------------------------------------------------


async def test_a_line_starting_with_a_slash_is_said_to_the_other_player_and_never_played():
    from basra_net.client.players import Controls, Say

    terminal, out = player("/good luck\n/\n2\n")
    terminal._controls = controls = Controls()  # what act() keeps; choose() is called alone here
    assert await terminal.choose(my_turn()) == Move(card("9C"), ())
    assert controls.actions.receive_nowait() == Say(Chat(text="good luck"))
    with pytest.raises(trio.WouldBlock):
        controls.actions.receive_nowait()  # a bare slash says nothing
    assert "/words says them to Sam" in out.getvalue()


def test_what_the_other_player_says_shows_in_the_log_without_control_characters():
    state = my_turn()
    terminal, out = player("")
    line = Chat(text="hi\u202e\x1b[2J")
    state.apply(line)
    terminal.show(state, line)
    state.apply(Chat(reaction="good_game"))
    terminal.show(state, state.chat[-1][1])
    assert terminal.log[-2:] == ["Sam: hi[2J", "Sam: (good game!)"]
    assert "\x1b" not in out.getvalue() and "\u202e" not in out.getvalue()


def test_between_the_match_start_and_the_first_deal_the_screen_says_the_deal_is_coming():
    # The host's own seat is the first to see this moment: it must not say it waits for the host.
    state = ClientState(name="Ann")
    state.apply(Welcome(2, 0, b"m" * 16, b"k" * 32, "egyptian", 101, bytes(16), 0))
    state.apply(MatchStart(("Ann", "Sam")))
    terminal, out = player("")
    terminal.show(state, MatchStart(("Ann", "Sam")))
    assert "Waiting for the host" not in out.getvalue()
    assert "Dealing the first game..." in out.getvalue()

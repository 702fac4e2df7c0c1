"""The terminal screen: what it shows, that it fits 80x24, and how cards are styled."""

from __future__ import annotations

import io
import random
import re

import pytest
from rich.cells import cell_len

from basra_net.client.screen import ROWS, WIDTH, CardStyle, match_summary, render
from basra_net.protocol.fingerprint import key_fingerprint
from basra_net.client.state import ClientState, GameSummary
from basra_net.engine import Match
from basra_net.engine.cards import parse_card
from basra_net.engine.scoring import GameScore
from basra_net.protocol.announce import messages_for_seat
from basra_net.protocol.messages import Deal, MatchEnd, MatchStart, Played, Welcome, YourTurn
from basra_net.protocol.termination import Termination

ANSI = re.compile(r"\x1b\[[0-9;]*m")
LETTERS = CardStyle(colour=False, symbols=False)
SYMBOLS = CardStyle(colour=False, symbols=True)
COLOUR = CardStyle(colour=True, symbols=True)
LONG_NAME = "Bartholomew Featherstonehaugh-Xy"[:32]
WIDE_NAME = "名" * 32  # 64 terminal cells


def cards(names: str) -> tuple[int, ...]:
    return tuple(parse_card(n) for n in names.split())


def assert_fits(screen: str) -> None:
    lines = ANSI.sub("", screen).split("\n")
    assert len(lines) <= ROWS <= 24, screen
    for line in lines:
        assert cell_len(line) <= WIDTH, f"{cell_len(line)} cells: {line!r}"


def in_game(**changes) -> ClientState:
    state = ClientState(
        name="Ann",
        seat=1,
        names=("Sam", "Ann"),
        target=101,
        game=2,
        hand_no=3,
        dealer=0,
        turn=1,
        hand=cards("7D 3H 10S KC"),
        opponent_hand_size=3,
        table=cards("2C 5H QD 10H AS"),
        stock_left=24,
        captured=[12, 8],
        basras=[1, 0],
        jack_basras=[0, 1],
        totals=(40, 70),
    )
    for key, value in changes.items():
        setattr(state, key, value)
    return state


def summary(game: int = 2, verified: bool | None = None, verification: str = "") -> GameSummary:
    return GameSummary(
        game,
        (GameScore(28, 30, 1, 0, 10, 0, 40), GameScore(24, 0, 0, 1, 30, 2, 32)),
        (80, 102),
        verified,
        verification,
    )


def game_over(**changes) -> ClientState:
    return in_game(turn=None, table=(), hand=(), opponent_hand_size=0, stock_left=0, totals=(80, 102), **changes)


LOG = [
    "Game 2: new deal, Sam deals",
    "*** BASRA! *** Sam played 5H and took 2C 3D",
    "Hand 3 dealt; 24 cards left in the stock",
    "You played 7C and took 3S 4D",
]


# --- content ---------------------------------------------------------------------------------


def test_in_game_screen_shows_everything_a_player_needs():
    screen = render(in_game(), LOG, None, LETTERS)
    assert_fits(screen)
    assert "Game 2, hand 3/6" in screen
    assert "first to 101" in screen
    assert "1) 7D" in screen and "2) 3H" in screen and "3) 10S" in screen and "4) KC" in screen
    assert "2C   5H   QD   10H  AS" in screen
    assert "Stock: 24 cards left" in screen
    assert "Table (5 cards)" in screen
    sam = next(line for line in screen.splitlines() if " Sam " in line)
    assert sam.split()[1:] == ["3", "12", "1", "0", "40"]  # hand, captured, basras, jack basras, match
    you = next(line for line in screen.splitlines() if " You " in line)
    assert you.split()[1:] == ["You", "4", "8", "0", "1", "70"]  # ">" marks whose turn it is
    assert "Your turn" in screen
    for entry in LOG:
        assert entry in screen


def test_opponents_turn_says_they_are_thinking():
    screen = render(in_game(turn=0), LOG, None, LETTERS)
    assert "Sam is thinking..." in screen
    assert "Your turn" not in screen


def test_empty_table_and_empty_hand():
    screen = render(in_game(table=(), hand=(), turn=0), [], None, LETTERS)
    assert_fits(screen)
    assert "Table (0 cards)" in screen
    assert screen.count("(empty)") == 2


def test_full_table_of_fourteen_cards_fits():
    table = cards("AS 2S 3S 4S 5S 6S 7S 8S 9S 10S AH 2H 3H 10D")
    screen = render(in_game(table=table), LOG * 5, "Type a card number (1-4) and press Enter; q quits.", SYMBOLS)
    assert_fits(screen)
    assert "Table (14 cards)" in screen
    for name in ("A♠", "10♠", "10♦", "3♥"):
        assert name in screen


def test_even_a_table_of_forty_cards_with_a_long_hint_fits():
    screen = render(in_game(table=tuple(range(40))), LOG * 10, "a) 3S 4H   " * 30, SYMBOLS)
    assert_fits(screen)
    assert "Your turn" in screen  # the status line survives; the log gives way


@pytest.mark.parametrize("name", [LONG_NAME, WIDE_NAME])
def test_longest_names_fit_everywhere(name):
    long_log = [f"{name} played 10D and took 10H 10S 10C 3H 4S 2D 5C -- that is a long line indeed"] * 3
    states = [
        in_game(names=(name, name)),
        in_game(names=(name, name), turn=0),
        game_over(names=(name, name), results=[summary()]),
        game_over(names=(name, name), results=[summary()], termination=Termination.TARGET, winner=0),
    ]
    for state in states:
        for style in (LETTERS, SYMBOLS, COLOUR):
            assert_fits(render(state, long_log, None, style))


def test_end_of_game_shows_the_breakdown_and_totals():
    screen = render(game_over(results=[summary()]), LOG, None, LETTERS)
    assert_fits(screen)
    rows = {line.split("  ")[0].strip(): line.split() for line in screen.splitlines() if line.startswith(" ")}
    assert "Game 2 result" in screen
    # Seat 1 (you) first, then Sam.
    assert rows["Cards taken"][-2:] == ["24", "28"]
    assert rows["Most cards"][-2:] == ["0", "30"]
    assert rows["Basras"][-2:] == ["0", "1"]
    assert rows["Jack basras"][-2:] == ["1", "0"]
    assert rows["Basra points"][-2:] == ["30", "10"]
    assert rows["Card bonus"][-2:] == ["2", "0"]
    assert rows["Game total"][-2:] == ["32", "40"]
    assert rows["Match (to 101)"][-2:] == ["102", "80"]
    assert "Game 2 over." in screen
    assert "verif" not in screen.lower()  # nothing checked yet: say nothing


def test_end_of_game_reports_a_verified_deal():
    text = "deal verified: the host's seed matches its commitment and every card and score checks out"
    screen = render(game_over(results=[summary(verified=True, verification=text)]), LOG, None, LETTERS)
    assert_fits(screen)
    assert "Deal verified: the host's seed matches" in screen


def test_end_of_game_reports_a_failed_deal_check_even_when_it_is_long():
    text = "DEAL CHECK FAILED: " + "; ".join(f"game 2: card {i} differs from the committed deck" for i in range(20))
    screen = render(game_over(results=[summary(verified=False, verification=text)]), LOG, None, LETTERS)
    assert_fits(screen)
    assert "DEAL CHECK FAILED" in screen


def test_seat_zero_says_nothing_about_verification():
    state = game_over(seat=0, results=[summary()])
    screen = render(state, LOG, None, LETTERS)
    assert "verif" not in screen.lower()
    assert "Game 2 result" in screen


def test_end_of_match_names_the_winner_and_final_totals():
    state = game_over(results=[summary(verified=True, verification="deal verified")], termination=Termination.TARGET, winner=1)
    screen = render(state, LOG, None, LETTERS)
    assert_fits(screen)
    assert "MATCH OVER: YOU WIN!" in screen
    assert "Final totals: you 102, Sam 80" in screen
    assert "Game 2 result" in screen
    assert "Match over." in screen

    state.winner = 0
    assert "MATCH OVER: Sam wins" in render(state, LOG, None, LETTERS)


def test_abandoned_match():
    state = in_game(turn=None, termination=Termination.ABANDONED, winner=None, results=[])
    screen = render(state, LOG, None, LETTERS)
    assert_fits(screen)
    assert "MATCH ABANDONED: no winner" in screen
    assert "Final totals: you 70, Sam 40" in screen

    state.winner = 1
    screen = render(state, LOG, None, LETTERS)
    assert "MATCH ABANDONED: YOU WIN!" in screen and "Sam dropped out of the match." in screen
    state.termination = Termination.LEFT
    assert "Sam left the match." in render(state, LOG, None, LETTERS)


def test_before_the_match_starts():
    state = ClientState(name="Ann")
    assert "Connecting" in render(state, [], None, LETTERS)
    state.apply(Welcome(1, 1, b"m" * 16, b"k" * 32, "egyptian", 101, bytes(16), 0))
    assert "Waiting for the other player" in render(state, [], None, LETTERS)
    state.apply(MatchStart(("Sam", "Ann")))
    screen = render(state, [], None, LETTERS)
    assert "you against Sam" in screen
    assert_fits(screen)


def test_the_title_names_hidden_hands_and_keeps_the_whole_fingerprint_in_80_columns():
    state = ClientState(name="Ann")
    state.apply(Welcome(2, 1, b"m" * 16, b"k" * 32, "egyptian", 101, bytes(16), 0))
    waiting = render(state, [], None, LETTERS).splitlines()[0]
    assert "hidden hands" not in waiting and "commit-reveal" not in waiting  # no mode before match_start says it
    state.apply(MatchStart(("Sam", "Ann"), deal="hidden"))
    state.apply(Deal(1, 1, 0, cards("7D 3H 10S KC"), cards("3S 4D QH 9C"), 40, (), 1))
    title = render(state, [], None, LETTERS).splitlines()[0]
    assert f"first to 101, hidden hands  key {key_fingerprint(b'k' * 32)}" in title
    assert cell_len(title) < 80


def test_state_built_from_real_messages():
    state = ClientState(name="Ann")
    state.apply(Welcome(1, 0, b"m" * 16, b"k" * 32, "classic", 61, bytes(16), 0))
    state.apply(MatchStart(("Ann", "Sam")))
    state.apply(Deal(1, 1, 1, cards("7D 3H 10S KC"), cards("3S 4D QH 9C"), 40, (), 0))
    state.apply(YourTurn(1, ()))
    state.apply(Played(1, 0, parse_card("7D"), cards("3S 4D"), "capture", cards("QH 9C"), 1))
    screen = render(state, [], None, LETTERS)
    assert_fits(screen)
    # The title names the match's deal mode; with the fingerprint there is no room left for the scoring's name.
    assert "first to 61, commit-reveal  key " in screen.splitlines()[0]
    assert "first to 61, classic, commit-reveal" in render(state, [], None, LETTERS, fingerprint=False).splitlines()[0]
    assert "Game 1, hand 1/6" in screen
    assert "1) 3H" in screen and "KC" in screen and "7D" not in screen
    assert "Table (2 cards)" in screen and "Stock: 40 cards left" in screen
    assert "Sam is thinking..." in screen
    you = next(line for line in screen.splitlines() if " You " in line)
    assert you.split() == ["You", "3", "3", "0", "0", "0"]


def test_every_screen_of_whole_matches_fits():
    """Both seats' screens after every message of real matches, with long names."""
    for seed in range(3):
        rng = random.Random(seed)
        match = Match("egyptian", 101)
        states = [ClientState(name=n) for n in (LONG_NAME, WIDE_NAME)]
        for seat, state in enumerate(states):
            state.apply(Welcome(1, seat, b"m" * 16, b"k" * 32, "egyptian", 101, bytes(16), 0))
            state.apply(MatchStart((LONG_NAME, WIDE_NAME)))
        screens = 0

        def announce(events):
            nonlocal screens
            for seat, state in enumerate(states):
                for message in messages_for_seat(events, seat, match.turn):
                    state.apply(message)
                    for style in (LETTERS, COLOUR):
                        assert_fits(render(state, LOG, "Your move", style))
                    screens += 1

        while not match.over:
            deck = list(range(52))
            rng.shuffle(deck)
            announce(match.start_game(deck))
            while match.turn is not None:
                announce(match.play(match.turn, rng.choice(match.legal_moves())))
        assert states[0].end_reason == "target" and states[0].winner == match.winner
        assert screens > 100


def test_abandoned_match_from_the_message():
    state = in_game()
    state.apply(MatchEnd(winner=1, totals=(40, 70), reason="abandoned"))
    screen = render(state, LOG, None, LETTERS)
    assert "MATCH ABANDONED: YOU WIN!" in screen


# --- card style ------------------------------------------------------------------------------


def test_plain_style_has_no_escape_codes():
    state = game_over(results=[summary(verified=True, verification="deal verified")])
    for screen in (render(in_game(), LOG, "hint", LETTERS), render(in_game(), LOG, None, SYMBOLS), render(state, LOG, None, SYMBOLS)):
        assert "\x1b" not in screen


def test_letter_style_uses_suit_letters():
    screen = render(in_game(), LOG, None, LETTERS)
    assert "7D" in screen and "3H" in screen and "10S" in screen and "KC" in screen
    assert not set("♠♥♦♣") & set(screen)


def test_symbol_style_uses_suit_symbols():
    screen = render(in_game(), [], None, SYMBOLS)
    assert "1) 7♦" in screen and "2) 3♥" in screen and "10♠" in screen and "K♣" in screen


def test_colour_style_paints_hearts_and_diamonds_red_only():
    screen = render(in_game(), [], None, COLOUR)
    assert "\x1b[31m3♥\x1b[0m" in screen
    assert "\x1b[31m7♦\x1b[0m" in screen
    assert "\x1b[31m10♠" not in screen and "\x1b[31mK♣" not in screen
    assert "10♠" in screen


class FakeTerminal(io.StringIO):
    def __init__(self, encoding: str | None, tty: bool) -> None:
        super().__init__()
        self._encoding, self._tty = encoding, tty

    @property
    def encoding(self):
        return self._encoding

    def isatty(self) -> bool:
        return self._tty


def test_detect_colour_only_on_a_terminal_without_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert CardStyle.detect(FakeTerminal("utf-8", tty=True)) == CardStyle(colour=True, symbols=True)
    assert CardStyle.detect(FakeTerminal("utf-8", tty=False)) == CardStyle(colour=False, symbols=True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert CardStyle.detect(FakeTerminal("utf-8", tty=True)) == CardStyle(colour=False, symbols=True)
    monkeypatch.setenv("NO_COLOR", "")  # an empty value does not count (no-color.org)
    assert CardStyle.detect(FakeTerminal("utf-8", tty=True)).colour


def test_detect_letters_where_the_encoding_lacks_suit_symbols(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert CardStyle.detect(FakeTerminal("ascii", tty=True)) == CardStyle(colour=True, symbols=False)
    assert not CardStyle.detect(FakeTerminal("latin-1", tty=False)).symbols
    assert not CardStyle.detect(FakeTerminal(None, tty=False)).symbols
    assert not CardStyle.detect(FakeTerminal("no-such-codec", tty=False)).symbols
    assert not CardStyle.detect(io.StringIO()).colour


def test_detect_on_a_closed_stream_is_plain():
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    stream.close()
    assert not CardStyle.detect(stream).colour


def test_the_title_shows_the_host_key_fingerprint_and_still_fits():
    key = bytes(range(32))
    for state in (in_game(host_key=key), in_game(host_key=key, target=1_000_000, game=999)):
        screen = render(state, [], style=LETTERS)
        title = screen.split("\n")[0]
        assert f"key {key_fingerprint(key)}" in title
        assert_fits(screen)


def test_the_title_leaves_the_fingerprint_out_where_nobody_compares_it():
    """A bot game, or a plain connection: the line prompt shows no fingerprint, as the full screen does not."""
    key = bytes(range(32))
    screen = render(in_game(host_key=key), [], style=LETTERS, fingerprint=False)
    assert key_fingerprint(key) not in screen and "key " not in screen.split("\n")[0]


def test_the_result_kept_at_exit_says_the_score_the_winner_and_why_an_abandoned_match_ended():
    state = in_game(turn=None, termination=Termination.TARGET, winner=None, results=[])
    state.winner = state.seat
    assert match_summary(state) == "match over: you won 70 to 40 against Sam (first to 101, 0 games)"
    state.winner = state.opponent
    assert match_summary(state) == "match over: Sam won, 40 to 70 (first to 101, 0 games)"
    state.termination = Termination.LEFT
    assert match_summary(state) == "match abandoned: Sam won, 40 to 70 (first to 101, 0 games); you left the match"
    state.termination = None
    assert match_summary(state) is None

"""Leaving from the screens that hold a join up or close a match: the code and fingerprint questions, the match's end.

Each question waits for the person's answer with the session held up behind it,
so leaving there is the question's answer, never an action queued for later;
once the match is over there is nothing left to leave, so q and Ctrl-C close
the screen, as soon as the session has signed off, without asking.
"""

from __future__ import annotations

import pytest
import trio

from basra_net.client.players import Controls, PlayerLeft
from basra_net.client.tui import CodeScreen, FingerprintScreen, LeaveScreen, ResultScreen
from basra_net.client.state import ClientState
from basra_net.protocol.messages import Away, MatchEnd

from .harness import run_app, until
from .test_screens import game_end_state

LEAVING_KEYS = ["ctrl+c", "escape"]


def answered(ask, question: type, *keys: str):
    """The app once ``ask(player)`` has had its answer from these keys, pressed once ``question`` is on screen."""

    async def main(player, stop):
        return await ask(player)

    async def scenario(app, pilot):
        await until(pilot, lambda: isinstance(app.screen, question), f"the question ({question.__name__})")
        await pilot.press(*keys)
        await until(pilot, lambda: app.done, "the question answered")

    return run_app(scenario, main=main)


def ask_code(player):
    return player.ask_code("this table needs its join code")


def confirm_fingerprint(player):
    return player.confirm_fingerprint("3471 f796 2f3e 5a5a")


@pytest.mark.parametrize("key", LEAVING_KEYS)
def test_ctrl_c_or_escape_at_the_join_code_question_answers_that_the_person_left(key):
    app = answered(ask_code, CodeScreen, key)
    assert app.result is None and app.failure is None


def test_a_code_typed_at_the_question_is_the_answer_and_an_empty_line_none():
    assert answered(ask_code, CodeScreen, "enter", *"K7M-2QX", "enter").result == "K7M-2QX"


@pytest.mark.parametrize("key", LEAVING_KEYS)
def test_ctrl_c_or_escape_at_the_fingerprint_question_leaves_rather_than_deny_the_fingerprint(key):
    app = answered(confirm_fingerprint, FingerprintScreen, key)
    assert isinstance(app.failure, PlayerLeft), app.failure


@pytest.mark.parametrize("key,same", [("y", True), ("n", False)])
def test_the_fingerprint_answer_is_taken_once_and_never_read_again_as_a_card(key, same):
    app = answered(confirm_fingerprint, FingerprintScreen, key)
    assert app.result is same and "is not a card" not in app.hint, app.hint


def signing_off_after(state: ClientState, messages: list, released: list[bool], actions: list):
    """A session that has shown the match's end and is still answering it (its leave, the result's signature)
    until the test lets it end; every action the player took meanwhile is kept."""

    async def main(player, stop):
        controls = Controls()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(player.act, state, controls)
            for message in messages:
                state.apply(message)
                player.show(state, message)
            while not released[0]:  # polled: the test runs on asyncio, the session on trio as its guest
                await trio.sleep(0.01)
            while True:
                try:
                    actions.append(controls.actions.receive_nowait())
                except trio.WouldBlock:
                    break
            nursery.cancel_scope.cancel()
        return "signed off"

    return main


@pytest.mark.parametrize("key", ["q", "ctrl+c"])
def test_q_or_ctrl_c_at_the_match_end_closes_without_asking_once_the_session_has_signed_off(key):
    state, _ = game_end_state()
    released, actions = [False], []
    end = MatchEnd(winner=0, totals=(101, 30), reason="target")

    async def scenario(app, pilot):
        await until(pilot, lambda: isinstance(app.screen, ResultScreen) and app.state.end_reason is not None, "the match's end")
        await pilot.press(key)
        await pilot.pause()
        assert not isinstance(app.screen, LeaveScreen), "asked to leave a match that is over"
        assert app.closing and not app.done
        released[0] = True
        await until(pilot, lambda: app.done, "the session to sign off")

    app = run_app(scenario, main=signing_off_after(state, [end], released, actions))
    assert app.result == "signed off" and actions == [], actions
    assert app.state.request is None and not app.state.away


def test_a_match_that_ends_while_the_other_seat_is_away_asks_nothing_and_waits_for_no_one():
    """The guest's grace ran out at the host's turn: the end closes the turn and the countdown, so the screen
    no longer asks for a card from an empty hand with the guest 'away: waiting 0 s more'."""
    state, _ = game_end_state()  # the next game's first turn open, at the host's seat
    state.note_presence(Away(seat=1, grace=120))
    assert state.request is not None and state.away
    state.apply(MatchEnd(winner=0, totals=(40, 30), reason="abandoned"))
    assert state.request is None and state.moves == () and state.away == {}

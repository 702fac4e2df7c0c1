"""`basra replay`: stepping through a real transcript, game jumps, every hand after a game, the verdict on top."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from basra_net.client.replay import load_replay
from basra_net.client.screen import CardStyle
from basra_net.client.tui import ReplayApp, ResultScreen
from basra_net.protocol import transcript
from basra_net.protocol.messages import Deal

from .harness import screen_text

STYLE = CardStyle(symbols=True)


def run_replay(path, scenario, size=(80, 24)):
    replay = load_replay(path, STYLE)

    async def go():
        app = ReplayApp(replay, path.name, ascii=False)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await scenario(app, pilot)

    asyncio.run(asyncio.wait_for(go(), 60))
    return replay


def test_stepping_forward_and_back_and_jumping_to_a_game(honest_match):
    seen = {}

    async def scenario(app, pilot):
        seen["first"] = screen_text(app)
        await pilot.press("right", "right", "right")
        seen["after_three"] = app.at
        await pilot.press("left")
        seen["after_back"] = app.at
        await pilot.press("n")
        seen["next_game"] = app.state.game
        await pilot.press("1", "enter")
        seen["jumped"] = (app.state.game, app.at)
        await pilot.press("end")
        seen["last"] = screen_text(app)

    replay = run_replay(honest_match.guest_transcript, scenario)
    assert "REPLAY guest.basra  proven" in seen["first"]
    assert seen["after_three"] == 3 and seen["after_back"] == 2
    assert seen["next_game"] == 2
    assert seen["jumped"] == (1, replay.game_start(1))
    assert "Match over" in seen["last"] and f"step {len(replay.frames)} of {len(replay.frames)}" in seen["last"]


def test_every_hand_is_shown_once_a_game_is_over_and_matches_what_seat_1_was_dealt(honest_match):
    replay = load_replay(honest_match.guest_transcript, STYLE)
    parsed = transcript.parse(honest_match.guest_transcript.read_bytes())
    dealt_to_seat_1 = [m.hand for s, m in parsed.records if isinstance(m, Deal) and m.game == 1]
    hands = replay.every_hand(1, "egyptian")
    assert [second for _, _, second in hands] == dealt_to_seat_1
    every = [c for _, first, second in hands for c in (*first, *second)]
    assert len(every) == len(set(every)) == 48

    seen = {}

    async def scenario(app, pilot):
        await pilot.press("h")
        seen["too_early"] = str(app.query_one("#prompt").render())
        app.show_step(replay.game_ends[1])
        await pilot.press("h")
        await pilot.pause()
        seen["modal"] = isinstance(app.screen, ResultScreen)
        seen["hands"] = screen_text(app)

    run_replay(honest_match.guest_transcript, scenario)
    assert "once the game is over" in seen["too_early"]
    assert seen["modal"] and "Game 1: every hand" in seen["hands"] and "hand 6" in seen["hands"]
    assert STYLE.names(hands[5][1]) in seen["hands"]


def test_a_transcript_that_fails_verification_says_so_in_the_title(honest_match, tmp_path):
    data = honest_match.guest_transcript.read_bytes()
    parsed = transcript.parse(data)
    index, (sender, deal) = next((i, r) for i, r in enumerate(parsed.records) if isinstance(r[1], Deal) and r[1].hand_no == 2)
    rotated = deal.hand[1:] + deal.hand[:1]  # the same cards in another order: not what the revealed deck dealt
    forged = Deal(deal.game, deal.hand_no, deal.dealer, rotated, deal.table, deal.stock_left, deal.moved, deal.turn)
    records = list(parsed.records)
    records[index] = (sender, forged)
    path = tmp_path / "forged.basra"
    path.write_bytes(transcript.header("guest") + b"".join(transcript.record(s, m) for s, m in records))
    seen = {}

    async def scenario(app, pilot):
        seen["title"] = screen_text(app).splitlines()[0]

    replay = run_replay(path, scenario)
    assert not replay.ok
    assert "FAILED" in seen["title"]


@pytest.fixture(scope="module")
def bot_match_host_transcript(tmp_path_factory, basra_command):
    """`basra host --bot` in the default deal (hidden hands), its seat played by the bot too: the host's transcript."""
    home = tmp_path_factory.mktemp("bot_match")
    command = [*basra_command, "host", "--bot", "greedy", "--auto", "greedy", "--target", "20", "--port", "0", "--no-announce"]
    done = subprocess.run(command, env={**os.environ, "BASRA_HOME": str(home)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (path,) = (home / "transcripts").glob("*-host.basra")
    return path


def test_a_host_transcript_is_replayed_as_the_host_saw_it_with_its_hand_and_the_bot_s_count(bot_match_host_transcript):
    replay = load_replay(bot_match_host_transcript, STYLE)
    assert replay.ok and replay.decks
    states = [frame.state for frame in replay.frames]
    assert all(state.seat == 0 and 0 <= state.opponent_hand_size <= 4 for state in states)
    assert states[-1].name == "Host" and states[-1].opponent_name == "Bot"
    first_deal = next(state for state in states if state.game == 1)
    dealt = replay.every_hand(1, first_deal.scoring)
    assert first_deal.hand == dealt[0][1] and first_deal.opponent_hand_size == 4
    in_play = [state for state in states if state.game and state.end_reason is None and state.turn is not None]
    assert in_play and all(abs(len(state.hand) - state.opponent_hand_size) <= 1 for state in in_play)
    seen = {}

    async def scenario(app, pilot):
        app.show_step(replay.game_start(1) or 0)
        await pilot.pause()
        seen["first"] = screen_text(app)

    run_replay(bot_match_host_transcript, scenario)
    assert "as Host saw it" in seen["first"]
    assert STYLE.names(dealt[0][1]).split()[0] in seen["first"].split("Your hand")[1]

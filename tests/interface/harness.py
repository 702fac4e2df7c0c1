"""A match against the greedy bot behind the full-screen app, driven headless by Textual's Pilot.

The match is real (a Table, two ClientSessions over memory streams) and
deterministic (fixed seeds of the commit-reveal deal, which the seats ask
for: a hidden deal's locks are random), so the screens it draws can be
compared with stored snapshots.
"""

from __future__ import annotations

import asyncio
import io
import hashlib
import itertools
from functools import partial
from typing import Awaitable, Callable

import trio
from rich.console import Console
import trio.testing
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.client.players import BotPlayer, Controls
from basra_net.client.session import COMMIT_REVEAL_ONLY, ClientSession, SessionResult
from basra_net.client.state import ClientState
from basra_net.client.tui import BasraApp, ScreenPlayer
from basra_net.host.seat_link import serve_connection
from basra_net.host.table import Table

KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"interface tests").digest())
WAIT = 20.0  # seconds any one thing on screen may take to come


def _seeds(label: str):
    counter = itertools.count(1)
    return lambda: hashlib.sha256(f"{label} {next(counter)}".encode()).digest()


def _seat(nursery: trio.Nursery, table: Table, seat: int) -> trio.abc.Stream:
    client_end, host_end = trio.testing.memory_stream_pair()
    nursery.start_soon(partial(serve_connection, host_end, table, reserved_seat=seat))
    return client_end


def match_against_bot(target: int = 40, opponent: BotPlayer | None = None):
    """The app's main: seat 0 is the screen's player, seat 1 the greedy bot."""

    async def main(player: ScreenPlayer, stop: trio.Event) -> SessionResult:
        table = Table(scoring="egyptian", target=target, identity=KEY, make_seed=_seeds("host"), match_id=bytes(16))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(table.run)
            bot = ClientSession(
                _seat(nursery, table, 1), "Bot", opponent or BotPlayer("greedy"), keep_transcript=False, make_seed=_seeds("bot"),
                deal_modes=COMMIT_REVEAL_ONLY,
            )
            nursery.start_soon(bot.run)
            own = ClientSession(_seat(nursery, table, 0), "Tess", player, keep_transcript=False, deal_modes=COMMIT_REVEAL_ONLY)
            result = await own.run(stop)
            nursery.cancel_scope.cancel()
        return result

    return main


Scenario = Callable[[BasraApp, object], Awaitable[None]]


def run_app(scenario: Scenario, *, size=(80, 24), main=None, ascii: bool = False, fingerprint: bool = False) -> BasraApp:
    async def go() -> BasraApp:
        app = BasraApp(main or match_against_bot(), fingerprint=fingerprint, ascii=ascii)
        async with app.run_test(size=size) as pilot:
            await scenario(app, pilot)
        return app

    return asyncio.run(asyncio.wait_for(go(), 120))


async def until(pilot, predicate: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


async def my_turn(app: BasraApp, pilot) -> None:
    await until(pilot, lambda: app._my_turn() and not app.screen_stack[1:], "the player's turn")
    await pilot.pause()


def screen_text(app: BasraApp) -> str:
    """The screen as plain text, rendered as App.export_screenshot renders it (modal screens over the rest)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, color_system=None, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))  # noqa: SLF001
    return console.export_text()


def scripted(state: ClientState, messages=(), *, say=(), open_turn: bool = True):
    """The app's main for one prepared moment: ``messages`` shown, then a turn opened; the player's first action returned."""

    async def main(player: ScreenPlayer, stop: trio.Event):
        controls = Controls()
        for line in say:
            player.say(line)
        for message in messages:
            player.show(state, message)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(player.act, state, controls)
            if open_turn:
                controls.request_opened(state.request)
            action = await controls.actions.receive()
            nursery.cancel_scope.cancel()
        return action

    return main

"""Hidden-hands matches over loopback: a guest joining a table, two players at a served one."""

from __future__ import annotations

from pathlib import Path
from typing import Awaitable, Callable, TypeVar

import trio

from basra_net.client.players import BotPlayer
from basra_net.client.session import DEAL_MODES_OFFERED, ClientSession, SessionResult
from basra_net.host.server import ServeSettings, run_serve

Result = TypeVar("Result")


async def join(port: int, name: str, path: Path | None, deal_modes=DEAL_MODES_OFFERED, player=None) -> SessionResult:
    """A player who offers hidden hands joins over the network (and so signs its channel); path: its transcript, if kept."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    session = ClientSession(
        stream, name, player or BotPlayer("greedy"), transcript_path=path, keep_transcript=path is not None,
        deal_modes=deal_modes, countersigns=True,
    )
    return await session.run()


async def play_at_served_table(settings: ServeSettings, play: Callable[[int, str], Awaitable[Result]]) -> dict[str, Result]:
    """`basra serve` with Amr and Dina sitting down at once, each by play(port, name); their results once both are done."""
    results: dict[str, Result] = {}
    async with trio.open_nursery() as nursery:
        port = await nursery.start(lambda task_status: run_serve(settings, task_status=task_status))
        async with trio.open_nursery() as players:
            for name in ("Amr", "Dina"):

                async def seat(name=name) -> None:
                    results[name] = await play(port, name)

                players.start_soon(seat)
        nursery.cancel_scope.cancel()
    return results

"""A joining player killed with SIGKILL, then the same `basra join` run again, gets its seat back.

README's default road first: `basra host --name Sam` with its join code,
TLS and hidden hands, and `basra join ADDRESS --code CODE` (at the full
screen, whose terminal is closed; and headless, killed); then the same at
`basra serve` with a code (at either seat), and the variants (`--open`, the
commit-reveal deal).  Both sides are headless (`--auto`), so that nothing
but the kill interrupts them.  The joining player reaches the host through
a relay that adds a little latency, and the test watches the player's own
transcript, which it writes as the match goes, for the moment to kill it:
before the first play, after each step of the hidden deal it sends (its
lock, an unmasking, a play, its audit, its countersignature between games).
The same command run again must say it is back in the match, the match
must complete on both sides, and both transcripts must pass `basra verify`.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
import trio

from basra_net.match_files import RESUME_FILE, ResumeTickets
from basra_net.protocol.messages import Message

from ..resilience.test_interruptions import Run, listening, start
from ..resilience.test_interruptions import records as _records
from .lagging_relay import LaggingRelay
from .processes import basra_command, finish, free_port, start_basra, wait_for_line
from .terminals import Terminal, needs_tmux, terminal_env

pytestmark = pytest.mark.slow

CODE = "K7M-2QX"
GRACE = "30"  # the host waits this long for the killed player: far longer than running it again takes
LATENCY = 0.03  # seconds the relay adds each way until the kill, so that the moment is still the one seen
CELL_DEADLINE = 90
Records = list[tuple[str, Message]]


@dataclass(frozen=True)
class Moment:
    """When to kill the joining player: ``reached`` of its transcript's records; ``still`` of the records the kill
    left, that the kill fell in the moment (the next step of the match had not reached the player)."""

    reached: Callable[[Records], bool]
    still: Callable[[Records], bool]
    target: int  # points that win the match: enough for the games the moment needs


def _sent(kind: str, game: int = 1, nth: int = 1, of: str | None = None) -> Callable[[Records], bool]:
    def reached(records: Records) -> bool:
        mine = [m for sender, m in records if sender == "guest" and m.TYPE == kind and getattr(m, "game", game) == game]
        return len([m for m in mine if of is None or m.of == of]) >= nth
    return reached


def _lacks(kind: str, game: int, **fields) -> Callable[[Records], bool]:
    def still(records: Records) -> bool:
        return not any(
            m.TYPE == kind and m.game == game and all(getattr(m, k) == v for k, v in fields.items()) for _, m in records
        )
    return still


def _has(kind: str, **fields) -> Callable[[Records], bool]:
    return lambda records: any(m.TYPE == kind and all(getattr(m, k) == v for k, v in fields.items()) for _, m in records)


def _no_play_yet(records: Records) -> bool:
    return not any(m.TYPE == "played" for _, m in records)


MOMENTS = {
    # Game 1 dealt to the player, nobody has played.
    "before the first play": Moment(lambda r: _has("deal", game=1, hand_no=1)(r), _no_play_yet, 1),
    # The steps of the hidden deal the player sends, each before the host's answer to it reached the player.
    "after its lock": Moment(_sent("lock"), _lacks("deal", 1, hand_no=1), 1),
    "after its first unmasking": Moment(_sent("open"), _lacks("deal", 1, hand_no=1), 1),
    "mid-game, after its third play": Moment(_sent("hidden_play", nth=3), lambda r: True, 1),
    "after its audit": Moment(_sent("audit"), _lacks("audited", 1), 1),
    # Between games: game 1 countersigned, game 2 not begun.
    "between games, after its countersignature": Moment(_sent("sig", of="game"), _lacks("shuffle", 2), 61),
    # The commit-reveal deal: the player's seed for game 1 went out, its deal had not come.
    "after its seed": Moment(_sent("seed"), _lacks("deal", 1, hand_no=1), 1),
}


async def _when(moment: Moment, path: Path) -> None:
    while not moment.reached(_records(path)):
        await trio.sleep(0.005)  # the file is the only sign of the moment a test can see through TLS


def _env(home: Path) -> dict[str, str]:
    return dict(os.environ, BASRA_HOME=str(home), NO_COLOR="1", PYTHONUNBUFFERED="1")


def _verified(env: dict[str, str], path: Path) -> None:
    checked = subprocess.run(basra_command("verify", str(path)), env=env, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and "PROVEN" in checked.stdout, checked.stdout + checked.stderr


def _plays(path: Path) -> list[Message]:
    return [m for _, m in _records(path) if m.TYPE == "played"]


async def _kill_and_join_again(nursery: trio.Nursery, env, join_args: tuple[str, ...], first: Run, moment: Moment, relay: LaggingRelay,
                               guest_file: Path) -> Run:
    """Kill the player at the moment; check that the kill fell in it and that the ticket is kept; run the same command again."""
    await _when(moment, guest_file)
    first.process.send_signal(signal.SIGKILL)
    await first.done.wait()
    relay.latency = 0.0
    left = _records(guest_file)
    assert moment.still(left), f"the kill came too late for the moment: the record goes on to {left[-1][1].TYPE}"
    assert ResumeTickets(Path(env["BASRA_HOME"]) / RESUME_FILE).find(f"127.0.0.1:{relay.port}", join_args[join_args.index("--name") + 1], None) is not None
    return await start(nursery, env, *join_args)


def _resumed(run_again: tuple[int, str], other: tuple[int, str], *files: Path, env) -> None:
    code, out = run_again
    assert code == 0 and "basra join: the match is over" in out, out
    assert "back in the match where this seat's transcript ends" in out, out
    assert other[0] == 0, other[1]
    for path in files:
        _verified(env, path)


HOST_CELLS = [
    ("before the first play", ()),
    ("after its lock", ()),
    ("after its first unmasking", ()),
    ("mid-game, after its third play", ()),
    ("after its audit", ()),
    ("between games, after its countersignature", ()),
    # The variants: an open table, and the commit-reveal deal, at a coded TLS table.
    ("mid-game, after its third play", ("--open",)),
    ("after its seed", ("--deal", "commit-reveal")),
]


@pytest.mark.parametrize("moment,variant", HOST_CELLS, ids=[f"{m}{''.join(v)}".replace(" ", "_").replace(",", "") for m, v in HOST_CELLS])
async def test_a_player_killed_at_a_coded_tls_table_runs_join_again_and_the_match_completes(tmp_path, moment, variant):
    env = _env(tmp_path / "home")
    port = free_port()
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    table = ("--open",) if "--open" in variant else ("--code", CODE)
    code = () if "--open" in variant else ("--code", CODE)
    deal = tuple(variant) if "--deal" in variant else ()
    with trio.fail_after(CELL_DEADLINE):
        async with trio.open_nursery() as nursery:
            host = await start(nursery, env, "host", "--name", "Sam", "--auto", "greedy", *table, *deal, "--bind", "127.0.0.1",
                               "--port", str(port), "--grace", GRACE, "--target", str(MOMENTS[moment].target),
                               "--transcript", str(host_file), "--no-announce")
            await listening(port)
            relay = LaggingRelay(port, LATENCY)
            await relay.start(nursery)
            join_args = ("join", f"127.0.0.1:{relay.port}", *code, "--name", "Omar", "--auto", "greedy", *deal,
                         "--transcript", str(guest_file))
            first = await start(nursery, env, *join_args)
            again = await _kill_and_join_again(nursery, env, join_args, first, MOMENTS[moment], relay, guest_file)
            ended, host_ended = await again.ended(), await host.ended()
            nursery.cancel_scope.cancel()
    _resumed(ended, host_ended, host_file, guest_file, env=env)
    assert "Omar resumed seat 1" in host_ended[1], host_ended[1]
    assert _plays(guest_file) == _plays(host_file)
    assert not ResumeTickets(tmp_path / "home" / RESUME_FILE).any_for(f"127.0.0.1:{relay.port}")  # dropped once over


SERVE_CELLS = [(0, "mid-game, after its third play"), (1, "after its first unmasking")]


@pytest.mark.parametrize("seat,moment", SERVE_CELLS, ids=[f"seat{s}-{m}".replace(" ", "_").replace(",", "") for s, m in SERVE_CELLS])
async def test_a_player_killed_at_basra_serve_with_a_code_returns_to_its_own_table(tmp_path, seat, moment):
    port = free_port()
    with trio.fail_after(CELL_DEADLINE):
        async with trio.open_nursery() as nursery:
            server = await start(nursery, _env(tmp_path / "server"), "serve", "--code", CODE, "--bind", "127.0.0.1", "--port", str(port),
                                 "--grace", GRACE, "--target", str(MOMENTS[moment].target), "--no-announce")
            await listening(port)
            relay = LaggingRelay(port, LATENCY)
            await relay.start(nursery)
            # The killed player (through the relay) and the other, each with a data directory of its own.
            killed_env, other_env = _env(tmp_path / "killed"), _env(tmp_path / "other")
            killed_args = ("join", f"127.0.0.1:{relay.port}", "--code", CODE, "--name", "Amr", "--auto", "greedy",
                           "--transcript", str(tmp_path / "killed.basra"))
            other_args = ("join", f"127.0.0.1:{port}", "--code", CODE, "--name", "Dina", "--auto", "greedy",
                          "--transcript", str(tmp_path / "other.basra"))
            first_args, second_args = (killed_args, other_args) if seat == 0 else (other_args, killed_args)
            first_env, second_env = (killed_env, other_env) if seat == 0 else (other_env, killed_env)
            first = await start(nursery, first_env, *first_args)
            while not _has("welcome")(_records(Path(first_args[-1]))):  # seat 0 taken: the next player takes seat 1
                await trio.sleep(0.01)
            second = await start(nursery, second_env, *second_args)
            killed, other = (first, second) if seat == 0 else (second, first)
            again = await _kill_and_join_again(nursery, killed_env, killed_args, killed, MOMENTS[moment], relay, tmp_path / "killed.basra")
            ended, other_ended = await again.ended(), await other.ended()
            server.process.send_signal(signal.SIGINT)
            _, server_out = await server.ended()
            nursery.cancel_scope.cancel()
    _resumed(ended, other_ended, tmp_path / "killed.basra", tmp_path / "other.basra", env=killed_env)
    assert f"Amr resumed seat {seat}" in server_out and "[table 2]" not in server_out, server_out
    assert _plays(tmp_path / "killed.basra") == _plays(tmp_path / "other.basra")


@needs_tmux
def test_a_full_screen_join_whose_terminal_is_closed_runs_again_and_resumes(basra_env, tmp_path):
    """The person at the full screen closes its terminal (tmux goes, the process gets SIGHUP) mid-game; the same join
    run again, headless here so that it plays the match out, is back in it."""
    port = free_port()
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    host = start_basra(basra_env, "host", "--name", "Sam", "--auto", "greedy", "--code", CODE, "--bind", "127.0.0.1", "--port", str(port),
                       "--grace", GRACE, "--target", "1", "--transcript", str(host_file), "--no-announce")
    try:
        wait_for_line(host, "Waiting for the second player")
        join_args = ["join", f"127.0.0.1:{port}", "--code", CODE, "--name", "Omar", "--transcript", str(guest_file)]
        terminal = Terminal(join_args, terminal_env(basra_env), tmp_path, size=(100, 30))
        try:
            terminal.wait_for("hand 1/6")
            terminal.no_traceback()
        finally:
            terminal.close()
        wait_for_line(host, "Omar lost the connection")
        code, out = finish(start_basra(basra_env, *join_args, "--auto", "greedy"), CELL_DEADLINE)
        host_code, host_out = finish(host, CELL_DEADLINE)
    finally:
        host.kill()
    assert code == 0 and "back in the match where this seat's transcript ends" in out, out
    assert host_code == 0 and "Omar resumed seat 1" in host_out, host_out
    for path in (host_file, guest_file):
        _verified(basra_env, path)

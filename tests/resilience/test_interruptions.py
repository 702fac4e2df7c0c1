"""The table of interruptions in README ("When the connection drops, or a machine crashes"), cell by cell.

Real `basra host` and `basra join` processes, headless (`--auto`), over
loopback, each cell first at README's own table (TLS, a join code, hidden
hands) and then over plain TCP; the joining player's connection goes
through the cutting proxy, whose marks say when the match has reached the
chosen moment and hold the traffic there, so that the processes are caught
in it.  Over TLS the proxy stays outside the connection, which a join code
binds to the host's key, and reads its frames with the secrets the host
writes to a key log (tls_frames.py).  Then the event: a process killed and
started again, a Ctrl-C, or the network cut.  Each cell ends one of two
ways: the match resumes and both transcripts verify, or both sides end with
the exit status and the one-line reason README gives.  No output may hold a
traceback.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trio

from basra_net.client.session import RECONNECT_MAX_DELAY
from basra_net.protocol import transcript
from basra_net.protocol.messages import Message

from ..e2e.processes import basra_command, free_port
from .cutting_proxy import TO_HOST, TO_PLAYER, CuttingProxy, Mark
from .tls_frames import KEYLOG_SITE

CELL_DEADLINE = 180  # seconds; a cell takes 2 to 12 on a quiet machine, and several times that on a busy one
GRACE = 2.0  # the host's grace period in seconds, but where the cell is a cut shorter than the grace
SHORT_CUT = 5.0  # "the network cut for 5 s"
LONG_CUT = GRACE + 2.0  # "cut past the grace"
HOLD = 1.5  # seconds the proxy holds the traffic at the moment reached
# A client waits up to RECONNECT_MAX_DELAY between tries, and a restarted host's grace starts when it is up:
# it must hold the seat longer than one wait, or a client that resumes as designed finds the match abandoned.
# A killed join is started again, which on two cores busy with several test runs takes over 10 s: its seat is
# held as long.  Only a cell in which no one comes back waits a grace out.
RESTART_GRACE = max(2 * RECONNECT_MAX_DELAY, 60.0)
CODE = "K7M-2QX"
# The table's configuration: README's own first, then the variant.
TABLES = {
    "coded TLS": ("--code", CODE, "--no-announce"),
    "plain": ("--plain",),
}


@dataclass
class Run:
    """One `basra` process: its exit status and everything it printed, once it has ended."""

    args: tuple[str, ...]
    process: trio.Process | None = None
    code: int | None = None
    out: str = ""
    done: trio.Event = field(default_factory=trio.Event)

    async def ended(self) -> tuple[int, str]:
        await self.done.wait()
        assert "Traceback" not in self.out, self.out
        return self.code, self.out


async def start(nursery: trio.Nursery, env: dict[str, str], *args: str) -> Run:
    run = Run(args)

    async def go(task_status=trio.TASK_STATUS_IGNORED) -> None:
        result = await trio.run_process(
            basra_command(*args), env=env, stderr=subprocess.STDOUT, check=False,
            capture_stdout=True, task_status=task_status,
        )
        run.code, run.out = result.returncode, result.stdout.decode(errors="replace")
        run.done.set()

    run.process = await nursery.start(go)
    return run


async def listening(port: int) -> None:
    while True:
        try:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
        except OSError:
            await trio.sleep(0.05)
            continue
        await stream.aclose()
        return


def records(path: Path) -> list[tuple[str, Message]]:
    """What a transcript holds so far: it is written as the match goes."""
    try:
        return transcript.parse(path.read_bytes()).records
    except (OSError, transcript.TranscriptError):
        return []  # not written yet, or caught between the two halves of a write


async def recorded(path: Path, mark: Mark) -> None:
    """Until the transcript at ``path`` holds the mark's message: that process has taken the moment."""
    sender = "host" if mark.direction == TO_PLAYER else "guest"
    while sum(1 for who, message in records(path) if (who, message.TYPE) == (sender, mark.kind)) < mark.nth:
        await trio.sleep(0.01)


def verified(env: dict[str, str], path: Path, *, finished: bool = True) -> None:
    """The transcript holds: a match that did not finish lacks signatures its end would bring, so it is read with --partial."""
    checked = subprocess.run(
        basra_command("verify", str(path), *(() if finished else ("--partial",))), env=env, capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0 and "Traceback" not in checked.stdout + checked.stderr, checked.stdout + checked.stderr


# The moments, as the proxy sees them on the joining player's connection, in the default deal (hidden hands).
MOMENTS = {
    # The guest's request is open: its bot (search, where the cell needs it open for long) is choosing.
    "own turn": lambda: Mark(TO_PLAYER, "hidden_turn", nth=3, hold=HOLD),
    # The guest's play has reached the host: the host is to move.
    "opponent's turn": lambda: Mark(TO_HOST, "hidden_play", nth=3, hold=HOLD),
    # A game has just ended (the breakdown on a terminal).
    "game end": lambda: Mark(TO_PLAYER, "game_end", hold=HOLD),
    # Game 2's shuffle has arrived; the guest, its dealer, owes the first lock.
    "between games": lambda: Mark(TO_PLAYER, "shuffle", nth=2, hold=HOLD),
    # The same moments in the commit-reveal deal, for the cells README marks [C]: a seat gone while the next
    # game's deal awaits its step (its seed there, its lock with hidden hands) is an absence in both deals.
    "game end, commit-reveal": lambda: Mark(TO_PLAYER, "game_end", hold=HOLD),
    # The commitment for game 2 has arrived; the guest's seed is due.
    "between games, commit-reveal": lambda: Mark(TO_PLAYER, "commit", nth=2, hold=HOLD),
    # The match's end has reached the guest (a tie plays on: it is the first game's end only when that decides);
    # the guest's answer to it waits behind the hold, so the host still holds the table.
    "match end": lambda: Mark(TO_PLAYER, "match_end", hold=HOLD),
}

# What each side ends with: (exit status, a line it prints) for the host, then for the guest; None where it
# runs on to the match's end.  README's outcomes, plus two the match-end and between-games rows give.
OUTCOMES = {
    "resumes": None,
    "joiner left": ((1, "basra host: the match did not finish: Guest left the match"), (130, "basra join: you left the match")),
    "host left": ((130, "basra host: you left the match"), (1, "basra join: the match was abandoned: Host left")),
    "abandoned": (
        (1, "basra host: the match did not finish: Guest did not come back within"),
        (1, "basra join: the match was abandoned: this seat was away longer than the host would wait"),
    ),
    # The host left after its commitment went out and before the guest's seed came in: it revealed the game
    # all the same, so the guest's seed, which crossed the host's end, is answered (README, "see below").
    "host left after its commitment": (
        (130, "basra host: you left the match"),
        (1, "basra join: the match was abandoned: Host left"),
    ),
    # The host was killed once the end was on its way: the guest takes it, and the journal has nothing left to resume.
    "over, nothing to resume": (
        (1, "cannot be resumed: the journal's match is over: there is nothing to resume"),
        (0, "basra join: the match is over"),
    ),
}

# (moment, event, the guest's bot, the host's bot, outcome): the cells README's table marks [H].
CELLS = [
    ("own turn", "kill join", "search", "greedy", "resumes"),
    ("own turn", "kill host", "greedy", "greedy", "resumes"),
    ("own turn", "ctrl-c join", "search", "greedy", "joiner left"),
    ("own turn", "ctrl-c host", "search", "greedy", "host left"),
    ("own turn", "cut 5 s", "greedy", "greedy", "resumes"),
    ("own turn", "cut past grace", "greedy", "greedy", "abandoned"),
    ("opponent's turn", "kill join", "greedy", "greedy", "resumes"),
    ("opponent's turn", "kill host", "greedy", "search", "resumes"),
    ("opponent's turn", "ctrl-c join", "greedy", "greedy", "joiner left"),
    ("opponent's turn", "ctrl-c host", "greedy", "search", "host left"),
    ("opponent's turn", "cut 5 s", "greedy", "greedy", "resumes"),
    ("opponent's turn", "cut past grace", "greedy", "greedy", "abandoned"),
    ("game end", "kill join", "greedy", "greedy", "resumes"),
    ("game end", "kill host", "greedy", "greedy", "resumes"),
    ("game end", "cut 5 s", "greedy", "greedy", "resumes"),
    ("game end", "cut past grace", "greedy", "greedy", "abandoned"),
    ("game end, commit-reveal", "cut past grace", "greedy", "greedy", "abandoned"),
    ("between games", "kill join", "greedy", "greedy", "resumes"),
    ("between games", "kill host", "greedy", "greedy", "resumes"),
    ("between games", "ctrl-c join", "greedy", "greedy", "joiner left"),
    ("between games", "ctrl-c host", "greedy", "greedy", "host left"),
    ("between games", "cut past grace", "greedy", "greedy", "abandoned"),
    ("between games, commit-reveal", "ctrl-c join", "greedy", "greedy", "joiner left"),
    ("between games, commit-reveal", "ctrl-c host", "greedy", "greedy", "host left after its commitment"),
    ("between games", "cut 5 s", "greedy", "greedy", "resumes"),
    ("between games, commit-reveal", "cut past grace", "greedy", "greedy", "abandoned"),
    # The host's own seat has the end, and the table holds the guest's seat for it: Ctrl-C changes nothing.
    ("match end", "ctrl-c host", "greedy", "greedy", "resumes"),
    ("match end", "kill host", "greedy", "greedy", "over, nothing to resume"),
]

# Enough points for a second game; one game is enough elsewhere.
TARGETS = {moment: 151 for moment in MOMENTS if moment.startswith(("game end", "between games"))}


CELL_IDS = [f"{m}-{e}".replace(", ", "-").replace(" ", "_").replace("'", "") for m, e, *_ in CELLS]


@pytest.mark.parametrize("moment,event,guest_bot,host_bot,outcome", CELLS, ids=CELL_IDS)
@pytest.mark.parametrize("table", list(TABLES), ids=[table.replace(" ", "_") for table in TABLES])
async def test_an_interruption_ends_in_a_resumed_match_or_a_clear_ending_on_both_sides(tmp_path, table, moment, event, guest_bot, host_bot,
                                                                                      outcome):
    env = dict(os.environ, BASRA_HOME=str(tmp_path / "home"), NO_COLOR="1", PYTHONUNBUFFERED="1")
    keylog = tmp_path / "keys.log" if table == "coded TLS" else None
    # Only the host logs its secrets: it writes each before it sends under it, so the proxy never waits on the player.
    host_env = env if keylog is None else dict(env, SSLKEYLOGFILE=str(keylog), PYTHONPATH=os.pathsep.join(
        [str(KEYLOG_SITE), *filter(None, [os.environ.get("PYTHONPATH")])]))
    port = free_port()
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    grace = 4 * SHORT_CUT if event == "cut 5 s" else RESTART_GRACE if event.startswith("kill") else GRACE
    common = (*TABLES[table], "--bind", "127.0.0.1", "--port", str(port), "--grace", str(grace))
    code = ("--code", CODE) if "--code" in TABLES[table] else ()
    transport = ("--plain",) if "--plain" in TABLES[table] else ()
    target = str(TARGETS.get(moment, 1))
    mark = MOMENTS[moment]()
    deal = ("--deal", "commit-reveal") if moment.endswith("commit-reveal") else ()
    held_until_ended = event.startswith("kill") or event.startswith("ctrl-c") and outcome != "resumes"
    if held_until_ended:
        # The moment is held until the process has acted on the signal (the hold released once it has ended), however
        # long a loaded machine takes to deliver it.  In README's narrow case ("between games, commit-reveal", Ctrl-C at
        # the host) the guest's seed would otherwise reach the host first.  A Ctrl-C that changes nothing (at the match's
        # end) keeps HOLD: the host still takes the guest's last countersignature, and a link held past its 5 s to do so
        # after a Ctrl-C is another case.
        mark.hold = math.inf
    with trio.fail_after(CELL_DEADLINE):
        async with trio.open_nursery() as nursery:
            host = await start(nursery, host_env, "host", "--auto", host_bot, "--target", target, "--transcript", str(host_file), *common)
            await listening(port)
            proxy = CuttingProxy(port, marks=[mark], keylog=keylog)
            proxy_port = await nursery.start(proxy.serve)
            join_args = ("join", f"127.0.0.1:{proxy_port}", *transport, *code, "--transcript", str(guest_file), *deal)
            join = await start(nursery, env, *join_args, "--auto", guest_bot)
            await mark.reached.wait()
            if event == "kill join":
                join.process.kill()
                await released_once_ended(proxy, join)
                join = await start(nursery, env, *join_args, "--auto", "greedy")
            elif event == "kill host":
                host.process.kill()
                await released_once_ended(proxy, host)
                host = await start(nursery, host_env, "host", "--resume", "--auto", "greedy", *common)
            elif event == "ctrl-c join":
                await recorded(guest_file, mark)
                join.process.send_signal(signal.SIGINT)
                await released_once_ended(proxy, join)  # a Ctrl-C that ends the match (every one at the guest)
            elif event == "ctrl-c host":
                await recorded(host_file, mark)
                host.process.send_signal(signal.SIGINT)
                if held_until_ended:
                    await released_once_ended(proxy, host)
            else:
                proxy.cut_now(SHORT_CUT if event == "cut 5 s" else LONG_CUT)
            (host_code, host_out), (join_code, join_out) = await host.ended(), await join.ended()
            nursery.cancel_scope.cancel()
    ended_as(outcome, (host_code, host_out), (join_code, join_out))
    transcripts_checked(env, outcome, host_file, guest_file)


async def released_once_ended(proxy: CuttingProxy, run: Run) -> None:
    """The proxy's hold on the moment ends once the process killed or sent Ctrl-C has ended: a Ctrl-C gives the
    process 5 s to leave politely, which the hold does not shorten, however slow the machine."""
    await run.done.wait()
    proxy.release()


def transcripts_checked(env: dict[str, str], outcome: str, host_file: Path, guest_file: Path) -> None:
    """Both transcripts pass `basra verify`; where the host left between a commitment and the guest's seed, the
    guest's record holds that seed, sent, and the host's reveal of the game it was for.

    A transcript of a match that did not finish on its side is read with --partial.
    """
    verified(env, host_file, finished=outcome == "resumes")
    verified(env, guest_file, finished=outcome in ("resumes", "over, nothing to resume"))
    if outcome == "host left after its commitment":
        records = transcript.parse(guest_file.read_bytes()).records
        last_commit = max(m.game for sender, m in records if m.TYPE == "commit")
        assert ("guest", "seed", last_commit) in [(s, m.TYPE, getattr(m, "game", None)) for s, m in records], records
        assert ("host", "reveal", last_commit) in [(s, m.TYPE, getattr(m, "game", None)) for s, m in records], records
        assert not any(m.TYPE == "deal" and m.game == last_commit for _, m in records), "the game was dealt: not the narrow case"


def ended_as(outcome: str, host: tuple[int, str], join: tuple[int, str]) -> None:
    """Both sides ended as README's outcome says, and each said where its transcript is."""
    outputs = f"host said:\n{host[1]}\njoin said:\n{join[1]}"
    expected = OUTCOMES[outcome] or ((0, "basra host: the match is over"), (0, "basra join: the match is over"))
    for (code, out), (expected_code, line) in zip((host, join), expected):
        assert code == expected_code and line in out, outputs
    if outcome == "over, nothing to resume":
        assert host[1].count("\n") == 1, outputs  # the refusal alone: the killed host's transcript is kept as it wrote it
    else:
        assert "transcript saved to" in host[1], outputs
    assert "transcript saved to" in join[1], outputs


async def test_a_host_killed_while_waiting_for_the_guest_has_nothing_to_resume_and_says_so(tmp_path):
    env = dict(os.environ, BASRA_HOME=str(tmp_path / "home"), NO_COLOR="1", PYTHONUNBUFFERED="1")
    port = free_port()
    common = ("--auto", "greedy", "--plain", "--bind", "127.0.0.1", "--port", str(port))
    with trio.fail_after(CELL_DEADLINE):
        async with trio.open_nursery() as nursery:
            host = await start(nursery, env, "host", *common)
            await listening(port)
            host.process.kill()
            await host.done.wait()
            code, out = await (await start(nursery, env, "host", "--resume", *common)).ended()
    assert code == 1 and out.count("\n") == 1, out
    assert "cannot be resumed: the journal ends before both seats were taken: there is no match to resume" in out


async def test_at_basra_serve_a_player_who_presses_ctrl_c_on_the_others_turn_tells_the_other(tmp_path):
    env = dict(os.environ, BASRA_HOME=str(tmp_path / "home"), NO_COLOR="1", PYTHONUNBUFFERED="1")
    port = free_port()
    with trio.fail_after(CELL_DEADLINE):
        async with trio.open_nursery() as nursery:
            server = await start(nursery, env, "serve", "--plain", "--bind", "127.0.0.1", "--port", str(port), "--target", "151")
            await listening(port)
            proxy = CuttingProxy(port, marks=[Mark(TO_HOST, "hidden_play", nth=2)])
            proxy_port = await nursery.start(proxy.serve)
            # Amr plays through the proxy, whose mark says when he has moved: then Dina (the search bot) is thinking.
            amr = await start(nursery, env, "join", f"127.0.0.1:{proxy_port}", "--plain", "--auto", "greedy", "--name", "Amr",
                              "--table", "club", "--transcript", str(tmp_path / "amr.basra"))
            dina = await start(nursery, env, "join", f"127.0.0.1:{port}", "--plain", "--auto", "search", "--name", "Dina",
                               "--table", "club", "--transcript", str(tmp_path / "dina.basra"))
            await proxy.marks[0].reached.wait()
            amr.process.send_signal(signal.SIGINT)
            (amr_code, amr_out), (dina_code, dina_out) = await amr.ended(), await dina.ended()
            server.process.send_signal(signal.SIGINT)
            server_code, server_out = await server.ended()
            nursery.cancel_scope.cancel()
    assert amr_code == 130 and "basra join: you left the match" in amr_out, amr_out
    assert dina_code == 1 and "basra join: the match was abandoned: Amr left" in dina_out, dina_out
    assert server_code == 0 and "basra serve: stopped" in server_out, server_out
    # Both kept the record of their own seat's channel, whichever seat it was, say where, and it verifies.
    for path, out in ((tmp_path / "amr.basra", amr_out), (tmp_path / "dina.basra", dina_out)):
        assert f"transcript saved to {path}" in out
        verified(env, path, finished=False)


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
async def test_basra_serve_stopped_mid_match_tells_every_player_who_ends_at_once(tmp_path, stop_signal):
    """Ctrl-C (or SIGTERM) at `basra serve` during a match: each player is told the server is stopping and ends, without retrying."""
    env = dict(os.environ, BASRA_HOME=str(tmp_path / "home"), NO_COLOR="1", PYTHONUNBUFFERED="1")
    port = free_port()
    with trio.fail_after(CELL_DEADLINE):
        async with trio.open_nursery() as nursery:
            server = await start(nursery, env, "serve", "--plain", "--bind", "127.0.0.1", "--port", str(port), "--target", "151")
            await listening(port)
            proxy = CuttingProxy(port, marks=[Mark(TO_HOST, "hidden_play", nth=3)])
            proxy_port = await nursery.start(proxy.serve)
            players = [
                await start(nursery, env, "join", f"127.0.0.1:{proxy_port}", "--plain", "--auto", "greedy", "--name", "Amr",
                            "--transcript", str(tmp_path / "amr.basra")),
                await start(nursery, env, "join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--name", "Dina",
                            "--transcript", str(tmp_path / "dina.basra")),
            ]
            await proxy.marks[0].reached.wait()
            server.process.send_signal(stop_signal)
            server_code, server_out = await server.ended()
            ended = [await player.ended() for player in players]
            nursery.cancel_scope.cancel()
    assert server_code == 0 and "basra serve: stopped" in server_out, server_out
    assert server_out.count("the server is stopping") == 1, server_out  # the table's log line
    for code, out in ended:
        assert code == 1 and "basra join: the host left the match: the server is stopping" in out, out
        assert "lost the connection" not in out and "reconnecting" not in out.lower(), out
    # Each seat's record ends with the host's leave: it verifies as far as it goes.
    for path in (tmp_path / "amr.basra", tmp_path / "dina.basra"):
        verified(env, path, finished=False)

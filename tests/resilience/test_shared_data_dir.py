"""Two players sharing one data directory, cut off from one `basra serve` at once, each resume their own seat.

Real processes: `basra serve`, and four `basra join --auto` at two tables, all
with one BASRA_HOME.  Each table's second player (seat 1, which keeps the
transcript and so the ticket to resume) is killed part way through its match
and run again; each finds its own ticket, by the host, its name and its table.
"""

from __future__ import annotations

import json
import os
import signal

import trio

from basra_net.match_files import RESUME_FILE, ResumeTicket, ResumeTickets
from basra_net.protocol import transcript

from ..e2e.processes import free_port
from .cutting_proxy import TO_PLAYER, CuttingProxy, Mark
from .test_interruptions import CELL_DEADLINE, listening, start

TABLES = {"club": ("Amr", "Badr"), "den": ("Dina", "Hala")}  # each table's seat 0, then seat 1


async def test_two_players_of_one_data_directory_cut_off_from_one_server_each_resume_their_own_seat(tmp_path):
    home = tmp_path / "home"
    env = dict(os.environ, BASRA_HOME=str(home), NO_COLOR="1", PYTHONUNBUFFERED="1")
    port = free_port()
    with trio.fail_after(3 * CELL_DEADLINE):
        async with trio.open_nursery() as nursery:
            server = await start(nursery, env, "serve", "--plain", "--bind", "127.0.0.1", "--port", str(port), "--target", "151", "--no-announce")
            await listening(port)
            # Every seat 1 joins through one address, so that both tickets are kept for the same host.
            firsts_seated = [Mark(TO_PLAYER, "welcome", nth=n) for n in (1, 2)]
            firsts_proxy = CuttingProxy(port, marks=list(firsts_seated))  # the proxy lets go of each mark it reaches
            seconds_seated, seconds_playing = Mark(TO_PLAYER, "match_start", nth=2), Mark(TO_PLAYER, "hidden_turn", nth=4)
            seconds_proxy = CuttingProxy(port, marks=[seconds_seated, seconds_playing])
            first_port, second_port = await nursery.start(firsts_proxy.serve), await nursery.start(seconds_proxy.serve)
            firsts, seconds = {}, {}
            for (table, (first, second)), seated in zip(TABLES.items(), firsts_seated):
                firsts[table] = await start(nursery, env, *join_args(first_port, first, table, tmp_path))
                await seated.reached.wait()  # seat 0 taken: the second player takes seat 1
                seconds[table] = await start(nursery, env, *join_args(second_port, second, table, tmp_path))
            await seconds_seated.reached.wait()  # both matches started: both tickets kept
            await seconds_playing.reached.wait()  # and part way through a first game
            kept = ResumeTickets(home / RESUME_FILE)
            # The proxy forwards a match_start before its player has kept the ticket: wait for both players' own.
            while any(kept.find(f"127.0.0.1:{second_port}", second, table) is None for table, (_, second) in TABLES.items()):
                await trio.sleep(0.05)
            for run in seconds.values():
                run.process.kill()
                await run.done.wait()
            # Both tickets survived the kill, each its own player's.
            for table, (_, second) in TABLES.items():
                ticket = kept.find(f"127.0.0.1:{second_port}", second, table)
                assert ticket is not None and ticket.transcript == tmp_path / f"{second}.basra", json.loads((home / RESUME_FILE).read_text())
            again = {table: await start(nursery, env, *join_args(second_port, TABLES[table][1], table, tmp_path)) for table in TABLES}
            ended = {
                name: await run.ended()
                for table, (first, second) in TABLES.items()
                for name, run in ((first, firsts[table]), (second, again[table]))
            }
            server.process.send_signal(signal.SIGINT)
            await server.ended()
            nursery.cancel_scope.cancel()
    for name, (code, out) in ended.items():
        assert code == 0 and "basra join: the match is over" in out, f"{name}:\n{out}"
    for table, (first, second) in TABLES.items():
        assert "back in the match where this seat's transcript ends" in ended[second][1], ended[second][1]
        # The resumed record is this table's match, whole and signed: the seat resumed was the player's own.
        parsed = transcript.parse((tmp_path / f"{second}.basra").read_bytes())
        assert next(m.names for _, m in parsed.records if m.TYPE == "match_start") == (first, second)
        assert transcript.verify(parsed).ok
    assert not ResumeTickets(home / RESUME_FILE).any_for(f"127.0.0.1:{second_port}")  # each dropped its own, once over


def join_args(port: int, name: str, table: str, folder) -> tuple[str, ...]:
    return ("join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--name", name, "--table", table,
            "--transcript", str(folder / f"{name}.basra"))


def test_a_tickets_file_of_an_earlier_version_is_read_for_any_player_at_its_host_and_written_back_keyed(tmp_path):
    path = tmp_path / RESUME_FILE
    path.write_text(json.dumps({"10.0.0.5:5252": {"match": "ab" * 16, "token": "cd" * 16, "transcript": "/t/old.basra"}}))
    tickets = ResumeTickets(path)
    old = tickets.find("10.0.0.5:5252", "Badr", None)
    assert old is not None and (old.match_id, old.seat, old.transcript.name) == (bytes.fromhex("ab" * 16), 1, "old.basra")
    assert tickets.find("10.0.0.6:5252", "Badr", None) is None
    # A new ticket at the same host is kept beside it, and the old one is written back under its own key.
    new = ResumeTicket("10.0.0.5:5252", "Hala", "den", bytes(16), 1, bytes(16), tmp_path / "new.basra")
    tickets.put(new)
    assert tickets.find("10.0.0.5:5252", "Hala", "den") == new
    assert tickets.find("10.0.0.5:5252", "Badr", None) == old
    assert set(json.loads(path.read_text())) == {old.key, new.key}
    tickets.drop(new.key)
    assert tickets.find("10.0.0.5:5252", "Hala", "den") == old  # the old ticket, which named no player, is left

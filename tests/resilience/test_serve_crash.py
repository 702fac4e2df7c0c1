"""`basra serve` killed mid-game with several tables running, then `basra serve --resume`; and its journal failing.

Real processes over loopback: a server, and real `basra join` processes
played by bots, each with a data directory of its own as on separate
machines.  After the restart every match completes; every transcript, the
players' and the server's, verifies, and the two records of each match hold
the same plays: nothing lost, nothing played twice.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import threading
from pathlib import Path

import pytest

from basra_net.protocol import transcript
from basra_net.protocol.messages import MatchStart, Played, Shuffle, Welcome

from ..e2e.processes import basra_command, finish, free_port, start_basra, wait_for_line

DEADLINE = 240  # seconds for a whole match with a restart in it, on a busy machine
PLAYERS = 6  # three tables: two unnamed, one named


def _env(home: Path) -> dict[str, str]:
    return dict(os.environ, BASRA_HOME=str(home), NO_COLOR="1", PYTHONUNBUFFERED="1")


def _verified(env: dict[str, str], path: Path) -> None:
    checked = subprocess.run(basra_command("verify", str(path)), env=env, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _match(path: Path) -> tuple[bytes, list[Played]]:
    """The match a transcript records (its id) and its plays, in order."""
    records = [message for _, message in transcript.parse(path.read_bytes()).records]
    match_id = next(message.match_id for message in records if isinstance(message, Welcome))
    return match_id, [message for message in records if isinstance(message, Played)]


class ServerLines:
    """The server's output, read on a thread of its own and kept, so that a test can wait for lines by content."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._process = process
        self._reader = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._reader.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def ended(self, timeout: float) -> tuple[int, str]:
        """The exit status and everything said, once the process has ended; it is killed past the timeout."""
        try:
            code = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            raise AssertionError("the server did not end; it said:\n" + "".join(self.lines)) from None
        self._reader.join(timeout)
        return code, "".join(self.lines)

    def wait_until(self, test, timeout: float) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: test(self.lines), timeout):
                raise AssertionError("the server did not get there; it said:\n" + "".join(self.lines))


def test_basra_serve_killed_mid_game_at_three_tables_resumes_every_match_to_its_end(tmp_path):
    port = str(free_port())
    server_env = _env(tmp_path / "server")
    serving = ("serve", "--plain", "--bind", "127.0.0.1", "--port", port, "--grace", "60", "--target", "501", "--no-announce")
    server = start_basra(server_env, *serving)
    wait_for_line(server, "Journal:")
    lines = ServerLines(server)
    joins, transcripts = [], []
    for number in range(PLAYERS):
        table = ("--table", "friday") if number >= 4 else ()
        path = tmp_path / f"player{number}.basra"
        transcripts.append(path)
        joins.append(start_basra(
            _env(tmp_path / f"player{number}"), "join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy",
            "--name", f"P{number}", "--transcript", str(path), *table,
        ))

    def mid_game_everywhere(said: list[str]) -> bool:
        return len({line.split("]")[0] for line in said if line.startswith("[table") and "game 2 dealt" in line}) == 3

    lines.wait_until(mid_game_everywhere, DEADLINE)
    server.send_signal(signal.SIGKILL)
    server.wait()
    journal = tmp_path / "server" / "journals" / f"serve-{port}.journal"
    assert journal.stat().st_mode & 0o777 == 0o600 and journal.parent.stat().st_mode & 0o777 == 0o700

    # Started afresh instead, the server refuses to leave those matches behind.
    afresh = subprocess.run(basra_command(*serving), env=server_env, capture_output=True, text=True, timeout=60)
    assert afresh.returncode == 1 and "Traceback" not in afresh.stderr, afresh.stderr
    assert "holds 3 match(es) a crash cut off: `basra serve --resume` continues them" in afresh.stderr, afresh.stderr

    # The crash also tore the last write: a batch cut off in the middle, which the restart ignores.
    with open(journal, "ab") as torn:
        torn.write(struct.pack(">I", 300) + b"\x82\xa4type\xa5batch" + bytes(40))

    again = start_basra(server_env, *serving, "--resume")
    resumed = ServerLines(again)
    lines_said = [finish(join, DEADLINE) for join in joins]
    resumed.wait_until(lambda said: sum("the match is over" in line for line in said) == 3, 30)
    again.send_signal(signal.SIGTERM)
    code, said = resumed.ended(30)
    assert code == 0, said
    assert "resumed 3 match(es)" in said and "basra serve: stopped" in said and "Traceback" not in said
    for join_code, out in lines_said:
        assert join_code == 0 and "basra join: the match is over" in out, out
    assert sum("resumed seat" in line for line in resumed.lines) == 6  # every seat, with its ticket
    assert not journal.exists()  # no match left to resume

    # Each player keeps the record of its own seat, whichever it took; the server keeps one for each seat.
    served = sorted((tmp_path / "server" / "transcripts").glob("*host-*"))
    assert all(path.exists() for path in transcripts) and len(served) == len(transcripts)
    for path in transcripts + served:
        _verified(server_env, path)
    matches = [_match(path) for path in transcripts + served]
    assert len(dict(matches)) == 3
    assert all(played == dict(matches)[match_id] for match_id, played in matches)  # the same plays, once each, in every record of a table


def test_basra_serve_whose_journal_fills_the_disk_stops_telling_every_player_in_one_line(tmp_path):
    folder = tmp_path / "small-disk"
    folder.mkdir()
    port = str(free_port())
    command = basra_command(
        "serve", "--plain", "--bind", "127.0.0.1", "--port", port, "--target", "5001", "--no-announce",
        "--journal", str(folder / "serve.journal"),
    )
    # A 64 KiB file system of the server's own, in a mount namespace: the journal runs out of room mid-match.
    mounting = ["unshare", "-m", "sh", "-c", f'mount -t tmpfs -o size=64k tmpfs "{folder}" && exec "$@"', "sh", *command]
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f'mount -t tmpfs -o size=64k tmpfs "{folder}"'], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a small file system here: {probe.stderr.decode().strip()}")
    server = subprocess.Popen(mounting, env=_env(tmp_path / "server"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for_line(server, "Journal:")
    joins = [
        start_basra(_env(tmp_path / f"player{number}"), "join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--name", f"P{number}")
        for number in range(2)
    ]
    code, said = finish(server, DEADLINE)
    assert code == 1, said
    assert "Traceback" not in said
    assert "basra serve: the journal cannot be written; every player is told the server is stopping" in said
    last = said.strip().splitlines()[-1]
    assert last.startswith("basra serve: the journal ") and "could not be written: no space left on device" in last, said
    for join in joins:
        join_code, out = finish(join, 60)
        assert "basra join: the host left the match: the server is stopping" in out and "Traceback" not in out, out
        # Status 1; or 3 on seat 1 when its seed for the next game crossed the leave (the host stops between a
        # commit and the seed, and does not reveal a deal it never took the seed for).
        assert join_code == 1 or (join_code == 3 and "abandoned a fixed deal" in out), out


def test_basra_serve_with_a_journal_it_cannot_make_or_an_unfinished_one_says_so_in_one_line(tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    env = _env(tmp_path / "server")

    def serve(*options: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            basra_command("serve", "--plain", "--bind", "127.0.0.1", "--port", "0", "--no-announce", *options),
            env=env, capture_output=True, text=True, timeout=60,
        )

    cannot = serve("--journal", str(not_a_folder / "serve.journal"))
    assert cannot.returncode == 1 and "Traceback" not in cannot.stderr
    assert cannot.stderr.strip() == f"basra serve: {not_a_folder / 'serve.journal'} cannot be created: not a directory"
    nothing = serve("--resume", "--journal", str(tmp_path / "none.journal"))
    assert nothing.returncode == 1 and nothing.stderr.strip().endswith("there is no such file"), nothing.stderr
    both = serve("--resume", "--no-journal")
    assert both.returncode == 1 and "cannot go with --no-journal" in both.stderr


def test_a_match_of_basra_serve_deal_commit_reveal_resumes_in_that_deal_whatever_the_restart_offers(tmp_path):
    """The deal mode is the match's for every game, resumes included (PROTOCOL.md 15.15): the journal keeps the
    server's offer, so `basra serve --resume` without `--deal` takes a commit-reveal match up in the same deal."""
    port = str(free_port())
    server_env = _env(tmp_path / "server")
    serving = ("serve", "--plain", "--bind", "127.0.0.1", "--port", port, "--grace", "60", "--target", "151", "--no-announce")
    server = start_basra(server_env, *serving, "--deal", "commit-reveal")
    wait_for_line(server, "Journal:")
    lines = ServerLines(server)
    transcripts = [tmp_path / f"player{number}.basra" for number in range(2)]
    joins = [
        start_basra(_env(tmp_path / f"player{number}"), "join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy",
                    "--name", f"P{number}", "--transcript", str(path), "--deal", "commit-reveal")
        for number, path in enumerate(transcripts)
    ]
    lines.wait_until(lambda said: any("game 2 dealt" in line for line in said), DEADLINE)
    assert any("(commit-reveal deal)" in line for line in lines.lines), lines.lines
    server.send_signal(signal.SIGKILL)
    server.wait()

    again = start_basra(server_env, *serving, "--resume")
    resumed = ServerLines(again)
    lines_said = [finish(join, DEADLINE) for join in joins]
    resumed.wait_until(lambda said: any("the match is over" in line for line in said), 30)
    again.send_signal(signal.SIGTERM)
    code, said = resumed.ended(30)
    assert code == 0 and "resumed 1 match(es)" in said and "Traceback" not in said, said
    for join_code, out in lines_said:
        assert join_code == 0 and "basra join: the match is over" in out, out
    for path in transcripts:
        starts = [m for _, m in transcript.parse(path.read_bytes()).records if isinstance(m, MatchStart)]
        assert starts and all(start.deal is None for start in starts), starts
        assert not any(isinstance(m, Shuffle) for _, m in transcript.parse(path.read_bytes()).records)
        _verified(server_env, path)

"""Whole processes killed mid-match: the host (`basra host --resume`) and the joining player (`basra join` again).

Real `basra` commands over loopback, SIGKILL at a chosen moment, then the
match continues to its end; both transcripts verify from end to end.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
import trio

from basra_net.client.players import BotPlayer
from basra_net.exits import EXIT_OK
from basra_net.host.server import HostSettings, latest_journal, run_host
from basra_net.host.table import Table

from basra_net.protocol import transcript
from basra_net.protocol.messages import STREAM_TYPES, Commit, MatchStart, Played, Reveal

from ..e2e.processes import basra_command, free_port, start_basra, wait_for_line
from ..signed_channels import channel_of, signed_by_both
from ..e2e.processes import finish as finish_process

PROCESS_DEADLINE = 120


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, BASRA_HOME=str(tmp_path / "home"), NO_COLOR="1", PYTHONUNBUFFERED="1")
    return env


def finish(process: subprocess.Popen) -> tuple[int, str]:
    return finish_process(process, PROCESS_DEADLINE)


def verify(env, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(basra_command("verify", str(path)), env=env, capture_output=True, text=True, timeout=60)


def resumed_mid_game(path: Path) -> int:
    """The game in progress when the guest resumed (committed to before, revealed after), from where its resume note falls."""
    kept = transcript.parse(path.read_bytes())
    (note,) = [n for n in kept.notes if n.kind == "connection" and n.text.startswith("resumed after")]
    at = int(note.text.split()[2])  # "resumed after N messages; ..."
    stream = [m for sender, m in kept.records if sender == "host" and isinstance(m, STREAM_TYPES)]
    for game in sorted({m.game for m in stream if isinstance(m, Commit)}):
        committed = next(i for i, m in enumerate(stream) if isinstance(m, Commit) and m.game == game)
        revealed = next(i for i, m in enumerate(stream) if isinstance(m, Reveal) and m.game == game)
        if committed < at <= revealed:
            return game
    raise AssertionError(f"the resume after {at} messages fell between games")


def plays(path: Path) -> list:
    return [m for _, m in transcript.parse(path.read_bytes()).records if isinstance(m, Played)]


def host_killed_in_game_2(tmp_path: Path, env, grace: str) -> tuple[list[str], subprocess.Popen, Path, Path]:
    """A host and a join over loopback, the host killed once game 2 is dealt (the commit-reveal deal, whose commitments the tests compare): its arguments, the join, both transcripts."""
    port = str(free_port())
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    common = ["--auto", "greedy", "--plain", "--bind", "127.0.0.1", "--port", port, "--grace", grace]
    host = start_basra(env, "host", *common, "--target", "101", "--transcript", str(host_file))
    wait_for_line(host, "Waiting for the second player")
    join = start_basra(env, "join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--name", "Omar", "--deal", "commit-reveal",
                       "--transcript", str(guest_file))
    wait_for_line(host, "game 2 dealt")
    host.send_signal(signal.SIGKILL)
    host.wait()
    return common, join, host_file, guest_file


def test_a_host_killed_mid_game_of_the_commit_reveal_deal_resumes_from_its_journal_and_the_match_completes(tmp_path, env):
    common, join, host_file, guest_file = host_killed_in_game_2(tmp_path, env, "60")
    commits_before = [m for _, m in transcript.parse(guest_file.read_bytes()).records if isinstance(m, Commit)]

    again = start_basra(env, "host", "--resume", *common)
    code, out = finish(again)
    join_code, join_out = finish(join)
    assert code == 0, out
    assert join_code == 0, join_out
    assert "resuming match" in out
    # Both records verify from end to end, and agree play for play.
    for path in (host_file, guest_file):
        checked = verify(env, path)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    assert plays(guest_file) == plays(host_file)
    # The journal's replay rebuilt the signed record exactly: one chain, signed by both throughout, on both ends.
    host_channel, guest_channel = channel_of(host_file), channel_of(guest_file)
    assert signed_by_both(host_channel) and signed_by_both(guest_channel)
    assert host_channel.chain.digest == guest_channel.chain.digest
    # The game the kill cut into kept its committed deal: the same commitment before and after.
    game = resumed_mid_game(guest_file)
    commits_after = [m for _, m in transcript.parse(guest_file.read_bytes()).records if isinstance(m, Commit)]
    assert commits_after[: len(commits_before)] == commits_before and game <= len(commits_before)
    host_commits = [m for _, m in transcript.parse(host_file.read_bytes()).records if isinstance(m, Commit)]
    assert host_commits == commits_after
    # The match is over, so its journal is gone, and there is nothing left to resume.
    assert not list((Path(env["BASRA_HOME"]) / "journals").iterdir())
    nothing = subprocess.run(basra_command("host", "--resume", "--auto", "greedy", "--plain", "--port", "0"),
                             env=env, capture_output=True, text=True, timeout=60)
    assert nothing.returncode == 1 and "no journal in" in nothing.stderr


def test_a_joining_player_killed_mid_game_runs_join_again_and_resumes(tmp_path, env):
    port = str(free_port())
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    host = start_basra(env, "host", "--auto", "greedy", "--plain", "--bind", "127.0.0.1", "--port", port, "--grace", "60",
                 "--target", "101", "--transcript", str(host_file))
    wait_for_line(host, "Waiting for the second player")
    join_args = ("join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--name", "Omar", "--transcript", str(guest_file))
    first = start_basra(env, *join_args)
    wait_for_line(host, "game 2 dealt")
    first.send_signal(signal.SIGKILL)
    first.wait()
    wait_for_line(host, "lost the connection")

    second = start_basra(env, *join_args)
    join_code, join_out = finish(second)
    code, out = finish(host)
    assert join_code == 0, join_out
    assert code == 0, out
    assert "Omar resumed seat 1" in out
    checked = verify(env, guest_file)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert plays(guest_file) == plays(host_file)
    # The second run took up the signed record from the transcript and carried the same chain on.
    host_channel, guest_channel = channel_of(host_file), channel_of(guest_file)
    assert signed_by_both(host_channel) and signed_by_both(guest_channel)
    assert host_channel.chain.digest == guest_channel.chain.digest


def test_a_damaged_or_finished_journal_is_refused_with_a_clear_message(tmp_path, env):
    journal = tmp_path / "match.journal"
    played = subprocess.run(
        basra_command("host", "--auto", "greedy", "--bot", "greedy", "--target", "31", "--journal", str(journal),
                      "--transcript", str(tmp_path / "host.basra")),
        env=env, capture_output=True, text=True, timeout=PROCESS_DEADLINE,
    )
    assert played.returncode == 0, played.stdout + played.stderr

    def resume(path: Path) -> subprocess.CompletedProcess:
        return subprocess.run(basra_command("host", "--resume", str(path), "--auto", "greedy", "--plain", "--port", "0"),
                              env=env, capture_output=True, text=True, timeout=60)

    finished = resume(journal)
    assert finished.returncode == 1 and "the journal's match is over" in finished.stderr
    data = journal.read_bytes()
    cut = tmp_path / "cut.journal"
    cut.write_bytes(data[: len(data) - 10])
    refused = resume(cut)
    assert refused.returncode == 1 and "cut short" in refused.stderr, refused.stderr
    flipped = tmp_path / "flipped.journal"
    flipped.write_bytes(data[:200] + bytes([data[200] ^ 1]) + data[201:])
    refused = resume(flipped)
    assert refused.returncode == 1 and "damaged" in refused.stderr, refused.stderr
    junk = tmp_path / "junk.journal"
    junk.write_bytes(b"not a journal at all")
    refused = resume(junk)
    assert refused.returncode == 1 and "not a basra-net journal" in refused.stderr, refused.stderr


def test_a_host_with_the_bot_seated_killed_mid_game_resumes_both_its_own_seats(tmp_path, env):
    host_file = tmp_path / "host.basra"
    host = start_basra(env, "host", "--auto", "greedy", "--bot", "greedy", "--target", "301", "--transcript", str(host_file))
    wait_for_line(host, "game 2 dealt")
    host.send_signal(signal.SIGKILL)
    host.wait()
    # Neither seat has a transcript of its own: both resume from nothing, the whole stream replayed.
    code, out = finish(start_basra(env, "host", "--resume", "--auto", "greedy"))
    assert code == 0, out
    assert "Host resumed seat 0 after 0 of" in out and "Bot resumed seat 1 after 0 of" in out
    assert "the match is over" in out
    checked = verify(env, host_file)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_host_resumed_with_the_bot_seated_replays_its_journal_before_either_seat_resumes(tmp_path, env, monkeypatch):
    """Whichever of the resumed host's tasks trio runs first: here both seats connect and resume while the table's
    task has not run yet, and each is sent the replayed stream as the frames it missed, not all of it queued on its outbox."""
    host = start_basra(env, "host", "--auto", "greedy", "--bot", "greedy", "--target", "301", "--transcript", str(tmp_path / "host.basra"))
    wait_for_line(host, "game 2 dealt")
    host.send_signal(signal.SIGKILL)
    host.wait()
    monkeypatch.setenv("BASRA_HOME", env["BASRA_HOME"])  # the key and the journal the killed host left
    run = Table.run
    said: list[str] = []

    async def run_late(table: Table):
        while sum(" resumed seat " in line for line in said) < 2:  # both local seats connect and resume first
            await trio.sleep(0.01)
        return await run(table)

    monkeypatch.setattr(Table, "run", run_late)

    async def resume():
        with trio.fail_after(PROCESS_DEADLINE):
            return await run_host(HostSettings(tls=False, resume=latest_journal()), BotPlayer("greedy"), say=said.append, log=said.append)

    outcome = trio.run(resume)
    assert outcome.table.completed, said
    assert outcome.own_seat is not None and outcome.own_seat.exit_code == EXIT_OK, said
    resumed = [line for line in said if " resumed seat " in line]
    assert len(resumed) == 2 and all(" after 0 of 0 " not in line for line in resumed), said  # both after the replay


@pytest.mark.parametrize("moment", ["game 1 dealt", "game 2 dealt"])
def test_a_hidden_hands_host_killed_mid_game_takes_its_lock_up_again_from_the_journal(tmp_path, env, moment):
    """The host's own seat kept its lock in the journal before using it: the game in progress goes on."""
    port = str(free_port())
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    common = ["--auto", "greedy", "--plain", "--bind", "127.0.0.1", "--port", port, "--grace", "60"]
    host = start_basra(env, "host", *common, "--target", "101", "--transcript", str(host_file))
    wait_for_line(host, "Waiting for the second player")
    join = start_basra(env, "join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--name", "Omar",
                       "--transcript", str(guest_file))
    wait_for_line(host, moment)
    host.send_signal(signal.SIGKILL)
    host.wait()

    code, out = finish(start_basra(env, "host", "--resume", *common))
    join_code, join_out = finish(join)
    assert code == 0, out
    assert join_code == 0, join_out
    assert "resuming match" in out and "the match is over" in out
    assert plays(guest_file) == plays(host_file)
    games = {m.game for m in plays(guest_file)}
    # The guest checked every game's deal to its audit, the one the kill cut into included.
    assert all(f"game {game}: deal verified" in join_out for game in games), join_out
    for kept in (guest_file, host_file):  # and both records prove it offline
        checked = verify(env, kept)
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_hidden_hands_host_with_the_bot_seated_killed_mid_game_takes_up_both_locks(tmp_path, env):
    host_file = tmp_path / "host.basra"
    host = start_basra(env, "host", "--auto", "greedy", "--bot", "greedy", "--target", "201",
                       "--transcript", str(host_file))
    wait_for_line(host, "game 2 dealt")
    host.send_signal(signal.SIGKILL)
    host.wait()
    code, out = finish(start_basra(env, "host", "--resume", "--auto", "greedy"))
    assert code == 0, out
    assert "Host resumed seat 0 after 0 of" in out and "Bot resumed seat 1 after 0 of" in out
    assert "the match is over" in out and "failed a check" not in out
    kept = transcript.parse(host_file.read_bytes()).records
    assert next(m for _, m in kept if isinstance(m, MatchStart)).deal == "hidden"


def test_a_hidden_hands_join_killed_mid_game_runs_again_with_its_lock_from_the_ticket(tmp_path, env):
    """The party's lock lives in its resume ticket, its steps and what it was shown in its transcript."""
    port = str(free_port())
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    host = start_basra(env, "host", "--auto", "greedy", "--plain", "--bind", "127.0.0.1", "--port", port, "--grace", "60",
                       "--target", "101", "--transcript", str(host_file))
    wait_for_line(host, "Waiting for the second player")
    join_args = ("join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--name", "Omar",
                 "--transcript", str(guest_file))
    first = start_basra(env, *join_args)
    wait_for_line(host, "game 2 dealt")
    first.send_signal(signal.SIGKILL)
    first.wait()
    wait_for_line(host, "lost the connection")

    second = start_basra(env, *join_args)
    join_code, join_out = finish(second)
    code, out = finish(host)
    assert join_code == 0, join_out
    assert code == 0, out
    assert "Omar resumed seat 1" in out and "failed a check" not in out
    assert plays(guest_file) == plays(host_file)
    last_game = max(m.game for m in plays(guest_file))
    assert f"game {last_game}: deal verified" in join_out, join_out


def test_a_host_resumed_from_its_journal_whose_guest_never_returns_gives_an_account_that_holds(tmp_path, env):
    """Killed host, resumed; the guest is gone for good: the match ends abandoned, and the host's signed account of the
    absence starts with its own restart, so it does not contradict itself (no away before the grace ran out)."""
    common, join, host_file, _ = host_killed_in_game_2(tmp_path, env, "2")
    join.send_signal(signal.SIGKILL)
    join.wait()

    code, out = finish(start_basra(env, "host", "--resume", *common))
    assert code == 1 and "Omar did not come back within" in out, out
    parsed = transcript.parse(host_file.read_bytes())
    end = next(m for _, m in parsed.records if m.TYPE == "match_end")
    assert end.reason == "abandoned" and [kind for kind, _, _ in end.evidence.events] == ["restart", "grace_over"]
    checked = subprocess.run(basra_command("verify", "--partial", str(host_file)), env=env, capture_output=True, text=True, timeout=60)
    shown = checked.stdout + checked.stderr
    assert checked.returncode == 0 and "CHEAT" not in shown and "contradicts" not in shown, shown
    assert "restart" in shown and "ASSERTED BY THE HOST" in shown, shown

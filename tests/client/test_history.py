"""`basra history`: past matches from the transcripts folder, newest first, cached; `--last` and numbers name one."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from basra_net import cli
from basra_net.client import history
from basra_net.client.history import past_matches


@pytest.fixture
def transcripts(tmp_path, monkeypatch, honest_match):
    """A data directory holding the honest match's two transcripts under the names a match gives them."""
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))
    folder = tmp_path / "home" / "transcripts"
    folder.mkdir(parents=True)
    older = folder / "20261130-162032-000102030405-host.basra"
    newer = folder / "20261201-090000-000102030405-guest.basra"
    shutil.copy(honest_match.host_transcript, older)
    shutil.copy(honest_match.guest_transcript, newer)
    (folder / "20261202-100000-ffffffffffff-guest.basra").write_bytes(b"not a transcript")
    return older, newer


def test_the_history_lists_each_readable_match_newest_first_as_its_own_seat_saw_it(transcripts):
    older, newer = transcripts
    matches = past_matches()
    assert [m.path for m in matches] == [newer, older]
    guest, host = matches
    assert (guest.role, guest.date, host.role, host.date) == ("guest", "2026-12-01 09:00", "host", "2026-11-30 16:20")
    assert guest.opponent and host.opponent and guest.opponent != host.opponent  # each names the other seat
    assert guest.fingerprint == host.fingerprint and len(guest.fingerprint.split()) == 4
    lost, won = sorted((guest.result, host.result))
    assert lost.startswith("lost ") and won.startswith("won ") and lost.split()[1] == "-".join(reversed(won.split()[1].split("-")))
    assert guest.deal == host.deal == "commit-reveal" and guest.ok and host.ok


def test_the_history_is_read_from_its_cache_until_a_transcript_changes(transcripts, monkeypatch):
    older, newer = transcripts
    first = past_matches()
    read = []
    real = history.describe_transcript
    monkeypatch.setattr(history, "describe_transcript", lambda path: read.append(path.name) or real(path))
    assert past_matches() == first and read == []
    os.utime(newer, ns=(newer.stat().st_atime_ns, newer.stat().st_mtime_ns + 1_000_000_000))
    assert past_matches() == first and read == [newer.name]


def test_verify_and_replay_name_a_match_by_its_number_or_last(transcripts, capsys):
    older, newer = transcripts
    assert cli.main(["verify", "--last"]) == 0
    assert str(newer) in capsys.readouterr().out
    assert cli.main(["verify", "2"]) == 0
    assert str(older) in capsys.readouterr().out
    assert cli.main(["verify", "3"]) == 2
    assert "no match number 3: the history has 2 matches" in capsys.readouterr().err
    assert cli.main(["verify"]) == 2
    assert "--last, or a number from `basra history`" in capsys.readouterr().err
    assert cli.main(["replay", "--last"]) == 2  # not a terminal here: replay says so, about the file it found
    assert "needs a terminal" in capsys.readouterr().err


def test_basra_history_prints_a_line_per_match_and_json_for_scripts(transcripts, capsys):
    older, newer = transcripts
    assert cli.main(["history"]) == 0
    out = capsys.readouterr().out
    assert out.index(newer.name) < out.index(older.name) and "  1  2026-12-01 09:00  v " in out and "commit-reveal" in out
    assert cli.main(["history", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [(e["number"], e["file"]) for e in entries] == [(1, str(newer)), (2, str(older))]


def test_a_damaged_cache_is_read_past(transcripts):
    first = past_matches()
    cache = transcripts[0].parent.parent / history.CACHE_FILE
    entries = json.loads(cache.read_text())
    name = transcripts[1].name
    entries["files"][name]["match"] = {"file": "no such fields"}
    cache.write_text(json.dumps(entries))
    assert past_matches() == first
    cache.write_text("{")
    assert past_matches() == first

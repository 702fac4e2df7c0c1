"""A file of the player's own that cannot be written mid-match is named as such, never as a lost connection.

The real `basra join` runs with a file size limit (RLIMIT_FSIZE, with SIGXFSZ
ignored, so a write past it fails with "File too large" as a full disk fails
with "No space left on device"): its transcript outgrows the limit part way
through the first game.
"""

from __future__ import annotations

import json
import resource
import signal

import pytest

from basra_net.host.table import Table
from basra_net.match_files import RESUME_FILE
from basra_net.protocol import transcript
from tests.host.test_lying_host import join_lying_host

FILE_LIMIT = 6000  # bytes: the handshake and the first deal fit, a whole game does not


def _file_size_limited() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NO_COLOR", "1")


async def test_a_transcript_the_disk_refuses_stops_the_join_with_one_line_that_names_the_file(tmp_path, basra_command, monkeypatch):
    # An honest host, which holds the seat that stopped for a grace of 1 s.
    join, _, guest_transcript = await join_lying_host(
        Table, tmp_path, basra_command, monkeypatch, grace=1, preexec_fn=_file_size_limited
    )
    said = join.stdout.decode() + join.stderr.decode()
    assert join.returncode == 1, said
    assert f"stopped: cannot write the transcript {guest_transcript}: File too large" in said, said
    assert "a file on this computer failed, not the connection" in said, said
    assert "connection lost" not in said and "reconnecting" not in said and "Traceback" not in said, said
    # Nothing is lost silently: the transcript is whole records up to the one refused, and the ticket to resume is kept.
    kept = transcript.parse(guest_transcript.read_bytes())
    assert guest_transcript.stat().st_size <= FILE_LIMIT
    assert [m.TYPE for _, m in kept.records][:3] == ["hello", "welcome", "match_start"]
    assert any(m.TYPE == "deal" for _, m in kept.records)
    tickets = json.loads((tmp_path / "home" / RESUME_FILE).read_text())
    assert [entry["transcript"] for entry in tickets.values()] == [str(guest_transcript)]

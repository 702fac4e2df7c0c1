"""`basra verify --verbose` on every transcript the project writes: both deals, the host's, the guest's and the server's.

Each match is played through the real table and client over loopback; each
transcript then goes through `verify_file` as `basra verify --verbose` runs
it: it is proven, and each game's own values are printed (the hidden deal's
points, lists, scalars and deck; the commit-reveal deal's seeds and deck).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from basra_net.client.session import COMMIT_REVEAL_ONLY
from basra_net.client.verify_file import verify_file
from basra_net.exits import EXIT_OK
from tests.host.test_hidden_cheats import play, serve, served_transcripts


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path))  # where the server keeps its transcripts, for served_transcripts


def verbose(path: Path) -> list[str]:
    lines: list[str] = []
    assert verify_file(path, verbose=True, partial=False, say=lines.append) == EXIT_OK, lines
    return lines


def games(lines: list[str]) -> int:
    return sum(line.startswith("game ") and "check out" in line for line in lines)


async def test_a_served_hidden_match_prints_each_games_own_values_from_every_transcript(tmp_path):
    results = await serve(tmp_path)
    assert all(result.exit_code == 0 for result in results.values()), results
    paths = [*served_transcripts(tmp_path), tmp_path / "seat0.basra"]  # the server's two channels and each seat's own
    for path in paths:
        lines = verbose(path)
        assert games(lines) >= 1, (path.name, lines)
        assert sum(line.startswith("  dealer      seat ") for line in lines) == games(lines), (path.name, lines)
        assert sum("audit scalar" in line for line in lines) == 2 * games(lines), (path.name, lines)
        assert sum(line.startswith("  deck[39:52] ") for line in lines) == games(lines), (path.name, lines)
        assert not any("host seed" in line for line in lines), (path.name, lines)


async def test_a_commit_reveal_match_prints_the_seeds_and_deck_from_both_transcripts(tmp_path):
    guest, outcome = await play(tmp_path, deal_modes=COMMIT_REVEAL_ONLY)
    assert guest.exit_code == 0 and not guest.state.hidden_hands, guest.reason
    for path in (tmp_path / "host.basra", tmp_path / "guest.basra"):
        lines = verbose(path)
        assert games(lines) >= 1, (path.name, lines)
        assert sum(line.startswith("  host seed   ") for line in lines) == games(lines), (path.name, lines)
        assert sum(line.startswith("  deck[39:52] ") for line in lines) == games(lines), (path.name, lines)
        assert not any("audit scalar" in line for line in lines), (path.name, lines)

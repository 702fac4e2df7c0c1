"""Fixtures shared across test folders: one honest, reproducible match and the `basra` command; the quick tier
(which modules are slow), and each test's own data directory."""

from __future__ import annotations

import hashlib
import itertools
import shutil
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType

import pytest
import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.client.players import BotPlayer
from basra_net.client.session import COMMIT_REVEAL_ONLY, ClientSession, SessionResult
from basra_net.host.seat_link import serve_connection
from basra_net.host.table import Table, TableResult
from basra_net.match_files import TranscriptFile


# What a test module imports to run real terminals or several `basra` processes at once: its tests are slow.
REAL_PROCESS_HELPERS = ("pexpect", "tests.e2e.terminals", "tests.e2e.processes")


def _drives_real_processes(module: ModuleType) -> bool:
    """Whether the module imported one of REAL_PROCESS_HELPERS, or something from one."""
    for value in vars(module).values():
        origin = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
        if origin in REAL_PROCESS_HELPERS:
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark slow every test of a module that drives real terminals or processes, but those marked quick."""
    slow_modules: dict[ModuleType, bool] = {}
    for item in items:
        module = getattr(item, "module", None)
        if module is None or item.get_closest_marker("quick"):
            continue
        if module not in slow_modules:
            slow_modules[module] = _drives_real_processes(module)
        if slow_modules[module]:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def own_data_directories(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own BASRA_HOME and XDG directories, so that tests run side by side (pytest -n) never share
    keys, pins, journals or crash reports, nor touch the user's."""
    base = tmp_path_factory.mktemp("own-home")
    monkeypatch.setenv("BASRA_HOME", str(base / "basra"))
    for variable in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(variable, str(base / variable.lower()))


@dataclass(frozen=True)
class HonestMatch:
    host_transcript: Path  # the table's record of the seat-1 channel (no notes)
    guest_transcript: Path  # seat 1's own record, with a verification note per game
    identity: Ed25519PrivateKey  # the host key, so tests can sign forged values
    match_id: bytes
    table: TableResult
    seats: tuple[SessionResult, SessionResult]


def _seeds(label: str):
    counter = itertools.count(1)
    return lambda: hashlib.sha256(f"{label} {next(counter)}".encode()).digest()


async def play_match(
    folder: Path,
    identity: Ed25519PrivateKey,
    match_id: bytes,
    bots: tuple[BotPlayer, BotPlayer] | None = None,
    guest_identity: Ed25519PrivateKey | None = None,
) -> HonestMatch:
    """A whole match of the commit-reveal deal through the real table and client, each seat played by its bot
    (greedy unless given): what the tests of that deal's records check and tamper with.

    Seat 1 signs with guest_identity when given, else with a fresh key.
    """
    # Fixed seeds and the deterministic greedy bot make the same match every run.
    table = Table(
        scoring="egyptian",
        target=60,
        identity=identity,
        transcript=TranscriptFile(folder / "host.basra", "host"),
        make_seed=_seeds("host"),
        match_id=match_id,
    )
    results: dict[int, SessionResult] = {}
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        for seat, name in ((0, "Hoda"), (1, "Omar")):
            host_end, seat_end = trio.socket.socketpair()
            nursery.start_soon(partial(serve_connection, trio.SocketStream(host_end), table, reserved_seat=seat))
            session = ClientSession(
                trio.SocketStream(seat_end), name, bots[seat] if bots else BotPlayer("greedy"),
                transcript_path=folder / "guest.basra", keep_transcript=seat == 1, make_seed=_seeds("guest"),
                identity=guest_identity if seat == 1 else None, deal_modes=COMMIT_REVEAL_ONLY,
            )

            async def run(seat=seat, session=session) -> None:
                results[seat] = await session.run()

            nursery.start_soon(run)
    table.transcript.close()
    assert table.result is not None
    return HonestMatch(folder / "host.basra", folder / "guest.basra", identity, match_id, table.result, (results[0], results[1]))


@pytest.fixture(scope="session")
def honest_match(tmp_path_factory: pytest.TempPathFactory) -> HonestMatch:
    """A whole bot-v-bot match of the commit-reveal deal (several games) played through the real table and client, transcripts on disk."""
    folder = tmp_path_factory.mktemp("honest_match")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BASRA_HOME", str(folder / "home"))
        identity = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"test host key").digest())
        return trio.run(play_match, folder, identity, bytes(range(16)))


@pytest.fixture(scope="session")
def basra_command() -> list[str]:
    """How to run the real `basra` command: the installed script, else the module."""
    script = shutil.which("basra")
    return [script] if script else [sys.executable, "-m", "basra_net.cli"]

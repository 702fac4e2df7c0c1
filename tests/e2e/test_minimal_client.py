"""examples/minimal_client.py, the one-file client written from PROTOCOL.md, against a real `basra host`."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .processes import basra_command, free_port, wait_for_line

CLIENT = Path(__file__).parents[2] / "examples" / "minimal_client.py"
MATCH_TIMEOUT = 120


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.add(node.module or "")
    return modules


def test_minimal_client_imports_nothing_from_basra_net():
    assert "basra_net" not in CLIENT.read_text()
    allowed = {"msgpack", "cryptography"} | set(sys.stdlib_module_names)
    for module in imported_modules(CLIENT):
        assert module.split(".")[0] in allowed, module


def run_match(env: dict, host_args: list[str], plain: bool = False) -> tuple[subprocess.CompletedProcess, list[str], str]:
    """A host with the given extra arguments, and the minimal client against it (over TLS unless plain)."""
    port = free_port()
    plain_flag = ["--plain"] if plain else []
    host = subprocess.Popen(
        [*host_args, "host", "--auto", "greedy", "--port", str(port), "--target", "60", "--no-announce", *plain_flag],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        host_lines = wait_for_line(host, "listening")
        client = subprocess.run(
            [sys.executable, str(CLIENT), *plain_flag, "127.0.0.1", str(port)],
            env=env, capture_output=True, text=True, timeout=MATCH_TIMEOUT,
        )
        rest, _ = host.communicate(timeout=MATCH_TIMEOUT)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    return client, host_lines + rest.splitlines(keepends=True), str(host.returncode)


def games_dealt(host_output: list[str]) -> list[int]:
    return [int(m.group(1)) for line in host_output if (m := re.search(r"game (\d+) dealt", line))]


@pytest.mark.parametrize("plain", [False, True], ids=["tls", "plain"])
def test_minimal_client_plays_a_whole_match_and_verifies_every_deal(basra_env, plain):
    client, host_output, host_code = run_match(basra_env, basra_command(), plain=plain)
    assert client.returncode == 0, client.stdout + client.stderr
    assert host_code == "0", "".join(host_output)
    games = games_dealt(host_output)
    assert games == list(range(1, len(games) + 1)) and games
    verified = [int(g) for g in re.findall(r"^game (\d+): deal verified$", client.stdout, re.M)]
    assert verified == games
    assert "match over (target)" in client.stdout
    # Over TLS both sides show the same key fingerprint.
    fingerprints = [re.search(r"fingerprint ([0-9a-f ]{19})", text) for text in (client.stdout, "".join(host_output))]
    if plain:
        assert fingerprints[0] is None
    else:
        assert fingerprints[0] and fingerprints[1] and fingerprints[0].group(1) == fingerprints[1].group(1)


# A host that deals from a different deck than the seeds fix: the check must catch it.
CHEATING_HOST = """
import sys
from basra_net.host.table import Table
from basra_net.cli import main

honest = Table.deck_for
first, second = {positions}

def deck_for(self, game, host_seed, client_seed):
    deck = list(honest(self, game, host_seed, client_seed))
    if game == 1:
        deck[first], deck[second] = deck[second], deck[first]
    return tuple(deck)

Table.deck_for = deck_for
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    ("positions", "named"),
    [
        ((0, 51), "hand 1: dealt"),  # seat 1's first card comes from the bottom of the deck
        ((8, 13), "table|moved"),  # a table card swapped with a stock card
        ((4, 51), "seat 0 played"),  # only seat 0's hands change: its first card and its last
    ],
    ids=["seat-1-hand", "table", "seat-0-hand"],
)
def test_minimal_client_catches_a_host_that_deals_another_deck(basra_env, positions, named):
    script = CHEATING_HOST.format(positions=positions)
    client, host_output, _ = run_match(basra_env, [sys.executable, "-c", script])
    assert client.returncode == 3, client.stdout + client.stderr + "".join(host_output)
    assert re.search(rf"^game 1: DEAL CHECK FAILED: .*{named}", client.stdout, re.M), client.stdout



def test_minimal_client_plays_a_join_that_accepts_the_commit_reveal_deal_at_a_default_basra_serve(basra_env, tmp_path):
    """A version-1 client at a served table sits with a player who accepts the deal it knows (a default join, which
    insists on hidden hands, is never seated with it: tests/host/test_deal_mismatch.py), and both players end it."""
    port = free_port()
    join_transcript = tmp_path / "join.basra"
    serve = subprocess.Popen(
        basra_command("serve", "--plain", "--bind", "127.0.0.1", "--port", str(port), "--target", "60", "--no-announce"),
        env=basra_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    join, served = None, []
    try:
        served += wait_for_line(serve, "basra join")
        join = subprocess.Popen(
            basra_command("join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--name", "Omar", "--transcript", str(join_transcript),
                          "--deal", "commit-reveal"),
            env=basra_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        served += wait_for_line(serve, "Omar took seat 0")  # the default join first: the minimal client takes seat 1
        client = subprocess.run(
            [sys.executable, str(CLIENT), "--plain", "127.0.0.1", str(port)], env=basra_env, capture_output=True, text=True,
            timeout=MATCH_TIMEOUT,
        )
        join_out, _ = join.communicate(timeout=MATCH_TIMEOUT)
    finally:
        serve.terminate()
        served += serve.communicate(timeout=30)[0].splitlines(keepends=True)
        if join is not None and join.poll() is None:
            join.kill()
            join.wait()
    assert client.returncode == 0, client.stdout + client.stderr
    assert join.returncode == 0, join_out
    assert "(commit-reveal deal)" in "".join(served), "".join(served)
    assert re.search(r"^game 1: deal verified$", client.stdout, re.M), client.stdout
    verified = subprocess.run(basra_command("verify", str(join_transcript)), env=basra_env, capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0 and "deal: commit-reveal" in verified.stdout, verified.stdout
    # Seat 0 of the commit-reveal deal sends no seed and gets no reveal: its record proves the signatures, and says
    # that it cannot show the plays were legal.
    assert "game 1: deal not checked (no fair deal on this channel)" in verified.stdout, verified.stdout
    assert "the plays and scores are not checked" in verified.stdout, verified.stdout

"""Whole matches between real `basra host` and `basra join` processes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from basra_net.protocol import transcript as transcript_format
from basra_net.protocol.messages import MatchStart

from .processes import basra_command, finish, free_port, port_said, start_basra, wait_for_line

MATCH_TIMEOUT = 120
CODE = "K7M-2QX"


def _play_match(
    env: dict, tmp_path: Path, *, host_prefix=(), join_prefix=(), bind: str = "127.0.0.1", join_address: str = "127.0.0.1",
    options: tuple[str, ...] = (),
):
    port = free_port() if not host_prefix else 5252
    host_transcript, join_transcript = tmp_path / "host.basra", tmp_path / "join.basra"
    host = subprocess.Popen(
        [*host_prefix, *basra_command("host", "--auto", "greedy", "--bind", bind, "--port", str(port), "--target", "60",
                                      "--name", "Hoda", "--transcript", str(host_transcript), *options)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    try:
        first_lines = wait_for_line(host, "Waiting for the second player")
        join = subprocess.run(
            [*join_prefix, *basra_command("join", f"{join_address}:{port}", "--auto", "greedy", "--name", "Omar",
                                          "--transcript", str(join_transcript), *options)],
            capture_output=True, text=True, env=env, timeout=MATCH_TIMEOUT,
        )
        rest, _ = host.communicate(timeout=MATCH_TIMEOUT)
        host_out = "".join(first_lines) + rest
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    return host, host_out, join, host_transcript, join_transcript


def _verify(env: dict, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(basra_command("verify", str(path)), capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.quick  # README's default configuration: a join code, TLS, hidden hands
def test_headless_host_and_join_play_a_whole_match_over_loopback_with_hidden_hands_by_default(basra_env, tmp_path):
    host, host_out, join, host_transcript, join_transcript = _play_match(basra_env, tmp_path, options=("--code", CODE))
    assert join.returncode == 0, join.stdout + join.stderr
    assert host.returncode == 0, host_out
    assert "match over" in join.stdout
    assert "(hidden hands)" in host_out
    assert "(TLS, host key fingerprint" in host_out and f"Join code: {CODE}" in host_out, host_out
    assert "pinned: verified by the join code" in join.stdout, join.stdout
    assert "game 1: deal verified: every unmasking and reveal proven" in join.stdout, join.stdout
    assert f"transcript saved to {join_transcript}" in join.stdout
    assert f"transcript saved to {host_transcript}" in host_out
    for transcript in (host_transcript, join_transcript):
        kept = transcript_format.parse(transcript.read_bytes()).records
        assert next(m for _, m in kept if isinstance(m, MatchStart)).deal == "hidden"
        verified = _verify(basra_env, transcript)
        assert verified.returncode == 0, verified.stdout
        assert "deal: hidden hands" in verified.stdout, verified.stdout
        assert "game 1: deal and plays check out; host signature valid, guest signature valid" in verified.stdout


def test_host_and_join_processes_play_the_commit_reveal_deal_when_asked(basra_env, tmp_path):
    host, host_out, join, host_transcript, join_transcript = _play_match(basra_env, tmp_path, options=("--deal", "commit-reveal"))
    assert join.returncode == 0, join.stdout + join.stderr
    assert host.returncode == 0, host_out
    assert "(commit-reveal deal)" in host_out
    for transcript in (host_transcript, join_transcript):
        kept = transcript_format.parse(transcript.read_bytes()).records
        assert next(m for _, m in kept if isinstance(m, MatchStart)).deal is None
        verified = _verify(basra_env, transcript)
        assert verified.returncode == 0, verified.stdout
        assert "deal: commit-reveal" in verified.stdout, verified.stdout
        assert "game 1: deal and plays check out; host signature valid, guest signature valid" in verified.stdout


def test_a_match_across_a_real_network_interface(two_hosts, basra_env, tmp_path):
    host_ns, join_ns, host_addr = two_hosts
    host, host_out, join, host_transcript, join_transcript = _play_match(
        basra_env, tmp_path,
        host_prefix=("ip", "netns", "exec", host_ns), join_prefix=("ip", "netns", "exec", join_ns),
        bind="0.0.0.0", join_address=host_addr,
    )
    assert join.returncode == 0, join.stdout + join.stderr
    assert host.returncode == 0, host_out
    # The host's join hint names its address on the veth interface.
    assert f"basra join {host_addr}" in host_out
    for transcript in (host_transcript, join_transcript):
        assert _verify(basra_env, transcript).returncode == 0


def test_basra_serve_prints_the_exact_join_command_and_the_code(basra_env):
    serve = subprocess.Popen(
        basra_command("serve", "--bind", "127.0.0.1", "--port", "0", "--code", "club-night"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=basra_env,
    )
    try:
        said = wait_for_line(serve, "Join code: club-night")
        lines, port = "".join(said), port_said(said)
    finally:
        serve.terminate()
        serve.communicate(timeout=30)
    assert f"Players type:  basra join 127.0.0.1:{port} --code club-night" in lines
    assert "--table NAME" in lines


def test_two_join_processes_at_basra_serve_are_the_two_parties_of_hidden_hands(basra_env, tmp_path):
    outcomes, _ = two_joins_at_serve(basra_env, tmp_path)
    for code, out in outcomes:
        assert code == 0, out
        assert "game 1: deal verified: every unmasking and reveal proven" in out, out


def test_join_with_nobody_listening_says_so_once_with_what_to_check(basra_env):
    port = free_port()
    done = subprocess.run(basra_command("join", f"127.0.0.1:{port}", "--auto", "greedy"), capture_output=True, text=True,
                          env=basra_env, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"basra join: cannot connect to 127.0.0.1:{port}: Connection refused. Is `basra host` running there, on port {port}?"
        f" A firewall on either machine may be blocking TCP port {port}."
    )


def test_basra_serve_deals_the_commit_reveal_deal_to_players_who_accept_it(basra_env, tmp_path):
    """`basra serve --deal commit-reveal` withdraws the server's offer of hidden hands: two `basra join --deal
    commit-reveal` processes play the commit-reveal deal, and both records say so and verify."""
    outcomes, serve_out = two_joins_at_serve(basra_env, tmp_path, "--deal", "commit-reveal", join_options=("--deal", "commit-reveal"))
    assert "(commit-reveal deal)" in serve_out and "(hidden hands)" not in serve_out, serve_out
    for (code, out), name in zip(outcomes, ("Amr", "Dina")):
        assert code == 0, out
        kept = transcript_format.parse((tmp_path / f"{name}.basra").read_bytes()).records
        assert next(m for _, m in kept if isinstance(m, MatchStart)).deal is None
        verified = _verify(basra_env, tmp_path / f"{name}.basra")
        assert verified.returncode == 0 and "deal: commit-reveal" in verified.stdout, verified.stdout


def two_joins_at_serve(basra_env, tmp_path, *serve_options: str, join_options: tuple[str, ...] = ()) -> tuple[list[tuple[int, str]], str]:
    """Amr and Dina, two `basra join --auto greedy` processes, play a match to 40 at one `basra serve`:
    their exit codes and outputs, and the server's output."""
    serve = start_basra(basra_env, "serve", "--bind", "127.0.0.1", "--port", "0", "--plain", "--target", "40",
                        "--no-announce", *serve_options)
    try:
        port = port_said(wait_for_line(serve, "basra join"))
        joins = [
            start_basra(basra_env, "join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--name", name,
                        "--transcript", str(tmp_path / f"{name}.basra"), *join_options)
            for name in ("Amr", "Dina")
        ]
        outcomes = [finish(join, MATCH_TIMEOUT) for join in joins]
    finally:
        serve.terminate()
        serve_out, _ = serve.communicate(timeout=30)
    return outcomes, serve_out

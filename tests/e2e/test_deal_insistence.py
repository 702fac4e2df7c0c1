"""The guest insists on hidden hands, with real `basra` processes (PROTOCOL.md 15.15).

Default first: a TLS table with a join code.  A `basra join` left at its
default refuses a table that will not deal hidden hands, before any card,
with one line and exit status 4; `basra join --deal commit-reveal` then
plays it at the same host, which kept serving.  On the full screen the
player is asked once, in plain words, whether to play that deal instead.
"""

from __future__ import annotations

import pytest

from basra_net.exits import EXIT_NO_HIDDEN_HANDS

from .processes import finish, port_said, start_basra, wait_for_line
from .terminals import Terminal, needs_tmux, play_out, terminal_env

pytestmark = pytest.mark.slow

MATCH_TIMEOUT = 120
CODE = "K7M-2QX"


def _refused_line(out: str) -> None:
    lines = [line for line in out.splitlines() if line.strip()]
    assert "Traceback" not in out, out
    refusal = [line for line in lines if "will not deal hidden hands" in line]
    assert len(refusal) == 1 and "--deal commit-reveal" in refusal[0], out


def test_a_default_join_refuses_basra_host_deal_commit_reveal_and_a_join_that_accepts_it_plays(basra_env, tmp_path):
    host = start_basra(basra_env, "host", "--auto", "greedy", "--code", CODE, "--deal", "commit-reveal", "--bind", "127.0.0.1",
                       "--port", "0", "--target", "20", "--name", "Hoda", "--no-announce")
    try:
        port = port_said(wait_for_line(host, "Waiting for the second player"))
        joining = ("join", f"127.0.0.1:{port}", "--code", CODE, "--auto", "greedy", "--name", "Omar")
        code, out = finish(start_basra(basra_env, *joining, "--transcript", str(tmp_path / "refused.basra")), MATCH_TIMEOUT)
        assert code == EXIT_NO_HIDDEN_HANDS, out
        _refused_line(out)
        assert not (tmp_path / "refused.basra").exists()  # refused before welcome: no match, no record
        code, out = finish(start_basra(basra_env, *joining, "--deal", "commit-reveal"), MATCH_TIMEOUT)
        assert code == 0 and "match over" in out, out
        host_code, host_out = finish(host, MATCH_TIMEOUT)
    finally:
        if host.poll() is None:
            host.kill()
            host.communicate()
    assert host_code == 0 and "(commit-reveal deal)" in host_out, host_out


def test_a_default_join_refuses_basra_serve_deal_commit_reveal(basra_env):
    serve = start_basra(basra_env, "serve", "--deal", "commit-reveal", "--code", CODE, "--bind", "127.0.0.1", "--port", "0",
                        "--no-announce", "--no-journal")
    try:
        port = port_said(wait_for_line(serve, "basra join"))
        code, out = finish(start_basra(basra_env, "join", f"127.0.0.1:{port}", "--code", CODE, "--auto", "greedy"), MATCH_TIMEOUT)
    finally:
        serve.terminate()
        serve.communicate(timeout=30)
    assert code == EXIT_NO_HIDDEN_HANDS, out
    _refused_line(out)


@needs_tmux
@pytest.mark.parametrize("answer", ["y", "n"])
def test_the_full_screen_asks_once_before_it_plays_the_commit_reveal_deal(basra_env, tmp_path, answer):
    """A default `basra join` on the full screen, refused by a table that will not deal hidden hands, asks one question
    in plain words: y plays that table's commit-reveal deal, n (or Esc) leaves with the refusal and exit status 4."""
    host = start_basra(basra_env, "host", "--auto", "greedy", "--code", CODE, "--deal", "commit-reveal", "--bind", "127.0.0.1",
                       "--port", "0", "--target", "1", "--name", "Hoda", "--no-announce")
    guest = None
    try:
        port = port_said(wait_for_line(host, "Waiting for the second player"))
        guest = Terminal(["join", f"127.0.0.1:{port}", "--code", CODE, "--name", "Omar"], terminal_env(basra_env), tmp_path)
        asked = guest.wait_for("Play the commit-reveal deal at this table? (y / n)")
        assert "will not deal hidden hands" in asked and "sees your cards" in asked, asked
        guest.keys(answer)
        if answer == "y":
            (final,) = play_out(guest)
            assert "basra join: the match is over" in final and "EXITED WITH 0" in final, final
            host_code, host_out = finish(host, MATCH_TIMEOUT)
            assert host_code == 0 and "(commit-reveal deal)" in host_out, host_out
        else:
            final = guest.wait_until(lambda text: guest.exit_code() is not None, "the join's exit")
            said = final.replace("\n", "")  # the refusal line, wrapped at the terminal's width
            assert guest.exit_code() == EXIT_NO_HIDDEN_HANDS and "will not deal hidden hands" in said, final
        guest.no_traceback()
    finally:
        if guest is not None:
            guest.close()
        if host.poll() is None:
            host.kill()
            host.communicate()

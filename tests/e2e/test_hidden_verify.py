"""Real `basra host` and `basra join` processes (hidden hands, the default deal), then `basra verify` on both transcripts.

Each transcript of a hidden-hands match is checked offline, completely, by
the real command: exit 0 and the summary that says what was proven.  A
transcript changed afterwards (a reveal in it replaced) exits 1 with one
line showing the failed reveal and naming no one, since the change breaks
the host's signature, without a traceback (more forgeries:
test_forged_records.py).
"""

from __future__ import annotations

import subprocess
from dataclasses import replace

from basra_net.protocol import transcript
from basra_net.protocol.framing import encode_frame
from basra_net.protocol.messages import Played, to_wire

from .processes import basra_command, finish, port_said, start_basra, wait_for_line

MATCH_TIMEOUT = 120


def verify(env, path) -> subprocess.CompletedProcess:
    return subprocess.run(basra_command("verify", str(path)), capture_output=True, text=True, env=env, timeout=60)


def test_both_transcripts_of_a_hidden_hands_match_verify_offline(basra_env, tmp_path):
    host = start_basra(basra_env, "host", "--auto", "greedy", "--bind", "127.0.0.1", "--port", "0", "--plain",
                       "--target", "101", "--name", "Hoda", "--no-announce",
                       "--transcript", str(tmp_path / "host.basra"))
    try:
        port = port_said(wait_for_line(host, "Waiting for the second player"))
        join = start_basra(basra_env, "join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--name", "Omar",
                           "--transcript", str(tmp_path / "join.basra"))
        code, out = finish(join, MATCH_TIMEOUT)
        assert code == 0, out
    finally:
        host_code, host_out = finish(host, MATCH_TIMEOUT)
    assert host_code == 0, host_out
    for name in ("host", "join"):
        checked = verify(basra_env, tmp_path / f"{name}.basra")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "game 2: deal and plays check out" in checked.stdout
        assert "every unmasking and reveal is proven, and both locked decks hold the 52 cards" in checked.stdout

    parsed = transcript.parse((tmp_path / "join.basra").read_bytes())
    at = next(i for i, (sender, m) in enumerate(parsed.records) if isinstance(m, Played) and m.seat == 0 and m.reveal)
    other = next(m for _, m in parsed.records[at + 1:] if isinstance(m, Played) and m.seat == 0 and m.reveal)
    bodies = list(parsed.bodies)
    sender, played = parsed.records[at]
    bodies[at] = (sender, encode_frame(to_wire(replace(played, reveal=other.reveal)))[4:])  # another card's valid reveal
    forged = tmp_path / "forged.basra"
    forged.write_bytes(transcript.header(parsed.role, transcript.SIGNED_FORMAT)
                       + b"".join(transcript.body_record(s, b) for s, b in bodies))
    checked = verify(basra_env, forged)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "Traceback" not in checked.stdout + checked.stderr and "cheated" not in checked.stdout
    assert any("seat 0's reveal of position" in line and "under no valid host signature: this names no one" in line
               for line in checked.stdout.splitlines()), checked.stdout

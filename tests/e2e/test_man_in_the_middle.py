"""A man in the middle on the first join: a proxy that ends the player's TLS with a key of its own.

The proxy stands where ARP spoofing on a club's Wi-Fi would put it: the
player connects to it, it presents its own certificate, and it relays every
byte, decrypted, to the real host over a TLS connection of its own. With a
join code the code exchange (PROTOCOL.md 14.9) binds the key each side saw,
so the join fails and the host counts a failed code attempt; at an open
table the player is shown the proxy's fingerprint and asked to compare it
with the host's screen before anything is pinned.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
import subprocess
import threading
from pathlib import Path
from typing import Callable

import pexpect

from basra_net.client.pinning import client_tls_context
from basra_net.host.certificate import server_tls_context
from basra_net.host.identity import load_or_create_identity, public_key_bytes
from basra_net.protocol.errors import ProtocolError
from basra_net.protocol.fingerprint import key_fingerprint
from basra_net.protocol.framing import FrameDecoder, encode_frame

from .processes import basra_command, port_said, wait_for_line

CODE = "K7M-2QX"


class TlsInterceptor:
    """Accepts TLS with its own key and relays the plaintext to the host over TLS; one thread per direction.

    Toward the player it writes its own key into the host's `welcome`, as a
    man in the middle must for the client's check of the welcome against the
    certificate to pass.
    """

    def __init__(self, folder: Path, host_port: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        identity = load_or_create_identity(folder)
        self.key = public_key_bytes(identity)
        self.fingerprint = key_fingerprint(self.key)
        self._server = server_tls_context(identity, folder)
        self._host_port = host_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.relayed = 0  # connections relayed to the host
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(raw,), daemon=True).start()

    def _relay(self, raw: socket.socket) -> None:
        try:
            player = self._server.wrap_socket(raw, server_side=True)
            host = client_tls_context().wrap_socket(socket.create_connection(("127.0.0.1", self._host_port)))
        except (OSError, ssl.SSLError):
            raw.close()
            return
        self.relayed += 1
        threading.Thread(target=_pump, args=(player, host, None), daemon=True).start()
        threading.Thread(target=_pump, args=(host, player, self._own_key_in_welcome), daemon=True).start()

    def _own_key_in_welcome(self, wire: dict) -> dict:
        return {**wire, "host_key": self.key} if wire.get("type") == "welcome" else wire

    def close(self) -> None:
        self._listener.close()


def _pump(source: ssl.SSLSocket, sink: ssl.SSLSocket, rewrite: Callable[[dict], dict] | None) -> None:
    """Relay bytes; with ``rewrite``, frame by frame, each frame's map passed through it."""
    decoder = FrameDecoder()
    try:
        while data := source.recv(65536):
            if rewrite is None:
                sink.sendall(data)
                continue
            decoder.feed(data)
            while (wire := decoder.next_message()) is not None:
                sink.sendall(encode_frame(rewrite(wire)))
    except (OSError, ssl.SSLError, ProtocolError):
        pass
    for end in (source, sink):
        try:
            end.close()
        except OSError:
            pass


def _start_host(env: dict[str, str], tmp_path: Path, *options: str) -> tuple[subprocess.Popen, int, list[str]]:
    host = subprocess.Popen(
        basra_command("host", "--auto", "greedy", "--port", "0", "--bind", "127.0.0.1", "--no-announce",
                      "--transcript", str(tmp_path / "host.basra"), *options),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    lines = wait_for_line(host, "Waiting for the second player")
    return host, port_said(lines), lines


def _guest_env(basra_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    env = dict(basra_env)
    env["BASRA_HOME"] = str(tmp_path / "guest-home")
    return env


def test_a_key_substituted_on_a_first_join_with_a_code_fails_the_join_and_the_host_sees_a_failed_attempt(basra_env, tmp_path):
    host, port, _ = _start_host(basra_env, tmp_path, "--code", CODE)
    proxy = TlsInterceptor(tmp_path / "proxy", port)
    guest_env = _guest_env(basra_env, tmp_path)
    try:
        join = subprocess.run(
            basra_command("join", f"127.0.0.1:{proxy.port}", "--code", CODE, "--auto", "greedy", "--name", "Zed"),
            capture_output=True, text=True, env=guest_env, timeout=60,
        )
        seen = wait_for_line(host, "failed the join code")
    finally:
        proxy.close()
        host.kill()
        host.wait()
    assert proxy.relayed == 1
    assert join.returncode == 1, join.stdout + join.stderr
    said = join.stderr.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("basra join: "), join.stderr
    assert "man in the middle" in said[0] and "nothing was pinned" in said[0]
    assert "Traceback" not in join.stdout + join.stderr
    assert "127.0.0.1" in seen[-1] and "someone between the players" in seen[-1]
    pins = Path(guest_env["BASRA_HOME"]) / "known_hosts.json"
    assert not pins.exists() or json.loads(pins.read_text()) == {}


def test_a_key_substituted_on_a_first_join_to_an_open_table_is_shown_for_the_player_to_compare(basra_env, tmp_path):
    host, port, lines = _start_host(basra_env, tmp_path, "--open")
    host_fingerprint = re.search(r"host key fingerprint ([0-9a-f ]+)\)", "".join(lines)).group(1).strip()
    proxy = TlsInterceptor(tmp_path / "proxy", port)
    guest_env = _guest_env(basra_env, tmp_path)
    command = basra_command("join", f"127.0.0.1:{proxy.port}", "--name", "Zed")
    child = pexpect.spawn(command[0], command[1:], env=guest_env, dimensions=(24, 80), encoding="utf-8", timeout=30)
    try:
        # The full screen asks in a box of its own; the line prompt (no terminal) in the same words.
        child.expect(r"Does the host's screen show the same fingerprint\?")
        question = child.before
        child.send("n")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
        proxy.close()
        host.kill()
        host.wait()
    # The player sees the key the proxy presented, which differs from the one on the host's screen.
    assert proxy.fingerprint in question and host_fingerprint not in question
    assert proxy.fingerprint != host_fingerprint
    assert child.exitstatus == 1
    assert "not confirmed" in child.before
    pins = Path(guest_env["BASRA_HOME"]) / "known_hosts.json"
    assert not pins.exists() or json.loads(pins.read_text()) == {}

"""TLS and plain TCP end a connection the same way (PROTOCOL.md, sections 3.1 and 8.2).

A client reads the host's last frame and then the end of the stream at once,
over either transport, so a client that waits for the end before it tries
again meets the lockout its wrong code caused.  And the TLS handshake is the
one section 3.1 describes: any server name and any ALPN offer are accepted,
no protocol is selected, and the certificate's key is the welcome's.
"""

from __future__ import annotations

import os
from functools import partial
import ssl

import pytest
import trio

from basra_net.client.join import JoinSession
from basra_net.client.pinning import client_tls_context, peer_public_key
from basra_net.client.players import BotPlayer
from basra_net.host.certificate import server_tls_context
from basra_net.host.identity import load_or_create_identity
from basra_net.host.server import HostSettings, run_host
from basra_net.protocol.errors import TOO_MANY_ATTEMPTS, WRONG_CODE
from basra_net.protocol.framing import FrameDecoder, encode_frame
from basra_net.protocol.messages import PROTOCOL_VERSIONS, Error, Hello, Welcome, from_wire, to_wire

TEST_DEADLINE = 30
CODE = "K7M-2QX"


@pytest.fixture(autouse=True)
def data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))


async def _start_host(nursery: trio.Nursery, *, tls: bool, code: str | None) -> int:
    settings = HostSettings(bind="127.0.0.1", port=0, target=40, code=code, tls=tls)

    async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
        await run_host(settings, BotPlayer("greedy"), say=lambda line: None, task_status=task_status)

    return await nursery.start(host)


async def _open(port: int, context: ssl.SSLContext | None, **tls_options) -> trio.abc.Stream:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    if context is None:
        return stream
    secure = trio.SSLStream(stream, context, **tls_options)
    await secure.do_handshake()
    return secure


async def _answer_to_hello(stream: trio.abc.Stream, code: str | None) -> list[object]:
    """Send a hello, then read every message until the host ends the stream."""
    hello = Hello((1,), "tester", os.urandom(32), code=code)  # version 1: the code in the hello
    await stream.send_all(encode_frame(to_wire(hello)))
    decoder, messages = FrameDecoder(), []
    while True:
        try:
            data = await stream.receive_some(65536)
        except trio.BrokenResourceError:
            data = b""
        if not data:
            return messages
        decoder.feed(data)
        while (wire := decoder.next_message()) is not None:
            messages.append(from_wire(wire))


@pytest.mark.parametrize("tls", [True, False], ids=["tls", "plain"])
async def test_a_retry_made_as_soon_as_the_stream_ends_meets_the_lockout(tls):
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await _start_host(nursery, tls=tls, code=CODE)
            context = client_tls_context() if tls else None
            first = await _answer_to_hello(await _open(port, context), "AAA-AAA")
            second = await _answer_to_hello(await _open(port, context), CODE)
            nursery.cancel_scope.cancel()
    assert [m.code for m in first if isinstance(m, Error)] == [WRONG_CODE]
    assert [m.code for m in second if isinstance(m, Error)] == [TOO_MANY_ATTEMPTS]


async def test_any_server_name_and_alpn_offer_are_accepted_and_the_certificate_holds_the_welcomes_key():
    context = client_tls_context()
    context.set_alpn_protocols(["h2", "basra"])
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await _start_host(nursery, tls=True, code=None)
            stream = await _open(port, context, server_hostname="some-name.example")
            assert stream.selected_alpn_protocol() is None
            certificate_key = peer_public_key(stream)
            hello = Hello(PROTOCOL_VERSIONS, "tester", os.urandom(32), key=bytes(range(1, 33)))
            await stream.send_all(encode_frame(to_wire(hello)))
            decoder = FrameDecoder()
            while (wire := decoder.next_message()) is None:
                decoder.feed(await stream.receive_some(65536))
            welcome = from_wire(wire)
            nursery.cancel_scope.cancel()
    assert isinstance(welcome, Welcome)
    assert welcome.host_key == certificate_key


async def test_the_reference_client_sends_no_server_name_and_offers_no_alpn(tmp_path):
    folder = tmp_path / "host"
    folder.mkdir()
    context = server_tls_context(load_or_create_identity(folder), folder)
    context.set_alpn_protocols(["basra"])
    names: list[str | None] = []
    context.sni_callback = lambda connection, name, ctx: names.append(name)
    offered: list[str | None] = []

    async def serve(stream: trio.SocketStream) -> None:
        secure = trio.SSLStream(stream, context, server_side=True)
        await secure.do_handshake()
        offered.append(secure.selected_alpn_protocol())
        await secure.aclose()

    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(partial(trio.serve_tcp, serve, 0, host="127.0.0.1"))
            port = listeners[0].socket.getsockname()[1]
            # By name: a client that passed the host name on would send it (an address is never sent).
            stream = await JoinSession("localhost", port, "tester", BotPlayer("greedy"), None).connect()
            await trio.aclose_forcefully(stream)
            while not offered:
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert names == [None], "the client sent a server name"
    assert offered == [None], "the client offered ALPN"

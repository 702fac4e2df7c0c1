"""The host's TLS context: TLS 1.3 with its identity key, and no session tickets (a seat is resumed by its token)."""

from __future__ import annotations

import ssl

from basra_net.host.certificate import server_tls_context
from basra_net.host.identity import load_or_create_identity


def _handshake(server: ssl.SSLContext) -> tuple[ssl.SSLObject, int]:
    """A TLS 1.3 handshake over memory, then one record each way; the client's side, and the bytes the host sent."""
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE
    to_host, from_host, to_client, from_client = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    host_side = server.wrap_bio(to_host, from_host, server_side=True)
    client_side = client.wrap_bio(to_client, from_client)
    host_sent = 0
    for side in (client_side, host_side) * 3:
        try:
            side.do_handshake()
        except ssl.SSLWantReadError:
            pass
        to_host.write(from_client.read())
        data = from_host.read()
        host_sent += len(data)
        to_client.write(data)
    client_side.write(b"hello")
    to_host.write(from_client.read())
    assert host_side.read(5) == b"hello"
    host_side.write(b"welcome")
    data = from_host.read()
    host_sent += len(data)
    to_client.write(data)
    assert client_side.read(7) == b"welcome"  # what came before it (tickets, if any) has been read too
    return client_side, host_sent


def test_the_host_speaks_tls_1_3_and_sends_no_session_ticket(tmp_path):
    context = server_tls_context(load_or_create_identity(tmp_path), tmp_path)
    client_side, host_sent = _handshake(context)
    assert client_side.version() == "TLSv1.3"
    assert not client_side.session.has_ticket
    # The same context sending OpenSSL's default two tickets: the client holds one, and the host sent more.
    context.num_tickets = 2
    with_tickets, sent_with_tickets = _handshake(context)
    assert with_tickets.session.has_ticket
    assert sent_with_tickets > host_sent

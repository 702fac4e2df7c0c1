"""`basra join` run again keeps the seat's resume ticket until the match is over for that seat.

A host that breaks the protocol on the resume, or one that cannot be
reached, leaves the ticket in place, so that the next run still resumes; a
host that no longer holds the seat (`unknown_token`) ends it.
"""

from __future__ import annotations

import json
import os
import time

import pytest
import trio

from basra_net.client.join import JoinSession
from basra_net.client.players import BotPlayer
from basra_net.files import data_dir
from basra_net.match_files import RESUME_FILE, TICKET_STALE_AFTER, ResumeTicket, ResumeTickets, TranscriptFile
from basra_net.protocol.errors import UNKNOWN_TOKEN
from basra_net.protocol.framing import FrameDecoder, encode_frame
from basra_net.protocol.messages import Error, Hello, MatchStart, Message, Welcome, from_wire, to_wire
from basra_net.protocol.transcript import FORMAT

MATCH_ID = bytes(range(16))
TOKEN = bytes(range(16, 32))
HOST_KEY = bytes(range(2, 34))
TEST_DEADLINE = 20


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))


async def _host_answering(nursery: trio.Nursery, answer: Message, hellos: list[Hello]) -> int:
    """A host at a loopback port that reads each hello and answers it with ``answer``, then closes; the port."""

    async def serve(stream: trio.SocketStream) -> None:
        decoder = FrameDecoder()
        while (body := decoder.next_body()) is None:
            decoder.feed(await stream.receive_some(4096))
        hellos.append(from_wire(decoder.decode(body)))
        await stream.send_all(encode_frame(to_wire(answer)))
        await stream.aclose()

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    nursery.start_soon(trio.serve_listeners, serve, listeners)
    return listeners[0].socket.getsockname()[1]


def _kept_seat(tmp_path, port: int) -> ResumeTicket:
    """The ticket and transcript a `basra join` killed in its match left: its hello, the welcome and the match's start."""
    path = tmp_path / "guest.basra"
    kept = TranscriptFile(path, "guest", FORMAT)
    kept.record("guest", Hello((1,), "Omar", bytes(32)))
    kept.record("host", Welcome(1, 1, MATCH_ID, HOST_KEY, "egyptian", 101, TOKEN, 0))
    kept.record("host", MatchStart(("Sam", "Omar")))
    kept.close()
    ticket = ResumeTicket(f"127.0.0.1:{port}", "Omar", None, MATCH_ID, 1, TOKEN, path)
    ResumeTickets(data_dir() / RESUME_FILE).put(ticket)
    return ticket


async def _join_again(port: int) -> None:
    await JoinSession("127.0.0.1", port, "Omar", BotPlayer("greedy"), None, plain=True).run()


async def test_a_resume_the_host_answers_against_the_protocol_keeps_the_ticket_for_the_next_run(tmp_path):
    hellos: list[Hello] = []
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await _host_answering(nursery, MatchStart(("Sam", "Omar")), hellos)
            ticket = _kept_seat(tmp_path, port)
            await _join_again(port)
            nursery.cancel_scope.cancel()
    assert [h.token for h in hellos] == [TOKEN]
    assert ResumeTickets(data_dir() / RESUME_FILE).get(ticket.key) == ticket


async def test_a_resume_with_no_host_to_reach_keeps_the_ticket(tmp_path):
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now
    ticket = _kept_seat(tmp_path, port)
    with trio.fail_after(TEST_DEADLINE):
        await _join_again(port)
    assert ResumeTickets(data_dir() / RESUME_FILE).get(ticket.key) == ticket


async def test_a_resume_the_host_no_longer_holds_drops_the_ticket_and_joins_afresh(tmp_path):
    hellos: list[Hello] = []
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await _host_answering(nursery, Error(UNKNOWN_TOKEN, "no such seat"), hellos)
            ticket = _kept_seat(tmp_path, port)
            await _join_again(port)
            nursery.cancel_scope.cancel()
    assert [h.token for h in hellos] == [TOKEN, None]  # the resume, then a fresh join
    assert ResumeTickets(data_dir() / RESUME_FILE).get(ticket.key) is None


def test_a_change_to_the_tickets_drops_those_of_matches_long_past_resuming(tmp_path):
    tickets = ResumeTickets(tmp_path / RESUME_FILE)
    old, recent, unbegun = tmp_path / "old.basra", tmp_path / "recent.basra", tmp_path / "unbegun.basra"
    old.write_bytes(b"x")
    recent.write_bytes(b"x")
    long_ago = time.time() - TICKET_STALE_AFTER - 60
    os.utime(old, (long_ago, long_ago))
    for n, path in enumerate((old, recent, unbegun)):
        tickets.put(ResumeTicket(f"10.0.0.{n}:5252", "Omar", None, bytes([n]) * 16, 1, TOKEN, path))
    kept = [tickets.get(key) for key in json.loads(tickets.path.read_text())]
    assert [t.transcript for t in kept if t is not None] == [recent, unbegun]

"""Chat between the players (PROTOCOL.md 6.23): relayed by a real host, rate limited, recorded, never verified."""

from __future__ import annotations

import trio

from basra_net.client.players import BotPlayer, Controls
from basra_net.client.session import ClientSession
from basra_net.client.state import ClientState
from basra_net.host.limits import (
    CHAT_BURST,
    CHAT_DROP,
    CHAT_DROP_QUIETLY,
    CHAT_DROPS_BURST,
    CHAT_FLOOD,
    CHAT_RELAY,
    ChatRate,
)
from basra_net.protocol import transcript
from basra_net.protocol.connection import ConnectionClosed
from basra_net.protocol.errors import BAD_MESSAGE, CHAT_DROPPED, RATE_LIMIT
from basra_net.protocol.framing import encode_frame
from basra_net.protocol.messages import Chat, Error, Message

from .test_host import TEST_DEADLINE, ManualSeat, start_host, verify


class ChattyPlayer:
    """A greedy bot that says its lines at its first turn, answers each line it hears, and keeps what it hears."""

    def __init__(self, first_lines: tuple[Chat, ...] = (), answer: Chat | None = None) -> None:
        self.bot = BotPlayer("greedy")
        self.first_lines = first_lines
        self.answer = answer
        self.heard: list[Chat] = []
        self.notices: list[str] = []
        self.controls: Controls | None = None

    async def act(self, state: ClientState, controls: Controls) -> None:
        self.controls = controls
        first = True
        async for request in controls.requests:
            if first:
                for line in self.first_lines:
                    controls.say(line)
                first = False
            if state.request == request:
                controls.play(request, await self.bot.choose(state))

    def show(self, state: ClientState, message: Message) -> None:
        if isinstance(message, Chat) and state.chat[-1] == (state.opponent, message):
            self.heard.append(message)
            if self.answer is not None and self.controls is not None:
                self.controls.say(self.answer)

    def notice(self, state: ClientState, text: str) -> None:
        self.notices.append(text)


def chat_records(path) -> list[tuple[str, Chat]]:
    return [(sender, m) for sender, m in transcript.parse(path.read_bytes()).records if isinstance(m, Chat)]


async def test_two_players_chat_through_a_real_host_and_both_transcripts_keep_it_and_verify(tmp_path):
    host_player = ChattyPlayer(answer=Chat(reaction="thanks"))
    guest_player = ChattyPlayer(first_lines=(Chat(text="good luck, يا صاحبي"), Chat(reaction="wow")))
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await start_host(nursery, tmp_path, player=host_player)
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            guest = await ClientSession(stream, "Omar", guest_player, transcript_path=tmp_path / "guest.basra").run()
    (outcome,) = outcomes
    assert guest.exit_code == 0 and outcome.own_seat.exit_code == 0, guest.reason
    assert host_player.heard == [Chat(text="good luck, يا صاحبي"), Chat(reaction="wow")]
    assert guest_player.heard == [Chat(reaction="thanks")] * 2
    assert not guest_player.notices or all("chat" not in n for n in guest_player.notices)
    said = [(sender, m) for sender, m in chat_records(tmp_path / "guest.basra")]
    assert said == [
        ("guest", Chat(text="good luck, يا صاحبي")), ("guest", Chat(reaction="wow")),
        ("host", Chat(reaction="thanks")), ("host", Chat(reaction="thanks")),
    ]
    assert chat_records(tmp_path / "host.basra") == said
    for path in (tmp_path / "host.basra", tmp_path / "guest.basra"):
        report = verify(path)
        assert report.ok, report.problems
        # Verification is blind to chat: the same verdict and checks with every chat record taken out.
        parsed = transcript.parse(path.read_bytes())
        parsed.records = [(s, m) for s, m in parsed.records if not isinstance(m, Chat)]
        without = transcript.verify(parsed)
        assert without.ok and [c.game for c in without.checks] == [c.game for c in report.checks]


async def test_a_burst_past_the_rate_is_dropped_with_one_notice_and_the_match_goes_on(tmp_path):
    lines = tuple(Chat(text=f"line {n}") for n in range(30))
    host_player = ChattyPlayer()
    guest_player = ChattyPlayer(first_lines=lines)
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await start_host(nursery, tmp_path, player=host_player)
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            guest = await ClientSession(stream, "Omar", guest_player, transcript_path=tmp_path / "guest.basra").run()
    (outcome,) = outcomes
    assert guest.exit_code == 0 and outcome.table.completed, guest.reason
    # The match lasts seconds, so the bucket refills by a line or a few at most.
    relayed = len(host_player.heard)
    assert CHAT_BURST <= relayed < CHAT_BURST + 5
    assert host_player.heard == list(lines[:relayed])
    dropped_notices = [n for n in guest_player.notices if "a few lines at once" in n]
    assert len(dropped_notices) == 1
    assert verify(tmp_path / "guest.basra").ok


async def test_a_chat_flood_far_past_the_rate_is_cut_off_with_rate_limit_and_no_flood_of_notices(tmp_path):
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            stop = trio.Event()
            port, outcomes = await start_host(nursery, tmp_path, stop=stop)
            seat = await ManualSeat.join(port)
            await seat.stream.send_all(b"".join(encode_frame({"type": "chat", "text": "spam"}) for _ in range(300)))
            answers = []
            while not isinstance(message := await seat.receive(), ConnectionClosed):
                answers.append(message)
            stop.set()
    errors = [m.code for m in answers if isinstance(m, Error)]
    # One notice at most (a fatal close may overtake what was queued before it): a flood earns no flood of answers.
    assert errors[-1] == RATE_LIMIT and errors.count(CHAT_DROPPED) <= 1 and len(errors) <= 2, errors
    (outcome,) = outcomes
    assert not outcome.table.completed  # the flooder lost its seat


async def test_a_hostile_chat_line_is_refused_as_bad_message_and_nothing_of_it_is_relayed(tmp_path):
    for wire in ({"type": "chat", "text": "\x1b[2Jhacked"}, {"type": "chat", "text": "x" * 201}, {"type": "chat", "text": "a\u202eb"}):
        host_player = ChattyPlayer()
        with trio.fail_after(TEST_DEADLINE):
            async with trio.open_nursery() as nursery:
                stop = trio.Event()
                port, outcomes = await start_host(nursery, tmp_path, player=host_player, stop=stop)
                seat = await ManualSeat.join(port)
                await seat.stream.send_all(encode_frame(wire))
                reply = await seat.until(Error)
                assert reply.code == BAD_MESSAGE and "'text'" in reply.message and "\n" not in reply.message
                assert isinstance(await seat.receive(), ConnectionClosed)
                stop.set()
        assert host_player.heard == []


class Version1Session(ClientSession):
    """A client of before version 2, which knows nothing of chat."""

    _versions = property(lambda self: (1,))


async def test_a_version_1_player_never_receives_chat_and_the_sender_is_told(tmp_path):
    host_player = ChattyPlayer(first_lines=(Chat(text="hello?"),))
    guest_player = ChattyPlayer(first_lines=(Chat(text="and hello to you"),))
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await start_host(nursery, tmp_path, player=host_player)
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            guest = await Version1Session(stream, "Omar", guest_player, transcript_path=tmp_path / "guest.basra").run()
    (outcome,) = outcomes
    assert guest.state.seat == 1 and guest.exit_code == 0, guest.reason
    assert guest_player.heard == []
    assert any("does not show chat (protocol version 1)" in n for n in host_player.notices), host_player.notices
    assert host_player.heard == [] and "chat needs protocol version 2; this table speaks version 1" in guest_player.notices
    assert outcome.table.completed


def test_the_chat_rate_relays_a_burst_then_one_every_two_seconds_and_calls_a_long_flood_a_flood():
    now = [0.0]
    rate = ChatRate(clock=lambda: now[0])
    assert [rate.take() for _ in range(int(CHAT_BURST))] == [CHAT_RELAY] * int(CHAT_BURST)
    assert [rate.take() for _ in range(3)] == [CHAT_DROP, CHAT_DROP_QUIETLY, CHAT_DROP_QUIETLY]
    now[0] += 1.0
    assert rate.take() == CHAT_DROP_QUIETLY  # half a line's worth: still over
    now[0] += 1.0
    assert rate.take() == CHAT_RELAY
    assert rate.take() == CHAT_DROP  # a new run of drops: told again
    # Someone mashing a key three times a second is dropped, never cut off.
    for _ in range(600):
        now[0] += 1 / 3
        assert rate.take() != CHAT_FLOOD
    # A program sending without pause is: past the drops' own burst, at more than 5 a second.
    verdicts = []
    for _ in range(int(CHAT_DROPS_BURST) + 20):
        now[0] += 0.01
        verdicts.append(rate.take())
    assert verdicts[-1] == CHAT_FLOOD and CHAT_FLOOD not in verdicts[: int(CHAT_DROPS_BURST) - 5]


async def test_a_served_table_relays_chat_between_its_two_remote_players_only(tmp_path, monkeypatch):
    from basra_net.host.server import ServeSettings, run_serve

    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))
    settings = ServeSettings(bind="127.0.0.1", port=0, tables=2, target=40, keep_transcripts=False, tls=False)
    players = {name: ChattyPlayer(first_lines=(Chat(text=f"from {name}"),)) for name in ("a1", "a2", "b1", "b2")}
    results = {}
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(lambda task_status: run_serve(settings, task_status=task_status))
            async with trio.open_nursery() as joining:
                for name, player in players.items():

                    async def play(name=name, player=player) -> None:
                        stream = await trio.open_tcp_stream("127.0.0.1", port)
                        results[name] = await ClientSession(stream, name, player, keep_transcript=False, countersigns=True).run()

                    joining.start_soon(play)
                    await trio.sleep(0.05)  # in order, so a1 sits with a2 and b1 with b2
            nursery.cancel_scope.cancel()
    assert all(r.exit_code == 0 for r in results.values()), {n: r.reason for n, r in results.items()}
    assert players["a1"].heard == [Chat(text="from a2")] and players["a2"].heard == [Chat(text="from a1")]
    assert players["b1"].heard == [Chat(text="from b2")] and players["b2"].heard == [Chat(text="from b1")]


async def test_a_line_the_host_would_refuse_is_stopped_before_it_is_sent_and_the_player_told_in_one_line(tmp_path):
    host_player = ChattyPlayer()
    guest_player = ChattyPlayer(first_lines=(Chat(text="\x1b[2Jgone"), Chat(text="x" * 201), Chat(text="fine")))
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await start_host(nursery, tmp_path, player=host_player)
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            guest = await ClientSession(stream, "Omar", guest_player, transcript_path=tmp_path / "guest.basra").run()
    assert guest.exit_code == 0, guest.reason  # the connection was never broken by a line of its own
    assert host_player.heard == [Chat(text="fine")]
    refused = [n for n in guest_player.notices if n.startswith("that line was not sent")]
    assert len(refused) == 2 and all("\n" not in n for n in refused), guest_player.notices
    assert chat_records(tmp_path / "guest.basra") == [("guest", Chat(text="fine"))]

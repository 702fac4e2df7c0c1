"""Who may sit down and who can read the wire: join codes, TLS with pinned keys, strangers in floods."""

from __future__ import annotations

import json
import resource

import pytest
import trio

from basra_net.client.address import pin_name
from basra_net.client.join import JoinSession
from basra_net.client.pinning import CONFIRMED, VERIFIED
from basra_net.client.players import BotPlayer
from basra_net.client.session import SessionResult
from basra_net.host.admission import Admission, make_join_code, normalize_code
from basra_net.host import limits
from basra_net.host.limits import CODE_LOCKOUT_FIRST, CODE_LOCKOUT_MAX, CodeAttempts, GuessBudget, MessageRate
from basra_net.host.server import HostOutcome, HostSettings, run_host
from basra_net.protocol.errors import BAD_MESSAGE, BUSY, CODE_REQUIRED, TIMEOUT, TOO_MANY_ATTEMPTS, WRONG_CODE
from basra_net.protocol.fingerprint import key_fingerprint
from basra_net.protocol.framing import encode_frame
from basra_net.protocol.messages import Error, Hello, to_wire
from basra_net.protocol.pake import GuestCodeExchange

TEST_DEADLINE = 60


@pytest.fixture(autouse=True)
def data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))


class PacedBot(BotPlayer):
    """The greedy bot, thinking a little, so that a match lasts while the test does things to the host."""

    def __init__(self, level: str) -> None:
        super().__init__(level)
        self.asked = trio.Event()  # its first turn came: the match is under way

    async def choose(self, state):
        self.asked.set()
        await trio.sleep(0.01)
        return await super().choose(state)


async def _start_host(nursery: trio.Nursery, *, code: str | None = None, own=None) -> tuple[int, list[HostOutcome]]:
    outcomes: list[HostOutcome] = []
    settings = HostSettings(bind="127.0.0.1", port=0, target=40, code=code)

    async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
        outcomes.append(await run_host(settings, own or BotPlayer("greedy"), say=lambda line: None, task_status=task_status))

    return await nursery.start(host), outcomes


def _join(port: int, name: str, *, code: str | None = None, player=None, plain: bool = False, **options) -> JoinSession:
    """A scripted joiner; at an open table it pins the key it meets, as `--auto` does, unless told otherwise."""
    options.setdefault("trust_new_key", code is None)
    return JoinSession("127.0.0.1", port, name, player or BotPlayer("greedy"), None, code=code, plain=plain, **options)


# --- join codes ------------------------------------------------------------------------------------------


async def test_a_stranger_without_the_code_is_refused_while_the_real_player_sits_down():
    code = make_join_code()
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await _start_host(nursery, code=code)
            no_code = await _join(port, "stranger").run()
            wrong = await _join(port, "stranger", code="AAA-AAA").run()
            locked = await _join(port, "stranger", code=code).run()  # even the right code waits out the lockout
            await trio.sleep(1.1)
            player = await _join(port, "friend", code=code.lower().replace("-", " ")).run()
    assert (no_code.refusal, wrong.refusal, locked.refusal) == (CODE_REQUIRED, WRONG_CODE, TOO_MANY_ATTEMPTS)
    assert player.exit_code == 0, player.reason
    assert outcomes[0].table.completed


def _asker_of(code: str):
    """A person asked for the join code, who answers it: each question's reason is kept."""
    asked: list[str] = []

    async def ask(reason: str) -> str:
        asked.append(reason)
        return code

    return asked, ask


async def test_an_interactive_joiner_is_asked_for_the_code_and_gets_in():
    code = make_join_code()
    asked, ask = _asker_of(code)

    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, _ = await _start_host(nursery, code=code)
            join = JoinSession("127.0.0.1", port, "friend", BotPlayer("greedy"), None, ask_code=ask)
            result = await join.run()
    assert result.exit_code == 0, result.reason
    assert len(asked) == 1 and "join code" in asked[0]


async def test_a_table_known_to_need_a_code_has_it_asked_for_before_anything_is_connected():
    code = make_join_code()
    asked, ask = _asker_of(code)

    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, _ = await _start_host(nursery, code=code)
            seated = await JoinSession("127.0.0.1", port, "friend", BotPlayer("greedy"), None, ask_code=ask, code_needed=True).run()
        with trio.socket.socket() as unused:  # a port nobody listens on: the question comes before the connection fails
            await unused.bind(("127.0.0.1", 0))
            nobody = unused.getsockname()[1]
        unreached = await JoinSession("127.0.0.1", nobody, "friend", BotPlayer("greedy"), None, ask_code=ask, code_needed=True, resumable=False).run()
    assert seated.exit_code == 0, seated.reason
    assert asked == ["This table needs a join code."] * 2, "asked once each, never after a refusal"
    assert unreached.exit_code != 0


async def test_a_crowd_guessing_the_code_runs_the_budget_dry_and_the_player_with_the_code_still_sits_down(monkeypatch):
    """The code is never replaced (PROTOCOL.md 5.6): once the crowd has spent every guess, reserve included, it is
    refused busy; the player who has the code is refused busy too at first, tries again as `basra join` does, and
    sits down with the next guess the budget gives.  Not timed: it must simply succeed."""
    monkeypatch.setattr(limits, "GUESS_BURST", 20.0)
    monkeypatch.setattr(limits, "GUESS_RESERVE", 5.0)
    code = make_join_code()
    said: list[str] = []
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            settings = HostSettings(bind="127.0.0.1", port=0, target=20, code=code, tls=False)

            async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
                await run_host(settings, BotPlayer("greedy"), say=said.append, task_status=task_status)

            port = await nursery.start(host)
            refusals = []
            for n in range(40):  # each from a network of its own, so each may take the reserve
                async with await trio.open_tcp_stream("127.0.0.1", port, local_address=f"127.6.{n}.1") as guesser:
                    await guesser.send_all(encode_frame(to_wire(Hello((1,), "guesser", bytes(32), code="AAA-AAA"))))
                    refusals.append((await guesser.receive_some(4096)))
            seated = await _join(port, "friend", code=code, plain=True).run()
            nursery.cancel_scope.cancel()
    assert sum(b"wrong_code" in refusal for refusal in refusals) == 20
    assert all(b"busy" in refusal for refusal in refusals[20:])
    assert seated.exit_code == 0, seated.reason
    assert not any("changed" in line for line in said) and any(code in line for line in said)


async def test_codes_compare_without_case_spaces_or_dashes_and_are_made_from_unambiguous_characters():
    admission = Admission(code="K7M-2QX")
    hello = Hello((1,), "p", bytes(32), code="k7m 2qx")
    assert admission.check(hello, "10.0.0.1") is None
    for _ in range(200):
        made = make_join_code()
        assert len(normalize_code(made)) == 6 and not set(made) & set("ILO01")


def test_wrong_codes_lock_an_address_out_for_longer_each_time_up_to_a_minute():
    now = [0.0]
    attempts = CodeAttempts(clock=lambda: now[0])
    lockouts = [attempts.failed("a") for _ in range(8)]
    assert lockouts == [1, 2, 4, 8, 16, 32, 60, 60] and lockouts[-1] == CODE_LOCKOUT_MAX
    assert attempts.wait_for("a") == 60 and attempts.wait_for("b") == 0
    now[0] = 61.0
    assert attempts.wait_for("a") == 0
    attempts.succeeded("a")
    assert attempts.failed("a") == 1


def test_the_message_rate_allows_a_burst_then_a_steady_trickle():
    now = [0.0]
    rate = MessageRate(per_second=5, burst=20, clock=lambda: now[0])
    assert all(rate.allow() for _ in range(20))
    assert not rate.allow()
    now[0] = 1.0
    assert sum(rate.allow() for _ in range(10)) == 5


# --- TLS and pinned keys ---------------------------------------------------------------------------------


async def test_a_first_join_with_the_code_pins_the_key_as_verified_and_both_sides_know_the_same_fingerprint(tmp_path):
    code = make_join_code()
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await _start_host(nursery, code=code)
            result = await _join(port, "friend", code=code).run()
    assert result.exit_code == 0, result.reason
    assert result.state.host_key == outcomes[0].own_seat.state.host_key
    pins = json.loads((tmp_path / "home" / "known_hosts.json").read_text())
    assert pins == {pin_name("127.0.0.1", port): {"key": result.state.host_key.hex(), "how": VERIFIED}}


@pytest.mark.parametrize("answer", [True, False], ids=["confirmed", "denied"])
async def test_a_first_join_without_a_code_pins_the_key_only_once_its_fingerprint_is_confirmed(tmp_path, answer):
    asked: list[str] = []

    async def confirm(fingerprint: str) -> bool:
        asked.append(fingerprint)
        return answer

    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await _start_host(nursery)
            result = await _join(port, "friend", trust_new_key=False, confirm_key=confirm).run()
            nursery.cancel_scope.cancel()  # a refusal leaves the host waiting for the seat's return
    pins_file = tmp_path / "home" / "known_hosts.json"
    host_key = outcomes[0].own_seat.state.host_key if outcomes else result.state.host_key
    assert asked == [key_fingerprint(host_key)]
    if answer:
        assert result.exit_code == 0, result.reason
        assert json.loads(pins_file.read_text()) == {pin_name("127.0.0.1", port): {"key": host_key.hex(), "how": CONFIRMED}}
    else:
        assert result.exit_code == 1 and "not confirmed" in result.reason
        assert not pins_file.exists() or json.loads(pins_file.read_text()) == {}


async def test_a_headless_first_join_without_a_code_or_trust_pins_nothing_and_says_what_to_do(tmp_path):
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, _ = await _start_host(nursery)
            result = await _join(port, "friend", trust_new_key=False).run()
            nursery.cancel_scope.cancel()
    assert result.exit_code == 1 and "--trust-new-key" in result.reason
    assert not (tmp_path / "home" / "known_hosts.json").exists()


async def test_a_different_key_at_a_pinned_address_is_refused_with_the_command_to_forget_it(tmp_path):
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, _ = await _start_host(nursery)
            # A key pinned earlier for this address, which the host now on it does not hold:
            # to the client this is a host in the middle.
            (tmp_path / "home" / "known_hosts.json").write_text(json.dumps({pin_name("127.0.0.1", port): "ab" * 32}))
            refused = await _join(port, "friend").run()
            assert refused.exit_code == 1
            assert "HAS CHANGED" in refused.reason and f"basra forget 127.0.0.1:{port}" in refused.reason
            nursery.cancel_scope.cancel()


async def test_a_plain_client_gets_nowhere_with_a_tls_host():
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, _ = await _start_host(nursery)
            result = await _join(port, "plain", plain=True).run()
            nursery.cancel_scope.cancel()
    assert result.exit_code == 1


# --- floods ----------------------------------------------------------------------------------------------


async def test_a_flood_of_500_half_open_connections_does_not_stop_a_match_in_progress():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4096)), hard))
    strangers: list[trio.SocketStream] = []
    result: list[SessionResult] = []
    try:
        with trio.fail_after(TEST_DEADLINE):
            async with trio.open_nursery() as nursery:
                port, outcomes = await _start_host(nursery, own=PacedBot("greedy"))

                friend = PacedBot("greedy")

                async def player() -> None:
                    result.append(await _join(port, "friend", player=friend).run())

                nursery.start_soon(player)
                await friend.asked.wait()  # the match is under way
                for _ in range(500):
                    try:
                        strangers.append(await trio.open_tcp_stream("127.0.0.1", port))
                    except OSError:
                        break  # refused at the door: that is the host protecting itself
    finally:
        for stream in strangers:
            await trio.aclose_forcefully(stream)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert len(strangers) >= 100
    assert result[0].exit_code == 0, result[0].reason
    assert outcomes[0].table.completed


@pytest.mark.parametrize("plain, refusal", [(True, BUSY), (True, TIMEOUT), (False, None)], ids=["plain-busy", "plain-timeout", "tls"])
async def test_a_first_join_turned_away_as_busy_tries_again_and_sits_down(plain, refusal):
    """The first two connections are turned away as a crowded host does (busy, or timeout for first bytes
    that came late, over plain TCP; closed in the TLS handshake); the third reaches the real host."""
    turned_away: list[int] = []

    async def door(client: trio.SocketStream) -> None:
        async with client:
            if len(turned_away) < 2:
                turned_away.append(len(await client.receive_some(4096)))
                if plain:
                    await client.send_all(encode_frame(to_wire(Error(refusal, "let go before the welcome"))))
                return
            async with await trio.open_tcp_stream("127.0.0.1", port) as host:
                async with trio.open_nursery() as pumps:
                    for source, sink in ((client, host), (host, client)):
                        pumps.start_soon(_pump, source, sink, pumps.cancel_scope)

    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            outcomes: list[HostOutcome] = []
            host_done = trio.Event()
            settings = HostSettings(bind="127.0.0.1", port=0, target=20, tls=not plain)

            async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
                outcomes.append(await run_host(settings, BotPlayer("greedy"), say=lambda line: None, task_status=task_status))
                host_done.set()

            port = await nursery.start(host)
            listeners = await nursery.start(trio.serve_tcp, door, 0)
            door_port = listeners[0].socket.getsockname()[1]
            notices: list[str] = []
            player = BotPlayer("greedy")
            player.notice = lambda state, text: notices.append(text)
            result = await _join(door_port, "friend", player=player, plain=plain).run()
            await host_done.wait()
            nursery.cancel_scope.cancel()  # the door
    assert len(turned_away) == 2 and all(turned_away)
    assert result.exit_code == 0, result.reason
    assert sum("busy" in text for text in notices) == 2
    assert outcomes[0].table.completed


async def _pump(source: trio.SocketStream, sink: trio.SocketStream, scope: trio.CancelScope, cut_after: int | None = None) -> None:
    """Forward until either end closes, or until ``cut_after`` bytes have gone: then both are cut."""
    carried = 0
    try:
        while data := await source.receive_some(65536):
            await sink.send_all(data)
            carried += len(data)
            if cut_after is not None and carried >= cut_after:
                break
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    scope.cancel()


@pytest.mark.parametrize("refusal", [BUSY, TIMEOUT])
async def test_a_resume_turned_away_as_busy_keeps_trying_and_the_match_finishes(refusal):
    """The seat's connection is cut mid-match; its first resume is told busy (or timeout), as a crowded or
    slow-to-hear host does; the next gets in."""
    connections: list[str] = []

    async def door(client: trio.SocketStream) -> None:
        async with client:
            connections.append("forwarded" if len(connections) != 1 else "busy")
            if connections[-1] == "busy":
                await client.receive_some(4096)
                await client.send_all(encode_frame(to_wire(Error(refusal, "let go before the welcome"))))
                return
            cut_after = 3000 if len(connections) == 1 else None
            async with await trio.open_tcp_stream("127.0.0.1", port) as host:
                async with trio.open_nursery() as pumps:
                    pumps.start_soon(_pump, client, host, pumps.cancel_scope)
                    pumps.start_soon(_pump, host, client, pumps.cancel_scope, cut_after)

    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            outcomes: list[HostOutcome] = []
            host_done = trio.Event()
            settings = HostSettings(bind="127.0.0.1", port=0, target=20, tls=False)

            async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
                outcomes.append(await run_host(settings, PacedBot("greedy"), say=lambda line: None, task_status=task_status))
                host_done.set()

            port = await nursery.start(host)
            listeners = await nursery.start(trio.serve_tcp, door, 0)
            result = await _join(listeners[0].socket.getsockname()[1], "friend", plain=True).run()
            await host_done.wait()
            nursery.cancel_scope.cancel()
    assert connections == ["forwarded", "busy", "forwarded"]
    assert result.exit_code == 0, result.reason
    assert outcomes[0].table.completed


def test_the_code_exchange_at_the_door_counts_every_failed_guess_and_clears_on_success():
    """Version 2 (PROTOCOL.md 5.6, 14.9): what the host answers at each step, and what the lockout counts."""
    now = [0.0]
    host_key, guest_key, nonce = bytes(range(2, 34)), bytes(range(1, 33)), bytes(32)
    wrong: list[str] = []
    admission = Admission(
        code="K7M-2QX", host_key=host_key,
        attempts=CodeAttempts(clock=lambda: now[0]), guesses=GuessBudget(clock=lambda: now[0]),
        on_wrong_code=lambda address, lockout: wrong.append(address),
    )

    def hello(code: str | None, **fields) -> tuple[Hello, GuestCodeExchange | None]:
        guest = GuestCodeExchange(code, guest_key=guest_key, guest_nonce=nonce, host_key=host_key) if code else None
        return Hello((2, 1), "p", nonce, key=guest_key, pake=guest.start() if guest else None, **fields), guest

    no_pake, _ = hello(None)
    assert admission.begin_exchange(no_pake, "a")[0].code == CODE_REQUIRED and wrong == []
    # A malformed message is a used-up guess.
    assert admission.begin_exchange(Hello((2, 1), "p", nonce, key=guest_key, pake=b"A" + bytes(32)), "a")[0].code == BAD_MESSAGE
    assert wrong == ["a"]
    # Locked out: refused before the message is looked at, and not counted again.
    mistyped, _ = hello("K7M-2QY")
    assert admission.begin_exchange(mistyped, "a")[0].code == TOO_MANY_ATTEMPTS and wrong == ["a"]
    now[0] += CODE_LOCKOUT_FIRST
    # A wrong code: the client finds the host's confirmation wrong and leaves; that counts.
    refusal, exchange, message, confirm = admission.begin_exchange(mistyped, "a")
    assert refusal is None
    assert admission.finish_exchange(exchange, None, "a").code == WRONG_CODE and wrong == ["a", "a"]
    now[0] += 2 * CODE_LOCKOUT_FIRST
    # The right code: both confirmations hold, and the address's count is cleared.
    right, guest = hello("k7m 2qx")
    refusal, exchange, message, confirm = admission.begin_exchange(right, "a")
    assert refusal is None
    assert admission.finish_exchange(exchange, guest.answer(message, confirm), "a") is None
    assert admission.attempts.wait_for("a") == 0
    # A resume needs no exchange; a hello with one at an open table is refused.
    resume, _ = hello(None, token=bytes(16), received=0)
    assert admission.begin_exchange(resume, "b")[:2] == (None, None)
    open_table = Admission(host_key=host_key)
    assert open_table.begin_exchange(hello("K7M-2QX")[0], "c")[0].code == BAD_MESSAGE

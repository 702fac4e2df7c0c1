"""Each rule of admission on its own, in virtual time: who gets a place in the handshake, for how long,
how wrong codes are counted and forgotten, and how everyone's guesses share one budget that the player with
the code always finds a guess in."""

from __future__ import annotations

import ipaddress

import pytest
import trio
from hypothesis import given, strategies as st

from basra_net.host.admission import Admission, code_strength_bits, GENERATED_CODE_BITS, make_join_code, weak_code_problem
from basra_net.host.limits import (
    CODE_FORGET_AFTER,
    CODE_LOCKOUT_MAX,
    CROWDED_HANDSHAKES,
    FIRST_BYTES_TIMEOUT,
    GUESS_BURST,
    GUESS_RESERVE,
    GUESSERS_REMEMBERED_FOR,
    GUESSES_PER_SECOND,
    CodeAttempts,
    GuessBudget,
    HandshakeGate,
    network_prefix,
)
from basra_net.host.seat_link import CLOSE_LINGER, HANDSHAKE_TIMEOUT, serve_connection
from basra_net.protocol.connection import ClientConnection
from basra_net.protocol.errors import BUSY, TABLE_FULL, TIMEOUT, WRONG_CODE
from basra_net.protocol.framing import encode_frame
from basra_net.protocol.messages import Error, Hello, to_wire

CODE = "K7M-2QX"


def hello(code: str | None = None) -> Hello:
    return Hello((1,), "Omar", bytes(32), code=code)


# --- the handshake gate ------------------------------------------------------------------------------


def test_networks_are_the_24_of_ipv4_and_the_64_of_ipv6():
    assert network_prefix("192.168.1.77") == "192.168.1.0/24"
    assert network_prefix("::ffff:192.168.1.77") == "192.168.1.0/24"
    assert network_prefix("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64"
    assert network_prefix("2001:db8:1:2:aaaa::1", 16, 48) == "2001:db8:1::/48"
    assert network_prefix("local") == "local"


@given(st.ip_addresses(v=4), st.integers(0, 32))
def test_an_ipv4_network_is_the_one_ipaddress_names(address, bits):
    expected = str(ipaddress.ip_network(f"{address}/{bits}", strict=False))
    assert network_prefix(str(address), bits) == expected
    assert network_prefix(f"::ffff:{address}", bits) == expected  # mapped into IPv6, the same network


def test_a_full_gate_drops_its_oldest_handshake_and_lets_the_newcomer_in():
    gate = HandshakeGate(total=3, per_address=8, per_prefix=64)
    first, second, third = (gate.enter(f"10.0.{n}.1") for n in range(3))
    newcomer = gate.enter("10.0.9.1")
    assert first.dropped and first.scope.cancel_called
    assert not any(h.dropped for h in (second, third, newcomer))
    assert len(gate) == 3 and gate.dropped == 1
    gate.leave(first)  # the dropped connection's own leave changes nothing
    assert len(gate) == 3


def test_a_crowded_address_drops_its_own_oldest_not_someone_elses():
    gate = HandshakeGate(total=100, per_address=2, per_prefix=64)
    other = gate.enter("10.0.0.1")
    crowd = [gate.enter("10.0.5.5") for _ in range(2)]
    gate.enter("10.0.5.5")
    assert crowd[0].dropped and not crowd[1].dropped and not other.dropped


def test_a_crowded_network_drops_its_own_oldest_not_another_networks():
    gate = HandshakeGate(total=100, per_address=8, per_prefix=3)
    elsewhere = gate.enter("10.0.1.1")
    crowd = [gate.enter(f"10.0.7.{n}") for n in range(1, 4)]
    gate.enter("10.0.7.200")
    assert crowd[0].dropped and not elsewhere.dropped and not crowd[1].dropped
    six = [gate.enter(f"2001:db8:0:1::{n}") for n in range(1, 5)]  # one /64
    assert six[0].dropped and not six[3].dropped


def test_leaving_frees_the_place_for_the_next():
    gate = HandshakeGate(total=2, per_address=8, per_prefix=64)
    first = gate.enter("10.0.0.1")
    gate.leave(first)
    second, third = gate.enter("10.0.0.2"), gate.enter("10.0.0.3")
    assert not second.dropped and not third.dropped and len(gate) == 2


async def _serve_once(admission: Admission, host_end: trio.SocketStream, seating=None) -> None:
    class NoSeat:
        host_key = bytes(range(32, 64))

        def seat_for(self, hello, reserved):
            return None

        def seat_holding(self, token=None, hello=None):
            return None

        def full_reason(self, hello):
            return "the table is full: both seats are taken"

    await serve_connection(host_end, seating or NoSeat(), admission=admission, address="10.0.0.1")


async def _read_error(stream: trio.SocketStream) -> Error | None:
    """The error frame the host sent first, or None when it closed without one."""
    client = ClientConnection()
    while True:
        try:
            event = client.next_event()
        except Exception:
            return None
        if isinstance(event, Error):
            return event
        if event is not None:
            return None
        data = await stream.receive_some(4096)
        client.receive_data(data)


def _pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    a, b = trio.socket.socketpair()
    return trio.SocketStream(a), trio.SocketStream(b)


def crowded() -> Admission:
    """A host with as many other connections in their handshake as make it crowded, each from a network of its own."""
    admission = Admission()
    for n in range(CROWDED_HANDSHAKES - 1):
        admission.gate.enter(f"10.{n}.0.1")
    return admission


async def test_at_a_crowded_host_a_connection_that_sends_nothing_for_a_second_is_let_go(autojump_clock):
    host_end, peer = _pair()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_serve_once, crowded(), host_end)
        error = await _read_error(peer)
    assert error is not None and error.code == TIMEOUT
    assert trio.current_time() - start == pytest.approx(FIRST_BYTES_TIMEOUT)


async def test_at_a_quiet_host_a_connection_that_sends_nothing_is_let_go_at_the_handshakes_deadline(autojump_clock):
    host_end, peer = _pair()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_serve_once, Admission(), host_end)
        error = await _read_error(peer)
    assert error is not None and error.code == TIMEOUT
    assert trio.current_time() - start == pytest.approx(HANDSHAKE_TIMEOUT)


async def test_at_a_quiet_host_a_client_whose_first_bytes_come_seconds_late_is_answered(autojump_clock):
    """A player on a loaded machine, resuming its seat, say: its hello, sent 3 s after it connected, is read."""
    host_end, peer = _pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_serve_once, Admission(), host_end)
        await trio.sleep(3 * FIRST_BYTES_TIMEOUT)
        await peer.send_all(encode_frame(to_wire(hello())))
        error = await _read_error(peer)
    assert error is not None and error.code == TABLE_FULL  # the hello was read: the seat is what was missing


async def test_a_silent_connection_is_let_go_within_a_second_of_the_host_becoming_crowded(autojump_clock):
    host_end, peer = _pair()
    admission = Admission()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_serve_once, admission, host_end)
        await trio.sleep(1.5 * FIRST_BYTES_TIMEOUT)
        for n in range(CROWDED_HANDSHAKES - 1):  # a crowd arrives
            admission.gate.enter(f"10.{n}.0.1")
        error = await _read_error(peer)
    assert error is not None and error.code == TIMEOUT
    assert trio.current_time() - start == pytest.approx(2 * FIRST_BYTES_TIMEOUT)


async def test_a_connection_that_has_started_its_hello_is_not_let_go_after_a_second(autojump_clock):
    host_end, peer = _pair()
    frame = encode_frame(to_wire(hello()))
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_serve_once, Admission(), host_end)
        await peer.send_all(frame[:3])
        await trio.sleep(3 * FIRST_BYTES_TIMEOUT)
        await peer.send_all(frame[3:])
        error = await _read_error(peer)
    assert error is not None and error.code == TABLE_FULL  # the hello was read: the seat is what was missing
    assert trio.current_time() - start >= 3 * FIRST_BYTES_TIMEOUT


async def test_a_hello_waiting_before_its_connection_is_served_is_read_at_once_and_answered(autojump_clock):
    """The whole hello, and the end of the peer's sending, already there: read in the first read, no wait and no timeout."""
    host_end, peer = _pair()
    await peer.send_all(encode_frame(to_wire(hello())))
    await peer.send_eof()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_serve_once, Admission(), host_end)
        error = await _read_error(peer)
    assert error is not None and error.code == TABLE_FULL  # the hello was read: the seat is what was missing
    assert trio.current_time() == start


async def test_a_connection_closed_before_it_sends_anything_is_let_go_without_a_timeout(autojump_clock):
    host_end, peer = _pair()
    await peer.send_eof()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_serve_once, Admission(), host_end)
        assert await peer.receive_some(4096) == b""  # closed, with no error frame
    assert trio.current_time() == start


async def test_the_handshake_dropped_for_a_newcomer_is_told_busy_and_the_newcomer_goes_on(autojump_clock):
    admission = Admission(gate=HandshakeGate(total=1, per_address=8, per_prefix=64))
    old_host, old_peer = _pair()
    new_host, new_peer = _pair()
    frame = encode_frame(to_wire(hello()))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_serve_once, admission, old_host)
        await old_peer.send_all(frame[:5])  # started, then stalls
        await trio.sleep(0.5)
        nursery.start_soon(_serve_once, admission, new_host)
        old_error = await _read_error(old_peer)
        await new_peer.send_all(frame)
        new_error = await _read_error(new_peer)
    assert old_error is not None and old_error.code == BUSY
    assert new_error is not None and new_error.code == TABLE_FULL
    assert admission.gate.dropped == 1 and len(admission.gate) == 0


async def test_a_refused_connection_is_closed_at_once_not_after_a_linger(autojump_clock):
    admission = Admission(code=CODE)
    host_end, peer = _pair()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_serve_once, admission, host_end)
        await peer.send_all(encode_frame(to_wire(hello("AAA-AAA"))))
        error = await _read_error(peer)
        assert error is not None and error.code == WRONG_CODE
        while await peer.receive_some(4096):  # the peer keeps its end open; the host closes its own
            pass
    assert trio.current_time() - start < CLOSE_LINGER


# --- wrong codes ---------------------------------------------------------------------------------------


async def test_a_lockout_runs_its_course_however_many_other_addresses_guess(autojump_clock):
    attempts = CodeAttempts(tracked_per_level=4)
    for _ in range(7):
        attempts.failed("10.0.0.1")  # locked for the longest time
    for n in range(2, 200):
        attempts.failed(f"10.{n // 100}.{n % 100}.1")
    assert attempts.wait_for("10.0.0.1") == pytest.approx(CODE_LOCKOUT_MAX)
    assert len(attempts) <= 4 * 4  # four levels, four entries each at most


async def test_guessers_past_the_table_are_locked_out_by_their_network(autojump_clock):
    attempts = CodeAttempts(tracked_per_level=2)
    attempts.failed("10.0.0.1")
    attempts.failed("10.0.0.2")
    attempts.failed("10.0.0.3")  # no room for a third address: its /24 is counted
    assert attempts.wait_for("10.0.0.3") > 0
    assert attempts.wait_for("10.0.0.99") > 0  # the same /24
    assert attempts.wait_for("10.0.1.1") == 0


async def test_wrong_codes_are_forgotten_by_time_and_not_before(autojump_clock):
    attempts = CodeAttempts(tracked_per_level=2)
    for _ in range(3):
        attempts.failed("10.0.0.1")
    await trio.sleep(CODE_LOCKOUT_MAX + 1)
    assert attempts.wait_for("10.0.0.1") == 0
    assert attempts.failed("10.0.0.1") == 8  # the fourth wrong code: still counted
    await trio.sleep(CODE_FORGET_AFTER)
    attempts.failed("10.0.0.2")  # a wrong code elsewhere clears what has expired
    assert len(attempts) == 1
    assert attempts.failed("10.0.0.1") == 1


def _guess_from(admission: Admission, addresses: list[str]) -> list[str | None]:
    """One wrong guess from each address; the refusal code each earns."""
    return [getattr(admission.check(hello("AAA-AAA"), address), "code", None) for address in addresses]


async def test_a_crowd_guessing_on_and_on_spends_the_budget_down_to_the_reserve_and_the_player_still_sits_down(autojump_clock):
    """The code is never replaced; a crowd's networks are known after a guess or so each, then refused busy once the
    budget is down to the reserve, which a newcomer with the code still draws on; the budget refills slowly."""
    admission = Admission(code=CODE, guesses=GuessBudget(burst=50, per_second=0.05, reserve=5))
    crowd = [f"10.1.{n // 250}.{n % 250 + 1}" for n in range(1000)]  # four networks
    first_wave = _guess_from(admission, crowd)
    # The first network spends the budget down to the reserve; each other network, then unknown, one guess of it.
    assert first_wave.count(WRONG_CODE) == 45 + 3 and set(first_wave) == {WRONG_CODE, BUSY}
    assert admission.code == CODE
    await trio.sleep(CODE_LOCKOUT_MAX + 1)  # past every guesser's lockout: three guesses' worth, within the reserve
    assert set(_guess_from(admission, crowd)) == {BUSY}
    assert admission.check(hello(CODE), "10.9.0.1") is None  # the player, from a network of its own, sits down
    # A guess that proves the code is given back: the player took nothing from the budget.
    assert admission.guesses.left == pytest.approx(2 + (CODE_LOCKOUT_MAX + 1) * 0.05)
    # Above the reserve, guessers guess again at the refill's rate: the bound on guesses holds whoever guesses.
    await trio.sleep(200)
    assert _guess_from(admission, crowd).count(WRONG_CODE) == 10  # 2 + 3.05 + 10 guesses left, 5 of them the reserve


async def test_a_guess_that_proves_the_code_is_given_back_and_a_guesser_is_forgotten_after_a_day(autojump_clock):
    budget = GuessBudget(burst=3, per_second=0.0, reserve=1)
    assert budget.take("10.0.0.1")
    budget.give_back()
    assert budget.left == 3
    assert budget.take("10.0.0.1") and budget.take("10.0.0.2")
    budget.wrong("10.0.0.1")
    assert not budget.take("10.0.0.1") and not budget.take("10.0.0.9")  # down to the reserve: not for its network
    assert budget.take("10.0.1.3") and not budget.take("10.0.2.4")  # a newcomer takes the reserve; then none is left
    await trio.sleep(GUESSERS_REMEMBERED_FOR)
    assert not budget.is_guesser("10.0.0.1")


def test_the_guessers_remembered_are_bounded_the_one_idle_longest_forgotten_first():
    now = [0.0]
    budget = GuessBudget(clock=lambda: now[0], remembered=6)
    for n in range(5):
        now[0] += 1
        budget.wrong(f"10.0.{n}.1")
    assert [budget.is_guesser(f"10.0.{n}.1") for n in range(5)] == [False, False, True, True, True]
    assert not budget.is_guesser("10.0.1.2") and budget.is_guesser("10.0.2.2")  # the network is remembered with it


def test_the_default_budget_keeps_a_generated_code_years_away_however_many_addresses_guess():
    """The arithmetic of PROTOCOL.md 14.9: guesses at GUESSES_PER_SECOND cover half the generated codes in years."""
    codes = len("ABCDEFGHJKMNPQRSTUVWXYZ23456789") ** 6
    years = (codes / 2 - GUESS_BURST) / GUESSES_PER_SECOND / (365 * 86400)
    assert years > 10
    assert GUESS_RESERVE >= 1 and GUESS_BURST > GUESS_RESERVE


def test_a_chosen_code_must_be_as_strong_as_a_generated_one():
    assert all(weak_code_problem(make_join_code()) is None for _ in range(50))
    assert code_strength_bits("123456789") >= GENERATED_CODE_BITS
    for weak in ("1", "12345678", "abcde", "AAAAAAAAAAAA", "----"):
        problem = weak_code_problem(weak)
        assert problem is not None and "weaker than a generated one" in problem and "\n" not in problem

"""What one peer may cost the host: connections still in their handshake, message rate, guesses at the join code.

Each limit keeps a small, bounded amount of state, so that a flood of
strangers costs the host a bounded amount of memory and work while the
seated players carry on.  Time is trio's clock, like every other deadline
of the host, so tests can run them in virtual time.
"""

from __future__ import annotations

import ipaddress
import socket
from collections import OrderedDict
from typing import Callable

import trio

# Connections not yet seated.  A waiting connection costs the host one task and
# one socket, so many may wait; when they are all taken, the oldest goes.
MAX_HANDSHAKES = 1024
MAX_HANDSHAKES_PER_ADDRESS = 8
MAX_HANDSHAKES_PER_PREFIX = 256  # one /24 (IPv4) or /64 (IPv6): a whole LAN reconnecting at once after a blip
FIRST_BYTES_TIMEOUT = 1.0  # seconds a new connection has to send anything (a ClientHello, or hello) while the host is crowded
# Connections in their handshake at once from which the host is crowded: one that has sent nothing for
# FIRST_BYTES_TIMEOUT is then let go.  A LAN host has a handful; below this, a silent connection has the
# handshake's whole deadline, so that a player on a slow or loaded machine, resuming its seat, is not turned away.
CROWDED_HANDSHAKES = 64
MESSAGES_PER_SECOND = 5.0  # refused messages and error reports: an honest client sends almost none
MESSAGE_BURST = 20.0
CODE_LOCKOUT_FIRST = 1.0  # seconds after the first wrong code, doubling with each further one
CODE_LOCKOUT_MAX = 60.0
# An address's wrong codes are forgotten this long after its last one.  Longer
# than the longest lockout, so that no entry is forgotten while it still locks.
CODE_FORGET_AFTER = 600.0
# Lockout entries kept for addresses, and again for each coarser level: enough that a crowd of thousands of
# addresses guessing is counted address by address, never against the network it shares with the player.
TRACKED_PER_LEVEL = 16384
# Guesses at the join code from everyone together (PROTOCOL.md 5.6, 14.9): each code exchange is one guess,
# drawn from a bucket that holds GUESS_BURST and refills GUESSES_PER_SECOND, whatever the number of
# addresses; a guess that proves the right code is given back.  The last GUESS_RESERVE are kept for
# newcomers: addresses none of whose network (its /24 or /64) has guessed a wrong code within
# GUESSERS_REMEMBERED_FOR.  A crowd guessing on and on then runs the bucket down to the reserve and no
# further, and the player with the code, from a network of its own, still finds a guess there.  The burst is
# small because each guess costs the host a code exchange (about 14 ms of CPU).
GUESS_BURST = 300.0
GUESSES_PER_SECOND = 1.0  # a generated code (31^6) then takes 14 years on average, however many addresses guess
GUESS_RESERVE = 100.0
GUESSERS_REMEMBERED_FOR = 86_400.0  # seconds an address and its network stay guessers after their last wrong code
GUESSERS_REMEMBERED = 16384  # addresses and networks kept as guessers at most; past that the one idle longest is forgotten


def network_prefix(address: str, v4_bits: int = 24, v6_bits: int = 64) -> str:
    """The network an address belongs to, as limits count it: its /24 (IPv4) or /64 (IPv6).

    An IPv4 address mapped into IPv6 counts as IPv4.  A name that is no IP
    address (a local socket) is its own network.
    """
    try:  # an IPv4 address, the usual peer, without building an address object: a fifth of the cost
        packed = socket.inet_pton(socket.AF_INET, address)
    except OSError:
        pass
    else:
        shift = 32 - v4_bits
        return f"{socket.inet_ntop(socket.AF_INET, (int.from_bytes(packed, 'big') >> shift << shift).to_bytes(4, 'big'))}/{v4_bits}"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    bits = v4_bits if ip.version == 4 else v6_bits
    shift = ip.max_prefixlen - bits
    # The network's first address with the host bits cleared, as ip_network would print it; a
    # connection from a new address costs this once, and parsing a network string costs twice as much.
    return f"{type(ip)(int(ip) >> shift << shift)}/{bits}"


class Handshake:
    """One connection in its handshake; the gate cancels ``scope`` to drop it."""

    __slots__ = ("address", "prefix", "scope", "dropped")

    def __init__(self, address: str, prefix: str) -> None:
        self.address, self.prefix = address, prefix
        self.scope = trio.CancelScope()
        self.dropped = False  # made room for a newer connection


class HandshakeGate:
    """Every new connection gets in; when a limit is reached, the oldest one still in its handshake goes.

    Refusing the newcomer instead let anyone who held the slots with idle
    sockets keep every player out.  A connection holds its slot only for its
    handshake, and a real player's handshake takes milliseconds; to drop it,
    a flood would have to open more connections than the limit within those
    milliseconds, from as many networks.  Limits per address and per network
    make a crowded address or network drop its own oldest connection, so one
    neighbour cannot crowd out the others.
    """

    def __init__(
        self,
        total: int = MAX_HANDSHAKES,
        per_address: int = MAX_HANDSHAKES_PER_ADDRESS,
        per_prefix: int = MAX_HANDSHAKES_PER_PREFIX,
    ) -> None:
        self.total, self.per_address, self.per_prefix = total, per_address, per_prefix
        # Each in the order the connections came: the first is the oldest.
        self._all: dict[Handshake, None] = {}
        self._by_address: dict[str, dict[Handshake, None]] = {}
        self._by_prefix: dict[str, dict[Handshake, None]] = {}
        self.dropped = 0  # connections dropped to make room, for the host's figures

    def __len__(self) -> int:
        return len(self._all)

    def enter(self, address: str) -> Handshake:
        """Admit a new connection, dropping the oldest of a full address, network or host first."""
        prefix = network_prefix(address)
        same_address = self._by_address.get(address, {})
        same_prefix = self._by_prefix.get(prefix, {})
        if len(same_address) >= self.per_address:
            self._drop(next(iter(same_address)))
        elif len(same_prefix) >= self.per_prefix:
            self._drop(next(iter(same_prefix)))
        elif len(self._all) >= self.total:
            self._drop(next(iter(self._all)))
        handshake = Handshake(address, prefix)
        self._all[handshake] = None
        self._by_address.setdefault(address, {})[handshake] = None
        self._by_prefix.setdefault(prefix, {})[handshake] = None
        return handshake

    def leave(self, handshake: Handshake) -> None:
        """The handshake is over (seated, refused or dropped); calling it again does nothing."""
        if handshake not in self._all:
            return
        del self._all[handshake]
        for groups, key in ((self._by_address, handshake.address), (self._by_prefix, handshake.prefix)):
            group = groups[key]
            del group[handshake]
            if not group:
                del groups[key]

    def _drop(self, handshake: Handshake) -> None:
        handshake.dropped = True
        handshake.scope.cancel()
        self.leave(handshake)
        self.dropped += 1


class MessageRate:
    """A token bucket: a burst is allowed, a sustained flood is not."""

    __slots__ = ("per_second", "burst", "_clock", "_tokens", "_last")

    def __init__(
        self, per_second: float = MESSAGES_PER_SECOND, burst: float = MESSAGE_BURST, clock: Callable[[], float] = trio.current_time
    ) -> None:
        self.per_second, self.burst, self._clock = per_second, burst, clock
        self._tokens, self._last = burst, clock()

    def allow(self) -> bool:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.per_second)
        self._last = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


class CodeAttempts:
    """Wrong join codes per address: each one locks the address out for longer.

    An entry lasts until CODE_FORGET_AFTER past its last wrong code, and no
    entry is dropped before that, so a lockout always runs its course.
    Memory is bounded by aggregation instead: when TRACKED_PER_LEVEL
    addresses are remembered, a wrong code from another address counts for
    its whole /24 (IPv4) or /64 (IPv6), then for its /16 or /48, then for
    everyone.  Whoever guesses from thousands of addresses thereby locks
    out their networks, never frees a lock.
    """

    def __init__(self, clock: Callable[[], float] = trio.current_time, tracked_per_level: int = TRACKED_PER_LEVEL) -> None:
        self._clock = clock
        self._capacity = tracked_per_level
        # One table per level, most specific first; each maps a key to (wrong codes, locked until,
        # last wrong code) in the order of the last wrong code, so the first entries expire first.
        self._levels: list[OrderedDict[str, tuple[int, float, float]]] = [OrderedDict() for _ in range(4)]

    @staticmethod
    def _keys(address: str) -> tuple[str, str, str, str]:
        return address, network_prefix(address), network_prefix(address, 16, 48), "*"

    def wait_for(self, address: str) -> float:
        """Seconds this address must still wait before trying a code again (0 when it may)."""
        if not any(self._levels):
            return 0.0
        locked_until = max(
            (entry[1] for level, key in zip(self._levels, self._keys(address)) if (entry := level.get(key)) is not None),
            default=None,
        )
        return 0.0 if locked_until is None else max(0.0, locked_until - self._clock())

    def failed(self, address: str) -> float:
        """Record a wrong code; return the lockout it earned, in seconds."""
        now = self._clock()
        for level, key in zip(self._levels, self._keys(address)):
            self._forget_expired(level, now)
            if key in level or len(level) < self._capacity or key == "*":
                count = level.pop(key, (0, 0.0, 0.0))[0] + 1
                lockout = min(CODE_LOCKOUT_MAX, CODE_LOCKOUT_FIRST * 2 ** (count - 1))
                level[key] = (count, now + lockout, now)
                return lockout
        raise AssertionError("the last level takes every key")

    def succeeded(self, address: str) -> None:
        self._levels[0].pop(address, None)

    def __len__(self) -> int:
        return sum(map(len, self._levels))

    @staticmethod
    def _forget_expired(level: OrderedDict[str, tuple[int, float, float]], now: float) -> None:
        while level:
            key, (_, _, last) = next(iter(level.items()))
            if now - last < CODE_FORGET_AFTER:
                return
            del level[key]


class GuessBudget:
    """The guesses at the join code everyone together may make: a token bucket with a reserve for newcomers.

    A code exchange fixes one guess of the code (PROTOCOL.md 14.9), so the
    host takes a guess before it answers one, and gives it back when the
    exchange proves the right code.  An address whose network has guessed a
    wrong code lately (a guesser) may take a guess only while more than the
    reserve is left; a newcomer may take the reserve too.  Networks, not only
    addresses: a crowd of thousands of addresses is spent as a guess or so
    from each of its networks, not one from each address, before it is
    known.  Replacing the code instead would let whoever guesses lock the
    real player out: the code read aloud would stop working within seconds.
    """

    def __init__(
        self,
        burst: float | None = None,  # None: GUESS_BURST, and so on, as the module says when the budget is made
        per_second: float | None = None,
        reserve: float | None = None,
        clock: Callable[[], float] = trio.current_time,
        remembered: int = GUESSERS_REMEMBERED,
    ) -> None:
        self.burst = GUESS_BURST if burst is None else burst
        self.per_second = GUESSES_PER_SECOND if per_second is None else per_second
        self.reserve = GUESS_RESERVE if reserve is None else reserve
        self._clock = clock
        self._remembered = remembered
        self._tokens, self._last = self.burst, None  # full until the first guess, whenever that comes
        self._guessers: OrderedDict[str, float] = OrderedDict()  # address or network -> its last wrong code, the oldest first

    def take(self, address: str) -> bool:
        """Take a guess for this address; False when none is left that it may take (the host answers busy)."""
        now = self._clock()
        self._tokens = self.left_at(now)
        self._last = now
        floor = self.reserve if self.is_guesser(address, now) else 0.0
        if self._tokens - floor < 1:
            return False
        self._tokens -= 1
        return True

    def give_back(self) -> None:
        """The guess taken proved the right code: it was no guess against the code."""
        self._tokens = min(self.burst, self._tokens + 1)

    def wrong(self, address: str) -> None:
        """The guess taken was wrong: the address and its network are guessers from now on."""
        now = self._clock()
        for key in (address, network_prefix(address)):
            self._guessers.pop(key, None)
            self._guessers[key] = now
        while self._guessers:
            oldest, last = next(iter(self._guessers.items()))
            if len(self._guessers) <= self._remembered and now - last < GUESSERS_REMEMBERED_FOR:
                break
            del self._guessers[oldest]

    def is_guesser(self, address: str, now: float | None = None) -> bool:
        """Whether the address, or its network, has guessed a wrong code lately."""
        now = self._clock() if now is None else now
        return any(
            (last := self._guessers.get(key)) is not None and now - last < GUESSERS_REMEMBERED_FOR
            for key in (address, network_prefix(address))
        )

    def left_at(self, now: float) -> float:
        """Guesses left at this time."""
        return self._tokens if self._last is None else min(self.burst, self._tokens + (now - self._last) * self.per_second)

    @property
    def left(self) -> float:
        """Guesses left now (for tests)."""
        return self.left_at(self._clock())


# A chat line (PROTOCOL.md 6.23): a burst, then one every two seconds.  What
# comes faster is dropped, and the sender told once per run of drops; a peer
# that goes on flooding long after being told is cut off.
CHAT_BURST = 5.0
CHAT_PER_SECOND = 0.5
CHAT_DROPS_BURST = 50.0
CHAT_DROPS_PER_SECOND = 5.0

CHAT_RELAY = "relay"
CHAT_DROP = "drop"  # dropped, and the sender is told
CHAT_DROP_QUIETLY = "drop quietly"  # dropped again before another line went through: told already
CHAT_FLOOD = "flood"  # past the hard bound: the connection ends


class ChatRate:
    """What becomes of each chat line a seat sends: relayed, dropped (told once per run), or a flood."""

    __slots__ = ("_lines", "_drops", "_told")

    def __init__(self, clock: Callable[[], float] = trio.current_time) -> None:
        self._lines = MessageRate(CHAT_PER_SECOND, CHAT_BURST, clock)
        self._drops = MessageRate(CHAT_DROPS_PER_SECOND, CHAT_DROPS_BURST, clock)
        self._told = False

    def take(self) -> str:
        if self._lines.allow():
            self._told = False
            return CHAT_RELAY
        if not self._drops.allow():
            return CHAT_FLOOD
        if self._told:
            return CHAT_DROP_QUIETLY
        self._told = True
        return CHAT_DROP

"""Who may sit down: the table's join code, and the limits on strangers knocking.

An interactive host protects its table with a short code it prints beside
the join command; a joining player gives it in its hello.  Wrong codes lock
the address out for longer each time, everyone's guesses together come from
one budget (limits.GuessBudget) whose last guesses are kept for addresses
that have not guessed wrong, and only so many connections may be in their
handshake at once.  The code itself never changes: the player who has it is
never locked out by those who guess it.
"""

from __future__ import annotations

import hmac
import math
import os
import secrets
from dataclasses import dataclass, field
from typing import Callable

import trio

from ..protocol.errors import BAD_MESSAGE, BUSY, CODE_REQUIRED, TOO_MANY_ATTEMPTS, WRONG_CODE, ProtocolError
from ..protocol.messages import Hello
from ..protocol.joincode import normalize_code
from ..protocol.pake import CodeMismatch, HostCodeExchange, PakeError
from .limits import CodeAttempts, GuessBudget, HandshakeGate

# No I, L, O, 0 or 1: a code is read aloud or copied from another screen.
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6


def make_join_code() -> str:
    """A fresh code such as 'K7M-2QX' (about 30 bits; wrong guesses are slowed down)."""
    raw = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    return f"{raw[:3]}-{raw[3:]}"


GENERATED_CODE_BITS = CODE_LENGTH * math.log2(len(CODE_ALPHABET))


def code_strength_bits(code: str) -> float:
    """How many guesses a code is worth at most, in bits: its length times the bits of the
    smallest set of characters it is drawn from (the generated codes' alphabet; digits;
    letters and digits; any printable)."""
    compared = normalize_code(code)
    if set(compared) <= set(CODE_ALPHABET):
        symbols = len(CODE_ALPHABET)  # a code such as the host makes, digits only or not
    elif compared.isdigit():
        symbols = 10
    elif compared.isalnum() and compared.isascii():
        symbols = 36
    else:
        symbols = 95
    distinct = len(set(compared))
    # "AAAAAAAA" is one guess away from anyone who tries runs first.
    return 0.0 if distinct <= 1 else len(compared) * math.log2(symbols)


def weak_code_problem(code: str) -> str | None:
    """Why a code chosen by hand is weaker than a generated one, or None when it is not."""
    if code_strength_bits(code) >= GENERATED_CODE_BITS:
        return None
    return (
        f"the join code {code!r} is weaker than a generated one ({GENERATED_CODE_BITS:.0f} bits, such as"
        f" {make_join_code()}): use at least 9 digits, 6 letters and digits, or leave --code out"
    )


@dataclass
class Admission:
    code: str | None = None  # None: an open table
    host_key: bytes | None = None  # the key the code exchange binds (version 2); None: the table speaks version 1 only
    gate: HandshakeGate = field(default_factory=HandshakeGate)
    attempts: CodeAttempts = field(default_factory=CodeAttempts)
    guesses: GuessBudget = field(default_factory=GuessBudget)
    one_exchange_at_a_time: trio.Lock = field(default_factory=trio.Lock)  # held while an exchange's arithmetic runs
    # Told of each wrong code, with the address and the lockout it earned: a failed attempt is shown on the host's screen.
    on_wrong_code: Callable[[str, float], None] = lambda address, lockout: None
    entropy: Callable[[int], bytes] = os.urandom  # the code exchange's randomness (fixed only for the example sessions)

    def check(self, hello: Hello, address: str) -> ProtocolError | None:
        """The refusal this hello earns, or None when it may sit down.

        A resume needs no code: its 128-bit token is the stronger proof, and
        a host restarted with --resume has a new code the player never saw.
        """
        if self.code is None or hello.token is not None:
            return None
        wait = self.attempts.wait_for(address)
        if wait > 0:
            return ProtocolError(TOO_MANY_ATTEMPTS, f"too many wrong codes; try again in {wait:.0f} s")
        if hello.code is None:
            return ProtocolError(CODE_REQUIRED, "this table needs its join code")
        if not self.guesses.take(address):
            return _NO_GUESS_LEFT
        if not hmac.compare_digest(normalize_code(hello.code).encode(), normalize_code(self.code).encode()):
            return self._wrong_code(address)
        self._right_code(address)
        return None

    def begin_exchange(self, hello: Hello, address: str) -> tuple[ProtocolError | None, HostCodeExchange | None, bytes, bytes]:
        """Version 2 (PROTOCOL.md 14.9, step 2): the refusal this hello earns, or the exchange begun and the
        host's `pake` and `confirm`.  No exchange for an open table or a resume; a locked-out address is
        refused before its message is looked at, and a malformed message counts as a wrong code."""
        if hello.token is not None or self.code is None:
            if hello.token is None and hello.pake is not None:
                return ProtocolError(BAD_MESSAGE, "this table has no join code: join without one"), None, b"", b""
            return None, None, b"", b""
        wait = self.attempts.wait_for(address)
        if wait > 0:
            return ProtocolError(TOO_MANY_ATTEMPTS, f"too many wrong codes; try again in {wait:.0f} s"), None, b"", b""
        if hello.pake is None:
            return ProtocolError(CODE_REQUIRED, "this table needs its join code"), None, b"", b""
        if not self.guesses.take(address):
            return _NO_GUESS_LEFT, None, b"", b""
        assert self.host_key is not None and hello.key is not None  # the connection checked the hello for version 2
        exchange = HostCodeExchange(self.code, host_key=self.host_key, entropy=self.entropy)
        try:
            message, confirm = exchange.answer(hello.pake, guest_key=hello.key, guest_nonce=hello.nonce)
        except PakeError as err:
            self._wrong_code(address)
            return ProtocolError(BAD_MESSAGE, f"field 'pake': {err}"), None, b"", b""
        return None, exchange, message, confirm

    def finish_exchange(self, exchange: HostCodeExchange, confirm: bytes | None, address: str) -> ProtocolError | None:
        """Step 4: None when the client proved it holds the code (and saw this host's key), else wrong_code.

        ``confirm`` None: the client ended the exchange without its confirmation.  Its message fixed one
        guess of the code, and a client that learns the guess was wrong (or that it met another host key
        than the one the host has) stops there: that is a failed attempt too.
        """
        try:
            if confirm is None:
                raise CodeMismatch("no key confirmation came")
            exchange.check(confirm)
        except CodeMismatch:
            return self._wrong_code(address)
        self._right_code(address)
        return None

    def _right_code(self, address: str) -> None:
        self.attempts.succeeded(address)
        self.guesses.give_back()

    def _wrong_code(self, address: str) -> ProtocolError:
        lockout = self.attempts.failed(address)
        self.guesses.wrong(address)
        self.on_wrong_code(address, lockout)
        return ProtocolError(WRONG_CODE, f"wrong join code; wait {lockout:.0f} s before trying again")


# Refused before the code is looked at, so the refusal says nothing of the code; the client tries again (5.1, 5.6).
_NO_GUESS_LEFT = ProtocolError(BUSY, "too many guesses at the join code lately; trying again shortly")

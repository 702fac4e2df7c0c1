"""Who may sit down: the table's join code, and the limits on strangers knocking.

An interactive host protects its table with a short code it prints beside
the join command; a joining player gives it in its hello.  Wrong codes lock
the address out for longer each time, and only so many connections may be
in their handshake at once.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field

from ..protocol.errors import CODE_REQUIRED, TOO_MANY_ATTEMPTS, WRONG_CODE, ProtocolError
from ..protocol.messages import Hello
from ..protocol.joincode import normalize_code
from .limits import CodeAttempts, HandshakeGate

# No I, L, O, 0 or 1: a code is read aloud or copied from another screen.
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6


def make_join_code() -> str:
    """A fresh code such as 'K7M-2QX' (about 30 bits; wrong guesses are slowed down)."""
    raw = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    return f"{raw[:3]}-{raw[3:]}"


@dataclass
class Admission:
    code: str | None = None  # None: an open table
    gate: HandshakeGate = field(default_factory=HandshakeGate)
    attempts: CodeAttempts = field(default_factory=CodeAttempts)

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
        if not hmac.compare_digest(normalize_code(hello.code).encode(), normalize_code(self.code).encode()):
            lockout = self.attempts.failed(address)
            return ProtocolError(WRONG_CODE, f"wrong join code; wait {lockout:.0f} s before trying again")
        self.attempts.succeeded(address)
        return None

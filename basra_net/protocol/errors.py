"""The one exception type for bad input from a peer, and its error codes."""

from __future__ import annotations

BAD_FRAME = "bad_frame"
BAD_MSGPACK = "bad_msgpack"
BAD_MESSAGE = "bad_message"
UNKNOWN_TYPE = "unknown_type"
UNEXPECTED = "unexpected"
UNSUPPORTED_VERSION = "unsupported_version"
ILLEGAL_MOVE = "illegal_move"
STALE_REQUEST = "stale_request"
NOT_YOUR_TURN = "not_your_turn"
TABLE_FULL = "table_full"
TIMEOUT = "timeout"
INTERNAL = "internal"
CODE_REQUIRED = "code_required"
WRONG_CODE = "wrong_code"
TOO_MANY_ATTEMPTS = "too_many_attempts"
BUSY = "busy"
RATE_LIMIT = "rate_limit"
UNKNOWN_TOKEN = "unknown_token"
BAD_RESUME = "bad_resume"
BAD_SIGNATURE = "bad_signature"
BAD_DEAL = "bad_deal"  # version 2: a step of the hidden deal failed a check (PROTOCOL.md 15.11)
CHAT_DROPPED = "chat_dropped"
DEAL_MISMATCH = "deal_mismatch"  # version 2: no deal mode both seats and the host offer (PROTOCOL.md 15.15)

# Codes answered while the connection carries on: a move or message at the
# wrong moment, refused on its own, or a chat line the host did not pass on.
NON_FATAL_CODES = frozenset({UNEXPECTED, ILLEGAL_MOVE, STALE_REQUEST, NOT_YOUR_TURN, CHAT_DROPPED})

# Refusals before `welcome` that say nothing against the client, only that the host let its
# connection go (to make room, or because its first bytes came late, as when a lost segment is
# retransmitted): the client tries again after a wait (PROTOCOL.md, section 5.1).
TRY_AGAIN_CODES = frozenset({BUSY, TIMEOUT})

# Codes after which the connection is closed. A broken frame or body means the
# byte stream can no longer be trusted; a well-formed message that is not one
# of ours, or lacks its fields, comes from a peer that does not speak the
# protocol; the others end the session by nature.
FATAL_CODES = frozenset(
    {
        BAD_FRAME,
        BAD_MSGPACK,
        BAD_MESSAGE,
        UNKNOWN_TYPE,
        UNSUPPORTED_VERSION,
        TABLE_FULL,
        TIMEOUT,
        INTERNAL,
        CODE_REQUIRED,
        WRONG_CODE,
        TOO_MANY_ATTEMPTS,
        BUSY,
        RATE_LIMIT,
        UNKNOWN_TOKEN,
        BAD_RESUME,
        BAD_SIGNATURE,
        BAD_DEAL,
        DEAL_MISMATCH,
    }
)

ERROR_CODES = FATAL_CODES | NON_FATAL_CODES


class ProtocolError(Exception):
    """A peer sent something this side must refuse, identified by an error code."""

    def __init__(self, code: str, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown protocol error code {code!r}")
        super().__init__(code, message)
        self.code = code
        self.message = message

    @property
    def fatal(self) -> bool:
        """True when the connection must be closed after reporting this error."""
        return self.code in FATAL_CODES

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

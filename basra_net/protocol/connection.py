"""Connection state machines for both ends, sans I/O (feed bytes, get messages; send messages, get bytes).

Each side checks the order of what its peer sends (PROTOCOL.md, section 7)
and of what it sends itself.  A peer's mistake raises ProtocolError with the
code to answer; a mistake of our own raises LocalProtocolError, a bug.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import (
    BAD_FRAME,
    FATAL_CODES,
    NOT_YOUR_TURN,
    STALE_REQUEST,
    UNEXPECTED,
    UNSUPPORTED_VERSION,
    ProtocolError,
)
from .framing import FrameDecoder, encode_frame
from .messages import (
    Commit,
    Deal,
    Error,
    GameEnd,
    Hello,
    Leave,
    MatchEnd,
    MatchStart,
    Message,
    Play,
    Ping,
    Played,
    Pong,
    Reveal,
    Seed,
    Welcome,
    YourTurn,
    from_wire,
    to_wire,
)

class LocalProtocolError(Exception):
    """This side tried to send something the protocol does not allow here: a bug."""


@dataclass(frozen=True)
class ConnectionClosed:
    """The peer closed its end cleanly, at a frame boundary."""


class _Connection:
    def __init__(self) -> None:
        self._decoder = FrameDecoder()
        self._eof = False
        self._closed_reported = False
        self.closed = False  # after a Leave, a MatchEnd, a fatal Error or end of stream

    # --- bytes in, messages out --------------------------------------------------------

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the peer; b"" means the peer closed its end."""
        if data:
            self._decoder.feed(data)
        else:
            self._eof = True

    @property
    def in_partial_frame(self) -> bool:
        """A frame has started but not finished: the caller runs a deadline on it."""
        return self._decoder.in_partial_frame

    def next_event(self) -> Message | ConnectionClosed | None:
        """The next message from the peer, ConnectionClosed, or None when more bytes are needed."""
        wire = self._decoder.next_message()
        if wire is None:
            if not self._eof:
                return None
            if self._decoder.buffered:
                raise ProtocolError(BAD_FRAME, "the connection closed in the middle of a frame")
            self.closed = True
            return ConnectionClosed()
        message = from_wire(wire)
        self._check_incoming(message)
        if isinstance(message, Leave) or (isinstance(message, Error) and message.code in FATAL_CODES):
            self.closed = True
        return message

    # --- messages in, bytes out --------------------------------------------------------

    def send(self, message: Message) -> bytes:
        self._check_outgoing(message)
        return encode_frame(to_wire(message))

    def send_error(self, error: ProtocolError) -> bytes:
        """The frame that reports this error to the peer (always allowed)."""
        return encode_frame(to_wire(Error(error.code, error.message)))

    def _check_incoming(self, message: Message) -> None:
        raise NotImplementedError

    def _check_outgoing(self, message: Message) -> None:
        raise NotImplementedError


def _unexpected(message: Message, why: str) -> ProtocolError:
    return ProtocolError(UNEXPECTED, f"'{message.TYPE}' {why}")


class HostConnection(_Connection):
    """The host's end of one seat's connection."""

    def __init__(self) -> None:
        super().__init__()
        self.hello: Hello | None = None
        self.seat: int | None = None
        self.awaiting_seed: int | None = None  # the game whose commitment awaits the seed
        self.open_request: int | None = None

    @property
    def seated(self) -> bool:
        return self.seat is not None

    def _check_incoming(self, message: Message) -> None:
        if isinstance(message, (Error, Leave)) and self.hello is not None:
            return
        if isinstance(message, (Ping, Pong)) and self.seated:
            return
        if self.hello is None:
            if not isinstance(message, Hello):
                raise _unexpected(message, "cannot come before 'hello'")
            self.hello = message
            return
        if not self.seated:
            raise _unexpected(message, "cannot come before 'welcome'")
        if isinstance(message, Seed):
            if self.awaiting_seed != message.game:
                raise _unexpected(message, f"for game {message.game} does not answer a commitment")
            self.awaiting_seed = None
        elif isinstance(message, Play):
            if self.open_request is None:
                raise ProtocolError(NOT_YOUR_TURN, "it is not your turn")
            if message.request != self.open_request:
                raise ProtocolError(
                    STALE_REQUEST, f"request {message.request} is not the open request {self.open_request}"
                )
            self.open_request = None
        else:
            raise _unexpected(message, "is not something a client sends")

    def _check_outgoing(self, message: Message) -> None:
        if isinstance(message, Welcome):
            if self.hello is None or self.seated:
                raise LocalProtocolError("welcome goes once, after hello")
            self.seat = message.seat
        elif isinstance(message, (Error, Leave, MatchEnd)):
            return
        elif not self.seated:
            raise LocalProtocolError(f"{message.TYPE} before the seat is taken")
        elif isinstance(message, (Ping, Pong)):
            return
        elif isinstance(message, Commit):
            self.awaiting_seed = message.game
        elif isinstance(message, YourTurn):
            self.open_request = message.request
        elif not isinstance(message, (MatchStart, Deal, Played, GameEnd, Reveal)):
            raise LocalProtocolError(f"the host does not send {message.TYPE}")


class ClientConnection(_Connection):
    """A player's end of the connection to the host."""

    def __init__(self) -> None:
        super().__init__()
        self.hello_sent = False
        self.offered_versions: tuple[int, ...] = ()
        self.welcome: Welcome | None = None
        self.match_started = False
        self.game = 0  # the game in progress or last ended
        self.game_live = False
        self.seed_sent_for = 0  # seat 1: the last game whose seed went out
        self.commit_for = 0  # seat 1: the last game whose commitment arrived
        self.reveal_due: int | None = None
        self.open_request: int | None = None
        self.cut_off = False  # a game was revealed part way: the match is being abandoned
        self.over = False

    @property
    def seat(self) -> int | None:
        return self.welcome.seat if self.welcome else None

    def _check_incoming(self, message: Message) -> None:
        if isinstance(message, (Error, Leave)):
            return
        if not self.hello_sent:
            raise _unexpected(message, "cannot come before 'hello'")
        if self.welcome is None:
            if not isinstance(message, Welcome):
                raise _unexpected(message, "cannot come before 'welcome'")
            if message.version not in self.offered_versions:
                raise ProtocolError(UNSUPPORTED_VERSION, f"the host chose version {message.version}, which was not offered")
            self.welcome = message
            return
        if isinstance(message, (Ping, Pong)):
            return
        if self.over:
            raise _unexpected(message, "came after the match ended")
        if self.cut_off and not isinstance(message, MatchEnd):
            raise _unexpected(message, "came after the reveal of a game cut off; only match_end may follow")
        if isinstance(message, MatchStart):
            if self.match_started:
                raise _unexpected(message, "came twice")
            self.match_started = True
            return
        if not self.match_started:
            raise _unexpected(message, "cannot come before 'match_start'")
        if isinstance(message, Commit):
            if self.seat != 1 or self.game_live or self.reveal_due is not None or message.game != self.game + 1:
                raise _unexpected(message, f"for game {message.game} is out of order")
            if self.commit_for == message.game:
                raise _unexpected(message, f"for game {message.game} came twice")
            self.commit_for = message.game
        elif isinstance(message, Deal):
            if message.hand_no == 1:
                if self.game_live or self.reveal_due is not None or message.game != self.game + 1:
                    raise _unexpected(message, f"of game {message.game} is out of order")
                if self.seat == 1 and self.seed_sent_for != message.game:
                    raise _unexpected(message, f"of game {message.game} came before the seed exchange")
                self.game = message.game
                self.game_live = True
            elif not self.game_live or message.game != self.game:
                raise _unexpected(message, "continues no game in progress")
        elif isinstance(message, YourTurn):
            if not self.game_live:
                raise _unexpected(message, "came with no game in progress")
            self.open_request = message.request
        elif isinstance(message, Played):
            if not self.game_live or message.game != self.game:
                raise _unexpected(message, "belongs to no game in progress")
        elif isinstance(message, GameEnd):
            if not self.game_live or message.game != self.game:
                raise _unexpected(message, "ends no game in progress")
            self.game_live = False
            self.open_request = None
            if self.seat == 1:
                self.reveal_due = message.game
        elif isinstance(message, Reveal):
            if self.reveal_due == message.game:
                self.reveal_due = None
            elif self.game_live and message.game == self.game and self.seat == 1:
                # The reveal of a game cut off: the match is being abandoned.
                self.game_live = False
                self.open_request = None
                self.cut_off = True
            else:
                raise _unexpected(message, f"of game {message.game} is out of order")
        elif isinstance(message, MatchEnd):
            self.over = True
            self.closed = True
        else:
            raise _unexpected(message, "is not something a host sends")

    def _check_outgoing(self, message: Message) -> None:
        if isinstance(message, Hello):
            if self.hello_sent:
                raise LocalProtocolError("hello goes once")
            self.hello_sent = True
            self.offered_versions = message.versions
        elif isinstance(message, (Error, Leave)):
            return
        elif isinstance(message, (Ping, Pong)):
            if self.welcome is None:
                raise LocalProtocolError(f"{message.TYPE} before welcome")
        elif isinstance(message, Seed):
            if self.commit_for != message.game or self.seed_sent_for == message.game:
                raise LocalProtocolError("a seed answers one commitment")
            self.seed_sent_for = message.game
        elif isinstance(message, Play):
            if self.open_request is None or message.request != self.open_request:
                raise LocalProtocolError("a play answers the open request")
            self.open_request = None
        else:
            raise LocalProtocolError(f"a client does not send {message.TYPE}")

"""Connection state machines for both ends, sans I/O (feed bytes, get messages; send messages, get bytes).

Each side checks the order of what its peer sends (PROTOCOL.md, section 7)
and of what it sends itself.  A peer's mistake raises ProtocolError with the
code to answer; a mistake of our own raises LocalProtocolError, a bug.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import (
    BAD_FRAME,
    BAD_MESSAGE,
    BAD_RESUME,
    FATAL_CODES,
    NOT_YOUR_TURN,
    STALE_REQUEST,
    UNEXPECTED,
    UNSUPPORTED_VERSION,
    WRONG_CODE,
    ProtocolError,
)
from .framing import MAX_CLIENT_FRAME_ENTRIES, MAX_FRAME, MAX_FRAME_BEFORE_WELCOME, FrameDecoder, encode_frame
from .frequent import decode_frequent
from .shuffle import is_weak_public_key
from .messages import (
    CLIENT,
    COMMIT_DEAL,
    HIDDEN_DEAL,
    HOST,
    Audit,
    Audited,
    Lock,
    Open,
    HiddenPlay,
    HiddenTurn,
    Locked,
    Opened,
    Shuffle,
    Commit,
    Deal,
    Error,
    GameEnd,
    Hello,
    Leave,
    MatchEnd,
    MatchStart,
    Message,
    Phase,
    Play,
    Played,
    Reveal,
    Seed,
    Sig,
    Welcome,
    YourTurn,
    CATALOGUE,
    PROTOCOL_VERSIONS,
    from_wire,
    kind_of,
    to_wire,
)

# Every message in and out is checked against its phase.  Python 3.11 reads an enum's member through the
# metaclass's __getattr__ hook, about a thousand instructions a time, so the checks compare these instead.
_FIRST, _EXCHANGE, _ANSWER, _ANY, _SEATED, _MATCH = Phase.FIRST, Phase.EXCHANGE, Phase.ANSWER, Phase.ANY, Phase.SEATED, Phase.MATCH


class LocalProtocolError(Exception):
    """This side tried to send something the protocol does not allow here: a bug."""


class RedealRefused(ProtocolError):
    """The host sent a new commitment for a game whose deal seat 1's seed had already fixed."""

    def __init__(self, game: int) -> None:
        super().__init__(UNEXPECTED, f"'commit' for game {game} came again after the seed fixed its deal: a fixed deal may not be redealt")
        self.game = game


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
    def max_frame(self) -> int:
        """The longest frame body the peer may send now."""
        return self._decoder.max_frame

    @property
    def max_entries(self) -> int | None:
        """The most container entries, all together, one frame of the peer may hold."""
        return self._decoder.max_entries

    @property
    def in_partial_frame(self) -> bool:
        """A frame has started but not finished: the caller runs a deadline on it."""
        return self._decoder.in_partial_frame

    def new_transport(self) -> None:
        """A fresh byte stream replaces a broken one (a resume): the framing starts over, the match state stays."""
        self._decoder = FrameDecoder()
        self._eof = False
        self.closed = False

    @property
    def last_body(self) -> bytes:
        """The frame body of the message next_event returned last, exactly as it arrived."""
        return self._decoder.last_body

    def receive_message(self, message: Message) -> None:
        """Take a message already decoded (one read back from a transcript) through the same checks."""
        self._check_incoming(message)

    def next_event(self) -> Message | ConnectionClosed | None:
        """The next message from the peer, ConnectionClosed, or None when more bytes are needed."""
        while True:
            body = self._decoder.next_body()
            if body is None:
                if not self._eof:
                    return None
                if self._decoder.buffered:
                    raise ProtocolError(BAD_FRAME, "the connection closed in the middle of a frame")
                self.closed = True
                return ConnectionClosed()
            message = self._decode(body)
            if self._check_incoming(message) is False:
                continue  # a repeat of something already taken (section 5.8), dropped silently
            if isinstance(message, Leave) or (isinstance(message, Error) and message.code in FATAL_CODES):
                self.closed = True
            return message

    def _decode(self, body: bytes) -> Message:
        """The message a frame body holds, checked field by field (the general way)."""
        return from_wire(self._decoder.decode(body))

    # --- messages in, bytes out --------------------------------------------------------

    def send(self, message: Message) -> bytes:
        self._check_outgoing(message)
        return encode_frame(to_wire(message))

    def check_send(self, message: Message) -> None:
        """What send() checks, for a message whose frame the caller already holds (encoded once, kept for a resume)."""
        self._check_outgoing(message)

    def send_error(self, error: ProtocolError) -> bytes:
        """The frame that reports this error to the peer (always allowed)."""
        return encode_frame(to_wire(Error(error.code, error.message)))

    def _check_incoming(self, message: Message) -> bool | None:
        """Raise for what the peer may not send here; False drops a harmless repeat."""
        raise NotImplementedError

    def _check_outgoing(self, message: Message) -> None:
        raise NotImplementedError


def _unexpected(message: Message, why: str) -> ProtocolError:
    return ProtocolError(UNEXPECTED, f"'{message.TYPE}' {why}")


# What the host sends whose outgoing check, on a seated connection, passes in
# every version and changes nothing (HostConnection._check_outgoing): a sender
# that queues such a message only after the welcome has gone out (the table,
# through a seat's outbox) may leave the check out.  Commit and YourTurn are
# never among them: they open what the client's seed and play answer.
CHECK_FREE_WHEN_SEATED: frozenset[type[Message]] = frozenset(
    kind.message
    for kind in CATALOGUE
    if HOST in kind.sent_by
    and set(PROTOCOL_VERSIONS) <= kind.versions
    and kind.phase in (_ANY, _SEATED, _MATCH)
    and kind.message not in (Commit, YourTurn)
)


@dataclass
class HostMatch:
    """What one match leaves open on the host's end of a seat's connection; a resume hands it to the next
    connection (`HostConnection.restore`), and the next match on the same connection starts a new one."""

    awaiting_seed: int | None = None  # the game whose commitment awaits the seed
    open_request: int | None = None
    # The last answers taken, so that the repeat a resumed client sends is dropped (section 5.8).
    answered_request: int | None = None
    seed_taken: Seed | None = None
    over: bool = False  # its match_end went out


class HostConnection(_Connection):
    """The host's end of one seat's connection."""

    def __init__(self) -> None:
        super().__init__()
        self._decoder.max_frame = MAX_FRAME_BEFORE_WELCOME  # a hello is all that may come before the welcome
        self._decoder.max_entries = MAX_CLIENT_FRAME_ENTRIES
        self.hello: Hello | None = None
        self.version: int | None = None  # agreed once the hello is in (agree())
        self.pake_sent = False  # version 2: the host's half of the code exchange went out
        self.awaiting_confirm = False  # and the client's key confirmation has not come yet
        self.seat: int | None = None
        self.match = HostMatch()

    @property
    def seated(self) -> bool:
        return self.seat is not None


    def agree(self, version: int, host_key: bytes | None = None) -> None:
        """The version the host chose for this connection; the hello must suit it (sections 14.2, 14.7)."""
        assert self.hello is not None and self.version is None
        if version >= 2:
            if self.hello.key is None:
                raise ProtocolError(BAD_MESSAGE, "a version 2 'hello' gives the guest's identity key in 'key'")
            if is_weak_public_key(self.hello.key):
                raise ProtocolError(BAD_MESSAGE, "the 'key' of the hello is a weak key, under which signatures prove nothing")
            if self.hello.key == host_key:
                raise ProtocolError(BAD_MESSAGE, "the 'key' of the hello is the host's own key: the two ends of a channel differ")
            if self.hello.code is not None:
                raise ProtocolError(BAD_MESSAGE, "version 2 sends no 'code': the code never crosses the network (section 14.9)")
        self.version = version

    def restore(self, match: HostMatch) -> None:
        """Take over what the seat's earlier connection left open of the match, before a resumed seat's replay."""
        self.match = match

    def start_next_match(self) -> None:
        """The seat's next match begins on this connection, once its `match_end` has gone out: nothing of the last
        one stays open or counts as a repeat."""
        if not self.match.over:
            raise LocalProtocolError("the next match starts once this one is over")
        self.match = HostMatch()

    def _decode(self, body: bytes) -> Message:
        # A play, ping or pong in its usual form takes one step; anything else the general way.
        message = decode_frequent(body)
        return super()._decode(body) if message is None else message

    def _check_incoming(self, message: Message) -> bool | None:
        kind = kind_of(message)
        if self.hello is None:
            if kind.phase is not _FIRST:
                raise _unexpected(message, "cannot come before 'hello'")
            self.hello = message
            return True
        if CLIENT not in kind.sent_by or kind.phase is _FIRST:
            raise _unexpected(message, "is not something a client sends here")
        if self.version is not None and self.version not in kind.versions:
            raise _unexpected(message, f"is not part of version {self.version}")
        if kind.phase is _ANY:
            return True
        if kind.phase is _EXCHANGE:
            if not self.awaiting_confirm:
                raise _unexpected(message, "answers no code exchange")
            self.awaiting_confirm = False
            return True
        if not self.seated:
            raise _unexpected(message, "cannot come before 'welcome'")
        if kind.phase is _SEATED:
            return True
        match = self.match
        if isinstance(message, Seed):
            if message == match.seed_taken:
                return False
            if match.awaiting_seed != message.game:
                raise _unexpected(message, f"for game {message.game} does not answer a commitment")
            match.awaiting_seed = None
            match.seed_taken = message
        elif isinstance(message, (Play, HiddenPlay)):
            if message.request == match.answered_request:
                return False
            if match.open_request is None:
                raise ProtocolError(NOT_YOUR_TURN, "it is not your turn")
            if message.request != match.open_request:
                raise ProtocolError(
                    STALE_REQUEST, f"request {message.request} is not the open request {match.open_request}"
                )
            match.open_request = None
            match.answered_request = message.request
        return True

    def _check_outgoing(self, message: Message) -> None:
        kind = kind_of(message)
        if HOST not in kind.sent_by:
            raise LocalProtocolError(f"the host does not send {message.TYPE}")
        if self.version is not None and self.version not in kind.versions:
            raise LocalProtocolError(f"{message.TYPE} is not part of version {self.version}")
        if kind.phase is _EXCHANGE:
            if self.hello is None or self.hello.pake is None or self.pake_sent or self.seated:
                raise LocalProtocolError("pake answers a hello's pake, once")
            self.pake_sent = self.awaiting_confirm = True
        elif kind.phase is _ANSWER:
            if self.hello is None or self.seated:
                raise LocalProtocolError("welcome goes once, after hello")
            if self.awaiting_confirm:
                raise LocalProtocolError("welcome goes after the key confirmation")
            self.seat = message.seat
            self._decoder.max_frame = MAX_FRAME
        elif isinstance(message, MatchEnd):
            self.match.over = True  # a match abandoned may end before a seat's welcome
        elif kind.phase is _ANY:
            return
        elif not self.seated:
            raise LocalProtocolError(f"{message.TYPE} before the seat is taken")
        elif isinstance(message, Commit):
            self.match.awaiting_seed = message.game
        elif isinstance(message, (YourTurn, HiddenTurn)):
            self.match.open_request = message.request


# What a client sends again, unchanged and in this order, right after the welcome of a resume: each answer
# it sent whose effect has not been seen yet (PROTOCOL.md 5.8, rule 6); the host drops an exact repeat.
SENT_AGAIN: tuple[type[Message], ...] = (Lock, Open, Audit, Seed, Play, HiddenPlay, Sig)


@dataclass
class ClientMatch:
    """Where one match stands on a player's end of the connection: the order its stream has kept so far, and the
    answers sent whose effect has not been seen yet, which a resume sends again.  The next match on the same
    connection starts a new one (`ClientConnection.start_next_match`)."""

    started: bool = False
    hidden: bool = False  # the match deals with hidden hands (PROTOCOL.md 15.15), as its match_start says
    shuffled: int = 0  # hidden deal: the last game whose shuffle arrived
    game: int = 0  # the game in progress or last ended
    game_live: bool = False
    seed_sent_for: int = 0  # seat 1: the last game whose seed went out
    commit_for: int = 0  # seat 1: the last game whose commitment arrived
    reveal_due: int | None = None
    revealed: int = 0  # seat 1: the last game whose seed the host revealed
    open_request: int | None = None
    cut_off: bool = False  # a game was revealed part way: the match is being abandoned
    over: bool = False
    result_signed: bool = False  # version 2: the host's signature of the result arrived (after match_end)
    unconfirmed_seed: Seed | None = None
    unconfirmed_play: Play | HiddenPlay | None = None
    unconfirmed_sig: Sig | None = None  # version 2: the host goes on only once it has the countersignature
    # Hidden deal: the party's steps sent since the host last showed it had every step owed
    # (a shuffle, a deal or a request to act comes only then); a resume sends them again.
    unconfirmed_steps: list[Lock | Open | Audit] = field(default_factory=list)


class ClientConnection(_Connection):
    """A player's end of the connection to the host."""

    def __init__(self) -> None:
        super().__init__()
        self.hello_sent = False
        self.offered_versions: tuple[int, ...] = ()
        self.exchange_begun = False  # version 2: the hello began a code exchange
        self.pake_taken = False  # the host's half of it arrived
        self.confirm_sent = False
        self.welcome: Welcome | None = None
        self.match = ClientMatch()
        self.received = 0  # stream messages taken (section 5.8)
        self.replay_until = 0  # the stream count the host had reached at the last welcome
        self.resuming = False  # a resume hello went out (or is due); its welcome is awaited
        self.resume_token: bytes | None = None

    @property
    def seat(self) -> int | None:
        return self.welcome.seat if self.welcome else None


    def new_transport(self) -> None:
        super().new_transport()
        if self.welcome is None:
            # A hello sent again before any welcome brings a code exchange of its own: one per connection (14.9).
            self.pake_taken = self.confirm_sent = False

    def start_next_match(self) -> None:
        """The seat's next match begins on this connection, once the last one is over: its `match_end` in and, in
        version 2, the host's signature of its result.  Nothing of the last match stays open or due."""
        match = self.match
        if not match.over or self.welcome is None or self.welcome.version >= 2 and not match.result_signed:
            raise LocalProtocolError("the next match starts once this one is over")
        self.match = ClientMatch()
        self.closed = False  # the connection carries the next match

    def take_up_hello(self, hello: Hello) -> None:
        """The hello that took the seat, read back from this seat's transcript before a resume.

        Its offer of versions holds; the code exchange it began was finished on
        that earlier connection (`pake` and `pake_confirm` are not recorded, 6.21, 6.22), so none is
        awaited now and the recorded welcome that follows it is taken as it came.
        """
        if self.hello_sent:
            raise LocalProtocolError("hello goes once")
        self.hello_sent = True
        self.offered_versions = hello.versions

    def begin_resume(self, token: bytes) -> None:
        """A new connection resumes the seat the token holds: it starts with a resume hello.

        Without a welcome yet (a seat resumed from nothing), the resume's
        welcome is taken as the first one and the whole stream is replayed.
        """
        if self.welcome is not None and self.welcome.token != token:
            raise LocalProtocolError("a seat resumes with the token of its welcome")
        self.new_transport()
        self.resuming = True
        self.resume_token = token

    def resend(self) -> bytes:
        """The answers to send again after a resume's welcome, in SENT_AGAIN's order; the host drops any it already has."""
        match = self.match
        answers = [m for m in (*match.unconfirmed_steps, match.unconfirmed_seed, match.unconfirmed_play, match.unconfirmed_sig) if m is not None]
        answers.sort(key=lambda m: SENT_AGAIN.index(type(m)))  # stable: a party's steps stay in the order it sent them
        return b"".join(encode_frame(to_wire(m)) for m in answers)

    def _check_resume_welcome(self, message: Welcome) -> None:
        if message.version not in self.offered_versions:
            raise ProtocolError(UNSUPPORTED_VERSION, f"the host chose version {message.version}, which was not offered")
        first = self.welcome
        if first is None:
            if message.token != self.resume_token:
                raise ProtocolError(BAD_RESUME, "the welcome to a resume names another token")
            self.welcome = first = message
        if (message.seat, message.match_id, message.host_key, message.token) != (first.seat, first.match_id, first.host_key, first.token):
            raise ProtocolError(BAD_RESUME, "the welcome to a resume names another seat, match, key or token")
        if message.sent < self.received:
            raise ProtocolError(
                BAD_RESUME, f"the host says it sent {message.sent} messages, but {self.received} arrived: it has lost part of the match"
            )
        self.resuming = False
        self.replay_until = message.sent

    def _check_incoming(self, message: Message) -> bool | None:
        kind = kind_of(message)
        if HOST not in kind.sent_by:
            raise _unexpected(message, "is not something a host sends")
        if kind.phase is _ANY:
            return True
        if not self.hello_sent:
            raise _unexpected(message, "cannot come before 'hello'")
        if self.resuming:
            if kind.phase is not _ANSWER:
                raise _unexpected(message, "cannot come before the welcome to a resume")
            self._check_resume_welcome(message)
            return True
        if kind.phase is _EXCHANGE:
            if not self.exchange_begun or self.pake_taken or self.welcome is not None:
                raise _unexpected(message, "answers no code exchange")
            self.pake_taken = True
            return True
        if self.welcome is None:
            if kind.phase is not _ANSWER:
                raise _unexpected(message, "cannot come before 'welcome'")
            if message.version not in self.offered_versions:
                raise ProtocolError(UNSUPPORTED_VERSION, f"the host chose version {message.version}, which was not offered")
            if self.exchange_begun and not self.confirm_sent:
                # A host that knows the code answers the exchange; seating without it proves nothing.
                raise ProtocolError(WRONG_CODE, "the host seated this player without the code exchange its hello began")
            self.welcome = message
            self.replay_until = message.sent
            return True
        if self.welcome.version not in kind.versions:
            raise _unexpected(message, f"is not part of version {self.welcome.version}")
        if kind.phase is _SEATED:
            return True
        if not kind.stream:
            raise _unexpected(message, "came again")
        self._check_stream(message)
        self.received += 1
        return True

    @property
    def _answered_before(self) -> bool:
        """The stream message now arriving is replayed and not the replay's last: the host sends a
        seat nothing while it awaits that seat's answer, so an earlier connection of this seat gave
        it (a seat resumed from nothing); a request or commitment in it is not open."""
        return self.received + 1 < self.replay_until

    def _check_stream(self, message: Message) -> None:
        match = self.match
        if isinstance(message, Sig):
            # Which statement a signature is of, the channel's record checks (PROTOCOL.md 14.7); here only
            # that the result's comes once, after match_end, and a game's before it.
            if (message.of == "result") != match.over or match.result_signed:
                raise _unexpected(message, f"of the {message.of} is out of order")
            match.result_signed = message.of == "result"
            return
        match.unconfirmed_sig = None  # the host went on: it had the countersignature
        if match.over:
            raise _unexpected(message, "came after the match ended")
        if match.cut_off and not isinstance(message, MatchEnd):
            raise _unexpected(message, "came after the reveal of a game cut off; only match_end may follow")
        if isinstance(message, MatchStart):
            if match.started:
                raise _unexpected(message, "came twice")
            match.started = True
            match.hidden = message.deal == HIDDEN_DEAL
            return
        if not match.started:
            raise _unexpected(message, "cannot come before 'match_start'")
        if kind_of(message).deal_mode not in (None, HIDDEN_DEAL if match.hidden else COMMIT_DEAL):
            raise _unexpected(message, "belongs to the other deal mode than this match's")
        if isinstance(message, (Shuffle, Deal, HiddenTurn)):
            match.unconfirmed_steps.clear()
        if isinstance(message, Shuffle):
            if match.game_live or message.game != match.game + 1 or match.shuffled == message.game:
                raise _unexpected(message, f"for game {message.game} is out of order")
            match.shuffled = message.game
        elif isinstance(message, (Locked, Opened, Audited)):
            if message.game != match.shuffled or message.seat == self.seat:
                raise _unexpected(message, f"for game {message.game} of seat {message.seat} relays no step of the other party")
        elif isinstance(message, Commit):
            if self.seat == 1 and message.game == match.seed_sent_for == match.commit_for and match.revealed < message.game:
                raise RedealRefused(message.game)
            if self.seat != 1 or match.game_live or match.reveal_due is not None or message.game != match.game + 1:
                raise _unexpected(message, f"for game {message.game} is out of order")
            if match.commit_for == message.game:
                raise _unexpected(message, f"for game {message.game} came twice")
            match.commit_for = message.game
            if self._answered_before:
                match.seed_sent_for = message.game
        elif isinstance(message, Deal):
            if message.hand_no == 1:
                if match.game_live or match.reveal_due is not None or message.game != match.game + 1:
                    raise _unexpected(message, f"of game {message.game} is out of order")
                if match.hidden and match.shuffled != message.game:
                    raise _unexpected(message, f"of game {message.game} came before its shuffle")
                if not match.hidden and self.seat == 1 and match.seed_sent_for != message.game:
                    raise _unexpected(message, f"of game {message.game} came before the seed exchange")
                match.game = message.game
                match.game_live = True
                match.unconfirmed_seed = None
            elif not match.game_live or message.game != match.game:
                raise _unexpected(message, "continues no game in progress")
        elif isinstance(message, (YourTurn, HiddenTurn)):
            if not match.game_live:
                raise _unexpected(message, "came with no game in progress")
            if not self._answered_before:
                match.open_request = message.request
        elif isinstance(message, Played):
            if not match.game_live or message.game != match.game:
                raise _unexpected(message, "belongs to no game in progress")
            if message.seat == self.seat:
                # The request is answered, whether by this connection or by one before a resume.
                match.open_request = None
                match.unconfirmed_play = None
        elif isinstance(message, GameEnd):
            if not match.game_live or message.game != match.game:
                raise _unexpected(message, "ends no game in progress")
            match.game_live = False
            match.open_request = None
            if self.seat == 1 and not match.hidden:
                match.reveal_due = message.game
        elif isinstance(message, Reveal):
            if match.reveal_due == message.game:
                match.reveal_due = None
            elif self.seat == 1 and (
                match.game_live and message.game == match.game or not match.game_live and message.game == match.commit_for == match.game + 1
            ):
                # The reveal of a game cut off, dealt or only committed to: the match is being abandoned.
                match.game_live = False
                match.open_request = None
                match.cut_off = True
            else:
                raise _unexpected(message, f"of game {message.game} is out of order")
            match.revealed = message.game
        elif isinstance(message, MatchEnd):
            match.over = True
            self.closed = True

    def _check_outgoing(self, message: Message) -> None:
        kind, match = kind_of(message), self.match
        if CLIENT not in kind.sent_by:
            raise LocalProtocolError(f"a client does not send {message.TYPE}")
        if self.welcome is not None and self.welcome.version not in kind.versions:
            raise LocalProtocolError(f"{message.TYPE} is not part of version {self.welcome.version}")
        if kind.phase is _FIRST:
            if self.resuming:
                if message.token != self.resume_token or message.received != self.received:
                    raise LocalProtocolError("a resume hello gives the token and the count received")
            elif self.hello_sent:
                raise LocalProtocolError("hello goes once")
            else:
                self.exchange_begun = message.pake is not None
            self.hello_sent = True
            self.offered_versions = message.versions
        elif kind.phase is _EXCHANGE:
            if not self.pake_taken or self.confirm_sent:
                raise LocalProtocolError("pake_confirm answers the host's pake, once")
            self.confirm_sent = True
        elif kind.phase is _ANY:
            return
        elif kind.phase is _SEATED:
            if self.welcome is None:
                raise LocalProtocolError(f"{message.TYPE} before welcome")
        elif isinstance(message, Seed):
            if match.commit_for != message.game or match.seed_sent_for == message.game:
                raise LocalProtocolError("a seed answers one commitment")
            match.seed_sent_for = message.game
            match.unconfirmed_seed = message
        elif isinstance(message, (Lock, Open, Audit)):
            match.unconfirmed_steps.append(message)
        elif isinstance(message, (Play, HiddenPlay)):
            if match.open_request is None or message.request != match.open_request:
                raise LocalProtocolError("a play answers the open request")
            match.open_request = None
            match.unconfirmed_play = message
        elif isinstance(message, Sig):
            match.unconfirmed_sig = message

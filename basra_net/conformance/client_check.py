"""`basra conformance client`: a scripted host that puts a joining client through the cases of PROTOCOL.md.

The host cannot choose a deal: the client's seed comes after the host's
commitment (section 9.3), so no host can rig the cards an honest match is
played with.  The cases are exercised in three ways, and each line of the
report says which:

- **scripted**: the host does something the protocol allows whenever it
  likes (a ping, `away` and `back`, a cut after a message of each kind of
  the stream, refusing a play and cutting right after its new request) and
  checks the client's answer on the wire;
- **arising**: the situation comes from the cards (a sampler rejection, a
  choice between equal captures, a lone 7D, a jack basra, a 26-26 game, a
  tie at the target); the host's own seat steers towards the 7D and Jack
  situations when its cards allow, and a case whose situation did not arise
  in the match is reported as skipped, with how often it was tried;
- **unfair**: in a match of its own, the host does what an honest host
  never does: it signs a commitment wrongly, or commits again to a deal the
  client's seed has fixed (the client must not send a seed: on the wire),
  deals from another deck than it committed to, or abandons a fixed deal
  without its reveal.  A last, short match ends at once (seat 0 leaves)
  and is cut right after its `match_end`: the match is over, so the client
  must not resume (section 5.8, rules 10 and 13).  Section 9.10 requires the client to tell its player,
  which is not on the wire: so that, and the verdict on every honest deal,
  is judged by the client's exit status, which the checker sees only when
  it runs the client itself (`--exec`); otherwise those cases are skipped.

The first match is honest and ends by its target: a client that verified
every deal and score exits 0.  Seat 0 is the checker's, playing by a fixed
policy; seat 1 is the client's.
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
from dataclasses import dataclass, field
from typing import Callable

import trio

from ..engine import Match, Move
from ..engine.cards import card_name, parse_card
from ..engine.events import Event, GameEnded, Played as PlayedEvent
from ..files import data_dir
from ..host.certificate import server_tls_context
from ..host.identity import load_or_create_identity, public_key_bytes
from ..host.seat_link import close_gracefully
from ..protocol import errors, shuffle
from ..protocol.announce import messages_for_seat
from ..protocol.connection import ConnectionClosed, HostConnection
from ..protocol.framing import encode_frame
from ..protocol.termination import Termination
from ..protocol.messages import (
    COMMIT_DEAL,
    PROTOCOL_VERSIONS,
    Away,
    Back,
    Commit,
    Error,
    Hello,
    Leave,
    MatchEnd,
    MatchStart,
    Message,
    Ping,
    Play,
    Pong,
    Reveal,
    Seed,
    Welcome,
    YourTurn,
    offered_deals,
    to_wire,
)
from .relayed_table import RELAYED_MATCHES, Offered, judge_relayed, play_relayed
from .report import CaseFailed, Report

ANSWER_TIMEOUT = 10.0  # seconds a client has to answer what needs no thought (pong, seed, leave)
MOVE_TIMEOUT = 60.0  # seconds a client may think about a move
RESUME_TIMEOUT = 60.0  # seconds a cut-off client has to come back (section 5.8, rule 13: it retries for 180)
CONNECT_TIMEOUT = 120.0  # seconds to wait for a client to connect for a match
EXIT_TIMEOUT = 30.0  # seconds a client run by --exec has to exit after its match
SEVEN_OF_DIAMONDS = parse_card("7D")
# The matches whose commitment no client may answer: the case each is, by the name of the match.
REFUSED_COMMITMENTS = {
    "forged_commit": ("9.10", "a commitment whose signature does not verify gets no seed"),
    "second_commit": ("5.8, 7.2", "a second commitment for a fixed deal, after a resume, gets no seed"),
}
AFTER_END_WAIT = 1.5  # seconds a client cut off after match_end is watched for a resume (rule 13 retries after 0.25 s)
CUT_AFTER_END = "cut_after_end"  # the match that ends at once, then is cut before the client's leave is read
CUT_AFTER = ("match_start", "commit", "deal", "your_turn", "played", "game_end", "reveal")
HOST_NAME = "Conformance"
# The scripted matches speak version 1 (9: the commit-reveal deal, unsigned); version 2's cases are relayed_table.py's.
SCRIPTED_VERSION = 1
VERSION_2_ONLY = (
    f"not applicable: the client offers version 2 only, and this scripted host speaks version {SCRIPTED_VERSION}, "
    "so it refused the hello with unsupported_version (5.2)"
)


class NotApplicable(Exception):
    """The client does not speak the scripted host's version: the host refused its hello, as 5.2 says a host must."""


@dataclass(frozen=True)
class ClientCheckSettings:
    port: int
    tls: bool
    command: str | None  # the client to run for each match, "{port}" replaced; None: wait for one
    target: int = 101


class Door:
    """The listening socket: connections wait in a channel until the match takes the next one."""

    def __init__(self, settings: ClientCheckSettings) -> None:
        folder = data_dir()
        self.identity = load_or_create_identity(folder)
        self.tls = server_tls_context(self.identity, folder) if settings.tls else None
        self.port = settings.port
        self._send, self._incoming = trio.open_memory_channel[trio.SocketStream](16)

    async def serve(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(self.port)
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self.port)
        await trio.serve_listeners(self._queue, listeners)

    async def _queue(self, stream: trio.SocketStream) -> None:
        await self._send.send(stream)
        await trio.sleep_forever()  # the match owns the stream now; it closes it

    async def next_link(self, timeout: float) -> "Link":
        with trio.move_on_after(timeout):
            stream: trio.abc.Stream = await self._incoming.receive()
            if self.tls is not None:
                secure = trio.SSLStream(stream, self.tls, server_side=True)
                try:
                    await secure.do_handshake()
                except (trio.BrokenResourceError, OSError) as err:
                    raise CaseFailed(f"the client's TLS handshake failed: {err}") from None
                stream = secure
            return Link(stream)
        raise CaseFailed(f"no client connected within {timeout:g} s")


class Link:
    """One connection from the client, through the host's state machine (section 7.1)."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.connection = HostConnection()

    async def send(self, message: Message) -> None:
        await self.send_frame(message, encode_frame(to_wire(message)))

    async def send_frame(self, message: Message, frame: bytes) -> None:
        self.connection.check_send(message)
        try:
            await self.stream.send_all(frame)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass  # the client is gone; its loss shows when the link is read

    async def next_event(self, timeout: float) -> Message | ConnectionClosed:
        with trio.move_on_after(timeout):
            while True:
                try:
                    event = self.connection.next_event()
                except errors.ProtocolError as err:
                    raise CaseFailed(f"the client broke the protocol: {err}") from None
                if event is not None:
                    return event
                try:
                    data = await self.stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    data = b""
                self.connection.receive_data(data)
        raise CaseFailed(f"the client sent nothing within {timeout:g} s")

    async def close(self) -> None:
        await close_gracefully(self.stream)


@dataclass
class Situations:
    """What arose from the cards in a match, for the cases that wait for it."""

    rejections: list[int] = field(default_factory=list)  # per game: draws the sampler rejected
    equal_captures: int = 0  # requests answered that offered one card with several captures
    lone_seven: int = 0
    jack_basras: int = 0
    even_games: int = 0  # 26-26
    ties_played_on: int = 0


class ScriptedMatch:
    """One match with the client in seat 1: the honest match, or one whose deal is not fair."""

    def __init__(self, door: Door, report: Report, *, target: int, unfair: str | None = None) -> None:
        self.door, self.report = door, report
        self.unfair = unfair  # None for the honest match, else how it breaks the fair deal (MATCHES)
        self.match = Match(scoring="egyptian", target=target)
        self.match_id = os.urandom(16)
        self.token = os.urandom(16)
        self.key = public_key_bytes(door.identity)
        self.link: Link | None = None
        self.hello: Hello | None = None
        self.log: list[tuple[Message, bytes]] = []  # seat 1's stream, for resumes
        self.request = 0
        self.cuts = list(CUT_AFTER) if unfair is None else []
        self.resumes = 0
        self.refuse_next_play = False  # the illegal_move case, armed once the cuts are done
        self.situations = Situations()
        self.not_applicable: str | None = None  # why this client cannot be in these matches: its version, or its deal
        self.games = 0
        self.whole = ("7.3", "the honest match runs to its end" if unfair is None else f"the {unfair.replace('_', ' ')} match runs to its end")
        self.case = self.whole  # the case a failure now belongs to

    def begin(self, section: str, name: str) -> None:
        self.case = (section, name)

    def passed(self, detail: str) -> None:
        self.report.passed(*self.case, detail)
        self.case = self.whole

    # --- the stream and its cuts -----------------------------------------------------------

    async def stream(self, message: Message) -> None:
        assert self.link is not None
        frame = encode_frame(to_wire(message))
        self.log.append((message, frame))
        await self.link.send_frame(message, frame)
        if message.TYPE in self.cuts:
            self.cuts.remove(message.TYPE)
            self.begin("5.8", f"cut after {message.TYPE}, and the resume")
            self.passed(f"scripted: {await self.cut_and_resume()}")
            if not self.cuts:
                self.refuse_next_play = True

    async def send_and_cut(self, message: Message) -> None:
        """A message outside the stream, then a cut: it is not sent again (5.8, rule 2), and nothing was open."""
        assert self.link is not None
        await self.link.send(message)
        self.begin("5.8", f"cut after {message.TYPE}, and the resume")
        self.passed(f"scripted: {await self.cut_and_resume()}")

    async def cut_and_resume(self) -> str:
        assert self.link is not None
        earlier = self.link.connection
        await self.link.close()
        return await self.resume(earlier)

    async def resume(self, earlier: HostConnection) -> str:
        """Take the client's resume on a new connection: welcome, the stream it missed, what was open."""
        link = await self.door.next_link(RESUME_TIMEOUT)
        event = await link.next_event(ANSWER_TIMEOUT)
        if not isinstance(event, Hello):
            raise CaseFailed(f"the client came back with {_what(event)}, not a hello")
        if event.token is None:
            raise CaseFailed("the client came back with a new player's hello, not a resume with its token")
        if event.token != self.token:
            raise CaseFailed("the client's resume names another token than its welcome's")
        sent = len(self.log)
        if event.received is None or event.received > sent:
            raise CaseFailed(f"the client says it took {event.received} stream messages; {sent} were sent")
        self.link = link
        await link.send(self._welcome(sent))
        link.connection.restore(earlier.match)
        for message, frame in self.log[event.received :]:
            await link.send_frame(message, frame)
        self.resumes += 1
        return f"resumed with received {event.received} of {sent}"

    def _welcome(self, sent: int) -> Welcome:
        return Welcome(SCRIPTED_VERSION, 1, self.match_id, self.key, self.match.preset.name, self.match.target, self.token, sent)

    async def receive(self, timeout: float) -> Message:
        """The next message from the client that matters: pings answered, a lost connection resumed."""
        while True:
            assert self.link is not None
            event = await self.link.next_event(timeout)
            if isinstance(event, ConnectionClosed):
                earlier = self.link
                await earlier.close()
                await self.resume(earlier.connection)  # the client's own reconnect
                continue
            if isinstance(event, Ping):
                await self.link.send(Pong(event.id))
                continue
            if isinstance(event, Error):
                raise CaseFailed(f"the client reported error {event.code}: {event.message}")
            if isinstance(event, Leave):
                raise CaseFailed(f"the client left the match: {event.reason}")
            return event

    # --- the match -------------------------------------------------------------------------

    async def run(self) -> None:
        self.link = await self.door.next_link(CONNECT_TIMEOUT)
        event = await self.link.next_event(ANSWER_TIMEOUT)
        if not isinstance(event, Hello) or event.token is not None:
            raise CaseFailed(f"the client's first message is {_what(event)}, not a new player's hello")
        if not set(event.versions) & set(PROTOCOL_VERSIONS):
            raise CaseFailed(f"the client offers versions {list(event.versions)}, none of them {PROTOCOL_VERSIONS}")
        if SCRIPTED_VERSION not in event.versions:
            await self.link.send(Error(errors.UNSUPPORTED_VERSION, f"this host speaks version {SCRIPTED_VERSION} only"))
            self.not_applicable = VERSION_2_ONLY
            raise NotApplicable
        self.hello = event
        if COMMIT_DEAL not in offered_deals(event):
            await self.commit_deal_refused()
            return
        if self.unfair is None:
            self.report.passed("5.1, 6.3", "hello, and the welcome taken", f"scripted: {event.name!r} offers versions {list(event.versions)}")
            await self.send_and_cut(self._welcome(0))
        else:
            await self.link.send(self._welcome(0))
        await self.stream(MatchStart((HOST_NAME, event.name)))
        if self.unfair in REFUSED_COMMITMENTS:
            await self.refused_commitment(*REFUSED_COMMITMENTS[self.unfair])
            return
        if self.unfair == CUT_AFTER_END:
            await self.cut_after_the_end()
            return
        if self.unfair is None:
            await self.ping_away_back()
        while not self.match.over:
            if not await self.play_game():
                return
        self.begin("7.3, 5.8", "match_end answered with leave")
        await self.expect_leave()
        self.passed(f"scripted: after {self.games} games, {self.resumes} resumes")

    async def commit_deal_refused(self) -> None:
        """A client that does not accept the commit-reveal deal, the only one these matches deal: a host that starts
        it anyway is refused at match_start (15.15), and the matches of the commit-reveal deal do not apply."""
        assert self.hello is not None and self.link is not None
        self.not_applicable = "not applicable: the client does not accept the commit-reveal deal (its hello's deals)"
        self.begin("15.15", DEAL_REFUSED_CASE)
        await self.link.send(self._welcome(0))
        await self.link.send(MatchStart((HOST_NAME, self.hello.name)))
        answer = await self.answer_within(ANSWER_TIMEOUT)
        if not (isinstance(answer, Error) and answer.code == errors.DEAL_MISMATCH):
            raise CaseFailed(f"the client {_reaction(answer)}, not error {errors.DEAL_MISMATCH}")
        self.passed(f"the client offered {list(self.hello.deals or ())} and sent error {answer.code}: {answer.message}")

    async def cut_after_the_end(self) -> None:
        """Seat 0 leaves at once: match_end, then the connection is cut whether or not the leave came."""
        assert self.link is not None
        self.begin("5.8, 6.14", "cut after match_end: the match is over, no resume")
        await self.stream(MatchEnd(winner=1, totals=(0, 0), reason=Termination.ABANDONED.value))
        await self.link.close()
        with trio.move_on_after(AFTER_END_WAIT):
            link = await self.door.next_link(AFTER_END_WAIT + 1)
            event = await link.next_event(ANSWER_TIMEOUT)
            await link.close()
            raise CaseFailed(f"the client connected again after the match's end, with {_what(event)} (rules 10 and 13)")
        self.passed(f"scripted: no new connection within {AFTER_END_WAIT:g} s")

    async def refused_commitment(self, section: str, name: str) -> None:
        """A commitment no client may answer with a seed (9.10; 5.8, rule 11): it may leave, report or wait."""
        assert self.hello is not None and self.link is not None
        commitment = shuffle.commitment(self.match_id, 1, self.hello.nonce, os.urandom(32))
        signed = shuffle.commit_signed_bytes(self.match_id, 1, commitment)
        if self.unfair == "forged_commit":
            self.begin(section, name)
            await self.stream(Commit(1, commitment, shuffle.sign(self.door.identity, signed + b"other bytes")))
        else:
            await self.stream(Commit(1, commitment, shuffle.sign(self.door.identity, signed)))
            seed = await self.receive(ANSWER_TIMEOUT)
            if not isinstance(seed, Seed):
                raise CaseFailed(f"{_what(seed)} instead of the seed for game 1")
            self.begin(section, name)
            await self.cut_and_resume()  # the client's seed is in: the deal of game 1 is fixed
            other = shuffle.commitment(self.match_id, 1, self.hello.nonce, os.urandom(32))
            other_signed = shuffle.commit_signed_bytes(self.match_id, 1, other)
            await self.stream(Commit(1, other, shuffle.sign(self.door.identity, other_signed)))
        answer = await self.answer_within(ANSWER_TIMEOUT)
        if isinstance(answer, Seed):
            raise CaseFailed(f"the client sent a seed for game {answer.game}")
        self.passed(f"unfair: no seed; the client {_reaction(answer)}")
        if answer is None:
            await self.stream(MatchEnd(1, (0, 0), Termination.ABANDONED.value))
            await self.expect_leave()

    async def answer_within(self, timeout: float) -> Message | ConnectionClosed | None:
        """What the client sends next (pings answered), or None when it stays silent this long."""
        assert self.link is not None
        with trio.move_on_after(timeout):
            while True:
                event = await self.link.next_event(timeout + 1)
                if not isinstance(event, Ping):
                    return event
                await self.link.send(Pong(event.id))
        return None

    async def ping_away_back(self) -> None:
        assert self.link is not None
        self.begin("5.7, 6.17", "a ping is answered")
        await self.link.send(Ping(31337))
        event = await self.link.next_event(ANSWER_TIMEOUT)
        if not isinstance(event, Pong) or event.id != 31337:
            raise CaseFailed(f"{_what(event)} instead of a pong with the ping's id")
        self.passed("scripted: pong with the ping's id")
        for message in (Ping(31339), Away(0, 120), Back(0)):
            await self.send_and_cut(message)
        self.begin("6.19, 6.20", "away and back change nothing")
        await self.link.send(Away(0, 120))
        await self.link.send(Back(0))
        await self.link.send(Ping(31338))
        event = await self.link.next_event(ANSWER_TIMEOUT)
        if not isinstance(event, Pong) or event.id != 31338:
            raise CaseFailed(f"{_what(event)} after away and back, instead of the pong to the next ping")
        self.passed("scripted: away and back for seat 0, then the next ping answered and nothing else sent")

    async def play_game(self) -> bool:
        """One game; False when the match was cut short on purpose (an unfair match)."""
        assert self.hello is not None
        game = self.match.game_number + 1
        host_seed = os.urandom(32)
        commitment = shuffle.commitment(self.match_id, game, self.hello.nonce, host_seed)
        signature = shuffle.sign(self.door.identity, shuffle.commit_signed_bytes(self.match_id, game, commitment))
        await self.stream(Commit(game, commitment, signature))
        seed = await self.receive(ANSWER_TIMEOUT)
        if not isinstance(seed, Seed):
            raise CaseFailed(f"{_what(seed)} instead of the seed for game {game}")
        trace = shuffle.shuffle_trace(self.match_id, game, host_seed, seed.seed)
        self.situations.rejections.append(sum(not draw.accepted for draw in trace.draws))
        deck = list(trace.deck)
        if self.unfair == "swapped_deal":
            deck[0], deck[20] = deck[20], deck[0]  # the non-dealer's first card comes from the stock instead
        await self.announce(self.match.start_game(deck))
        plays = 0
        while self.match.turn is not None:
            if self.unfair == "unrevealed" and plays == 10:
                await self.stream(MatchEnd(1, (self.match.totals[0], self.match.totals[1]), Termination.ABANDONED.value))
                await self.expect_leave()
                return False
            seat = self.match.turn
            move = self.seat_0_move() if seat == 0 else await self.seat_1_move()
            events = self.match.play(seat, move)
            await self.announce(events)
            plays += 1
        await self.stream(Reveal(game, host_seed, shuffle.sign(self.door.identity, shuffle.reveal_signed_bytes(self.match_id, game, host_seed))))
        self.games = game
        if self.match.over:
            assert self.match.winner is not None
            await self.stream(MatchEnd(self.match.winner, (self.match.totals[0], self.match.totals[1]), Termination.TARGET.value))
        elif self.unfair == "swapped_deal":
            await self.stream(MatchEnd(1, (self.match.totals[0], self.match.totals[1]), Termination.ABANDONED.value))
            await self.expect_leave()
            return False
        return True

    async def announce(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, PlayedEvent):
                if event.kind == "jack_basra":
                    self.situations.jack_basras += 1
                if event.captured == (SEVEN_OF_DIAMONDS,) and not event.table:
                    self.situations.lone_seven += 1
            if isinstance(event, GameEnded):
                if event.scores[0].cards == event.scores[1].cards:
                    self.situations.even_games += 1
                totals = event.totals
                if totals[0] == totals[1] >= self.match.target:
                    self.situations.ties_played_on += 1
        for message in messages_for_seat(events, 1, self.match.turn):
            if isinstance(message, MatchEnd):
                continue  # after the reveal, below
            await self.stream(message)

    def seat_0_move(self) -> Move:
        """The checker's own seat, steering towards the situations still missing, as far as its cards allow.

        A jack basra and a lone 7D when a move makes or invites one; in the
        last hand, when every card left is known, the move most likely to end
        the game 26-26 or tied at the target (the client's moves taken as
        equally likely); before it, captures that keep the two piles even.
        """
        game = self.match.game
        assert game is not None
        moves = self.match.legal_moves()
        for wanted in (
            lambda m: m.kind == "jack_basra",
            lambda m: m.captures == (SEVEN_OF_DIAMONDS,) and len(game.table) == 1,
            lambda m: not game.table and m.card == SEVEN_OF_DIAMONDS,
            lambda m: not game.table and card_name(m.card).startswith("J"),  # a lone Jack invites a jack basra
        ):
            chosen = next((m for m in moves if wanted(m)), None)
            if chosen is not None:
                return chosen
        ending = self.wanted_ending()
        if ending is None or len(moves) == 1:
            return moves[0]
        if not game.stock:
            state = self.match.to_dict()
            return max(moves, key=lambda m: _chance_after(state, 0, m, ending))
        behind = len(game.piles[0]) < len(game.piles[1])
        return max(moves, key=lambda m: len(m.captures) if behind else -len(m.captures))

    def wanted_ending(self) -> Callable[[GameEnded], float] | None:
        """How much each end of this game is worth to the cases still missing; None when none is.

        A tie at the target needs equal totals first, so equal totals below
        it are worth a little too: they make a later tie possible.
        """
        found, target = self.situations, self.match.target
        even = not found.even_games
        tie = not found.ties_played_on
        if not (even or tie):
            return None

        def worth(end: GameEnded) -> float:
            equal = end.totals[0] == end.totals[1]
            return (
                4.0 * (tie and equal and end.totals[0] >= target)
                + 2.0 * (even and end.scores[0].cards == end.scores[1].cards)
                + 1.0 * (tie and equal)
            )

        return worth

    async def seat_1_move(self) -> Move:
        moves = tuple(self.match.legal_moves())
        choices = {m.card: 0 for m in moves}
        for m in moves:
            choices[m.card] += 1
        offered_equal = any(count > 1 for count in choices.values())
        while True:
            self.request += 1
            await self.stream(YourTurn(self.request, moves))
            play = await self.receive(MOVE_TIMEOUT)
            if not isinstance(play, Play):
                raise CaseFailed(f"{_what(play)} instead of a play for request {self.request}")
            move = Move(play.card, tuple(sorted(play.captures)))
            if self.refuse_next_play and move in moves:
                self.refuse_next_play = False
                return await self.refused_then_cut(play)
            if move not in moves:
                raise CaseFailed(f"the client played {move}, which request {self.request} did not list (6.10)")
            if offered_equal:
                self.situations.equal_captures += 1
            return next(m for m in moves if m == move)

    async def refused_then_cut(self, play: Play) -> Move:
        """Refuse a listed play with illegal_move, send the new request, and cut at once (5.8, rule 7)."""
        assert self.link is not None
        self.begin("8.3, 5.8", "illegal_move, the new request, a cut: the repeat dropped, the new request answered")
        await self.link.send(Error(errors.ILLEGAL_MOVE, "refused by the conformance checker, to see the new request answered"))
        self.request += 1
        moves = tuple(self.match.legal_moves())
        await self.stream(YourTurn(self.request, moves))
        earlier = self.link.connection
        await self.link.close()
        await self.resume(earlier)
        answer = await self.receive(MOVE_TIMEOUT)
        if not isinstance(answer, Play) or answer.request != self.request:
            raise CaseFailed(f"{_what(answer)} instead of a play for the new request {self.request}")
        self.passed(
            f"scripted: the checker refused request {play.request}'s listed play and cut the connection after "
            f"request {self.request}; the client resumed, any repeat of its play was dropped, and it answered request {self.request}",
        )
        move = Move(answer.card, tuple(sorted(answer.captures)))
        if move not in moves:
            raise CaseFailed(f"the client played {move}, which request {self.request} did not list (6.10)")
        return next(m for m in moves if m == move)

    async def expect_leave(self) -> None:
        """match_end answered with leave; after an unfair deal, closing instead is stopping, which 9.10 allows."""
        assert self.link is not None
        while True:
            event = await self.link.next_event(ANSWER_TIMEOUT)
            if isinstance(event, Leave) or (isinstance(event, ConnectionClosed) and self.unfair is not None):
                return
            if isinstance(event, Ping):
                await self.link.send(Pong(event.id))
                continue
            raise CaseFailed(f"{_what(event)} instead of leave after match_end (5.8, rule 10)")


def _chance_after(state: dict, seat: int, move: Move, ending: Callable[[GameEnded], float]) -> float:
    """What the end is worth on average after this move: seat 0 picks its best, seat 1 any move alike."""
    match = Match.from_dict(state)
    events = match.play(seat, move)
    end = next((e for e in events if isinstance(e, GameEnded)), None)
    if end is not None:
        return ending(end)
    after = match.to_dict()
    chances = [_chance_after(after, match.turn, m, ending) for m in match.legal_moves()]
    return max(chances) if match.turn == 0 else sum(chances) / len(chances)


def _reaction(event: Message | ConnectionClosed | None) -> str:
    if event is None:
        return f"waited {ANSWER_TIMEOUT:g} s"
    if isinstance(event, Leave):
        return f"left ({event.reason})"
    return f"sent {_what(event)}"


def _what(event: Message | ConnectionClosed) -> str:
    if isinstance(event, ConnectionClosed):
        return "the end of the connection"
    if isinstance(event, Error):
        return f"error {event.code}"
    return f"'{event.TYPE}'"


# --- the three matches --------------------------------------------------------------------------


@dataclass
class ClientRun:
    """The client under test, run by the checker for one match."""

    argv: list[str]
    result: subprocess.CompletedProcess | None = None
    error: str | None = None
    exited: trio.Event = field(default_factory=trio.Event)

    async def run(self) -> None:
        try:
            self.result = await trio.run_process(self.argv, capture_stdout=True, capture_stderr=True, check=False)
        except OSError as err:
            self.error = f"cannot run the client: {err}"
        finally:
            self.exited.set()

    def told(self) -> str:
        if self.result is None:
            return self.error or "the client did not exit"
        output = (self.result.stdout + self.result.stderr).decode(errors="replace").strip().splitlines()
        return f"exit status {self.result.returncode}" + (f" ({output[-1][:120]})" if output else "")


async def run_match(
    door: Door, report: Report, settings: ClientCheckSettings, unfair: str | None
) -> tuple[ClientRun | None, bool, str | None]:
    """One match; with --exec the client is run for it and its exit awaited.

    Returns the client run, whether the match ran to its end, and why the scripted matches do not apply to
    this client (None when they do): it speaks only a version they do not, or refuses their deal.
    """
    match = ScriptedMatch(door, report, target=settings.target, unfair=unfair)
    client = None
    if settings.command is not None:
        client = ClientRun(shlex.split(settings.command.replace("{port}", str(door.port))))
    finished = False
    async with trio.open_nursery() as nursery:
        if client is not None:
            nursery.start_soon(client.run)
        with trio.CancelScope() as scope:
            if client is not None:
                nursery.start_soon(_cancel_when_gone, client, scope)
            try:
                await match.run()
                finished = True
            except CaseFailed as failed:
                report.failed(*match.case, str(failed))
            except NotApplicable:
                pass
        if scope.cancelled_caught and client is not None:
            report.failed(*match.case, "the client exited in the middle of it: " + client.told())
        if match.link is not None:
            await match.link.close()
        if client is not None and finished:
            with trio.move_on_after(EXIT_TIMEOUT):
                await client.exited.wait()
        nursery.cancel_scope.cancel()  # a client still running after a failed match is stopped
    if match.not_applicable is not None:
        return client, False, match.not_applicable
    if unfair is None and finished:
        report_arising(report, match, client)
    return client, finished, None


async def _cancel_when_gone(client: ClientRun, scope: trio.CancelScope) -> None:
    await client.exited.wait()
    await trio.sleep(2)  # what it sent last is still read
    scope.cancel()


def report_arising(report: Report, match: ScriptedMatch, client: ClientRun | None) -> None:
    found = match.situations
    games = match.games
    verdict = " and exited 0" if client is not None else ""
    arising = [
        ("9.7", "a deal that needs the sampler's rejection step", sum(1 for r in found.rejections if r),
         f"deals that needed it ({sum(found.rejections)} rejected draws in all)"),
        ("6.9, 6.10", "a choice between equal captures", found.equal_captures, "requests offering one card several captures, answered"),
        ("RULES.md 7", "a lone 7D taken", found.lone_seven, "lone 7Ds captured"),
        ("RULES.md 5, §6.11", "a jack basra", found.jack_basras, "jack basras"),
        ("RULES.md 10, §6.12", "a 26-26 game", found.even_games, "games split 26-26"),
        ("7.3", "a tie at the target, and play-on", found.ties_played_on, "ties at or above the target, played on"),
    ]
    for section, name, count, what in arising:
        if count:
            report.passed(section, name, f"arising: {what}: {count}; the client played on{verdict}")
        else:
            report.skipped(section, name, f"arising: did not arise in {games} games (the cards depend on the client's seed)")


def judge_exit(report: Report, section: str, name: str, client: ClientRun | None, *, fair: bool | None) -> None:
    """The client's exit status: 0 after an honest match, not 0 after an unfair one; None: that it exits at all."""
    if client is None:
        report.skipped(section, name, "what the client tells its player is not on the wire: run it with --exec")
        return
    if client.result is None:
        report.failed(section, name, client.told())
    elif fair is None:
        report.passed(section, name, f"ended: {client.told()}")
    elif (client.result.returncode == 0) == fair:
        report.passed(section, name, f"{'honest' if fair else 'unfair'}: {client.told()}")
    else:
        expected = "exit status 0" if fair else "a non-zero exit status"
        report.failed(section, name, f"expected {expected}, got {client.told()}")


DEAL_REFUSED_CASE = "a match_start in a deal mode the client did not offer is refused"
MATCHES = (
    (None, "9.10, 11.5", "the verification of every deal: the honest match is found fair"),
    ("swapped_deal", "9.10", "a deal other than the one committed to is reported"),
    ("unrevealed", "7.3, 10.2", "an abandoned deal (no reveal) is reported"),
    ("forged_commit", "9.10", "a commitment that does not verify is reported"),
    ("second_commit", "5.8, 10.2", "a second commitment for a fixed deal is reported"),
    (CUT_AFTER_END, "5.8, 6.14", "a client cut off after match_end ends"),
)


async def check_version_2(door: Door, report: Report, settings: ClientCheckSettings, say: Callable[[str], None]) -> None:
    """The matches of version 2 at the reference table, the checker on the wire (relayed_table.py)."""
    offered = Offered()
    for number, match in enumerate(RELAYED_MATCHES, start=1):
        reason = offered.not_applicable(match)
        if reason is not None:
            for case in match.cases():
                report.skipped(*case, reason)
            continue
        if settings.command is None:
            say(f"version-2 match {number} of {len(RELAYED_MATCHES)}: connect the client to port {door.port} now")

        def start_client(nursery: trio.Nursery) -> ClientRun | None:
            if settings.command is None:
                return None
            client = ClientRun(shlex.split(settings.command.replace("{port}", str(door.port))))
            nursery.start_soon(client.run)
            return client

        async def next_stream() -> trio.abc.Stream:
            return (await door.next_link(math.inf)).stream

        outcome, client = await play_relayed(door, match, offered, next_stream, start_client)
        judge_relayed(report, match, outcome, client, offered)


async def check_client(settings: ClientCheckSettings, say: Callable[[str], None] = print) -> int:
    report = Report(say)
    door = Door(settings)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(door.serve)
        transport = "TLS" if door.tls is not None else "plain TCP"
        say(f"basra conformance client: a scripted host on port {port} over {transport}, {len(MATCHES)} matches, then {len(RELAYED_MATCHES)} of version 2")
        for number, (unfair, section, name) in enumerate(MATCHES, start=1):
            if settings.command is None:
                say(f"match {number} of {len(MATCHES)}: connect the client to port {port} now")
            client, finished, not_applicable = await run_match(door, report, settings, unfair)
            if not_applicable is not None:
                for _, section, name in MATCHES:
                    report.skipped(section, name, not_applicable)
                break
            if finished:
                judge_exit(report, section, name, client, fair=None if unfair == CUT_AFTER_END else unfair is None)
            else:
                report.skipped(section, name, "not judged: the match did not run to its end")
        await check_version_2(door, report, settings, say)
        nursery.cancel_scope.cancel()
    say(report.summary())
    return report.exit_code

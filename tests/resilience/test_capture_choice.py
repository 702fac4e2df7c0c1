"""The capture-choice row of README's table of interruptions: the joining seat's request offers a card several captures.

No public command can bring that moment about: the deal is fixed by both
seats' seeds.  Here the test is both seats' seed source (the host's Table and
the joining client each take a seed function, as any test may give them), so
it searches for a pair of seeds whose first game, played greedy against
greedy, offers the joining seat such a choice; the cutting proxy then acts on
the first `your_turn` that offers one (and fails the test if none came).  The
host is the real table and the joining client the real JoinSession, over
loopback.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.client.join import JoinSession
from basra_net.client.players import BotPlayer
from basra_net.client.session import EXIT_LEFT, EXIT_OK, ClientSession
from basra_net.client.storage import TranscriptFile
from basra_net.engine import Match, seat_view
from basra_net.engine.bots import greedy_move
from basra_net.host.seat_link import serve_connection
from basra_net.host.table import Table
from basra_net.protocol import shuffle, transcript
from basra_net.protocol.messages import YourTurn, from_wire

from .cutting_proxy import TO_HOST, TO_PLAYER, Cut, CuttingProxy
from .test_resume import match_end_of, plays

TEST_DEADLINE = 60
MATCH_ID = bytes(range(16))
KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"capture choice host").digest())


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))


def _seeds(label: str):
    count = iter(range(1, 1 << 30))
    return lambda: hashlib.sha256(f"{label} {next(count)}".encode()).digest()


def offers_a_choice(moves) -> bool:
    return any(n > 1 for n in Counter(move.card for move in moves).values())


def _choice_for_seat_1(client_label: str) -> bool:
    """Whether game 1, dealt from these seeds and played greedy against greedy, offers seat 1 a choice of captures."""
    deck = shuffle.shuffled_deck(MATCH_ID, 1, _seeds("host")(), _seeds(client_label)())
    match = Match(scoring="egyptian", target=1)
    match.start_game(deck)
    while match.turn is not None:
        if match.turn == 1 and offers_a_choice(match.legal_moves()):
            return True
        match.play(match.turn, greedy_move(seat_view(match, match.turn)))
    return False


CLIENT_SEEDS = next(label for label in (f"guest {n}" for n in range(10_000)) if _choice_for_seat_1(label))


def _is_a_choice(message: dict) -> bool:
    turn = from_wire(message)
    return isinstance(turn, YourTurn) and offers_a_choice(turn.moves)


class _AnswerToAChoice:
    """A cut's test for a play: true for the play that answers a request offering a choice (the proxy sees both ways)."""

    def __init__(self) -> None:
        self.open_choice: int | None = None

    def request(self, message: dict) -> bool:
        self.open_choice = message["request"] if _is_a_choice(message) else None
        return False  # only watched

    def answer(self, message: dict) -> bool:
        return self.open_choice is not None and message.get("request") == self.open_choice


def _table(tmp_path: Path, grace: float) -> Table:
    """A one-game match dealt from the seeds the search chose."""
    return Table(
        scoring="egyptian", target=1, identity=KEY, match_id=MATCH_ID, make_seed=_seeds("host"), grace=grace,
        transcript=TranscriptFile(tmp_path / "host.basra", "host"),
    )


async def _host(nursery: trio.Nursery, table: Table) -> int:
    """The table, its own greedy seat 0 over a socket pair, and a listener for seat 1; the port."""
    nursery.start_soon(table.run)
    host_end, seat_end = trio.socket.socketpair()
    nursery.start_soon(partial(serve_connection, trio.SocketStream(host_end), table, reserved_seat=0))
    own = ClientSession(trio.SocketStream(seat_end), "Hoda", BotPlayer("greedy"), keep_transcript=False)
    nursery.start_soon(own.run)
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    nursery.start_soon(trio.serve_listeners, lambda stream: serve_connection(stream, table), listeners)
    return listeners[0].socket.getsockname()[1]


async def _match(tmp_path: Path, cuts: list[Cut], *, grace: float, restart: bool):
    table = _table(tmp_path, grace)
    guest_file = tmp_path / "guest.basra"
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await _host(nursery, table)
            proxy = CuttingProxy(port, list(cuts))
            proxy_port = await nursery.start(proxy.serve)

            def join(resumable: bool = True) -> JoinSession:
                return JoinSession("127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), guest_file, plain=True,
                                   resumable=resumable, make_seed=_seeds(CLIENT_SEEDS))

            result = await join(resumable=not restart).run()
            if restart:  # as a `basra join` killed at that moment and run again
                assert result.cut_off and result.exit_code != EXIT_OK, result.reason
                result = await join().run()
            await table.finished.wait()
            nursery.cancel_scope.cancel()
    table.transcript.close()
    return result, table, proxy, guest_file


@pytest.mark.parametrize("restart", [False, True], ids=["network-cut-5s", "join-killed-and-run-again"])
async def test_cut_off_at_a_capture_choice_the_seat_resumes_and_is_asked_again(tmp_path, restart):
    # The request offering the choice is lost on its way; it comes again with the resume.
    cut = Cut(TO_PLAYER, "your_turn", when=_is_a_choice, blackout=0.0 if restart else 5.0)
    result, table, proxy, guest_file = await _match(tmp_path, [cut], grace=20, restart=restart)
    assert proxy.cuts_made == 1, "no request offered the joining seat a choice of captures"
    assert result.exit_code == EXIT_OK, result.reason
    assert table.result is not None and table.result.completed, table.result
    for path in (tmp_path / "host.basra", guest_file):
        report = transcript.verify(transcript.parse(path.read_bytes()))
        assert report.ok, report.problems
    assert plays(guest_file) == plays(tmp_path / "host.basra")
    turns = [m for sender, m in transcript.parse(guest_file.read_bytes()).records if isinstance(m, YourTurn)]
    assert any(offers_a_choice(turn.moves) for turn in turns)  # the choice was asked again after the resume


async def test_the_answer_to_a_capture_choice_lost_with_the_join_is_sent_again_by_the_same_command_run_again(tmp_path):
    watch = _AnswerToAChoice()
    # The first cut only watches the requests (it never fires); the second cuts the answer to a choice.
    cuts = [Cut(TO_PLAYER, "your_turn", when=watch.request), Cut(TO_HOST, "play", when=watch.answer)]
    result, table, proxy, guest_file = await _match(tmp_path, cuts, grace=20, restart=True)
    assert proxy.cuts_made == 1, "no play answered a choice of captures"
    assert result.exit_code == EXIT_OK, result.reason
    assert table.result is not None and table.result.completed
    assert transcript.verify(transcript.parse(guest_file.read_bytes())).ok
    assert plays(guest_file) == plays(tmp_path / "host.basra")


async def test_cut_off_at_a_capture_choice_past_the_grace_the_match_is_abandoned_on_both_sides(tmp_path):
    cut = Cut(TO_PLAYER, "your_turn", when=_is_a_choice, blackout=2.0)
    result, table, proxy, guest_file = await _match(tmp_path, [cut], grace=0.5, restart=False)
    assert proxy.cuts_made == 1, "no request offered the joining seat a choice of captures"
    assert table.result is not None and "did not come back within" in table.result.reason
    assert result.exit_code != EXIT_OK and "this seat was away longer than the host would wait" in result.reason
    for path in (tmp_path / "host.basra", guest_file):
        kept = transcript.parse(path.read_bytes())
        assert match_end_of(kept).reason == "abandoned"
        assert transcript.verify(kept).ok


async def test_ctrl_c_at_a_capture_choice_leaves_the_match_and_the_host_is_told(tmp_path):
    # Ctrl-C sets the seat's stop event, as `basra join` does; here it is set as the choice goes to the seat.
    stop = trio.Event()

    def press_ctrl_c(message: dict) -> bool:
        if _is_a_choice(message):
            stop.set()
        return False  # only watched

    table = _table(tmp_path, grace=20)
    guest_file = tmp_path / "guest.basra"
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await _host(nursery, table)
            proxy = CuttingProxy(port, [Cut(TO_PLAYER, "your_turn", when=press_ctrl_c)])
            proxy_port = await nursery.start(proxy.serve)
            join = JoinSession("127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), guest_file, plain=True, make_seed=_seeds(CLIENT_SEEDS))
            result = await join.run(stop)
            await table.finished.wait()
            nursery.cancel_scope.cancel()
    table.transcript.close()
    assert stop.is_set(), "no request offered the joining seat a choice of captures"
    assert result.exit_code == EXIT_LEFT, result.reason
    assert table.result is not None and table.result.reason == "Omar left the match"
    for path in (tmp_path / "host.basra", guest_file):
        assert transcript.verify(transcript.parse(path.read_bytes())).ok

"""The capture-choice row of README's table of interruptions: the joining seat's request offers a card several captures.

No public command can bring that moment about: the deal is fixed by both
seats' seeds (in the commit-reveal deal, which the joining seat asks for: a
hidden deal's locks are random).  Here the test is both seats' seed source (the host's Table and
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
from basra_net.client.players import BotPlayer, Player
from basra_net.client.session import COMMIT_REVEAL_ONLY, ClientSession
from basra_net.client.tui import LeaveScreen
from basra_net.engine import Match, seat_view
from basra_net.engine.bots import greedy_move
from basra_net.exits import EXIT_FAILURE, EXIT_LEFT, EXIT_OK
from basra_net.files import data_dir
from basra_net.host.identity import load_or_create_identity, public_key_bytes
from basra_net.host.journal import JournalWriter
from basra_net.host.seat_link import serve_connection
from basra_net.host.server import HostSettings, run_host
from basra_net.host.table import Table
from basra_net.match_files import TranscriptFile
from basra_net.protocol import shuffle, transcript
from basra_net.protocol.messages import Play, YourTurn, from_wire

from ..interface.harness import my_turn, run_app, until
from .cutting_proxy import KEYS_HOLD, TO_HOST, TO_PLAYER, Cut, CuttingProxy, Mark
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


def _choice_for_seat_1(client_label: str, first_request: bool = False) -> bool:
    """Whether game 1, dealt from these seeds and played greedy against greedy, offers seat 1 a choice of
    captures (with ``first_request``: at the match's first request, which is seat 1's, before anyone has played)."""
    deck = shuffle.shuffled_deck(MATCH_ID, 1, _seeds("host")(), _seeds(client_label)())
    match = Match(scoring="egyptian", target=1)
    match.start_game(deck)
    while match.turn is not None:
        if match.turn == 1 and offers_a_choice(match.legal_moves()):
            return True
        if first_request:
            return False
        match.play(match.turn, greedy_move(seat_view(match, match.turn)))
    return False


CLIENT_SEEDS = next(label for label in (f"guest {n}" for n in range(10_000)) if _choice_for_seat_1(label))
# For a person at the full screen, who needs no bot's play to reach the choice.
FIRST_REQUEST_SEEDS = next(label for label in (f"guest {n}" for n in range(10_000)) if _choice_for_seat_1(label, first_request=True))


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


def _table(tmp_path: Path, grace: float, identity: Ed25519PrivateKey = KEY, journal: JournalWriter | None = None) -> Table:
    """A one-game match dealt from the seeds the search chose."""
    return Table(
        scoring="egyptian", target=1, identity=identity, match_id=MATCH_ID, make_seed=_seeds("host"), grace=grace,
        transcript=TranscriptFile(tmp_path / "host.basra", "host"), journal=journal,
    )


async def _host(nursery: trio.Nursery, table: Table, stop: trio.Event | None = None, player: Player | None = None) -> int:
    """The table, its own seat 0 over a socket pair (greedy unless ``player``, leaving once ``stop`` is set), and a listener for seat 1; the port."""
    nursery.start_soon(table.run)
    host_end, seat_end = trio.socket.socketpair()
    nursery.start_soon(partial(serve_connection, trio.SocketStream(host_end), table, reserved_seat=0))
    own = ClientSession(trio.SocketStream(seat_end), "Hoda", player or BotPlayer("greedy"), keep_transcript=False)
    nursery.start_soon(own.run, stop)
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
                                   resumable=resumable, make_seed=_seeds(CLIENT_SEEDS), deal_modes=COMMIT_REVEAL_ONLY)

            result = await join(resumable=not restart).run()
            if restart:  # as a `basra join` killed at that moment and run again
                assert not result.done and result.exit_code != EXIT_OK, result.reason
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


@pytest.mark.parametrize("side", ["join", "host"])
async def test_ctrl_c_at_a_capture_choice_leaves_the_match_and_the_other_side_is_told(tmp_path, side):
    # Ctrl-C sets the seat's stop event, as `basra join` and `basra host` do; here it is set as the choice goes to the seat.
    stop = trio.Event()

    def press_ctrl_c(message: dict) -> bool:
        if _is_a_choice(message):
            stop.set()
        return False  # only watched

    table = _table(tmp_path, grace=20)
    guest_file = tmp_path / "guest.basra"
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await _host(nursery, table, stop=stop if side == "host" else None)
            proxy = CuttingProxy(port, [Cut(TO_PLAYER, "your_turn", when=press_ctrl_c)])
            proxy_port = await nursery.start(proxy.serve)
            join = JoinSession("127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), guest_file, plain=True,
                               make_seed=_seeds(CLIENT_SEEDS), deal_modes=COMMIT_REVEAL_ONLY)
            result = await join.run(stop if side == "join" else None)
            await table.finished.wait()
            nursery.cancel_scope.cancel()
    table.transcript.close()
    assert stop.is_set(), "no request offered the joining seat a choice of captures"
    if side == "join":
        assert result.exit_code == EXIT_LEFT, result.reason
        assert table.result is not None and table.result.reason == "Omar left the match"
    else:
        assert result.exit_code == EXIT_FAILURE and result.reason == "the match was abandoned: Hoda left", result.reason
        assert table.result is not None and table.result.reason == "Hoda left the match"
    for path in (tmp_path / "host.basra", guest_file):
        assert transcript.verify(transcript.parse(path.read_bytes())).ok


async def test_a_host_killed_at_a_capture_choice_and_resumed_asks_for_the_choice_again(tmp_path):
    # The host journals the match as `basra host` does; at the request offering the choice its tasks are all
    # cancelled and its files let go, as a kill -9 leaves them, and run_host resumes the journal on the same port.
    identity = load_or_create_identity(data_dir())  # the key `basra host --resume` loads
    journal_path, host_file, guest_file = tmp_path / "match.journal", tmp_path / "host.basra", tmp_path / "guest.basra"
    header = {"type": "header", "match_id": MATCH_ID, "scoring": "egyptian", "target": 1,
              "host_key": public_key_bytes(identity), "transcript": str(host_file), "bot": None}
    table = _table(tmp_path, grace=20, identity=identity, journal=JournalWriter.create(journal_path, header))
    killed = trio.Event()

    def kill_at_the_choice(message: dict) -> bool:
        if _is_a_choice(message):
            killed.set()
            return True  # the request is lost with the host
        return False

    first_host, let_go = trio.CancelScope(), trio.Event()

    async def host_until_killed(task_status=trio.TASK_STATUS_IGNORED) -> None:
        with first_host:
            async with trio.open_nursery() as nursery:
                task_status.started(await _host(nursery, table))
                await trio.sleep_forever()
        table.journal.close()
        table.transcript.close()
        let_go.set()

    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(host_until_killed)
            proxy = CuttingProxy(port, [Cut(TO_PLAYER, "your_turn", when=kill_at_the_choice)])
            proxy_port = await nursery.start(proxy.serve)
            join = JoinSession("127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), guest_file, plain=True,
                               make_seed=_seeds(CLIENT_SEEDS), deal_modes=COMMIT_REVEAL_ONLY)
            joined = trio.Event()
            outcome = {}

            async def guest() -> None:
                outcome["guest"] = await join.run()
                joined.set()

            nursery.start_soon(guest)
            await killed.wait()
            first_host.cancel()
            await let_go.wait()  # the journal's lock is let go, as a process's is when it dies
            settings = HostSettings(bind="127.0.0.1", port=port, name="Hoda", target=1, tls=False, grace=20, resume=journal_path)
            outcome["host"] = await run_host(settings, BotPlayer("greedy"), say=lambda line: None)
            await joined.wait()
            nursery.cancel_scope.cancel()
    assert proxy.cuts_made == 1, "no request offered the joining seat a choice of captures"
    assert outcome["guest"].exit_code == EXIT_OK, outcome["guest"].reason
    assert outcome["host"].table.completed, outcome["host"].table
    for path in (host_file, guest_file):
        report = transcript.verify(transcript.parse(path.read_bytes()))
        assert report.ok, report.problems
    assert plays(guest_file) == plays(host_file)
    turns = [m for sender, m in transcript.parse(guest_file.read_bytes()).records if isinstance(m, YourTurn)]
    assert any(offers_a_choice(turn.moves) for turn in turns)  # asked again by the resumed host


@pytest.mark.parametrize("side", ["join", "host"])
def test_q_then_y_on_the_full_screen_at_a_capture_choice_leaves_and_the_other_side_is_told(tmp_path, side):
    """The person at the full screen (Textual's Pilot, in process) is the guest choosing, or the host while the guest's choice is open."""
    guest_file = tmp_path / "guest.basra"
    table = _table(tmp_path, grace=20)
    # The guest's first request, the choice, has reached it; a guest bot's answer waits in the frozen link.
    opened = Mark(TO_PLAYER, "your_turn", hold=KEYS_HOLD)

    async def main(player, stop):
        async with trio.open_nursery() as nursery:
            if side == "join":
                port = await _host(nursery, table)
                guest = JoinSession("127.0.0.1", port, "Omar", player, guest_file, plain=True,
                                    make_seed=_seeds(FIRST_REQUEST_SEEDS), deal_modes=COMMIT_REVEAL_ONLY)
                result = await guest.run(stop)
            else:
                port = await _host(nursery, table, stop, player)
                proxy_port = await nursery.start(CuttingProxy(port, marks=[opened]).serve)
                guest = JoinSession("127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), guest_file, plain=True,
                                    make_seed=_seeds(FIRST_REQUEST_SEEDS), deal_modes=COMMIT_REVEAL_ONLY)
                result = await guest.run()
            await table.finished.wait()
            nursery.cancel_scope.cancel()
        table.transcript.close()
        return result

    async def scenario(app, pilot):
        if side == "join":
            await my_turn(app, pilot)
            place = next(i for i, card in enumerate(app.state.hand) if [m.card for m in app.state.moves].count(card) > 1)
            await pilot.press(str(place + 1), "enter")
            await until(pilot, lambda: app.choice is not None, "the choice of captures on screen")
        else:
            await until(pilot, opened.reached.is_set, "the guest's choice open")
        await pilot.press("q")
        assert isinstance(app.screen, LeaveScreen)
        await pilot.press("y")
        await until(pilot, lambda: app.done, "the match's end")

    app = run_app(scenario, main=main)
    result = app.result
    first_request = next(m for sender, m in transcript.parse(guest_file.read_bytes()).records if isinstance(m, YourTurn))
    assert offers_a_choice(first_request.moves)
    # The leave came while the choice was open: the host never took an answer to it.
    assert not any(isinstance(m, Play) for sender, m in transcript.parse((tmp_path / "host.basra").read_bytes()).records)
    if side == "join":
        assert result.exit_code == EXIT_LEFT and result.reason == "you left the match", result.reason
        assert table.result is not None and table.result.reason == "Omar left the match"
    else:
        assert opened.reached.is_set()
        assert result.exit_code == EXIT_FAILURE and result.reason == "the match was abandoned: Hoda left", result.reason
        assert table.result is not None and table.result.reason == "Hoda left the match"
    for path in (tmp_path / "host.basra", guest_file):
        assert transcript.verify(transcript.parse(path.read_bytes())).ok

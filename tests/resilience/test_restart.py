"""A joining player whose `basra join` stopped while the host waited on it runs it again, and the match goes on.

The first JoinSession runs without reconnecting, so a cut leaves it as a
killed `basra join` leaves the data directory: the resume ticket and the
transcript up to the cut.  Cutting the seat's answer on its way to the host
(a play, a seed) leaves the host waiting for it.  With the answer kept in the
transcript, the restarted client must send it again; with the answer removed
from the transcript (the process died before writing it), the restarted
client must answer the request again.  Either way the match completes and
both records verify.  The moments are the commit-reveal deal's (its seed);
test_crash.py runs a hidden-hands `basra join` again after a kill.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from basra_net.client.join import JoinSession
from basra_net.client.players import BotPlayer
from basra_net.client.session import COMMIT_REVEAL_ONLY
from basra_net.exits import EXIT_OK
from basra_net.files import data_dir
from basra_net.host.server import HostSettings
from basra_net.host.table import END_LINGER
from basra_net.match_files import RESUME_FILE, ResumeTicket, ResumeTickets, TranscriptFile
from basra_net.protocol import transcript

from ..signed_channels import channel_of, signed_by_both
from .cutting_proxy import TO_HOST, TO_PLAYER, Cut
from .test_resume import host_behind_proxy, plays

TEST_DEADLINE = 60


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))


def drop_last_answer(path: Path) -> str:
    """Rewrite the transcript without its last record, the seat's own answer; return that record's type."""
    kept = transcript.parse(path.read_bytes())
    sender, answer = kept.records[-1]
    assert sender == "guest", f"the transcript ends with the host's {answer.TYPE}, not an answer"
    rewritten = TranscriptFile(path, "guest", kept.format)
    for (sender, message), (_, body) in zip(kept.records[:-1], kept.bodies):
        rewritten.record(sender, message, len(body).to_bytes(4, "big") + body)
    for note in kept.notes:
        rewritten.note(note.kind, note.game, note.text)
    rewritten.close()
    return answer.TYPE


OPEN_MOMENTS = [
    # The answer went out and was lost: the host still waits for it.
    (Cut(TO_HOST, "play", nth=3), True),
    (Cut(TO_HOST, "seed", nth=2), True),
    # The process died before it wrote (or sent) its answer.
    (Cut(TO_HOST, "play", nth=3), False),
    (Cut(TO_HOST, "seed", nth=2), False),
    # The request itself never arrived: the host sends it again after the welcome.
    (Cut(TO_PLAYER, "your_turn", nth=4), True),
    # Version 2: the countersignature of game 1 lost, or never written: sent again, or made after the welcome.
    (Cut(TO_HOST, "sig"), True),
    (Cut(TO_HOST, "sig"), False),
]


@pytest.mark.parametrize(
    "cut,answer_kept", OPEN_MOMENTS, ids=lambda v: f"{v.direction}-{v.kind}" if isinstance(v, Cut) else ("kept" if v else "unwritten")
)
async def test_a_join_run_again_after_it_stopped_with_a_request_open_answers_it(tmp_path, cut, answer_kept):
    settings = HostSettings(port=0, bind="127.0.0.1", name="Hoda", target=151, transcript=tmp_path / "host.basra", tls=False, grace=20)
    guest_file = tmp_path / "guest.basra"
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            outcome, proxy, proxy_port = await host_behind_proxy(nursery, settings, [cut])
            first = JoinSession(
                "127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), guest_file, plain=True, resumable=False, deal_modes=COMMIT_REVEAL_ONLY
            )
            stopped = await first.run()
            assert proxy.cuts_made == 1 and stopped.exit_code != EXIT_OK and not stopped.done, stopped.reason
            if not answer_kept:
                assert drop_last_answer(guest_file) == cut.kind
            again = await JoinSession("127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), None, plain=True, deal_modes=COMMIT_REVEAL_ONLY).run()
            while not outcome:
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert again.exit_code == EXIT_OK, again.reason
    assert outcome[0].table.completed, outcome[0].table.reason
    assert again.transcript_path == guest_file
    for path in (tmp_path / "host.basra", guest_file):
        report = transcript.verify(transcript.parse(path.read_bytes()))
        assert report.ok, report.problems
    assert plays(guest_file) == plays(tmp_path / "host.basra")
    host_channel, guest_channel = channel_of(tmp_path / "host.basra"), channel_of(guest_file)
    assert signed_by_both(host_channel) and host_channel.chain.digest == guest_channel.chain.digest


async def test_a_join_run_again_after_it_stopped_on_the_match_end_takes_the_end_and_answers_it(tmp_path):
    # The first join reads match_end, and its leave is lost: its ticket is put back as a join killed
    # right after match_end reached its transcript would have left it.  Run again while the host
    # still holds the table, it takes the end again and leaves at once.
    settings = HostSettings(port=0, bind="127.0.0.1", name="Hoda", target=1, transcript=tmp_path / "host.basra", tls=False, grace=20)
    guest_file = tmp_path / "guest.basra"
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            outcome, proxy, proxy_port = await host_behind_proxy(nursery, settings, [Cut(TO_HOST, "leave")])
            first = await JoinSession("127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), guest_file, plain=True, resumable=False).run()
            assert first.exit_code == EXIT_OK and proxy.cuts_made == 1
            welcome = transcript.parse(guest_file.read_bytes()).records[1][1]
            ResumeTickets(data_dir() / RESUME_FILE).put(
                ResumeTicket(f"127.0.0.1:{proxy_port}", "Omar", None, welcome.match_id, 1, welcome.token, guest_file)
            )
            started = trio.current_time()
            again = await JoinSession("127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), None, plain=True).run()
            took = trio.current_time() - started
            while not outcome:
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert again.exit_code == EXIT_OK and again.reason == "the match is over", again.reason
    assert took < END_LINGER, "it waited for the host to give up on it"
    assert outcome[0].table.completed
    assert transcript.verify(transcript.parse(guest_file.read_bytes())).ok


async def test_a_hidden_hands_join_stopped_after_a_games_shuffle_and_before_its_lock_begins_that_game_when_run_again(tmp_path):
    # The first join stops on its way to sending game 2's lock, before the lock reached its transcript or its ticket
    # (a `basra join` killed between reading the shuffle and keeping the game's lock).  Run again, it has no party
    # of game 2 to take up: it begins the game afresh and sends its lock, instead of waiting on a step it owes.
    settings = HostSettings(port=0, bind="127.0.0.1", name="Hoda", target=151, transcript=tmp_path / "host.basra", tls=False, grace=20)
    guest_file = tmp_path / "guest.basra"
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            outcome, proxy, proxy_port = await host_behind_proxy(nursery, settings, [Cut(TO_HOST, "lock", nth=2)])
            first = JoinSession("127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), guest_file, plain=True, resumable=False)
            stopped = await first.run()
            assert proxy.cuts_made == 1 and not stopped.done, stopped.reason
            assert drop_last_answer(guest_file) == "lock"
            shuffles = [m.game for _, m in transcript.parse(guest_file.read_bytes()).records if m.TYPE == "shuffle"]
            assert shuffles[-1] == 2, shuffles
            again = await JoinSession("127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), None, plain=True).run()
            while not outcome:
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert again.exit_code == EXIT_OK, again.reason
    assert outcome[0].table.completed, outcome[0].table.reason
    for path in (tmp_path / "host.basra", guest_file):
        report = transcript.verify(transcript.parse(path.read_bytes()))
        assert report.ok, report.problems

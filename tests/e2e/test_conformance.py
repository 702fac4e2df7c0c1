"""`basra conformance`: both checkers pass our own host, client and minimal client, and name what broken peers get wrong."""

from __future__ import annotations

import re
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import trio
import trio.testing

from basra_net.client.players import BotPlayer
from basra_net.conformance import client_check, relayed_table
from basra_net.conformance.client_check import DEAL_REFUSED_CASE, MATCHES
from basra_net.conformance.host_check import Target, check_host
from basra_net.host.limits import CodeAttempts, HandshakeGate
from basra_net.host.lobby import Lobby
from basra_net.host.server import HostSettings, ServeSettings, run_host, run_serve
from basra_net.host.signing import ChannelSigning
from basra_net.host.table import Table
from basra_net.protocol.deal_signing import StepLedger
from basra_net.protocol.hidden_deal import DealChecker
from basra_net.protocol.record import RecordError

from .processes import basra_command, free_port, wait_for_line

HERE = Path(__file__).parent
MINIMAL_CLIENT = HERE.parents[1] / "examples" / "minimal_client.py"
BROKEN_CLIENT = HERE / "broken_client.py"
CHECK_TIMEOUT = 300
CODE = "K7M-2QX"
VERDICT = re.compile(r"^(PASS|FAIL|SKIP)  (\S.*?): ", re.M)


def verdicts(output: str) -> dict[str, list[str]]:
    """Status -> the lines of the report with it."""
    found: dict[str, list[str]] = {"PASS": [], "FAIL": [], "SKIP": []}
    for line in output.splitlines():
        if match := VERDICT.match(line):
            found[match.group(1)].append(line)
    return found


def check_client(env: dict, client_command: str, *, plain: bool) -> subprocess.CompletedProcess:
    args = ["conformance", "client", "--port", "0", "--exec", client_command] + (["--plain"] if plain else [])
    return subprocess.run(basra_command(*args), env=env, capture_output=True, text=True, timeout=CHECK_TIMEOUT)


SCRIPTED = [
    "hello, and the welcome taken",
    "a ping is answered",
    "away and back change nothing",
    *(f"cut after {kind}, and the resume" for kind in ("welcome", "match_start", "ping", "away", "back", "commit", "deal", "your_turn", "played", "game_end", "reveal")),
    "illegal_move, the new request, a cut",
    "match_end answered with leave",
    "the verification of every deal",
    "a deal other than the one committed to is reported",
    "an abandoned deal (no reveal) is reported",
    "a commitment whose signature does not verify gets no seed",
    "a commitment that does not verify is reported",
    "a second commitment for a fixed deal, after a resume, gets no seed",
    "a second commitment for a fixed deal is reported",
    "cut after match_end: the match is over, no resume",
    "a client cut off after match_end ends",
]


COMMIT_REVEAL_CUTS = [
    *(f"commit-reveal deal: cut after the host's {kind}, and the resume" for kind in relayed_table.COMMIT_REVEAL_CUTS),
    *(f"commit-reveal deal: cut after the client's {kind}, and the resume" for kind in relayed_table.COMMIT_REVEAL_CLIENT_CUTS),
]
HIDDEN_CUTS = [
    *(f"hidden hands: cut after the host's {kind}, and the resume" for kind in relayed_table.HIDDEN_CUTS),
    *(f"hidden hands: cut after the client's {kind}, and the resume" for kind in relayed_table.HIDDEN_CLIENT_CUTS),
    *(f"hidden hands: the client's {kind} lost in a cut, and sent again" for kind in relayed_table.LOST_CLIENT_STEPS),
]
RELAYED = [
    "version 2, commit-reveal deal: the signed match runs to its end",
    "version 2, hidden hands: the signed match runs to its end",
    "a host sig that does not verify: the client stops",
    "a game_end whose totals are not the play's: the client stops",
    "an opened whose unmasking proof does not verify: the client stops",
    "an opened whose party's signature does not verify: the client stops",
    "a host sig of a game that never comes: the client stops",
    "version 2, commit-reveal deal: a match cut after each kind of message runs to its end",
    "version 2, hidden hands: a match cut after each step of the deal runs to its end",
    "version 2, hidden hands: a match whose client steps are each lost once in a cut runs to its end",
    "version 2, commit-reveal deal: a ping from the host is answered",
    "version 2, commit-reveal deal: away, back and a chat from seat 0 change nothing",
    "version 2, hidden hands: a ping from the host is answered",
    "version 2, hidden hands: away, back and a chat from seat 0 change nothing",
    *COMMIT_REVEAL_CUTS,
    *HIDDEN_CUTS,
]
HIDDEN_RELAYED = [RELAYED[1], RELAYED[4], RELAYED[5], RELAYED[8], RELAYED[9], RELAYED[12], RELAYED[13], *HIDDEN_CUTS]


def assert_all_scripted_cases_pass(result: subprocess.CompletedProcess, *, not_applicable: list[str] = (), why: str = "") -> None:
    found = verdicts(result.stdout)
    assert result.returncode == 0 and not found["FAIL"], result.stdout + result.stderr
    for name in SCRIPTED + [n for n in RELAYED if n not in not_applicable]:
        assert any(name in line for line in found["PASS"]), f"{name}: {result.stdout}"
    for name in not_applicable:
        assert any(name in line and why in line for line in found["SKIP"]), f"{name}: {result.stdout}"
    # The cases that wait for the cards pass or say they did not arise; none is left out.
    assert len(found["PASS"]) + len(found["SKIP"]) == len(SCRIPTED) + 6 + len(RELAYED)


def test_a_client_that_offers_version_2_only_fails_no_case_and_has_version_1_reported_not_applicable(basra_env):
    """5.2: a client that offers [2] refuses a welcome naming version 1, so the scripted host of version 1
    refuses its hello with unsupported_version and its matches are not applicable; every case of version 2 passes."""
    join = f"{sys.executable} {HERE / 'broken_join.py'} version_2_only join 127.0.0.1:{{port}} --auto greedy --plain --deal commit-reveal"
    result = check_client(basra_env, join, plain=True)
    found = verdicts(result.stdout)
    assert result.returncode == 0 and not found["FAIL"], result.stdout + result.stderr
    for name in RELAYED:
        if name not in HIDDEN_RELAYED:
            assert any(name in line for line in found["PASS"]), f"{name}: {result.stdout}"
    version_1 = [line for line in found["SKIP"] if "offers version 2 only" in line and "unsupported_version (5.2)" in line]
    assert len(version_1) == len(client_check.MATCHES), result.stdout


@pytest.mark.parametrize("plain", [True, False], ids=["plain", "tls"])
def test_the_reference_client_refuses_the_commit_reveal_deal_by_default_and_passes_every_hidden_case(basra_env, plain):
    """A default `basra join` offers hidden hands alone: the scripted host's commit-reveal match_start is refused with
    deal_mismatch (PROTOCOL.md 15.15), and every case of that deal is not applicable."""
    join = " ".join(basra_command("join", "127.0.0.1:{port}", "--auto", "greedy", *(["--plain"] if plain else [])))
    result = check_client(basra_env, join, plain=plain)
    found = verdicts(result.stdout)
    assert result.returncode == 0 and not found["FAIL"], result.stdout + result.stderr
    assert any(DEAL_REFUSED_CASE in line for line in found["PASS"]), result.stdout
    for name in HIDDEN_RELAYED:
        assert any(name in line for line in found["PASS"]), f"{name}: {result.stdout}"
    commit_cases = [name for _, _, name in MATCHES] + [name for name in RELAYED if name not in HIDDEN_RELAYED]
    for name in commit_cases:
        assert any(name in line and "does not accept the commit-reveal deal" in line for line in found["SKIP"]), f"{name}: {result.stdout}"
    assert len(found["PASS"]) + len(found["SKIP"]) == 1 + len(commit_cases) + len(HIDDEN_RELAYED)


@pytest.mark.parametrize("plain", [True, False], ids=["plain", "tls"])
def test_the_reference_client_that_accepts_the_commit_reveal_deal_passes_every_case_of_it(basra_env, plain):
    join = " ".join(basra_command("join", "127.0.0.1:{port}", "--auto", "greedy", "--deal", "commit-reveal", *(["--plain"] if plain else [])))
    assert_all_scripted_cases_pass(
        check_client(basra_env, join, plain=plain), not_applicable=HIDDEN_RELAYED, why="does not offer hidden hands"
    )


def test_the_minimal_client_passes_every_case_of_version_1_and_has_version_2_reported_not_applicable(basra_env):
    result = check_client(basra_env, f"{sys.executable} {MINIMAL_CLIENT} 127.0.0.1 {{port}}", plain=False)
    assert_all_scripted_cases_pass(result, not_applicable=RELAYED, why="offers version 1 only")


def test_a_client_that_countersigns_an_unchecked_host_signature_fails_that_case(basra_env):
    join = f"{sys.executable} {HERE / 'broken_join.py'} trusting_signatures join 127.0.0.1:{{port}} --auto greedy --plain --deal commit-reveal"
    result = check_client(basra_env, join, plain=True)
    failed = verdicts(result.stdout)["FAIL"]
    assert result.returncode == 1, result.stdout
    assert len(failed) == 1 and "a host sig that does not verify" in failed[0] and "countersigned game 1" in failed[0], result.stdout


def test_a_client_that_does_not_send_its_unmasking_again_after_a_resume_fails_the_match_that_loses_it(basra_env):
    """Its `open` lost in the cut, the host waits for it in vain, and the match ends as withheld (15.15): 40 s a match."""
    join = f"{sys.executable} {HERE / 'broken_join.py'} no_open_again join 127.0.0.1:{{port}} --auto greedy --plain"
    result = check_client(basra_env, join, plain=True)
    failed = verdicts(result.stdout)["FAIL"]
    assert result.returncode == 1, result.stdout
    assert any("client steps are each lost once in a cut" in line and "did not run to its end" in line for line in failed), result.stdout
    # Any other failure is a match with hidden hands cut while the client's `open` (unmaskings or reveals) was on its way.
    for line in failed:
        assert "hidden hands" in line and "cut" in line, line


@pytest.mark.parametrize(
    "flaw, failing",
    [
        ("no_pong", "a ping is answered"),
        ("no_resume", "cut after welcome, and the resume"),
        ("trusting", "a deal other than the one committed to is reported"),
        ("resume_after_end", "cut after match_end: the match is over, no resume"),
    ],
)
def test_a_broken_client_fails_the_case_that_names_its_flaw(basra_env, flaw, failing):
    result = check_client(basra_env, f"{sys.executable} {BROKEN_CLIENT} {flaw} --plain 127.0.0.1 {{port}}", plain=True)
    failed = verdicts(result.stdout)["FAIL"]
    assert result.returncode == 1, result.stdout
    # The first case it fails is the one named for its flaw; a client that resumes after the end also
    # comes back after the honest match's close, which the later matches then see.
    assert failed and failing in (failed[0] if flaw != "resume_after_end" else "\n".join(failed)), result.stdout


# --- the host checker ------------------------------------------------------------------------------


VERSION_2 = [
    "a version-2 hello (key, deals) is welcomed in version 2",
    "a forged countersignature is refused with bad_signature",
    "a signed match with the commit-reveal deal, every signature and deal verified",
    "a hidden_play from a position not dealt to the seat: illegal_move",
    "a signed match with hidden hands, every step, play and signature verified",
    "a locked list with an entry that is no point of the group: bad_deal",
    "an unmasking whose proof does not verify: bad_deal",
    "an unmasking carrying the proof of another position: bad_deal",
    "a locked list whose party's signature does not verify: bad_deal",
    "a party whose step is lost in a cut, or cut off right after it, resumes and sends it again",
    "a seat that never countersigns: the match ends abandoned, the account ending unsigned",
    "a party that withholds a step of the deal: the match ends abandoned, the account ending withheld",
]
HIDDEN_ONLY = VERSION_2[3:10]
# The cases of seat 1's one match in version 2, which a host that plays one match holds without --exec.
ONE_SEAT = [
    "a play before any request: not_your_turn",
    "a version-2 hello for the taken seat: table_full",
    "a version-2 resume claiming more messages than were sent: bad_resume",
    "a ping while the match goes on",
    "a play for a request not open: stale_request",
    "a play the request does not list: illegal_move, the request spent, a new one sent",
    "the same play twice: the repeat dropped silently",
    "answers lost in a cut, or cut off right after, sent again on a resume and taken once",
]
REFUSALS = 16  # the refusals, the handshake deadline and the stalled handshakes, each on a connection of its own
VERSION_1_SEAT = 8  # the cases of seat 1's match in version 1


def check_host_command(env: dict, port: int, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        basra_command("conformance", "host", f"127.0.0.1:{port}", *extra),
        env=env, capture_output=True, text=True, timeout=CHECK_TIMEOUT,
    )


HOST_ARGS = ("host", "--auto", "greedy", "--code", CODE, "--port", "{port}", "--target", "30", "--no-announce")
SHORT_WAITS_HOST = HERE / "short_waits_host.py"
SHORT_WAIT = 4  # seconds the host under test waits for what a seat owes, in place of 40


def host_command(*options: str) -> str:
    """`basra host` as the checker runs it for each match, on the port it is given."""
    return " ".join(basra_command(*HOST_ARGS, *options))


def test_the_reference_host_passes_every_case_of_both_versions_and_both_deal_modes(basra_env):
    short_waits_host = " ".join([sys.executable, str(SHORT_WAITS_HOST), str(SHORT_WAIT), *HOST_ARGS])
    result = check_host_command(basra_env, free_port(), "--code", CODE.lower(), "--sign-wait", str(SHORT_WAIT), "--exec", short_waits_host)
    found = verdicts(result.stdout)
    assert result.returncode == 0 and not found["FAIL"] and not found["SKIP"], result.stdout + result.stderr
    assert len(found["PASS"]) == REFUSALS + VERSION_1_SEAT + len(ONE_SEAT) + len(VERSION_2)
    assert any("version 1: a whole match verified" in line for line in found["PASS"]), result.stdout
    for name in ONE_SEAT + VERSION_2:
        assert any(name in line for line in found["PASS"]), f"{name}: {result.stdout}"
    for event in ("unsigned", "withheld"):
        assert any(f"the host's account ending with {event}" in line for line in found["PASS"]), result.stdout


def test_a_host_without_hidden_hands_has_those_cases_reported_not_applicable(basra_env):
    result = check_host_command(basra_env, free_port(), "--code", CODE, "--sign-wait", "0", "--exec", host_command("--deal", "commit-reveal"))
    found = verdicts(result.stdout)
    assert result.returncode == 0 and not found["FAIL"], result.stdout + result.stderr
    for name in HIDDEN_ONLY:
        assert any(name in line and "not applicable" in line for line in found["SKIP"]), f"{name}: {result.stdout}"
    assert any(VERSION_2[2] in line for line in found["PASS"]), result.stdout
    assert any("never countersigns" in line and "--sign-wait 0" in line for line in found["SKIP"]), result.stdout


CODED = (("--code", CODE), ("--code", CODE.lower()))  # the host's options, and the checker's
ONE_MATCH_HOSTS = {
    "hidden": (CODED, True),  # README's host: `basra host --name Sam`, a coded TLS table, hidden hands
    "commit-reveal": ((("--code", CODE, "--deal", "commit-reveal"), CODED[1]), False),
    "plain-open": ((("--plain", "--open"), ("--plain",)), True),
}
CODE_REFUSALS = 3  # the refusals only a checker given the code can bring about


@pytest.mark.parametrize("variant", ONE_MATCH_HOSTS)
def test_a_one_match_host_without_exec_has_every_case_of_one_match_run_in_version_2_and_says_what_it_left_out(basra_env, variant):
    (host_options, checker_options), hidden = ONE_MATCH_HOSTS[variant]
    port = free_port()
    host = subprocess.Popen(  # its own seat played by the bot
        basra_command("host", "--name", "Sam", "--auto", "greedy", *host_options, "--port", str(port), "--target", "30", "--no-announce"),
        env=basra_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        wait_for_line(host, "listening")
        result = check_host_command(basra_env, port, *checker_options)
    finally:
        host.kill()
        host.wait()
    found = verdicts(result.stdout)
    assert result.returncode == 0 and not found["FAIL"], result.stdout + result.stderr
    whole = VERSION_2[4] if hidden else VERSION_2[2]
    one_match = [VERSION_2[0], *ONE_SEAT, whole] + ([VERSION_2[3]] if hidden else [])
    coded = "--code" in checker_options
    assert len(found["PASS"]) == REFUSALS - (0 if coded else CODE_REFUSALS) + len(one_match), result.stdout
    for name in one_match:
        assert any(name in line for line in found["PASS"]), f"{name}: {result.stdout}"
    cuts = next(line for line in found["PASS"] if ONE_SEAT[-1] in line)
    assert "lost its" in cuts and "cut after its" in cuts, cuts
    not_applicable = [line for line in found["SKIP"] if "the host does not deal hidden hands" in line]
    assert len(not_applicable) == (0 if hidden else len(HIDDEN_ONLY) + 1), result.stdout  # withheld, too
    left = [line for line in found["SKIP"] if "give --exec" in line]
    # Each needs a match of its own: version 1's, a forged countersignature, the 40 s waits (and hidden hands' faults).
    assert len(left) == VERSION_1_SEAT + (8 if hidden else 2), result.stdout
    no_code = [line for line in found["SKIP"] if "the host's join code was not given" in line]
    assert len(no_code) == (0 if coded else CODE_REFUSALS), result.stdout
    assert len(left) + len(not_applicable) + len(no_code) == len(found["SKIP"]), result.stdout
    assert all("version 1:" in line for line in left[:VERSION_1_SEAT]), result.stdout


SERVED = [
    "a new player is seated: welcome: version 1, seat 0 (both seats remote)",
    "a second player sits at the first one's table",
    "two remote seats play a whole match, verified",
    *VERSION_2[:-2],
]


def test_a_server_whose_seats_are_both_remote_passes_every_case(basra_env):
    port = free_port()
    server = subprocess.Popen(
        basra_command("serve", "--code", "K7M-2QXZ9", "--port", str(port), "--bind", "127.0.0.1", "--target", "30", "--no-announce"),
        env=basra_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        wait_for_line(server, "listening")
        # The countersignature's wait is checked against `basra host` above: not twice.
        result = check_host_command(basra_env, port, "--code", "K7M-2QXZ9", "--sign-wait", "0")
    finally:
        server.kill()
        server.wait()
    found = verdicts(result.stdout)
    assert result.returncode == 0 and not found["FAIL"], result.stdout + result.stderr
    assert len(found["SKIP"]) == 2 and all("--sign-wait 0" in line for line in found["SKIP"]), result.stdout
    for name in SERVED:
        assert any(name in line for line in found["PASS"]), f"{name}: {result.stdout}"


async def test_a_server_that_seats_the_second_player_at_another_table_fails_the_second_seat_case(data_home, monkeypatch):
    honest_seat_for = Lobby.seat_for

    def a_table_each(self, hello, reserved):
        if not self.tables:
            return honest_seat_for(self, hello, reserved)
        return self._open(None).seat_for(hello, reserved)

    monkeypatch.setattr(Lobby, "seat_for", a_table_each)
    lines: list[str] = []
    settings = ServeSettings(bind="127.0.0.1", port=0, target=30, code=CODE + "Z9", tls=False)
    with trio.fail_after(CHECK_TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(partial(run_serve, settings, say=lambda line: None))
            code = await check_host(Target("127.0.0.1", port, tls=False, code=settings.code), say=lines.append)
            nursery.cancel_scope.cancel()
    failed = [line for line in lines if line.startswith("FAIL")]
    assert code == 1 and failed and "a second player sits at the first one's table" in failed[0], failed


async def check_broken_host(monkeypatch_flaw) -> list[str]:
    """The host checker against an in-process host with a flaw; the report's lines."""
    lines: list[str] = []
    settings = HostSettings(bind="127.0.0.1", port=0, target=30, code=CODE, tls=False)
    with trio.fail_after(CHECK_TIMEOUT):
        async with trio.open_nursery() as nursery:

            async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
                await run_host(settings, BotPlayer("greedy"), say=lambda line: None, task_status=task_status)

            port = await nursery.start(host)
            code = await check_host(Target("127.0.0.1", port, tls=False, code=CODE), say=lines.append)
            nursery.cancel_scope.cancel()
    assert code == 1
    return [line for line in lines if line.startswith("FAIL")]


@pytest.fixture(autouse=False)
def data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))


async def test_a_host_that_never_locks_out_fails_the_lockout_case(data_home, monkeypatch):
    monkeypatch.setattr(CodeAttempts, "wait_for", lambda self, address: 0.0)
    failed = await check_broken_host(monkeypatch)
    assert failed and "locked out" in failed[0], failed


async def test_a_host_that_replays_a_resume_out_of_order_fails_the_resume_case(data_home, monkeypatch):
    honest = Table.seat_resumed

    def reversed_replay(self, *args):
        welcome, missed, left_open, link = honest(self, *args)
        return welcome, missed[::-1], left_open, link

    monkeypatch.setattr(Table, "seat_resumed", reversed_replay)
    failed = await check_broken_host(monkeypatch)
    assert any("resume after a cut, with a replay" in line for line in failed), failed


async def test_a_host_that_turns_the_newcomer_away_when_handshakes_are_full_fails_the_busy_case(data_home, monkeypatch):
    honest_enter = HandshakeGate.enter

    def drop_the_newcomer(self, address):
        crowded = len(self._by_address.get(address, {})) >= self.per_address
        self.per_address += crowded  # so that the honest gate keeps the oldest
        handshake = honest_enter(self, address)
        self.per_address -= crowded
        if crowded:
            self._drop(handshake)
        return handshake

    monkeypatch.setattr(HandshakeGate, "enter", drop_the_newcomer)
    failed = await check_broken_host(monkeypatch)
    assert failed and "the oldest is dropped" in failed[0] and "busy" in failed[0], failed


def test_readmes_conformance_commands_are_ones_the_command_line_takes():
    import shlex

    from basra_net.cli import build_parser

    readme = (HERE.parents[1] / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^basra (conformance .+)$", readme, re.M)
    assert len(commands) >= 3
    for command in commands:
        args = build_parser().parse_args(shlex.split(command))
        assert args.command == "conformance" and args.side in ("client", "host")


async def check_broken_server(monkeypatch_flaw=None) -> list[str]:
    """The host checker against an in-process `basra serve` (an open table over TLS) with a flaw; its FAIL lines."""
    lines: list[str] = []
    settings = ServeSettings(bind="127.0.0.1", port=0, target=30, code=None, tls=True)
    with trio.fail_after(CHECK_TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(partial(run_serve, settings, say=lambda line: None))
            code = await check_host(Target("127.0.0.1", port, tls=True, code=None), say=lines.append, sign_wait=0)
            nursery.cancel_scope.cancel()
    assert code == 1, lines
    return [line for line in lines if line.startswith("FAIL")]


async def test_a_host_that_takes_a_forged_countersignature_fails_that_case(data_home, monkeypatch):
    honest = ChannelSigning.countersignature

    def trusting(entry, message):
        try:
            return honest(entry, message)
        except RecordError:
            return True

    monkeypatch.setattr(ChannelSigning, "countersignature", staticmethod(trusting))
    failed = await check_broken_server()
    assert len(failed) == 1 and "a forged countersignature is refused with bad_signature" in failed[0], failed


async def test_a_referee_that_takes_unmaskings_without_their_proofs_fails_the_proof_cases(data_home, monkeypatch):
    honest = DealChecker.unmasking

    def unproven(self, unmasking):
        if self.own_seat is not None:  # a party's record: checked as it should be
            return honest(self, unmasking)
        self.own_seat = unmasking.seat  # the referee's: its proof taken as a party's own, unchecked
        try:
            return honest(self, unmasking)
        finally:
            self.own_seat = None

    monkeypatch.setattr(DealChecker, "unmasking", unproven)
    failed = await check_broken_server()
    assert len(failed) == 2, failed
    assert "an unmasking whose proof does not verify: bad_deal" in failed[0], failed
    assert "an unmasking carrying the proof of another position: bad_deal" in failed[1], failed


async def test_a_referee_that_takes_steps_without_their_signatures_fails_the_signature_case(data_home, monkeypatch):
    def unchecked(self, seat, step):
        self.signatures[seat].append(step.sig)  # counted as taken, its signature never checked

    monkeypatch.setattr(StepLedger, "take", unchecked)
    failed = await check_broken_server()
    assert len(failed) == 1 and "a locked list whose party's signature does not verify: bad_deal" in failed[0], failed


async def test_a_client_that_connects_plays_and_exits_between_two_looks_of_the_checker_asked_for_a_seat():
    """The relayed match looks for the client's hello every 50 ms; a client fast enough to connect, finish its match
    and exit in between is judged by what it sent, not reported as never having asked for a seat."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from basra_net.conformance.client_check import ClientRun
    from basra_net.conformance.relayed_table import RELAYED_MATCHES, Offered, RelayedOutcome, WatchedStream, _until_decided
    from basra_net.host.table import Table
    from basra_net.protocol.messages import Hello

    watched = WatchedStream(trio.testing.memory_stream_pair()[0], None)
    watched.hello = Hello((1,), "Quick", bytes(32))
    client = ClientRun(["quick-client"])
    client.exited.set()
    outcome = RelayedOutcome(table=Table(scoring="egyptian", target=30, identity=Ed25519PrivateKey.generate()))
    offered = Offered()
    with trio.fail_after(5):
        await _until_decided(outcome, RELAYED_MATCHES[0], offered, [watched], client)
    assert outcome.failure is None and outcome.watched is watched
    assert offered.version_2 is False  # so the version-2 cases are reported not applicable, as for any version-1 client

"""Deal verification: an honest transcript checks out; any single lie in one is named."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from basra_net.engine.cards import card_name
from basra_net.protocol import shuffle, transcript
from basra_net.protocol.messages import Commit, Deal, GameEnd, Hello, Leave, MatchEnd, Played, Reveal, Seed, Welcome
from basra_net.protocol.transcript import TranscriptError
from basra_net.protocol.verify import Discrepancy

TAMPERED_GAME = 2  # lies go into a game after the first, so the game number in the report means something


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path))


def encode(parsed: transcript.Transcript) -> bytes:
    return (
        transcript.header(parsed.role)
        + b"".join(transcript.record(sender, message) for sender, message in parsed.records)
        + b"".join(transcript.note(n.kind, n.game, n.text) for n in parsed.notes)
    )


def honest(match) -> transcript.Transcript:
    return transcript.parse(match.host_transcript.read_bytes())


def index_of(parsed: transcript.Transcript, predicate, *, nth: int = 0) -> int:
    hits = [i for i, (_, message) in enumerate(parsed.records) if predicate(message)]
    assert len(hits) > nth, "the honest match has no such record"
    return hits[nth]


def tampered(match, predicate, change, *, nth: int = 0) -> transcript.VerifyReport:
    """Verify the honest transcript with one record's message changed, after a trip through bytes."""
    parsed = honest(match)
    i = index_of(parsed, predicate, nth=nth)
    sender, message = parsed.records[i]
    changed = change(message)
    assert changed != message
    parsed.records[i] = (sender, changed)
    report = transcript.verify(transcript.parse(encode(parsed)))
    assert not report.ok
    return report


def in_game(cls, game: int = TAMPERED_GAME, **fields):
    """Matches messages of this class in this game whose named fields have these values."""
    return lambda m: isinstance(m, cls) and m.game == game and all(getattr(m, k) == v for k, v in fields.items())


def sign(match, data: bytes) -> bytes:
    return shuffle.sign(match.identity, data)


# --- the honest match -----------------------------------------------------------------------------


def test_the_honest_match_was_played_to_its_end(honest_match):
    assert honest_match.table.completed
    assert [s.exit_code for s in honest_match.seats] == [0, 0]
    assert honest_match.seats[1].state.results and all(r.verified for r in honest_match.seats[1].state.results)


@pytest.mark.parametrize("which", ["host_transcript", "guest_transcript"])
def test_an_honest_transcript_verifies_game_by_game(honest_match, which):
    parsed = transcript.parse(getattr(honest_match, which).read_bytes())
    report = transcript.verify(parsed)
    assert report.ok, report.problems
    games = [m.game for _, m in parsed.records if isinstance(m, Reveal)]
    assert len(games) >= 3
    assert [c.game for c in report.checks] == games
    for check in report.checks:
        commit = next(m for _, m in parsed.records if isinstance(m, Commit) and m.game == check.game)
        seed = next(m for _, m in parsed.records if isinstance(m, Seed) and m.game == check.game)
        assert check.commitment == commit.commitment and check.client_seed == seed.seed
        assert check.deck == shuffle.shuffled_deck(honest_match.match_id, check.game, check.host_seed, seed.seed)


# --- one lie each ---------------------------------------------------------------------------------


def test_a_changed_commitment_breaks_its_signature(honest_match):
    report = tampered(honest_match, in_game(Commit), lambda m: replace(m, commitment=bytes(32)))
    first = report.problems[0]
    assert (first.game, first.field) == (TAMPERED_GAME, "commit signature")
    assert any(p.field == "commitment" and p.game == TAMPERED_GAME for p in report.problems)


def test_a_signed_commitment_to_another_seed_is_named_as_the_commitment(honest_match):
    # The host itself signs a commitment that the revealed seed does not open.
    def forge(commit: Commit) -> Commit:
        fake = bytes(32)
        return replace(commit, commitment=fake, signature=sign(honest_match, shuffle.commit_signed_bytes(honest_match.match_id, commit.game, fake)))

    report = tampered(honest_match, in_game(Commit), forge)
    first = report.problems[0]
    assert (first.game, first.field) == (TAMPERED_GAME, "commitment")
    assert first.expected == bytes(32).hex()


def test_a_changed_client_seed_shows_up_as_a_different_deal(honest_match):
    report = tampered(honest_match, in_game(Seed), lambda m: replace(m, seed=b"\x55" * 32))
    first = report.problems[0]
    assert first.game == TAMPERED_GAME
    assert first.field.startswith("deal of hand 1: ")


def test_a_changed_revealed_seed_breaks_the_reveal_signature_and_the_commitment(honest_match):
    report = tampered(honest_match, in_game(Reveal), lambda m: replace(m, seed=b"\x55" * 32))
    first = report.problems[0]
    assert (first.game, first.field) == (TAMPERED_GAME, "reveal signature")
    assert [p.field for p in report.problems if p.game == TAMPERED_GAME] == ["reveal signature", "commitment"]


def test_a_signed_reveal_of_another_seed_is_named_as_the_commitment(honest_match):
    def forge(reveal: Reveal) -> Reveal:
        seed = b"\x55" * 32
        return replace(reveal, seed=seed, signature=sign(honest_match, shuffle.reveal_signed_bytes(honest_match.match_id, reveal.game, seed)))

    report = tampered(honest_match, in_game(Reveal), forge)
    assert (report.problems[0].game, report.problems[0].field) == (TAMPERED_GAME, "commitment")


def test_a_dealt_card_that_is_not_the_decks_is_named(honest_match):
    def swap_first_card(deal: Deal) -> Deal:
        unseen = next(c for c in range(52) if c not in deal.hand and c not in deal.table)
        return replace(deal, hand=(unseen, *deal.hand[1:]))

    report = tampered(honest_match, in_game(Deal, hand_no=3), swap_first_card)
    first = report.problems[0]
    assert (first.game, first.field) == (TAMPERED_GAME, "deal of hand 3: seat 1 cards")
    original = honest(honest_match).records[index_of(honest(honest_match), in_game(Deal, hand_no=3))][1]
    assert first.expected == "[" + " ".join(card_name(c) for c in original.hand) + "]"


def test_a_changed_table_in_the_first_deal_is_named(honest_match):
    report = tampered(honest_match, in_game(Deal, hand_no=1), lambda m: replace(m, table=m.table[::-1]))
    assert (report.problems[0].game, report.problems[0].field) == (TAMPERED_GAME, "deal of hand 1: table")


@pytest.mark.parametrize("seat", [0, 1])
def test_a_played_card_that_was_not_in_hand_is_named(honest_match, seat):
    # A card that was on the table before the play (and is still there) cannot have been in the player's hand.
    report = tampered(
        honest_match,
        lambda m: in_game(Played, seat=seat)(m) and any(c != m.card for c in m.table),
        lambda m: replace(m, card=next(c for c in m.table if c != m.card)),
        nth=5,
    )
    first = report.problems[0]
    assert (first.game, first.field) == (TAMPERED_GAME, f"play by seat {seat}")
    assert "not in your hand" in first.found


def test_a_capture_that_was_not_taken_is_named(honest_match):
    report = tampered(
        honest_match,
        in_game(Played, kind="capture"),
        lambda m: replace(m, captures=()),
        nth=1,
    )
    first = report.problems[0]
    assert first.game == TAMPERED_GAME and first.field.startswith("play by seat ")
    assert "must take" in first.found


def test_a_wrong_table_after_a_play_is_named(honest_match):
    report = tampered(
        honest_match,
        lambda m: in_game(Played)(m) and len(m.table) > 1,
        lambda m: replace(m, table=m.table[1:]),
        nth=3,
    )
    assert report.problems[0].game == TAMPERED_GAME and report.problems[0].field.startswith("play by seat ")


@pytest.mark.parametrize("seat", [0, 1])
def test_an_announced_score_that_is_not_the_replays_is_named(honest_match, seat):
    def inflate(end: GameEnd) -> GameEnd:
        scores = list(end.scores)
        scores[seat] = replace(scores[seat], total=scores[seat].total + 10)
        return replace(end, scores=tuple(scores))

    report = tampered(honest_match, in_game(GameEnd), inflate)
    first = report.problems[0]
    assert (first.game, first.field) == (TAMPERED_GAME, f"score of seat {seat}")
    assert "'total': " in first.expected and first.expected != first.found


def test_announced_match_totals_that_are_not_the_replays_are_named(honest_match):
    report = tampered(honest_match, in_game(GameEnd), lambda m: replace(m, totals=(m.totals[0] + 1, m.totals[1])))
    assert (report.problems[0].game, report.problems[0].field) == (TAMPERED_GAME, "match totals")


def test_a_failed_game_makes_every_later_game_unverifiable(honest_match):
    report = tampered(honest_match, in_game(GameEnd), lambda m: replace(m, totals=(m.totals[0] + 1, m.totals[1])))
    later = [c for c in report.checks if c.game > TAMPERED_GAME]
    assert later and all(c.discrepancies[0].field == "replay" for c in later)
    assert all(c.ok for c in report.checks if c.game < TAMPERED_GAME)


@pytest.mark.parametrize(
    "change",
    [
        lambda m: replace(m, totals=(m.totals[0] + 10, m.totals[1])),
        lambda m: replace(m, winner=1 - m.winner),
    ],
    ids=["totals", "winner"],
)
def test_a_wrong_match_result_is_named(honest_match, change):
    report = tampered(honest_match, lambda m: isinstance(m, MatchEnd), change)
    assert report.problems == [report.problems[0]]
    assert (report.problems[0].game, report.problems[0].field) == (None, "match result")


def test_a_bad_signature_alone_is_named(honest_match):
    report = tampered(honest_match, in_game(Commit), lambda m: replace(m, signature=bytes(64)))
    assert [(p.game, p.field) for p in report.problems] == [(TAMPERED_GAME, "commit signature")] + [
        (g, "replay") for g in range(TAMPERED_GAME + 1, len(report.checks) + 1)
    ]


def test_a_transcript_without_a_welcome_names_the_handshake(honest_match):
    parsed = honest(honest_match)
    parsed.records = [(s, m) for s, m in parsed.records if not isinstance(m, Welcome)]
    report = transcript.verify(parsed)
    assert report.problems[0] == Discrepancy(None, "handshake", "a welcome from the host", "none")


def test_a_transcript_without_the_hello_cannot_check_any_game(honest_match):
    parsed = honest(honest_match)
    parsed.records = [(s, m) for s, m in parsed.records if not isinstance(m, Hello)]
    report = transcript.verify(parsed)
    assert report.problems[0].field == "handshake" and report.problems[0].game == 1


# --- a host that walks away ------------------------------------------------------------------------


def cut_after(match, predicate) -> transcript.Transcript:
    parsed = honest(match)
    parsed.records = parsed.records[: index_of(parsed, predicate) + 1]
    return parsed


@pytest.mark.parametrize(
    "last_kept",
    [in_game(Seed), in_game(Deal, hand_no=4), in_game(GameEnd)],
    ids=["after-the-seed", "mid-game", "after-game-end"],
)
def test_a_transcript_cut_after_the_seed_and_before_the_reveal_reports_an_unchecked_deal(honest_match, last_kept):
    report = transcript.verify(cut_after(honest_match, last_kept))
    assert [c.game for c in report.checks] == list(range(1, TAMPERED_GAME))
    assert len(report.problems) == 1
    problem = report.problems[0]
    assert (problem.game, problem.field) == (TAMPERED_GAME, "reveal")
    # Nothing on record says who ended it: the message blames no one.
    assert "the record stops after the seed exchange" in str(problem) and "abandoned" not in str(problem)


def parsed_totals(parsed: transcript.Transcript) -> tuple[int, int]:
    ends = [m for _, m in parsed.records if isinstance(m, GameEnd)]
    return ends[-1].totals if ends else (0, 0)


def test_a_match_end_with_a_fixed_deal_unrevealed_is_the_host_abandoning_it(honest_match):
    parsed = cut_after(honest_match, in_game(Deal, hand_no=2))
    parsed.records.append(("host", MatchEnd(winner=1, totals=parsed_totals(parsed), reason="abandoned")))
    (problem,) = transcript.verify(parsed).problems
    assert problem.game == TAMPERED_GAME and "the host left the match after this seat's seed went out, without revealing it" in str(problem)
    parsed.records[-1] = ("host", MatchEnd(winner=0, totals=parsed_totals(parsed), reason="target"))
    problem = next(p for p in transcript.verify(parsed).problems if p.field == "reveal")
    assert "the host ended the match without revealing it" in str(problem)


def test_a_match_ended_as_abandoned_by_the_guest_before_the_reveal_is_no_failure_of_the_host(honest_match):
    # The guest's seed went out and the connection dropped past the grace: the host may never have taken it.
    parsed = cut_after(honest_match, in_game(Seed))
    parsed.records.append(("host", MatchEnd(winner=0, totals=parsed_totals(parsed), reason="abandoned")))
    report = transcript.verify(parsed)
    assert report.ok, report.problems
    assert report.verifier.unchecked == [(TAMPERED_GAME, "the host ended the match as abandoned by the guest (away past the grace period, or gone) before any reveal")]


def test_the_hosts_leave_with_a_fixed_deal_unrevealed_is_the_host_abandoning_it(honest_match):
    parsed = cut_after(honest_match, in_game(Deal, hand_no=2))
    parsed.records.append(("host", Leave("gone")))
    (problem,) = transcript.verify(parsed).problems
    assert "the host left the match without revealing it" in str(problem)


def test_the_guests_own_leave_before_the_reveal_is_no_failure_of_the_host(honest_match, basra_command, tmp_path):
    parsed = cut_after(honest_match, in_game(Deal, hand_no=2))
    parsed.records.append(("guest", Leave("the player left (Ctrl-C)")))
    report = transcript.verify(parsed)
    assert report.ok and [game for game, _ in report.verifier.unchecked] == [TAMPERED_GAME]
    path = tmp_path / "left.basra"
    path.write_bytes(encode(parsed))
    result = run_verify(basra_command, path)
    assert result.returncode == 0, result.stdout
    assert f"game {TAMPERED_GAME}: not checked: the guest left the match before the host revealed its seed" in result.stdout
    assert "the transcript ends before the match did" in result.stdout and "abandon" not in result.stdout


def test_a_transcript_cut_between_games_holds_no_abandoned_deal(honest_match):
    # Committed but no seed yet: the deck was not fixed, so nothing was abandoned.
    report = transcript.verify(cut_after(honest_match, in_game(Commit)))
    assert report.ok
    assert report.verifier.match_end is None


# --- `basra verify` -------------------------------------------------------------------------------


def run_verify(basra_command, *args) -> subprocess.CompletedProcess:
    return subprocess.run([*basra_command, "verify", *map(str, args)], capture_output=True, text=True, timeout=60)


def write_tampered(tmp_path: Path, match, predicate, change) -> Path:
    parsed = honest(match)
    i = index_of(parsed, predicate)
    parsed.records[i] = (parsed.records[i][0], change(parsed.records[i][1]))
    path = tmp_path / "tampered.basra"
    path.write_bytes(encode(parsed))
    return path


def test_basra_verify_exits_0_on_an_honest_transcript_and_prints_the_intermediate_values(honest_match, basra_command):
    result = run_verify(basra_command, "--verbose", honest_match.guest_transcript)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "checks out" in result.stdout
    parsed = honest(honest_match)
    reveals = [m for _, m in parsed.records if isinstance(m, Reveal)]
    for reveal in reveals:
        commit = next(m for _, m in parsed.records if isinstance(m, Commit) and m.game == reveal.game)
        seed = next(m for _, m in parsed.records if isinstance(m, Seed) and m.game == reveal.game)
        key = shuffle.deck_key(honest_match.match_id, reveal.game, reveal.seed, seed.seed)
        deck = [card_name(c) for c in shuffle.shuffled_deck(honest_match.match_id, reveal.game, reveal.seed, seed.seed)]
        assert f"game {reveal.game}: deal and plays check out; host signature valid, guest signature valid" in result.stdout
        assert f"commitment  {commit.commitment.hex()}" in result.stdout
        assert f"deck key    {key.hex()}" in result.stdout
        assert f"deck[ 0:13] {' '.join(deck[:13])}" in result.stdout
        assert f"deck[39:52] {' '.join(deck[39:])}" in result.stdout


def test_basra_verify_without_verbose_prints_no_deck(honest_match, basra_command):
    result = run_verify(basra_command, honest_match.host_transcript)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "deck key" not in result.stdout and "commitment " not in result.stdout


def test_basra_verify_exits_1_and_names_a_wrong_score(honest_match, basra_command, tmp_path):
    def inflate(end: GameEnd) -> GameEnd:
        return replace(end, scores=(replace(end.scores[0], total=end.scores[0].total + 10), end.scores[1]))

    path = write_tampered(tmp_path, honest_match, in_game(GameEnd), inflate)
    result = run_verify(basra_command, path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"FAILED: game {TAMPERED_GAME}: score of seat 0: expected" in result.stdout
    assert f"game {TAMPERED_GAME}: FAILED" in result.stdout and "game 1: verified" in result.stdout


def test_basra_verify_exits_1_and_names_a_deal_left_unrevealed(honest_match, basra_command, tmp_path):
    path = tmp_path / "cut.basra"
    path.write_bytes(encode(cut_after(honest_match, in_game(Deal, hand_no=2))))
    result = run_verify(basra_command, path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"FAILED: game {TAMPERED_GAME}: reveal" in result.stdout
    assert "cannot be checked" in result.stdout


@pytest.mark.parametrize(
    "content",
    [b"garbage, not a transcript", None, "truncated"],
    ids=["garbage", "missing-file", "truncated"],
)
def test_basra_verify_exits_2_when_the_file_is_not_a_transcript(honest_match, basra_command, tmp_path, content):
    path = tmp_path / "input.basra"
    if content == "truncated":
        path.write_bytes(honest_match.host_transcript.read_bytes()[:-5])
    elif content is not None:
        path.write_bytes(content)
    result = run_verify(basra_command, path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert str(path) in result.stdout
    assert "FAILED" not in result.stdout


def test_parse_refuses_what_basra_verify_calls_unreadable(honest_match):
    with pytest.raises(TranscriptError):
        transcript.parse(honest_match.host_transcript.read_bytes()[:-5])

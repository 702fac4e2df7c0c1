"""What a format-2 transcript proves, and what it does not (PROTOCOL.md, section 14.11).

The deals, plays and scores are replayed as for format 1 (verify.py); the
signed record (record.py) is replayed from the recorded frame bodies.  Each
thing the replay finds wrong is then weighed by what covers it:

- under a valid host signature of its game (whose channel context names the
  scoring and target the replay uses), or of the result, and resting on what
  the host's stream alone holds (a step of the other seat's party it relayed
  included), it is the host's signed word against the rules: a proven cheat
  of the host;
- a step of the hidden deal that fails its check under its party's own
  valid signature (15.17), that party's: a proven cheat of that seat, the
  channel's guest included;
- resting on what the channel's guest says and no one signs (its
  `hidden_play`, a step the record shows it owing, a step whose signature
  runs over the guest's own steps and fails), or under no valid host
  signature, it proves nothing about anyone: the record is not proven.  A
  verdict of cheating never rests on a signature of the accuser alone.

Notes and the header's role are the writer's claims and change nothing here.
An abandonment is the host's assertion, shown with its signed account; it is
disputed when that account contradicts itself (the host's signed word, so a
proven cheat) or when the seat's own records contradict it (the seat's word).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from .termination import Termination
from .messages import Deal, Hello, Leave, MatchStart
from .record import AbsenceAccount, ChannelContext, ChannelRecord, RecordError, Status, account_contradictions
from .transcript import Transcript, VerifyReport
from .transcript import verify as verify_deals
from .hidden_verify import ABANDONED_DEAL
from .verify import GUEST, HOST, Discrepancy, GameCheck

# How the reference client begins the note of an abandonment it disputes (its word: shown, never weighed).
DISPUTED_ABANDONMENT = "disputed abandonment"

# Discrepancies that are a broken signature: never the host's signed word, so never a proven cheat.
_SIGNATURE_FIELDS = frozenset({"commit signature", "reveal signature"})


class Verdict(enum.Enum):
    PROVEN = "proven"
    NOT_PROVEN = "not proven"
    CHEAT = "cheat proven"


@dataclass(frozen=True)
class SignedGameView:
    """One game as the record shows it: its deal check and who signed its checkpoint (None: no checkpoint recorded)."""

    game: int
    check: GameCheck | None
    host: Status | None
    guest: Status | None


@dataclass
class SignedReport:
    deals: VerifyReport
    context: ChannelContext | None
    channel: ChannelRecord | None
    verdict: Verdict
    reason: str | None  # the cheat, or the first thing that is not proven
    partial: bool = False
    cut_short: bool = False
    games: list[SignedGameView] = field(default_factory=list)
    holds: list[str] = field(default_factory=list)  # what the record proves, in plain words
    account: AbsenceAccount | None = None
    dispute: str | None = None  # why the abandonment is disputed, if it is
    disputed_in_notes: list[str] = field(default_factory=list)  # the writer's notes that dispute it (unsigned)
    also: list[str] = field(default_factory=list)  # every other thing found wrong, after the reason

    @property
    def proven_both(self) -> bool:
        """Every signature of both players present and valid."""
        return self.channel is not None and _every_signature_valid(self.channel)


def _every_signature_valid(channel: ChannelRecord) -> bool:
    signed = [*channel.games, *([channel.result] if channel.result is not None else [])]
    return channel.result is not None and all(s.host is Status.VALID and s.guest is Status.VALID for s in signed)


def verify_signed(parsed: Transcript, *, partial: bool = False) -> SignedReport:
    """Check a format-2 transcript as section 14.11 says; with partial, a record cut short reports what holds up to the cut."""
    deals = verify_deals(parsed)
    welcome = deals.verifier.welcome
    hello = next((m for sender, m in parsed.records if sender == GUEST and isinstance(m, Hello)), None)
    if welcome is None or hello is None or hello.key is None:
        return SignedReport(deals, None, None, Verdict.NOT_PROVEN, "the record holds no hello with the guest's key and no welcome: no signature in it can be checked")
    try:
        context = ChannelContext(welcome.match_id, welcome.host_key, hello.key, welcome.seat, hello.nonce, welcome.scoring, welcome.target)
    except RecordError as err:
        return SignedReport(deals, None, None, Verdict.NOT_PROVEN, str(err))
    channel = ChannelRecord(context)
    broken: RecordError | None = None
    cut_short = False
    try:
        channel.replay(parsed.bodies)
        channel.finish()
    except RecordError as err:
        cut_short = err.what == "cut short"
        broken = None if cut_short else err
    report = SignedReport(deals, context, channel, Verdict.PROVEN, None, partial=partial, cut_short=cut_short)
    checks = {check.game: check for check in deals.checks}
    signed = {g.link.game: g for g in channel.games}
    for game in sorted(checks.keys() | signed.keys()):
        record = signed.get(game)
        report.games.append(SignedGameView(game, checks.get(game), record and record.host, record and record.guest))
    result_signed = channel.result is not None and channel.result.host is Status.VALID
    if channel.result is not None:
        report.account = channel.result.account

    cheats: list[str] = []
    unproven: list[str] = []
    dealt = {m.game for sender, m in parsed.records if sender == HOST and isinstance(m, Deal)}
    for problem in deals.problems:
        record = signed.get(problem.game) if problem.game is not None else None
        covered = record.host is Status.VALID if record is not None else result_signed
        plain = str(replace(problem, culprit=None))
        if problem.field in _SIGNATURE_FIELDS:
            unproven.append(str(problem))
        elif problem.field == ABANDONED_DEAL:
            # Withholding is the host's signed word (14.6) over a step the record shows owed: an abandonment the host
            # asserts, shown with its account, never a cheat, since the seat it names signed nothing of it.
            if report.account is None:
                unproven.append(f"{plain} (the host's word, in an account of the absence that is not validly signed: this names no one)")
        elif problem.field == "reveal" and problem.game not in dealt:
            # The guest's seed is signed only at the game's checkpoint: with no deal, nothing signed shows that it arrived.
            unproven.append(str(problem))
        elif problem.signed_by is not None and _signer_known(problem.signed_by, covered, context, parsed):
            # Under its party's own valid signature of the step, over every step it could read (15.17).
            relayed = "" if problem.signed_by == context.guest_seat else " (the host relayed it, where an honest host refuses it: 15.15)"
            cheats.append(f"seat {problem.signed_by} signed it: {plain}{relayed}")
        elif not covered:
            if not (partial and cut_short):
                unproven.append(f"{plain} (under no valid host signature: this names no one)")
        elif problem.signed_by is not None:
            unproven.append(f"{plain} (this names no one: match_start names another key for seat {problem.signed_by} than its hello's)")
        elif problem.unsigned is not None or problem.culprit == f"seat {context.guest_seat}":
            why = problem.unsigned or f"it rests on seat {context.guest_seat}'s own steps of the deal, which no signature covers"
            unproven.append(f"{plain} (this names no one: {why})")
        else:  # the host's signed stream alone shows it: the host's word, the host's cheat (a relayed step included)
            cheats.append(f"the host signed it: {plain}{_relayed(problem, context)}")
    if report.account is not None:
        contradictions = account_contradictions(report.account)
        if contradictions:
            report.dispute = f"the host's signed account contradicts itself: {contradictions[0]}"
            cheats.append(report.dispute)
        else:
            report.dispute = _disputed_by_the_record(parsed, context, channel, report.account, deals.problems)
        report.disputed_in_notes = [note.text for note in parsed.notes if DISPUTED_ABANDONMENT in note.text]
    missing = _missing_countersignatures(channel, cut_at_the_end=partial and cut_short)

    if cheats:
        report.verdict, report.reason = Verdict.CHEAT, cheats[0]
    elif broken is not None:
        report.verdict, report.reason = Verdict.NOT_PROVEN, str(broken)
    elif cut_short and not partial:
        report.verdict, report.reason = Verdict.NOT_PROVEN, (
            f"the record is cut short: it ends {_where_it_ends(channel)} (--partial shows what holds up to there)"
        )
    elif unproven:
        report.verdict, report.reason = Verdict.NOT_PROVEN, unproven[0]
    elif missing and not partial:
        report.verdict, report.reason = Verdict.NOT_PROVEN, f"not signed by both players: the guest did not countersign {missing[0]}"
    elif report.dispute is not None:
        report.verdict, report.reason = Verdict.NOT_PROVEN, f"the abandonment is disputed: {report.dispute}"
    report.also = [problem for problem in [*cheats, *unproven] if problem != report.reason]
    report.holds = _what_holds(report, missing)
    return report


def _signer_known(seat: int, covered: bool, context: ChannelContext, parsed: Transcript) -> bool:
    """Whether the key under which seat's steps verify is that seat's: the channel's guest's is the key of its own
    hello, whatever the host signed; the other seat's is the host's word in `match_start`, under a valid host signature."""
    if seat != context.guest_seat:
        return covered
    start = next((m for sender, m in parsed.records if sender == HOST and isinstance(m, MatchStart)), None)
    return start is not None and start.keys is not None and start.keys[seat] == context.guest_key


def _relayed(problem: Discrepancy, context: ChannelContext) -> str:
    """Whose step a proven finding is, when the host relayed it from the other seat's party (15.16)."""
    other = f"seat {1 - context.guest_seat}"
    return f" (a step of {other} that the host relayed, where an honest host refuses it: 15.15)" if problem.culprit == other else ""


def _where_it_ends(channel: ChannelRecord) -> str:
    signed = [g.link.game for g in channel.games if g.host is Status.VALID]
    after = f"after the host's signature of game {signed[-1]}" if signed else "before the host signed any game"
    return f"{after}, {'before the match ended' if channel.result is None else 'before the host signed the result'}"


def _missing_countersignatures(channel: ChannelRecord, *, cut_at_the_end: bool) -> list[str]:
    """What the host signed and the guest did not; with a cut at the end, the last such may have been cut off.

    Without --partial a missing countersignature fails the record: else a host
    could re-play the guest's plays, sign them and leave the guest's out.
    """
    owed = [(f"game {g.link.game}", g) for g in channel.games if g.host is Status.VALID]
    if channel.result is not None and channel.result.host is Status.VALID:
        owed.append(("the result", channel.result))
    missing = [what for what, signed in owed if signed.guest is Status.MISSING]
    if cut_at_the_end and missing and owed and missing[-1] == owed[-1][0]:
        missing.pop()
    return missing


def _disputed_by_the_record(
    parsed: Transcript, context: ChannelContext, channel: ChannelRecord, account: AbsenceAccount, problems: list[Discrepancy]
) -> str | None:
    """What the seat's own records (which it does not sign) say against the host's account, or None.

    Away past the grace period is not judged here: whether the `match_end`
    came live or in a resume's replay is known to the seat alone, since a
    resume's welcome is not recorded (section 11.3).
    """
    if account.absent_seat != context.guest_seat:
        return None
    ending = account.events[-1].kind
    if ending == Termination.LEFT and not any(sender == GUEST and isinstance(m, Leave) for sender, m in parsed.records):
        return f"the host says seat {account.absent_seat} left, and the record holds no leave from it (the seat's word)"
    if ending == Termination.UNSIGNED and channel.games and all(g.guest is Status.VALID for g in channel.games):
        return f"the host says seat {account.absent_seat} did not countersign, and the record holds its every countersignature (the seat's word)"
    withheld = f"seat {account.absent_seat} withheld"
    if ending == Termination.WITHHELD and not any(p.field == ABANDONED_DEAL and withheld in p.found for p in problems):
        return f"the host says seat {account.absent_seat} withheld a step of the deal, and the record holds every step it owed (the seat's word)"
    if ending == Termination.BAD_DEAL and not any(p.culprit == f"seat {account.absent_seat}" for p in problems):
        return f"the host says a step of the deal seat {account.absent_seat} sent failed its check, and every step in its record passes (the seat's word)"
    return None


def _what_holds(report: SignedReport, missing: list[str]) -> list[str]:
    """The plain-words summary of what the record proves (only when nothing in it is wrong)."""
    if report.verdict is not Verdict.PROVEN or report.channel is None or report.context is None:
        return []
    channel = report.channel
    signed_games = [g for g in report.games if g.host is Status.VALID]
    holds = []
    if report.deals.verifier.hidden and signed_games:
        holds.append("no one saw a card before its time: every unmasking and reveal is proven, and both locked decks hold the 52 cards")
    elif report.context.fair_deal and signed_games:
        holds.append("the host committed to its seed before the guest's seed was sent")
        holds.append("each deck follows from both seeds")
    if signed_games and report.deals.verifier.replays_the_match:
        holds.append("every play was legal, every score right")
    elif signed_games:
        holds.append("the plays and scores are not checked: this seat's channel shows no deal to replay them from")
    if report.proven_both:
        holds.append("both players signed this record")
    else:
        both = [f"game {g.game}" for g in signed_games if g.guest is Status.VALID]
        if channel.result is not None and channel.result.guest is Status.VALID:
            both.append("the result")
        if both:
            holds.append(f"both players signed {_listed(both)}")
        if missing:
            holds.append(f"the host alone signed {_listed(missing)}")
    if report.account is not None:
        holds.append(f"the host asserts that seat {report.account.absent_seat} abandoned the match: a transcript cannot prove that")
    if report.cut_short:
        holds.append(f"nothing after the cut is proven: the record ends {_where_it_ends(channel)}")
    return holds


def _listed(things: list[str]) -> str:
    return things[0] if len(things) == 1 else f"{', '.join(things[:-1])} and {things[-1]}"

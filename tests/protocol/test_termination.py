"""How a match ended, read from its `match_end`: the reason, and an abandonment's account (PROTOCOL.md 6.14, 14.6)."""

import pytest

from basra_net.protocol.messages import ABSENCE_KINDS, AbsenceEvidence, MatchEnd
from basra_net.protocol.termination import ACCOUNT_ENDINGS, MATCH_END_REASONS, Termination


def _abandoned(*kinds: str) -> MatchEnd:
    events = tuple((kind, 1000 * i, i) for i, kind in enumerate(kinds))
    return MatchEnd(winner=0, totals=(10, 3), reason="abandoned", evidence=AbsenceEvidence(120, events, bytes(64)))


def test_a_match_played_to_its_target():
    end = MatchEnd(winner=1, totals=(40, 101), reason="target")
    assert end.termination is Termination.TARGET and not end.termination.abandoned
    assert end.termination.reason == "target"


@pytest.mark.parametrize("kind", sorted(ACCOUNT_ENDINGS))
def test_an_abandonment_is_named_by_the_last_event_of_the_hosts_account(kind):
    end = _abandoned("away", "back", kind)
    assert end.termination is Termination(kind) and end.termination.abandoned
    assert end.termination.reason == "abandoned" == end.reason


def test_an_abandonment_without_an_account_or_ended_by_no_ending_event_says_nothing_of_how():
    assert MatchEnd(winner=0, totals=(0, 0), reason="abandoned").termination is Termination.ABANDONED
    for kind in ("away", "resume", "back", "restart"):
        assert _abandoned(kind).termination is Termination.ABANDONED, kind


def test_the_wire_words_are_the_specs():
    assert MATCH_END_REASONS == ("target", "abandoned")
    assert ACCOUNT_ENDINGS == {"left", "grace_over", "unsigned", "withheld", "bad_deal"}
    assert ACCOUNT_ENDINGS < set(ABSENCE_KINDS)
    assert {t.reason for t in Termination} == set(MATCH_END_REASONS)

"""How a match ends: one name for each way, read from the two places the wire says it.

`match_end` carries a `reason` (PROTOCOL.md 6.14): the target was reached,
or the match was abandoned.  An abandonment on a signed channel also carries
the host's account of the absence, whose last event says how the seat
abandoned (14.6): it left, its grace period ran out, it did not countersign,
it withheld a step of the hidden deal, or a step it sent failed a check.
`Termination` is the two read together, so the host ends a match with one,
the client keeps one, and the verifier, the log and the screens each put it
into words in one table of their own.

A member's value is the wire's own word: the reason for `TARGET` and
`ABANDONED` (an abandonment whose account does not say how, as in version
1), the account's last event for the others.  The members are strings, so a
field read off the wire compares equal to them as it is.
"""

from __future__ import annotations

from enum import StrEnum


class Termination(StrEnum):
    TARGET = "target"  # after a game, a seat had reached the target and more than the other (RULES.md, rule 11)
    ABANDONED = "abandoned"  # abandoned, with no account of how (version 1, or a host that sent none)
    LEFT = "left"  # the seat sent `leave`
    GRACE_OVER = "grace_over"  # the seat lost its connection and did not resume within the grace period
    UNSIGNED = "unsigned"  # a countersignature the seat owed did not come in time (14.8)
    WITHHELD = "withheld"  # a step of the hidden deal the seat owed did not come in time (15.15)
    BAD_DEAL = "bad_deal"  # a step of the hidden deal the seat sent failed a check (15.11)

    @property
    def reason(self) -> Termination:
        """The `reason` of the `match_end` that ends a match this way: TARGET or ABANDONED."""
        return self if self is Termination.TARGET else Termination.ABANDONED

    @property
    def abandoned(self) -> bool:
        return self is not Termination.TARGET


# The events that end the host's account of an absence (14.6), as the wire names them.
ACCOUNT_ENDINGS = frozenset(
    {Termination.LEFT, Termination.GRACE_OVER, Termination.UNSIGNED, Termination.WITHHELD, Termination.BAD_DEAL}
)
MATCH_END_REASONS = (Termination.TARGET.value, Termination.ABANDONED.value)  # match_end's `reason` on the wire (6.14)


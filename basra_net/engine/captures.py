"""Which table cards one played card captures (rules 3-7 of RULES.md).

The expensive part is rule 3: a numeral takes the largest set of table
numerals that splits into disjoint groups each summing to its value.  That
maximum depends only on how many table cards there are of each value, so it
is solved once per (value, value-counts) and cached; the cached answer is a
list of "how many of each value to take" vectors, which are then expanded
into the concrete card sets the player may choose between.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations, product

from .cards import JACK, SEVEN_OF_DIAMONDS, Card, rank

# Kinds of play, as reported in events and on the wire.
DROP = "drop"  # nothing captured; the card stays on the table
CAPTURE = "capture"
SWEEP = "sweep"  # the whole table taken, but not a basra
BASRA = "basra"
JACK_BASRA = "jack_basra"


def _partitions(total: int, largest: int) -> list[tuple[int, ...]]:
    """Partitions of total into parts <= largest, as non-increasing tuples."""
    if total == 0:
        return [()]
    return [
        (part, *rest)
        for part in range(min(total, largest), 0, -1)
        for rest in _partitions(total - part, part)
    ]


def _as_counts(parts: tuple[int, ...]) -> tuple[int, ...]:
    counts = [0] * 11
    for p in parts:
        counts[p] += 1
    return tuple(counts)


# For each value 1..10: every way to make a group summing to it, as a
# count-per-value vector indexed 0..10 (index 0 unused).
_GROUPS = {v: [_as_counts(p) for p in _partitions(v, v)] for v in range(1, 11)}


# The search packs a count vector into one int, _FIELD bits per value, so that
# adding a group is one addition, and "no more of any value than the table
# holds" one subtraction and one mask: with the top bit of each field set
# (_TOP_BITS) and at most 7 of a value (a deck has 4), _TOP_BITS + held - used
# never borrows across fields and keeps each field's top bit exactly when
# used <= held there.
_FIELD = 5
_MASK = (1 << _FIELD) - 1
_TOP_BITS = sum(1 << (_FIELD * v + _FIELD - 1) for v in range(11))


def _packed(counts: tuple[int, ...]) -> int:
    return sum(n << (_FIELD * v) for v, n in enumerate(counts))


def _unpacked(packed: int) -> tuple[int, ...]:
    return tuple((packed >> (_FIELD * v)) & _MASK for v in range(11))


@lru_cache(maxsize=1 << 16)
def best_takes(total: int, counts: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """All count vectors of largest size that split into groups summing to total.

    counts[v] is how many table numerals of value v there are, for v from 1
    to total (index 0 unused): no larger value can be in a group, so callers
    leave them out and the cache holds one entry for all tables that differ
    only there.  Returns ((0,)*11,) when nothing can be taken.
    """
    held = _packed(counts)
    room = held + _TOP_BITS
    # Each group that fits the table once, with its size.
    groups = [(packed, size) for packed, size in _PACKED_GROUPS[total] if (room - packed) & _TOP_BITS == _TOP_BITS]
    sizes = {0: 0}  # every reachable used vector, packed, with its size
    frontier = [0]
    while frontier:
        next_frontier = []
        for used in frontier:
            used_size = sizes[used]
            for group, size in groups:
                combined = used + group
                if combined not in sizes and (room - combined) & _TOP_BITS == _TOP_BITS:
                    sizes[combined] = used_size + size
                    next_frontier.append(combined)
        frontier = next_frontier
    best = max(sizes.values())
    if best == 0:
        return (_NOTHING,)
    return tuple(sorted(_unpacked(used) for used, size in sizes.items() if size == best))


_NOTHING = (0,) * 11
_PACKED_GROUPS = {v: [(_packed(g), sum(g)) for g in groups] for v, groups in _GROUPS.items()}


class NumeralGroups:
    """The table's numerals counted by value, built once per table state.

    Takes the table sorted, so that every capture comes out sorted.  The
    cards of each value are sorted out only when a capture is found: most
    numerals played take nothing, which the counts alone show.
    """

    __slots__ = ("_table", "counts", "_by_value")

    def __init__(self, table: tuple[Card, ...]) -> None:
        counts = [0] * 11
        for card in table:
            r = card % 13
            if r < 10:
                counts[r + 1] += 1
        self._table = table
        self.counts = counts
        self._by_value: list[list[Card]] | None = None

    def captures(self, value: int) -> list[tuple[Card, ...]]:
        """Every distinct largest capture for a numeral of this value (rule 3).

        Each capture is a sorted tuple of cards; [()] when nothing is taken.
        """
        takes = best_takes(value, tuple(self.counts[: value + 1]))
        if takes[0] is _NOTHING:
            return [()]
        by_value = self._by_value
        if by_value is None:
            by_value = self._by_value = [[] for _ in range(11)]
            for card in self._table:
                r = card % 13
                if r < 10:
                    by_value[r + 1].append(card)
        captures = []
        for take in takes:
            choices = [combinations(by_value[v], take[v]) for v in range(1, value + 1) if take[v]]
            for picked in product(*choices):
                captures.append(tuple(sorted(c for group in picked for c in group)))
        return captures


def numeral_captures(value: int, table: tuple[Card, ...]) -> list[tuple[Card, ...]]:
    """Every distinct largest capture for a numeral of this value on this table."""
    return NumeralGroups(tuple(sorted(table))).captures(value)


def whole_table_as_some_rank(table: tuple[Card, ...]) -> str | None:
    """Rule 6: the kind of the basra the 7 of diamonds scores on this table, or None.

    The 7D counts as a basra when, played as some rank, it would take the
    whole (non-empty) table under rules 3-5.
    """
    ranks = [rank(c) for c in table]
    if len(table) == 1 and ranks[0] == JACK:
        return JACK_BASRA
    if all(r == ranks[0] for r in ranks) and ranks[0] > JACK:
        return BASRA  # all Queens or all Kings
    if all(r <= 10 for r in ranks):
        total = sum(ranks)
        counts = _as_counts(tuple(ranks))
        for v in range(1, 11):
            # A quick necessary condition before the search: the values must
            # add up to a whole number of groups of v.
            if total % v == 0 and sum(best_takes(v, counts[: v + 1])[0]) == len(table):
                return BASRA
    return None


def is_lone_seven_of_diamonds(table: tuple[Card, ...]) -> bool:
    return len(table) == 1 and table[0] == SEVEN_OF_DIAMONDS

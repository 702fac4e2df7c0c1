"""The fast capture enumeration against a brute-force one written from the rule alone.

Rule 3: a numeral of value v takes the largest set of table numerals that
splits into disjoint groups each summing to v (a card of rank v is a group of
one).  The brute force tries every subset of the table's numerals, biggest
first, and checks each by searching for such a split; it shares nothing with
the engine's count-vector method.
"""

from __future__ import annotations

import random
from itertools import combinations

from basra_net.engine import BASRA, JACK_BASRA, SEVEN_OF_DIAMONDS
from basra_net.engine.captures import numeral_captures, whole_table_as_some_rank
from basra_net.engine.cards import card_name, rank

TABLES = 3_000
SEED = 20_260_601
# Small values come up far more often, so that sums and ties are common.
VALUE_WEIGHTS = {1: 9, 2: 9, 3: 8, 4: 7, 5: 6, 6: 4, 7: 3, 8: 2, 9: 2, 10: 2, 11: 1, 12: 1, 13: 1}


def splits_into_groups(values: list[int], target: int) -> bool:
    """Whether these values split into disjoint groups each summing to target."""
    if not values:
        return True
    first, rest = values[0], values[1:]
    # The first value belongs to some group: try every choice of its partners.
    for size in range(len(rest) + 1):
        for partners in combinations(range(len(rest)), size):
            if first + sum(rest[i] for i in partners) == target:
                chosen = set(partners)
                if splits_into_groups([v for i, v in enumerate(rest) if i not in chosen], target):
                    return True
    return False


def brute_force_captures(value: int, table: list[int]) -> set[frozenset[int]]:
    numerals = [c for c in table if rank(c) <= 10]
    for size in range(len(numerals), 0, -1):
        found = {
            frozenset(subset)
            for subset in combinations(numerals, size)
            if sum(map(rank, subset)) % value == 0 and splits_into_groups([rank(c) for c in subset], value)
        }
        if found:
            return found
    return {frozenset()}


def random_table(rng: random.Random, exclude: set[int]) -> list[int]:
    """Distinct cards with values drawn from VALUE_WEIGHTS, table size 0..10."""
    ranks, weights = zip(*VALUE_WEIGHTS.items())
    table: list[int] = []
    size = rng.randint(0, 10)
    while len(table) < size:
        card = rng.randrange(4) * 13 + rng.choices(ranks, weights)[0] - 1
        if card not in table and card not in exclude:
            table.append(card)
    return table


def describe(table: list[int]) -> str:
    return " ".join(card_name(c) for c in table)


def test_numeral_captures_match_the_brute_force():
    rng = random.Random(SEED)
    sizes_seen, ties_seen = set(), 0
    for _ in range(TABLES):
        value = rng.choices(range(1, 11), [VALUE_WEIGHTS[v] for v in range(1, 11)])[0]
        table = random_table(rng, exclude=set())
        fast = numeral_captures(value, tuple(table))
        assert len(set(fast)) == len(fast), describe(table)
        assert all(list(take) == sorted(take) for take in fast)
        assert {frozenset(take) for take in fast} == brute_force_captures(value, table), (value, describe(table))
        sizes_seen.add(len(table))
        ties_seen += len(fast) > 1
    # The random tables really did exercise every size and many ties.
    assert sizes_seen == set(range(11))
    assert ties_seen > TABLES // 10


def brute_force_seven_of_diamonds(table: list[int]) -> str | None:
    """Rule 6: the basra the 7D scores on this table, trying every rank by brute force."""
    ranks = [rank(c) for c in table]
    if len(table) == 1 and ranks[0] == 11:
        return JACK_BASRA
    for queen_or_king in (12, 13):
        if all(r == queen_or_king for r in ranks):
            return BASRA
    for value in range(1, 11):
        if brute_force_captures(value, table) == {frozenset(table)}:
            return BASRA
    return None


def test_the_seven_of_diamonds_basra_matches_the_brute_force():
    rng = random.Random(SEED + 1)
    basras = 0
    for _ in range(TABLES // 3):
        table = random_table(rng, exclude={SEVEN_OF_DIAMONDS})[: rng.randint(1, 6)]
        if not table:
            continue
        expected = brute_force_seven_of_diamonds(table)
        assert whole_table_as_some_rank(tuple(sorted(table))) == expected, describe(table)
        basras += expected is not None
    assert basras > 50

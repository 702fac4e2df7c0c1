"""What one played card takes (rules 3-8 of RULES.md), table-driven, in both presets."""

from __future__ import annotations

import pytest

from basra_net.engine import BASRA, CAPTURE, DROP, JACK_BASRA, SWEEP, Move
from basra_net.engine.scoring import CLASSIC, EGYPTIAN

from .helpers import cards, make_game, names

# (label, preset, played card, table, every option offered as (captured cards, kind))
CASES = [
    # Rule 3: numerals.
    ("6 on A,2,3,4 takes A,2,3 and leaves the 4", EGYPTIAN, "6S", "AH 2H 3H 4H", [("AH 2H 3H", CAPTURE)]),
    ("5 on A,2,3,4 is a basra: A+4 and 2+3", EGYPTIAN, "5S", "AH 2H 3H 4H", [("AH 2H 3H 4H", BASRA)]),
    ("9 on 9,A,5,3 is a basra: same rank plus a sum", EGYPTIAN, "9S", "9H AH 5H 3H", [("AH 3H 5H 9H", BASRA)]),
    ("a numeral takes its own rank", EGYPTIAN, "4S", "4H 9H", [("4H", CAPTURE)]),
    ("a numeral takes every card of its rank", EGYPTIAN, "4S", "4H 4D 9H", [("4H 4D", CAPTURE)]),
    ("same rank and sums combine in one play", EGYPTIAN, "7S", "7H 3H 4H 9C", [("3H 4H 7H", CAPTURE)]),
    ("several sum groups in one play", EGYPTIAN, "10S", "AH 9H 4D 6D 5C 2C 3C KC",
     [("AH 9H 4D 6D 2C 3C 5C", CAPTURE)]),
    ("the most cards, not the first group found: A,3,3 beats A,6", EGYPTIAN, "7S", "6H AH 3H 3D",
     [("AH 3H 3D", CAPTURE)]),
    ("a tie between two largest captures offers both", EGYPTIAN, "8S", "AH 2H 3H 4H 5H",
     [("AH 3H 4H", CAPTURE), ("AH 2H 5H", CAPTURE)]),
    ("cards of the same value in different suits are different choices", EGYPTIAN, "6S", "4H 4D 2C",
     [("4H 2C", CAPTURE), ("4D 2C", CAPTURE)]),
    ("numerals ignore J, Q, K in sums", EGYPTIAN, "5S", "2H 3H JD QH KH", [("2H 3H", CAPTURE)]),
    ("a King does not count as zero in a sum", EGYPTIAN, "5S", "5H KH", [("5H", CAPTURE)]),
    ("a numeral that takes nothing stays", EGYPTIAN, "9S", "2H 3H", [("", DROP)]),
    ("a numeral on face cards only stays", EGYPTIAN, "5S", "QH KH", [("", DROP)]),
    ("the 7D among other cards is an ordinary 7 for sums", EGYPTIAN, "10S", "7D 3H", [("3H 7D", BASRA)]),
    ("the 7D among other cards is an ordinary 7 for its rank", EGYPTIAN, "7S", "7D 3H", [("7D", CAPTURE)]),
    # Rule 4: Queens and Kings.
    ("Q on Q,Q,5 takes both Queens", EGYPTIAN, "QS", "QH QD 5H", [("QH QD", CAPTURE)]),
    ("K on a table without Kings stays", EGYPTIAN, "KS", "5H QH", [("", DROP)]),
    ("a Queen never takes a sum", EGYPTIAN, "QS", "5H 7H", [("", DROP)]),
    ("K on a lone K is a basra", EGYPTIAN, "KS", "KH", [("KH", BASRA)]),
    ("Q on Queens only is a basra", EGYPTIAN, "QS", "QH QD QC", [("QH QD QC", BASRA)]),
    # Rule 5: Jacks.
    ("J on a lone J is a jack basra", EGYPTIAN, "JS", "JH", [("JH", JACK_BASRA)]),
    ("J on J,5 is a plain sweep", EGYPTIAN, "JS", "JH 5H", [("5H JH", SWEEP)]),
    ("J on Jacks only (not a lone Jack) is a plain sweep", EGYPTIAN, "JS", "JH JD", [("JH JD", SWEEP)]),
    ("J sweeps any table", EGYPTIAN, "JS", "5H 9D KC", [("5H 9D KC", SWEEP)]),
    ("J on one numeral is a plain sweep", EGYPTIAN, "JS", "5H", [("5H", SWEEP)]),
    # Rule 6: the 7 of diamonds played on a non-empty table.
    ("7D on 6,6 is a basra (as a 6)", EGYPTIAN, "7D", "6S 6H", [("6S 6H", BASRA)]),
    ("7D on A,2,7,8 is a basra (as a 9)", EGYPTIAN, "7D", "AS 2S 7S 8S", [("AS 2S 7S 8S", BASRA)]),
    ("7D on Q,Q is a basra (as a Queen)", EGYPTIAN, "7D", "QS QH", [("QS QH", BASRA)]),
    ("7D on a lone K is a basra (as a King)", EGYPTIAN, "7D", "KS", [("KS", BASRA)]),
    ("7D on 9,2 is a plain sweep", EGYPTIAN, "7D", "9S 2S", [("2S 9S", SWEEP)]),
    ("7D on Q,3 is a plain sweep", EGYPTIAN, "7D", "QS 3S", [("3S QS", SWEEP)]),
    ("7D on Q,K is a plain sweep", EGYPTIAN, "7D", "QS KS", [("QS KS", SWEEP)]),
    ("7D on a lone J is a jack basra (as a Jack)", EGYPTIAN, "7D", "JS", [("JS", JACK_BASRA)]),
    ("7D on J,J is a plain sweep: only a lone Jack counts", EGYPTIAN, "7D", "JS JH", [("JS JH", SWEEP)]),
    ("7D on J,5 is a plain sweep", EGYPTIAN, "7D", "JS 5H", [("JS 5H", SWEEP)]),
    ("7D on numerals that no single rank takes whole is a plain sweep", EGYPTIAN, "7D", "6S 5S 3H",
     [("3H 5S 6S", SWEEP)]),
    # Rule 7: empty tables and the lone 7D.
    ("J on an empty table stays", EGYPTIAN, "JS", "", [("", DROP)]),
    ("7D on an empty table stays", EGYPTIAN, "7D", "", [("", DROP)]),
    ("a numeral on an empty table stays", EGYPTIAN, "5S", "", [("", DROP)]),
    ("a Queen on an empty table stays", EGYPTIAN, "QS", "", [("", DROP)]),
    ("J on a lone 7D is a jack basra", EGYPTIAN, "JS", "7D", [("7D", JACK_BASRA)]),
    # Classic preset: Jacks never make basras; the 7D only on numerals totalling 10 or less.
    ("classic: J on a lone J is a plain sweep", CLASSIC, "JS", "JH", [("JH", SWEEP)]),
    ("classic: J on a lone 7D is a plain sweep", CLASSIC, "JS", "7D", [("7D", SWEEP)]),
    ("classic: 7D on a lone J is a plain sweep", CLASSIC, "7D", "JS", [("JS", SWEEP)]),
    ("classic: 7D on A,2,7 (total 10) is a basra", CLASSIC, "7D", "AS 2S 7S", [("AS 2S 7S", BASRA)]),
    ("classic: 7D on 5,5 (total 10) is a basra", CLASSIC, "7D", "5S 5H", [("5S 5H", BASRA)]),
    ("classic: 7D on a lone 10 is a basra", CLASSIC, "7D", "10S", [("10S", BASRA)]),
    ("classic: 7D on 6,6 (total 12) is a plain sweep", CLASSIC, "7D", "6S 6H", [("6S 6H", SWEEP)]),
    ("classic: 7D on A,2,7,8 (total 18) is a plain sweep", CLASSIC, "7D", "AS 2S 7S 8S",
     [("AS 2S 7S 8S", SWEEP)]),
    ("classic: 7D on Q,Q is a plain sweep", CLASSIC, "7D", "QS QH", [("QS QH", SWEEP)]),
    ("classic: 7D on A,Q (a face card) is a plain sweep", CLASSIC, "7D", "AS QH", [("AS QH", SWEEP)]),
    ("classic: numeral basras are unchanged", CLASSIC, "5S", "AH 2H 3H 4H", [("AH 2H 3H 4H", BASRA)]),
    ("classic: Q on Queens only is a basra", CLASSIC, "QS", "QH", [("QH", BASRA)]),
    ("classic: 6 on A,2,3,4 takes A,2,3", CLASSIC, "6S", "AH 2H 3H 4H", [("AH 2H 3H", CAPTURE)]),
    ("classic: J and 7D on an empty table stay", CLASSIC, "JS", "", [("", DROP)]),
]


def offered(preset, card: str, table: str) -> list[tuple[str, str]]:
    """The options the engine lists for this card, as (captured names, kind)."""
    game = make_game((card, ""), table, preset=preset)
    return [(names(m.captures), m.kind) for m in game.legal_moves()]


@pytest.mark.parametrize(
    "preset, card, table, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_options(preset, card, table, expected):
    wanted = sorted((names(cards(taken)), kind) for taken, kind in expected)
    assert sorted(offered(preset, card, table)) == wanted


@pytest.mark.parametrize(
    "preset, card, table, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_playing_each_option(preset, card, table, expected):
    """Applying an option moves exactly those cards, and counts the basras it scores."""
    for taken, kind in expected:
        game = make_game((card, ""), table, preset=preset)
        played = cards(card)[0]
        events = game.play(0, Move(played, cards(taken)))
        left = set(cards(table)) - set(cards(taken))
        if kind == DROP:
            assert sorted(game.table) == sorted(left | {played})
            assert game.piles[0] == []
            assert game.last_capturer is None
        else:
            assert sorted(game.table) == sorted(left)
            assert sorted(game.piles[0]) == sorted({*cards(taken), played})
            assert game.last_capturer == 0
        assert game.basras[0] == int(kind == BASRA)
        assert game.jack_basras[0] == int(kind == JACK_BASRA)
        assert events[0].kind == kind
        assert events[0].captured == tuple(sorted(cards(taken)))


LONE_SEVEN_TAKERS = ["AS", "2C", "5H", "7S", "10H", "QC", "KD"]


@pytest.mark.parametrize("preset", [EGYPTIAN, CLASSIC], ids=["egyptian", "classic"])
@pytest.mark.parametrize("card", LONE_SEVEN_TAKERS)
def test_any_card_on_a_lone_seven_of_diamonds_is_a_basra(preset, card):
    assert offered(preset, card, "7D") == [("7D", BASRA)]


def test_a_hand_lists_every_card_with_its_options_in_hand_order():
    game = make_game(("JS 6S 9C KD", ""), "AH 2H 3H 4H 5H")
    listed = [(names([m.card]), names(m.captures), m.kind) for m in game.legal_moves()]
    assert [card for card, _, _ in listed] == ["JS", "6S", "9C", "9C", "KD"]
    assert sorted(listed) == sorted([
        ("JS", "AH 2H 3H 4H 5H", SWEEP),
        ("6S", "AH 2H 4H 5H", CAPTURE),  # A+5 and 2+4; the 3 has no partner
        ("9C", "AH 3H 5H", CAPTURE),
        ("9C", "2H 3H 4H", CAPTURE),
        ("KD", "", DROP),
    ])

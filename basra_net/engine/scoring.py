"""Scoring presets and the per-game score (rule 10 of RULES.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .cards import ACE, JACK, Card, parse_card, rank


@dataclass(frozen=True)
class ScoringPreset:
    name: str
    most_cards_points: int
    basra_points: int
    jack_basra_points: int
    # Whether a Jack can ever make a basra (egyptian: a Jack on a lone Jack or
    # a lone 7D; classic: never).
    jacks_make_basras: bool
    # How the 7D decides on a basra: "any_rank" (rule 6) or "numerals_to_ten".
    seven_of_diamonds_basra: str
    card_points: dict[Card, int] = field(default_factory=dict)


EGYPTIAN = ScoringPreset(
    name="egyptian",
    most_cards_points=30,
    basra_points=10,
    jack_basra_points=30,
    jacks_make_basras=True,
    seven_of_diamonds_basra="any_rank",
)

CLASSIC = ScoringPreset(
    name="classic",
    most_cards_points=3,
    basra_points=10,
    jack_basra_points=0,  # unreachable: jacks never make basras here
    jacks_make_basras=False,
    seven_of_diamonds_basra="numerals_to_ten",
    card_points={
        **{c: 1 for c in range(52) if rank(c) in (ACE, JACK)},
        parse_card("2C"): 2,
        parse_card("10D"): 3,
    },
)

PRESETS = {p.name: p for p in (EGYPTIAN, CLASSIC)}


@dataclass(frozen=True)
class GameScore:
    """One seat's score for one game, itemised."""

    cards: int  # how many cards the seat captured
    most_cards: int  # points for holding the majority of cards
    basras: int  # count
    jack_basras: int  # count
    basra_points: int
    card_bonus: int  # preset card points (classic: aces, jacks, 2C, 10D)
    total: int

    def to_dict(self) -> dict:
        return {
            "cards": self.cards,
            "most_cards": self.most_cards,
            "basras": self.basras,
            "jack_basras": self.jack_basras,
            "basra_points": self.basra_points,
            "card_bonus": self.card_bonus,
            "total": self.total,
        }


def score_game(
    preset: ScoringPreset,
    piles: tuple[list[Card], list[Card]],
    basras: tuple[int, int],
    jack_basras: tuple[int, int],
) -> tuple[GameScore, GameScore]:
    counts = (len(piles[0]), len(piles[1]))
    scores = []
    for seat in (0, 1):
        most = preset.most_cards_points if counts[seat] > counts[1 - seat] else 0
        basra_points = basras[seat] * preset.basra_points + jack_basras[seat] * preset.jack_basra_points
        bonus = sum(preset.card_points.get(c, 0) for c in piles[seat])
        scores.append(
            GameScore(
                cards=counts[seat],
                most_cards=most,
                basras=basras[seat],
                jack_basras=jack_basras[seat],
                basra_points=basra_points,
                card_bonus=bonus,
                total=most + basra_points + bonus,
            )
        )
    return scores[0], scores[1]

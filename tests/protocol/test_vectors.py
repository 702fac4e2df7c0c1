"""The committed fair-deal vectors are complete, well-formed and up to date."""

import importlib.util
import json
from pathlib import Path

import pytest

from basra_net.engine.cards import CANONICAL_DECK, card_name

VECTORS_DIR = Path(__file__).parents[1] / "vectors"
VECTORS = json.loads((VECTORS_DIR / "fair_deal.json").read_text())
CASES = VECTORS["cases"]


def load_generator():
    spec = importlib.util.spec_from_file_location(
        "generate_fair_deal", VECTORS_DIR / "generate_fair_deal.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def is_hex(value: object, size: int) -> bool:
    return isinstance(value, str) and len(value) == 2 * size and bytes.fromhex(value).hex() == value


def test_file_matches_generator():
    assert load_generator().build_vectors() == VECTORS


def test_enough_cases_including_all_zero_and_signing():
    assert len(CASES) >= 3
    assert len({case["name"] for case in CASES}) == len(CASES)
    assert any(
        case["inputs"]["game"] == 0
        and all(set(case["inputs"][k]) == {"0"} for k in case["inputs"] if k != "game")
        for case in CASES
    )
    assert sum("signatures" in case for case in CASES) == 1


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case_shape(case):
    v = case["inputs"]
    assert is_hex(v["match_id"], 16)
    assert all(is_hex(v[k], 32) for k in ("client_nonce", "host_seed", "client_seed"))
    assert 0 <= v["game"] <= 0xFFFFFFFF
    assert is_hex(case["commitment"], 32) and is_hex(case["deck_key"], 32)
    assert len(case["stream_words"]) == 16
    assert all(0 <= word < 2**32 for word in case["stream_words"])
    assert sorted(case["deck"]) == sorted(card_name(c) for c in CANONICAL_DECK)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_draws_are_consistent(case):
    draws = case["draws"]
    assert any(not d["accepted"] for d in draws), "every case must show a rejected draw"
    assert case["words_consumed"] == len(draws)
    # The stream's first words are exactly the words the sampler examined first.
    shown = case["stream_words"]
    assert [d["word"] for d in draws[: len(shown)]] == shown
    accepted_ns = [d["n"] for d in draws if d["accepted"]]
    assert accepted_ns == list(range(52, 1, -1))
    for d in draws:
        mask = (1 << (d["n"] - 1).bit_length()) - 1
        assert d["masked"] == d["word"] & mask
        assert d["accepted"] == (d["masked"] < d["n"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_accepted_draws_replay_to_the_deck(case):
    deck = list(CANONICAL_DECK)
    for d in case["draws"]:
        if d["accepted"]:
            i, j = d["n"] - 1, d["masked"]
            deck[i], deck[j] = deck[j], deck[i]
    assert [card_name(c) for c in deck] == case["deck"]


def test_signing_case_shape():
    (sig,) = [case["signatures"] for case in CASES if "signatures" in case]
    assert is_hex(sig["private_seed"], 32) and is_hex(sig["public_key"], 32)
    assert is_hex(sig["commit_signature"], 64) and is_hex(sig["reveal_signature"], 64)
    # lp(label) || lp(match_id) || u32(game) || lp(32 bytes)
    assert len(bytes.fromhex(sig["commit_signed"])) == 4 + 23 + 4 + 16 + 4 + 4 + 32
    assert len(bytes.fromhex(sig["reveal_signed"])) == 4 + 23 + 4 + 16 + 4 + 4 + 32

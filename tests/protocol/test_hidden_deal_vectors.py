"""The committed hidden-hands vectors are up to date, and the reference code reproduces every value."""

import hashlib
import importlib.util
import json
import struct
from pathlib import Path

import pytest
from nacl import bindings as sodium

from basra_net.engine.cards import card_name, parse_card
from basra_net.protocol import hidden_deal
from basra_net.protocol.hidden_deal import (
    DealChecker,
    GameContext,
    Party,
    Proof,
    Purpose,
    Reveal,
    ScalarMismatch,
    Statement,
    Unmasking,
    card_points,
    card_uniform,
    challenge,
    decode_scalar,
    nonce,
    prove,
    verify,
)

VECTORS_DIR = Path(__file__).parents[1] / "vectors"
VECTORS = json.loads((VECTORS_DIR / "hidden_deal.json").read_text())
GAME = VECTORS["game"]


def load_generator():
    spec = importlib.util.spec_from_file_location("generate_hidden_deal", VECTORS_DIR / "generate_hidden_deal.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def h(value: str) -> bytes:
    return bytes.fromhex(value)


class Stream:
    """The vectors' random source: SHA-512(lp(label) || seed || u64(i)), read in order."""

    def __init__(self, seed: bytes) -> None:
        self.seed, self.counter, self.buffer = seed, 0, b""
        label = VECTORS["labels"]["random_stream"].encode()
        self.prefix = struct.pack(">I", len(label)) + label

    def __call__(self, n: int) -> bytes:
        while len(self.buffer) < n:
            self.buffer += hashlib.sha512(self.prefix + self.seed + struct.pack(">Q", self.counter)).digest()
            self.counter += 1
        taken, self.buffer = self.buffer[:n], self.buffer[n:]
        return taken


def test_file_matches_generator():
    assert load_generator().build_vectors() == VECTORS


def test_labels_and_group_order_are_the_codes():
    labels = VECTORS["labels"]
    assert labels["card"].encode() == hidden_deal.CARD_LABEL
    assert labels["challenge"].encode() == hidden_deal.CHALLENGE_LABEL
    assert labels["nonce"].encode() == hidden_deal.NONCE_LABEL
    assert int(VECTORS["group_order"]) == hidden_deal.GROUP_ORDER


def test_hash_to_point_of_all_52_cards():
    entries = VECTORS["card_points"]
    assert [e["card"] for e in entries] == [card_name(c) for c in range(52)]
    for card, entry in enumerate(entries):
        assert card_uniform(card).hex() == entry["uniform"]
        assert card_points()[card].hex() == entry["point"]


def test_the_dleq_proof_with_fixed_randomness():
    case = VECTORS["dleq"]
    v = case["inputs"]
    x = decode_scalar(h(v["scalar"]), "scalar")
    context = GameContext(h(v["match_id"]), v["game"])
    statement = Statement(context, v["position"], v["seat"], Purpose(v["purpose"]),
                          h(case["public"]), h(v["base"]), h(case["result"]))
    assert statement.encode().hex() == case["statement"]
    assert h(v["base"]) == card_points()[parse_card("7D")]
    assert nonce(x, statement.encode(), h(case["randomness"])).to_bytes(32, "little").hex() == case["nonce"]
    expected = challenge(statement.encode(), h(case["commitment_g"]), h(case["commitment_base"]))
    assert expected.to_bytes(32, "little").hex() == case["challenge"]
    assert h(case["challenge_input"]).endswith(statement.encode() + h(case["commitment_g"]) + h(case["commitment_base"]))
    proof = prove(statement, x, lambda n: h(case["randomness"]))
    assert proof.to_bytes().hex() == case["proof"] == case["challenge"] + case["response"]
    assert verify(statement, Proof.from_bytes(h(case["proof"]), "vector"))


def test_the_whole_game_from_both_secrets_to_the_audit():
    v = GAME["inputs"]
    context = GameContext(h(v["match_id"]), v["game"])
    dealer = v["dealer"]
    streams = {seat: Stream(h(v["random_seeds"][str(seat)])) for seat in (0, 1)}
    parties = {seat: Party(context, seat, streams[seat]) for seat in (0, 1)}
    referee = DealChecker(context, dealer)
    for entry in GAME["parties"]:
        seat = entry["seat"]
        assert parties[seat].audit_scalar.hex() == entry["scalar"]
        assert parties[seat].public.hex() == entry["public"]
        referee.public_point(seat, h(entry["public"]))

    previous = card_points()
    for layer in GAME["locked"]:
        x = h(GAME["parties"][layer["seat"]]["scalar"])
        assert layer["entries"] == [
            sodium.crypto_scalarmult_ed25519_noclamp(x, previous[i]).hex() for i in layer["order"]
        ]
        previous = parties[layer["seat"]].lock_deck(previous)
        assert [e.hex() for e in previous] == layer["entries"]
        referee.locked_list(layer["seat"], [h(e) for e in layer["entries"]])

    unmasked = {}
    for step in GAME["steps"]:
        position, seat = step["position"], step["seat"]
        if step["step"] == "unmask":
            while referee.order.hand_of(position) > referee.hand_no:  # the steps list the hands in order
                referee.start_hand(referee.hand_no + 1)
            made = parties[seat].unmask(position, referee.deck[position])
            assert (made.point.hex(), made.proof.to_bytes().hex()) == (step["point"], step["proof"])
            referee.unmasking(Unmasking.from_bytes(position, seat, h(step["point"]) + h(step["proof"])))
            unmasked[position] = made.point
        else:
            made = parties[seat].reveal(position, unmasked[position])
            assert (made.point.hex(), made.proof.to_bytes().hex()) == (step["point"], step["proof"])
            assert card_name(made.card) == step["card"]
            wire = Reveal.from_bytes(position, seat, h(step["point"]) + h(step["proof"]))
            assert card_name(referee.reveal(wire)) == step["card"]

    assert referee.order.table == tuple(GAME["table"]) and referee.order.moved == tuple(GAME["moved"])
    assert [card_name(c) for c in referee.deck_order()] == GAME["deck_order"]
    scalars = {int(seat): h(value) for seat, value in GAME["audit"].items()}
    referee.audit(scalars)
    scalars[dealer] = scalars[1 - dealer]
    with pytest.raises(ScalarMismatch, match=f"seat {dealer}'s audit scalar"):
        referee.audit(scalars)


def test_protocol_section_14_states_what_the_code_does():
    doc = (Path(__file__).parents[2] / "PROTOCOL.md").read_text()
    section = doc[doc.index("## 15. Hidden hands") :]
    for label in (hidden_deal.CARD_LABEL, hidden_deal.CHALLENGE_LABEL, hidden_deal.NONCE_LABEL):
        assert f'"{label.decode()}"' in section
    card_label = hidden_deal.CARD_LABEL
    assert f"hashed input  {struct.pack('>I', len(card_label)).hex()} {card_label.hex()}" in section
    ace = VECTORS["card_points"][0]
    assert f"uniform(AS)   {ace['uniform']}" in section and f"M(AS)         {ace['point']}" in section
    assert f"{hidden_deal.GROUP_ORDER - 2**252}" in section
    statement = Statement(GameContext(bytes(16), 1), 0, 0, Purpose.UNMASK, *card_points()[:3])
    assert len(statement.encode()) == 127 and "127 bytes in all" in section
    moved = ", ".join(map(str, GAME["moved"])).replace(", ", " and ")
    assert f"the moved positions are {moved}." in section
    per_game = 2 * 32 + 2 * 52 * 32 + 104 * 96 + 2 * 32
    assert f"{per_game:,} bytes" in section

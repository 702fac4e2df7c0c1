"""Writes hidden_deal.json: test vectors for hidden hands (PROTOCOL.md section 15).

The values are computed here from the specification with hashlib, struct and
libsodium's group operations (through PyNaCl's bindings) alone, independently
of basra_net.protocol.hidden_deal, so that the vectors check that module
rather than echo it.

Run from anywhere: python tests/vectors/generate_hidden_deal.py
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

from nacl import bindings as sodium

VECTORS_PATH = Path(__file__).with_name("hidden_deal.json")

L = 2**252 + 27742317777372353535851937790883648493
VERSION = 2
CARD_LABEL = b"basra-net/v2/hidden-deal/card"
CHALLENGE_LABEL = b"basra-net/v2/hidden-deal/challenge"
NONCE_LABEL = b"basra-net/v2/hidden-deal/nonce"
STREAM_LABEL = b"basra-net/test-vectors/random"
UNMASK, REVEAL = 1, 2

RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
SUITS = ["S", "H", "D", "C"]
SEVEN_OF_DIAMONDS = 2 * 13 + 6

FORMAT_NOTES = {
    "bytes": "lowercase hex strings; points are 32-byte edwards25519 encodings, scalars 32 bytes little-endian",
    "card_points": "for each card in canonical order: its name (ASCII, as RULES.md spells it), uniform = "
    "SHA-256(lp(card label) || lp(name)), the card label being labels.card, point = "
    "crypto_core_ed25519_from_uniform(uniform)",
    "dleq": "one proof made with fixed randomness: statement = u32(2) || lp(match_id) || u32(game) || "
    "u8(position) || u8(seat) || u8(purpose) || public || base || result; nonce k = SHA-512(lp(nonce label) || "
    "scalar || randomness || statement) read little-endian, mod L; commitment_g = k*G, commitment_base = k*base; challenge_input = "
    "lp(challenge label) || statement || commitment_g || commitment_base; c = SHA-512(challenge_input) read little-endian, mod L; "
    "s = k + c*scalar mod L; proof = c || s",
    "game": "one whole game, both parties' secrets to the audit. Each seat's randomness is the stream "
    "SHA-512(lp(stream label) || seed || u64(i)) for i = 0, 1, ..., read in order: 64 bytes read little-endian and "
    "reduced mod L for the scalar, then 4-byte big-endian words for the shuffle (Fisher-Yates with the sampler of section 9.7, as in "
    "9.7 from the bottom up, so 'order' lists which entry of the previous list lands at each index), then 32 bytes "
    "for the nonce of each proof the seat makes, in the order of 'steps'. Any party may draw its secrets as it "
    "likes; only the resulting values are the protocol's",
    "game.steps": "in order: unmask (seat takes its lock off deck[position]: point, proof) and reveal (seat shows "
    "the card point under the last lock: point, card, proof), with the 32 random bytes of its nonce",
}


def u32(value: int) -> bytes:
    return struct.pack(">I", value)


def lp(data: bytes) -> bytes:
    return u32(len(data)) + data


def scalar(value: int) -> bytes:
    return value.to_bytes(32, "little")


def reduce(data: bytes) -> int:
    return int.from_bytes(data, "little") % L


def mul(k: int, point: bytes) -> bytes:
    return sodium.crypto_scalarmult_ed25519_noclamp(scalar(k), point)


def mul_base(k: int) -> bytes:
    return sodium.crypto_scalarmult_ed25519_base_noclamp(scalar(k))


def card_name(card: int) -> str:
    return RANKS[card % 13] + SUITS[card // 13]


def card_uniform(card: int) -> bytes:
    return hashlib.sha256(lp(CARD_LABEL) + lp(card_name(card).encode())).digest()


CARD_POINTS = [sodium.crypto_core_ed25519_from_uniform(card_uniform(c)) for c in range(52)]


class Stream:
    def __init__(self, seed: bytes) -> None:
        self.seed, self.counter, self.buffer = seed, 0, b""

    def __call__(self, n: int) -> bytes:
        while len(self.buffer) < n:
            block = hashlib.sha512(lp(STREAM_LABEL) + self.seed + struct.pack(">Q", self.counter)).digest()
            self.buffer += block
            self.counter += 1
        taken, self.buffer = self.buffer[:n], self.buffer[n:]
        return taken


def secret_order(random: Stream) -> list[int]:
    order = list(range(52))
    for i in range(51, 0, -1):
        mask = (1 << i.bit_length()) - 1  # bit_length(n - 1) with n = i + 1
        while (j := struct.unpack(">I", random(4))[0] & mask) > i:
            pass
        order[i], order[j] = order[j], order[i]
    return order


def statement(match_id, game, position, seat, purpose, public, base, result) -> bytes:
    return u32(VERSION) + lp(match_id) + u32(game) + bytes((position, seat, purpose)) + public + base + result


def dleq(x: int, stmt: bytes, base: bytes, randomness: bytes) -> dict:
    k = reduce(hashlib.sha512(lp(NONCE_LABEL) + scalar(x) + randomness + stmt).digest())
    r_g, r_base = mul_base(k), mul(k, base)
    challenge_input = lp(CHALLENGE_LABEL) + stmt + r_g + r_base
    c = reduce(hashlib.sha512(challenge_input).digest())
    s = (k + c * x) % L
    return {
        "randomness": randomness.hex(),
        "nonce": scalar(k).hex(),
        "commitment_g": r_g.hex(),
        "commitment_base": r_base.hex(),
        "challenge_input": challenge_input.hex(),
        "challenge": scalar(c).hex(),
        "response": scalar(s).hex(),
        "proof": (scalar(c) + scalar(s)).hex(),
    }


def dleq_case() -> dict:
    match_id, game, position, seat = bytes(range(16)), 3, 17, 1
    x = reduce(hashlib.sha512(b"dleq vector scalar").digest())
    base = CARD_POINTS[SEVEN_OF_DIAMONDS]
    public, result = mul_base(x), mul(x, base)
    stmt = statement(match_id, game, position, seat, REVEAL, public, base, result)
    return {
        "inputs": {
            "match_id": match_id.hex(), "game": game, "position": position, "seat": seat, "purpose": REVEAL,
            "scalar": scalar(x).hex(), "base": base.hex(), "base_is": "the point of 7D",
        },
        "public": public.hex(),
        "result": result.hex(),
        "statement": stmt.hex(),
        **dleq(x, stmt, base, bytes(range(0x80, 0xA0))),
    }


def must_leave_table(card: int) -> bool:
    return card == SEVEN_OF_DIAMONDS or card % 13 == 10


def game_case() -> dict:
    match_id, game, dealer = bytes(range(0x10, 0x20)), 2, 1
    non_dealer = 1 - dealer
    seeds = {0: b"seat 0/10", 1: b"seat 1/10"}  # chosen so that a replacement is itself replaced
    streams = {seat: Stream(seeds[seat]) for seat in (0, 1)}
    scalar_random = {seat: streams[seat](64) for seat in (0, 1)}
    x = {seat: reduce(scalar_random[seat]) for seat in (0, 1)}
    public = {seat: mul_base(x[seat]) for seat in (0, 1)}

    locked, previous = [], CARD_POINTS
    for seat in (dealer, non_dealer):
        order = secret_order(streams[seat])
        entries = [mul(x[seat], previous[i]) for i in order]
        locked.append({"seat": seat, "order": order, "entries": [e.hex() for e in entries]})
        previous = entries
    deck = previous

    steps, cards = [], {}

    def unmask(seat: int, position: int) -> bytes:
        point = mul(pow(x[seat], -1, L), deck[position])
        stmt = statement(match_id, game, position, seat, UNMASK, public[seat], point, deck[position])
        steps.append({"step": "unmask", "position": position, "seat": seat, "point": point.hex(),
                      **pick(dleq(x[seat], stmt, point, streams[seat](32)))})
        return point

    def reveal(seat: int, position: int, unmasked: bytes) -> None:
        point = mul(pow(x[seat], -1, L), unmasked)
        cards[position] = CARD_POINTS.index(point)
        stmt = statement(match_id, game, position, seat, REVEAL, public[seat], point, unmasked)
        steps.append({"step": "reveal", "position": position, "seat": seat, "point": point.hex(),
                      "card": card_name(cards[position]), **pick(dleq(x[seat], stmt, point, streams[seat](32)))})

    # Hand 1, then the table turned up (with its replacements), then hands 2 to 6 from the stock.
    hands = {1: {non_dealer: [0, 1, 2, 3], dealer: [4, 5, 6, 7]}}
    table, moved, next_stock = [8, 9, 10, 11], [], 12
    for seat, positions in hands[1].items():
        for position in positions:
            reveal(seat, position, unmask(1 - seat, position))
    for slot in range(4):
        reveal(non_dealer, table[slot], unmask(dealer, table[slot]))
        while must_leave_table(cards[table[slot]]):
            moved.append(table[slot])
            table[slot] = next_stock
            next_stock += 1
            reveal(non_dealer, table[slot], unmask(dealer, table[slot]))
    stock = [*range(next_stock, 52), *moved]
    for hand_no in range(2, 7):
        top = 8 * (hand_no - 2)
        for seat, positions in ((non_dealer, stock[top : top + 4]), (dealer, stock[top + 4 : top + 8])):
            for position in positions:
                if position not in moved:
                    reveal(seat, position, unmask(1 - seat, position))

    return {
        "inputs": {"match_id": match_id.hex(), "game": game, "dealer": dealer,
                   "random_seeds": {str(seat): seeds[seat].hex() for seat in (0, 1)}},
        "parties": [{"seat": seat, "scalar_random": scalar_random[seat].hex(), "scalar": scalar(x[seat]).hex(),
                     "public": public[seat].hex()} for seat in (0, 1)],
        "locked": locked,
        "steps": steps,
        "table": table,
        "moved": moved,
        "deck_order": [card_name(cards[p]) for p in range(52)],
        "audit": {str(seat): scalar(x[seat]).hex() for seat in (0, 1)},
    }


def pick(proof: dict) -> dict:
    return {key: proof[key] for key in ("randomness", "nonce", "proof")}


def build_vectors() -> dict:
    return {
        "description": "basra-net hidden hands test vectors (PROTOCOL.md section 15)",
        "format": FORMAT_NOTES,
        "labels": {"card": CARD_LABEL.decode(), "challenge": CHALLENGE_LABEL.decode(),
                   "nonce": NONCE_LABEL.decode(), "random_stream": STREAM_LABEL.decode()},
        "group_order": str(L),
        "card_points": [
            {"card": card_name(c), "uniform": card_uniform(c).hex(), "point": CARD_POINTS[c].hex()}
            for c in range(52)
        ],
        "dleq": dleq_case(),
        "game": game_case(),
    }


def main() -> None:
    VECTORS_PATH.write_text(json.dumps(build_vectors(), indent=2) + "\n")


if __name__ == "__main__":
    main()

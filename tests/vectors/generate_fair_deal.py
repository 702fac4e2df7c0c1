"""Writes fair_deal.json: test vectors for the fair deal (PROTOCOL.md section 9).

The values are computed here from the specification with hashlib, hmac and
struct alone, independently of basra_net.protocol.shuffle, so that the vectors
check that module rather than echo it. Ed25519 comes from `cryptography`.

Run from anywhere: python tests/vectors/generate_fair_deal.py
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

VECTORS_PATH = Path(__file__).with_name("fair_deal.json")

STREAM_WORDS_SHOWN = 16

# RFC 8032 section 7.1, TEST 1: implementers can check their key derivation there too.
SIGNING_PRIVATE_SEED = bytes.fromhex(
    "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
)

RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
SUITS = ["S", "H", "D", "C"]

FORMAT_NOTES = {
    "bytes": "lowercase hex strings",
    "inputs.game": "u32 game number (1-based in play; the all-zero case uses 0)",
    "commitment": "SHA-256 commitment to host_seed",
    "deck_key": "SHA-256 deck key K",
    "stream_words": "first 16 u32 words of the HMAC-SHA256(K, u64(i)) stream (blocks 0 and 1)",
    "draws": "every word the sampler examined, in order: n = i + 1 for Fisher-Yates step i, "
    "word = the u32 taken, masked = word & (2^bit_length(n - 1) - 1), "
    "accepted = masked < n (then j = masked)",
    "words_consumed": "total stream words the shuffle used (= number of draws)",
    "deck": "resulting deck order as card names, index 0 = top card, dealt first",
    "signatures": "Ed25519 over commit_signed and reveal_signed with the private seed shown",
}


def u32(value: int) -> bytes:
    return struct.pack(">I", value)


def lp(data: bytes) -> bytes:
    return u32(len(data)) + data


def card_name(card: int) -> str:
    return RANKS[card % 13] + SUITS[card // 13]


def stream_words(key: bytes):
    block_index = 0
    while True:
        block = hmac.new(key, struct.pack(">Q", block_index), hashlib.sha256).digest()
        for offset in range(0, 32, 4):
            yield struct.unpack(">I", block[offset : offset + 4])[0]
        block_index += 1


def build_case(name, match_id, game, client_nonce, host_seed, client_seed, signing=False):
    commitment = hashlib.sha256(
        lp(b"basra-net/v1/commit") + lp(match_id) + u32(game) + lp(client_nonce) + lp(host_seed)
    ).digest()
    key = hashlib.sha256(
        lp(b"basra-net/v1/deck-key") + lp(match_id) + u32(game) + lp(host_seed) + lp(client_seed)
    ).digest()

    words = stream_words(key)
    first_words = [next(words) for _ in range(STREAM_WORDS_SHOWN)]

    words = stream_words(key)
    draws = []
    deck = list(range(52))
    for i in range(51, 0, -1):
        n = i + 1
        mask = (1 << (n - 1).bit_length()) - 1
        while True:
            word = next(words)
            masked = word & mask
            draws.append({"n": n, "word": word, "masked": masked, "accepted": masked < n})
            if masked < n:
                break
        deck[i], deck[masked] = deck[masked], deck[i]

    case = {
        "name": name,
        "inputs": {
            "match_id": match_id.hex(),
            "game": game,
            "client_nonce": client_nonce.hex(),
            "host_seed": host_seed.hex(),
            "client_seed": client_seed.hex(),
        },
        "commitment": commitment.hex(),
        "deck_key": key.hex(),
        "stream_words": first_words,
        "draws": draws,
        "words_consumed": len(draws),
        "deck": [card_name(card) for card in deck],
    }
    if signing:
        private_key = Ed25519PrivateKey.from_private_bytes(SIGNING_PRIVATE_SEED)
        public_key = private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        commit_signed = (
            lp(b"basra-net/v1/commit-sig") + lp(match_id) + u32(game) + lp(commitment)
        )
        reveal_signed = lp(b"basra-net/v1/reveal-sig") + lp(match_id) + u32(game) + lp(host_seed)
        case["signatures"] = {
            "private_seed": SIGNING_PRIVATE_SEED.hex(),
            "public_key": public_key.hex(),
            "commit_signed": commit_signed.hex(),
            "commit_signature": private_key.sign(commit_signed).hex(),
            "reveal_signed": reveal_signed.hex(),
            "reveal_signature": private_key.sign(reveal_signed).hex(),
        }
    return case


def derived(label: str, size: int) -> bytes:
    return hashlib.sha256(label.encode()).digest()[:size]


def build_vectors() -> dict:
    cases = [
        build_case(
            "counting-bytes",
            match_id=bytes(range(0x00, 0x10)),
            game=1,
            client_nonce=bytes(range(0x20, 0x40)),
            host_seed=bytes(range(0x40, 0x60)),
            client_seed=bytes(range(0x60, 0x80)),
            signing=True,
        ),
        build_case(
            "all-zero",
            match_id=bytes(16),
            game=0,
            client_nonce=bytes(32),
            host_seed=bytes(32),
            client_seed=bytes(32),
        ),
        build_case(
            "game-2",
            match_id=derived("match A", 16),
            game=2,
            client_nonce=derived("nonce A", 32),
            host_seed=derived("host seed A2", 32),
            client_seed=derived("client seed A2", 32),
        ),
        build_case(
            "game-13-all-ones",
            match_id=b"\xff" * 16,
            game=13,
            client_nonce=b"\xff" * 32,
            host_seed=b"\xff" * 32,
            client_seed=b"\xff" * 32,
        ),
    ]
    return {
        "description": "basra-net fair deal test vectors (PROTOCOL.md section 9)",
        "format": FORMAT_NOTES,
        "cases": cases,
    }


def main() -> None:
    VECTORS_PATH.write_text(json.dumps(build_vectors(), indent=2) + "\n")


if __name__ == "__main__":
    main()

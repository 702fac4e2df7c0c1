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

# What every field of the file is, by its path ("[]" for each element of an array), so that
# the file can be shipped and read on its own.
FIELDS = {
    "protocol": "the basra-net protocol version these vectors belong to, and where it is specified",
    "description": "what the file holds",
    "conventions": "how values are written: bytes, words, cards and the notation of the construction",
    "fields": "this map: every field of the file by its path, [] standing for each element of an array",
    "cases": "the vectors: one object per case, each from its own inputs",
    "cases[].name": "a label for the case",
    "cases[].inputs": "what the two parties bring to one game",
    "cases[].inputs.match_id": "16 bytes: the match id of the host's welcome",
    "cases[].inputs.game": "the game number, u32 (1 for a match's first game; the case all-zero uses 0, which no match uses)",
    "cases[].inputs.client_nonce": "32 bytes: the nonce of seat 1's first hello",
    "cases[].inputs.host_seed": "32 bytes: the host's secret seed, revealed after the game",
    "cases[].inputs.client_seed": "32 bytes: seat 1's seed, sent after the host's commitment",
    "cases[].commitment": "32 bytes: SHA-256(lp('basra-net/v1/commit') || lp(match_id) || u32(game) || lp(client_nonce) || lp(host_seed))",
    "cases[].deck_key": "32 bytes: K = SHA-256(lp('basra-net/v1/deck-key') || lp(match_id) || u32(game) || lp(host_seed) || lp(client_seed))",
    "cases[].stream_words": "the first 16 words of the draw stream: block i = HMAC-SHA256(K, u64(i)), each block read as 8 u32 words, blocks 0 and 1",
    "cases[].draws": "every word the shuffle examined, in order; for i = 51 down to 1, words are drawn until one is accepted",
    "cases[].draws[].n": "i + 1, the number of positions to choose from (0 to i)",
    "cases[].draws[].word": "the next u32 word of the stream",
    "cases[].draws[].masked": "word AND (2^bit_length(n - 1) - 1)",
    "cases[].draws[].accepted": "masked < n; then j = masked and deck positions i and j are swapped, else the word is rejected",
    "cases[].words_consumed": "how many words the shuffle took: the length of draws",
    "cases[].deck": "the deck order after the shuffle of the deck 0..51 (card index = suit * 13 + rank - 1, suits S H D C, ranks A = 1 to K = 13), as card names, index 0 the top card, dealt first",
    "cases[].signatures": "in one case only: the host's Ed25519 signatures (RFC 8032) of the commitment and of the revealed seed",
    "cases[].signatures.private_seed": "32 bytes: the RFC 8032 private key (RFC 8032 section 7.1, test 1)",
    "cases[].signatures.public_key": "32 bytes: its public key, as the host_key of welcome",
    "cases[].signatures.commit_signed": "the bytes signed for the commit: lp('basra-net/v1/commit-sig') || lp(match_id) || u32(game) || lp(commitment)",
    "cases[].signatures.commit_signature": "64 bytes: the Ed25519 signature of commit_signed",
    "cases[].signatures.reveal_signed": "the bytes signed for the reveal: lp('basra-net/v1/reveal-sig') || lp(match_id) || u32(game) || lp(host_seed)",
    "cases[].signatures.reveal_signature": "64 bytes: the Ed25519 signature of reveal_signed",
}

CONVENTIONS = {
    "bytes": "lowercase hex strings",
    "numbers": "JSON integers",
    "u32(x), u64(x)": "x as 4 or 8 bytes, big-endian",
    "lp(b)": "u32(length of b) || b; a label in quotes is its ASCII bytes",
    "||": "concatenation",
    "cards": "rank then suit letter: A 2 3 4 5 6 7 8 9 10 J Q K, then S H D C (10D is the ten of diamonds)",
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
        "protocol": "basra-net protocol version 1; the fair deal of PROTOCOL.md, section 9",
        "description": "test vectors for the fair deal: from both parties' inputs, every intermediate value "
        "of the commitment, the deck key, the draw stream and the shuffle, to the deck order; every case "
        "has at least one rejected draw",
        "conventions": CONVENTIONS,
        "fields": FIELDS,
        "cases": cases,
    }


def main() -> None:
    VECTORS_PATH.write_text(json.dumps(build_vectors(), indent=2) + "\n")


if __name__ == "__main__":
    main()

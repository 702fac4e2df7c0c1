"""The fair deal: commitment, deck key, HMAC draw stream, shuffle and signatures.

Every construction here is specified byte for byte in PROTOCOL.md section 9;
cards are the ints 0..51 of the canonical deck, and index 0 of a deck is its top.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from nacl import bindings as sodium
from nacl.exceptions import BadSignatureError

MATCH_ID_SIZE = 16
NONCE_SIZE = 32
SEED_SIZE = 32
KEY_SIZE = 32
COMMITMENT_SIZE = 32
PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64
DECK_SIZE = 52

_COMMIT_LABEL = b"basra-net/v1/commit"
_DECK_KEY_LABEL = b"basra-net/v1/deck-key"
_COMMIT_SIG_LABEL = b"basra-net/v1/commit-sig"
_REVEAL_SIG_LABEL = b"basra-net/v1/reveal-sig"

_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_BLOCK_WORDS = struct.Struct(">8I")  # one HMAC-SHA256 block = 8 u32 words


def lp(data: bytes) -> bytes:
    """u32(len(data)) || data: the length-prefixed field of every hashed or signed construction."""
    return _U32.pack(len(data)) + data


def _game(game: int) -> bytes:
    if not 0 <= game <= 0xFFFFFFFF:
        raise ValueError(f"game {game} does not fit in a u32")
    return _U32.pack(game)


def sized(name: str, value: bytes, size: int) -> bytes:
    if not isinstance(value, bytes) or len(value) != size:
        raise ValueError(f"{name} must be {size} bytes")
    return value


def commitment(match_id: bytes, game: int, client_nonce: bytes, host_seed: bytes) -> bytes:
    """SHA-256 commitment to host_seed, bound to this match, game and client."""
    return hashlib.sha256(
        lp(_COMMIT_LABEL)
        + lp(sized("match_id", match_id, MATCH_ID_SIZE))
        + _game(game)
        + lp(sized("client_nonce", client_nonce, NONCE_SIZE))
        + lp(sized("host_seed", host_seed, SEED_SIZE))
    ).digest()


def deck_key(match_id: bytes, game: int, host_seed: bytes, client_seed: bytes) -> bytes:
    """The HMAC key of the draw stream, fixed by both players' seeds."""
    return hashlib.sha256(
        lp(_DECK_KEY_LABEL)
        + lp(sized("match_id", match_id, MATCH_ID_SIZE))
        + _game(game)
        + lp(sized("host_seed", host_seed, SEED_SIZE))
        + lp(sized("client_seed", client_seed, SEED_SIZE))
    ).digest()


class DrawStream:
    """HMAC-SHA256(key, u64(i)) for i = 0, 1, ..., read as big-endian u32 words."""

    def __init__(self, key: bytes) -> None:
        # Keyed once; each block is a copy of it (hmac.digest would set up the key again for every block).
        self._mac = hmac.new(sized("key", key, KEY_SIZE), digestmod=hashlib.sha256)
        self._block: tuple[int, ...] = ()
        self._position = 0
        self._block_count = 0
        self._words_consumed = 0

    @property
    def words_consumed(self) -> int:
        return self._words_consumed

    @property
    def block_count(self) -> int:
        """Number of HMAC blocks computed so far."""
        return self._block_count

    def __iter__(self) -> DrawStream:
        return self

    def __next__(self) -> int:
        if self._position == len(self._block):
            mac = self._mac.copy()
            mac.update(_U64.pack(self._block_count))
            self._block = _BLOCK_WORDS.unpack(mac.digest())
            self._position = 0
            self._block_count += 1
        word = self._block[self._position]
        self._position += 1
        self._words_consumed += 1
        return word


@dataclass(frozen=True)
class Draw:
    """One word taken by the sampler: kept as `masked` if `accepted`, else discarded."""

    n: int
    word: int
    masked: int
    accepted: bool


def uniform(stream: Iterator[int], n: int, trace: list[Draw] | None = None) -> int:
    """A uniform int in [0, n) by bitmask rejection sampling, 1 <= n <= 2**32.

    Appends every word examined to `trace` when one is given.
    """
    if not 1 <= n <= 1 << 32:
        raise ValueError(f"n must be in 1..2**32, got {n}")
    mask = (1 << (n - 1).bit_length()) - 1
    while True:
        word = next(stream)
        masked = word & mask
        accepted = masked < n
        if trace is not None:
            trace.append(Draw(n, word, masked, accepted))
        if accepted:
            return masked


@dataclass(frozen=True)
class ShuffleTrace:
    """Every intermediate value of one shuffle, for verbose verification and vectors."""

    key: bytes
    draws: tuple[Draw, ...]
    deck: tuple[int, ...]
    words_consumed: int
    block_count: int


def fisher_yates(stream: Iterator[int], trace: list[Draw] | None) -> tuple[int, ...]:
    """A permutation of 0..51 drawn with `uniform` from the stream's words (section 9.7)."""
    deck = list(range(DECK_SIZE))
    for i in range(DECK_SIZE - 1, 0, -1):
        j = uniform(stream, i + 1, trace)
        deck[i], deck[j] = deck[j], deck[i]
    return tuple(deck)


def shuffled_deck(
    match_id: bytes, game: int, host_seed: bytes, client_seed: bytes
) -> tuple[int, ...]:
    """The deck order of one game: 52 card ints, index 0 = top, dealt first."""
    stream = DrawStream(deck_key(match_id, game, host_seed, client_seed))
    return fisher_yates(stream, None)


def shuffle_trace(
    match_id: bytes, game: int, host_seed: bytes, client_seed: bytes
) -> ShuffleTrace:
    """shuffled_deck with the key and every draw recorded."""
    key = deck_key(match_id, game, host_seed, client_seed)
    stream = DrawStream(key)
    draws: list[Draw] = []
    deck = fisher_yates(stream, draws)
    return ShuffleTrace(key, tuple(draws), deck, stream.words_consumed, stream.block_count)


def commit_signed_bytes(match_id: bytes, game: int, commitment: bytes) -> bytes:
    """The exact bytes the host signs when it commits."""
    return (
        lp(_COMMIT_SIG_LABEL)
        + lp(sized("match_id", match_id, MATCH_ID_SIZE))
        + _game(game)
        + lp(sized("commitment", commitment, COMMITMENT_SIZE))
    )


def reveal_signed_bytes(match_id: bytes, game: int, host_seed: bytes) -> bytes:
    """The exact bytes the host signs when it reveals its seed."""
    return (
        lp(_REVEAL_SIG_LABEL)
        + lp(sized("match_id", match_id, MATCH_ID_SIZE))
        + _game(game)
        + lp(sized("host_seed", host_seed, SEED_SIZE))
    )


def sign(private_key: Ed25519PrivateKey, data: bytes) -> bytes:
    """The RFC 8032 signature of data.  It is deterministic, the same bytes whichever library makes it:
    libsodium makes it in about 60% of OpenSSL's time."""
    return sodium.crypto_sign(data, _sodium_secret_key(private_key))[:SIGNATURE_SIZE]


@functools.lru_cache(maxsize=16)
def _sodium_secret_key(private_key: Ed25519PrivateKey) -> bytes:
    """The key as libsodium signs with it (its seed, then its public key), made once per key object."""
    return sodium.crypto_sign_seed_keypair(private_key.private_bytes_raw())[1]


# Encodings of the Ed25519 points of small order.  Under such a "public key"
# some signatures verify for every message, so a host key must not be one.
SMALL_ORDER_KEYS = frozenset(
    bytes.fromhex(h)
    for h in (
        "0100000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    )
)


def is_weak_public_key(public_key_bytes: bytes) -> bool:
    return public_key_bytes in SMALL_ORDER_KEYS


def verify_signature(public_key_bytes: bytes, signature: bytes, data: bytes) -> bool:
    """True only for a valid Ed25519 signature under a key of full order; False for any bad input."""
    if not (
        isinstance(public_key_bytes, bytes)
        and isinstance(signature, bytes)
        and isinstance(data, bytes)
        and len(public_key_bytes) == PUBLIC_KEY_SIZE
        and len(signature) == SIGNATURE_SIZE
        and not is_weak_public_key(public_key_bytes)
    ):
        return False
    # libsodium checks a signature in about half the time OpenSSL takes, and whatever it accepts OpenSSL
    # accepts too; it refuses a few that OpenSSL (RFC 8032) accepts, such as one whose R has small order.
    # So only its refusal is asked of OpenSSL again, and the answer is OpenSSL's in every case.
    try:
        sodium.crypto_sign_open(signature + data, public_key_bytes)
        return True
    except BadSignatureError:
        pass
    try:
        Ed25519PublicKey.from_public_bytes(public_key_bytes).verify(signature, data)
    except (InvalidSignature, ValueError):
        return False
    return True

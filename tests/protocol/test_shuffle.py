import hashlib
import json
from pathlib import Path
from statistics import NormalDist

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings
from hypothesis import strategies as st

from basra_net.engine.cards import card_name
from basra_net.protocol.shuffle import (
    DECK_SIZE,
    Draw,
    DrawStream,
    commit_signed_bytes,
    commitment,
    deck_key,
    reveal_signed_bytes,
    shuffle_trace,
    shuffled_deck,
    sign,
    uniform,
    verify_signature,
)

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "fair_deal.json").read_text())
CASES = VECTORS["cases"]

MATCH_ID = bytes(range(16))
NONCE = bytes(range(32, 64))
HOST_SEED = bytes(range(64, 96))
CLIENT_SEED = bytes(range(96, 128))


def inputs(case: dict) -> dict:
    return {
        name: value if name == "game" else bytes.fromhex(value)
        for name, value in case["inputs"].items()
    }


def raw_public_key(private_key: Ed25519PrivateKey) -> bytes:
    return private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


# Vectors


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector(case):
    v = inputs(case)
    assert commitment(v["match_id"], v["game"], v["client_nonce"], v["host_seed"]).hex() == (
        case["commitment"]
    )
    key = deck_key(v["match_id"], v["game"], v["host_seed"], v["client_seed"])
    assert key.hex() == case["deck_key"]

    stream = DrawStream(key)
    assert [next(stream) for _ in case["stream_words"]] == case["stream_words"]

    trace = shuffle_trace(v["match_id"], v["game"], v["host_seed"], v["client_seed"])
    assert trace.key == key
    assert [Draw(**d) for d in case["draws"]] == list(trace.draws)
    assert trace.words_consumed == case["words_consumed"] == len(trace.draws)
    assert trace.block_count == -(-trace.words_consumed // 8)
    assert [card_name(c) for c in trace.deck] == case["deck"]
    assert shuffled_deck(v["match_id"], v["game"], v["host_seed"], v["client_seed"]) == (
        trace.deck
    )


def test_signature_vector():
    (case,) = [c for c in CASES if "signatures" in c]
    v, sig = inputs(case), case["signatures"]
    private_key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(sig["private_seed"]))
    assert raw_public_key(private_key).hex() == sig["public_key"]

    commit_data = commit_signed_bytes(v["match_id"], v["game"], bytes.fromhex(case["commitment"]))
    reveal_data = reveal_signed_bytes(v["match_id"], v["game"], v["host_seed"])
    assert commit_data.hex() == sig["commit_signed"]
    assert reveal_data.hex() == sig["reveal_signed"]
    assert sign(private_key, commit_data).hex() == sig["commit_signature"]
    assert sign(private_key, reveal_data).hex() == sig["reveal_signature"]

    public_key = bytes.fromhex(sig["public_key"])
    assert verify_signature(public_key, bytes.fromhex(sig["commit_signature"]), commit_data)
    assert verify_signature(public_key, bytes.fromhex(sig["reveal_signature"]), reveal_data)
    # A commit signature must not pass as a reveal signature.
    assert not verify_signature(public_key, bytes.fromhex(sig["commit_signature"]), reveal_data)


# The deck


def test_deck_is_a_permutation():
    for game in range(1, 30):
        deck = shuffled_deck(MATCH_ID, game, HOST_SEED, CLIENT_SEED)
        assert sorted(deck) == list(range(DECK_SIZE))


def test_every_input_changes_the_deck():
    base = shuffled_deck(MATCH_ID, 1, HOST_SEED, CLIENT_SEED)
    assert shuffled_deck(MATCH_ID, 1, HOST_SEED, CLIENT_SEED) == base
    variants = [
        shuffled_deck(bytes(16), 1, HOST_SEED, CLIENT_SEED),
        shuffled_deck(MATCH_ID, 2, HOST_SEED, CLIENT_SEED),
        shuffled_deck(MATCH_ID, 1, bytes(32), CLIENT_SEED),
        shuffled_deck(MATCH_ID, 1, HOST_SEED, bytes(32)),
        shuffled_deck(MATCH_ID, 1, CLIENT_SEED, HOST_SEED),  # seeds are not interchangeable
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_commitment_depends_on_every_input():
    base = commitment(MATCH_ID, 1, NONCE, HOST_SEED)
    variants = [
        commitment(bytes(16), 1, NONCE, HOST_SEED),
        commitment(MATCH_ID, 2, NONCE, HOST_SEED),
        commitment(MATCH_ID, 1, bytes(32), HOST_SEED),
        commitment(MATCH_ID, 1, NONCE, bytes(32)),
    ]
    assert len({base, *variants}) == len(variants) + 1


@pytest.mark.parametrize(
    "call",
    [
        lambda: commitment(bytes(15), 1, NONCE, HOST_SEED),
        lambda: commitment(MATCH_ID, 1, bytes(31), HOST_SEED),
        lambda: commitment(MATCH_ID, 1, NONCE, bytes(33)),
        lambda: commitment(MATCH_ID, -1, NONCE, HOST_SEED),
        lambda: commitment(MATCH_ID, 2**32, NONCE, HOST_SEED),
        lambda: deck_key(MATCH_ID, 1, HOST_SEED, bytes(31)),
        lambda: deck_key("0" * 16, 1, HOST_SEED, CLIENT_SEED),
        lambda: shuffled_deck(MATCH_ID, 1, bytes(16), CLIENT_SEED),
        lambda: DrawStream(bytes(16)),
        lambda: commit_signed_bytes(MATCH_ID, 1, bytes(31)),
        lambda: reveal_signed_bytes(MATCH_ID, 1, bytes(64)),
        lambda: uniform(iter([0]), 0),
        lambda: uniform(iter([0]), 2**32 + 1),
    ],
)
def test_bad_arguments_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


# The stream and the sampler


def test_stream_counts_words_and_blocks():
    stream = DrawStream(bytes(32))
    assert (stream.words_consumed, stream.block_count) == (0, 0)
    next(stream)
    assert (stream.words_consumed, stream.block_count) == (1, 1)
    for _ in range(8):
        next(stream)
    assert (stream.words_consumed, stream.block_count) == (9, 2)


def test_uniform_rejects_by_mask():
    # n = 52: mask 63, so 63 and 52 are rejected and 51 is kept.
    trace: list[Draw] = []
    assert uniform(iter([0xFFFFFFFF, 52, 0x12345633]), 52, trace) == 51
    assert trace == [
        Draw(52, 0xFFFFFFFF, 63, False),
        Draw(52, 52, 52, False),
        Draw(52, 0x12345633, 51, True),
    ]


def test_uniform_edges():
    assert uniform(iter([0xFFFFFFFF]), 2**32) == 0xFFFFFFFF
    assert uniform(iter([0xFFFFFFFF]), 2**31) == 2**31 - 1
    assert uniform(iter([7, 1]), 2) == 1
    words = iter([5, 9])
    assert uniform(words, 1) == 0  # one word consumed even though the result is forced
    assert next(words) == 9


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.integers(1, 2**32))
def test_uniform_stays_below_n(key, n):
    stream = DrawStream(key)
    for _ in range(5):
        assert 0 <= uniform(stream, n) < n


# Signatures


def test_signatures_verify_and_reject_tampering():
    private_key = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"host key").digest())
    other_key = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"other key").digest())
    public_key = raw_public_key(private_key)
    data = reveal_signed_bytes(MATCH_ID, 3, HOST_SEED)
    signature = sign(private_key, data)
    assert verify_signature(public_key, signature, data)

    flipped_signature = bytes([signature[0] ^ 1]) + signature[1:]
    flipped_data = data[:-1] + bytes([data[-1] ^ 0x80])
    assert not verify_signature(public_key, flipped_signature, data)
    assert not verify_signature(public_key, signature, flipped_data)
    assert not verify_signature(raw_public_key(other_key), signature, data)


ED25519_ORDER = 2**252 + 27742317777372353535851937790883648493


def test_a_signature_with_an_r_of_small_order_verifies_as_rfc_8032_has_it():
    # R is the identity point and S = k * a, so [S]B = R + [k]A holds: RFC 8032 (and OpenSSL) accept it,
    # libsodium refuses it for its R. The verdict must not depend on which library checks first.
    seed = hashlib.sha256(b"small order R").digest()
    public_key = raw_public_key(Ed25519PrivateKey.from_private_bytes(seed))
    secret = int.from_bytes(hashlib.sha512(seed).digest()[:32], "little") & ((1 << 254) - 8) | (1 << 254)
    data = reveal_signed_bytes(MATCH_ID, 3, HOST_SEED)
    r = bytes([1]) + bytes(31)
    k = int.from_bytes(hashlib.sha512(r + public_key + data).digest(), "little") % ED25519_ORDER
    signature = r + (k * secret % ED25519_ORDER).to_bytes(32, "little")
    assert verify_signature(public_key, signature, data)
    assert not verify_signature(public_key, signature, data + b"x")


SOME_PUBLIC_KEY = raw_public_key(Ed25519PrivateKey.from_private_bytes(bytes(range(32))))


@pytest.mark.parametrize(
    "public_key, signature, data",
    [
        (bytes(31), bytes(64), b"x"),
        (bytes(33), bytes(64), b"x"),
        (bytes(32), bytes(63), b"x"),
        (bytes(32), bytes(65), b"x"),
        (b"", b"", b""),
        (b"\xff" * 32, bytes(64), b"x"),  # not a point on the curve
        (SOME_PUBLIC_KEY, bytes(64), b"x"),
        ("not bytes", bytes(64), b"x"),
        (SOME_PUBLIC_KEY, None, b"x"),
        (SOME_PUBLIC_KEY, bytes(64), 12),
    ],
)
def test_verify_signature_never_raises(public_key, signature, data):
    assert verify_signature(public_key, signature, data) is False


# Uniformity


def chi_square_critical(df: int, p: float) -> float:
    """Upper p-quantile of chi-square(df) by the Wilson-Hilferty approximation."""
    z = NormalDist().inv_cdf(p)
    h = 2 / (9 * df)
    return df * (1 - h + z * h**0.5) ** 3


def position_counts(shuffle, count: int) -> list[list[int]]:
    """counts[card][position] over `count` shuffles with fixed, derived seeds."""
    counts = [[0] * DECK_SIZE for _ in range(DECK_SIZE)]
    for i in range(count):
        host_seed = hashlib.sha256(b"host %d" % i).digest()
        client_seed = hashlib.sha256(b"client %d" % i).digest()
        for position, card in enumerate(shuffle(host_seed, client_seed)):
            counts[card][position] += 1
    return counts


def chi_square(counts: list[list[int]], shuffles: int) -> tuple[float, list[float]]:
    """Overall statistic (df 51*51, both margins fixed) and one per card (df 51)."""
    expected = shuffles / DECK_SIZE
    per_card = [sum((c - expected) ** 2 / expected for c in row) for row in counts]
    return sum(per_card), per_card


def passes_uniformity(counts: list[list[int]], shuffles: int) -> bool:
    overall, per_card = chi_square(counts, shuffles)
    # Each card at 0.001 / 52 (Bonferroni), so the per-card checks together stay at 0.001.
    card_limit = chi_square_critical(DECK_SIZE - 1, 1 - 0.001 / DECK_SIZE)
    return overall < chi_square_critical((DECK_SIZE - 1) ** 2, 0.999) and max(per_card) < card_limit


def test_chi_square_critical_approximation():
    # Exact 0.999 quantiles: chi2(51) = 87.968, chi2(2601) = 2829.594.
    assert chi_square_critical(51, 0.999) == pytest.approx(87.968, rel=1e-3)
    assert chi_square_critical(2601, 0.999) == pytest.approx(2829.594, rel=1e-4)


SHUFFLES = 20000


def test_card_positions_are_uniform():
    counts = position_counts(
        lambda host_seed, client_seed: shuffled_deck(MATCH_ID, 1, host_seed, client_seed),
        SHUFFLES,
    )
    assert passes_uniformity(counts, SHUFFLES)


def test_uniformity_check_catches_a_subtly_wrong_shuffle():
    # Sattolo's variant (j < i instead of j <= i) never leaves a card in place;
    # the same check must reject it, or it proves nothing about the real shuffle.
    def sattolo(host_seed: bytes, client_seed: bytes) -> list[int]:
        stream = DrawStream(deck_key(MATCH_ID, 1, host_seed, client_seed))
        deck = list(range(DECK_SIZE))
        for i in range(DECK_SIZE - 1, 0, -1):
            j = uniform(stream, i)
            deck[i], deck[j] = deck[j], deck[i]
        return deck

    shuffles = 5000
    assert not passes_uniformity(position_counts(sattolo, shuffles), shuffles)

"""Signatures under a host key of small order prove nothing, so they never verify."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from basra_net.protocol import shuffle

IDENTITY_POINT = bytes.fromhex("01" + "00" * 31)


def test_the_library_alone_accepts_a_forged_signature_under_the_identity_point():
    # R = identity, S = 0 satisfies the verification equation for any message:
    # the reason the check below exists.
    Ed25519PublicKey.from_public_bytes(IDENTITY_POINT).verify(IDENTITY_POINT + bytes(32), b"any message")


@pytest.mark.parametrize("key", sorted(shuffle.SMALL_ORDER_KEYS))
def test_every_small_order_key_is_weak_and_its_signatures_never_verify(key):
    assert shuffle.is_weak_public_key(key)
    for signature in (IDENTITY_POINT + bytes(32), key + bytes(32), bytes(64)):
        assert not shuffle.verify_signature(key, signature, b"any message")


def test_an_ordinary_key_is_not_weak():
    assert not shuffle.is_weak_public_key(bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))

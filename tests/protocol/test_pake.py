"""The code exchange: the same code and keys agree; a wrong code, a substituted key or a malformed point is refused."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.host.identity import public_key_bytes
from basra_net.protocol.pake import CodeMismatch, GuestCodeExchange, HostCodeExchange, PakeError
from basra_net.protocol.shuffle import SMALL_ORDER_KEYS


def key(label: str) -> bytes:
    return public_key_bytes(Ed25519PrivateKey.from_private_bytes(hashlib.sha256(label.encode()).digest()))


HOST_KEY, GUEST_KEY, INTRUDER_KEY = key("host"), key("guest"), key("intruder")
NONCE = bytes(range(32))
CODE = "K7M-2QX"


def exchange(guest_code=CODE, host_code=CODE, *, host_key_seen=HOST_KEY, guest_key_sent=GUEST_KEY, nonce_sent=NONCE):
    """Run both sides; the host sees what the guest sent unless told otherwise (a relay that changed it)."""
    guest = GuestCodeExchange(guest_code, guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=host_key_seen)
    host = HostCodeExchange(host_code, host_key=HOST_KEY)
    host_message, host_confirm = host.answer(guest.start(), guest_key=guest_key_sent, guest_nonce=nonce_sent)
    host.check(guest.answer(host_message, host_confirm))
    return guest, host


def test_the_same_code_and_keys_agree():
    guest, _ = exchange(guest_code="k7m 2qx")
    assert guest.key is not None and len(guest.key) == 32


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"host_code": "K7M-2QY"}, id="wrong-code"),
        pytest.param({"host_key_seen": INTRUDER_KEY}, id="certificate-key-substituted"),
        pytest.param({"guest_key_sent": INTRUDER_KEY}, id="guest-key-substituted"),
        pytest.param({"nonce_sent": bytes(32)}, id="hello-nonce-changed"),
    ],
)
def test_the_guest_catches_a_host_that_does_not_hold_the_code_or_the_key_it_saw(change):
    """A relay that substitutes a key, even with the right code on both sides, fails the host's confirmation."""
    with pytest.raises(CodeMismatch, match="the host could not prove that it knows the join code"):
        exchange(**change)


def test_the_host_catches_a_client_without_the_code():
    """The intruder as a client: it guesses a code, and the host's check of its confirmation fails."""
    intruder = GuestCodeExchange("AAA-AAA", guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=HOST_KEY)
    host = HostCodeExchange(CODE, host_key=HOST_KEY)
    host_message, host_confirm = host.answer(intruder.start(), guest_key=GUEST_KEY, guest_nonce=NONCE)
    with pytest.raises(CodeMismatch):
        intruder.answer(host_message, host_confirm)  # the intruder learns only that its one guess was wrong
    with pytest.raises(CodeMismatch, match="the client could not prove"):
        host.check(bytes(32))


def test_fresh_randomness_gives_fresh_messages():
    first = GuestCodeExchange(CODE, guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=HOST_KEY).start()
    second = GuestCodeExchange(CODE, guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=HOST_KEY).start()
    assert first != second and first[:1] == second[:1] == b"A"


P = 2**255 - 19


def encode_y(y: int, sign: int = 0) -> bytes:
    return (y | sign << 255).to_bytes(32, "little")


def not_on_curve() -> bytes:
    """The encoding of a y with no x on the curve (x^2 = (y^2 - 1) / (d y^2 + 1) is not a square)."""
    d = -121665 * pow(121666, -1, P) % P
    for y in range(2, 100):
        u, v = (y * y - 1) % P, (d * y * y + 1) % P
        x2 = u * pow(v, -1, P) % P
        if x2 and pow(x2, (P - 1) // 2, P) != 1:
            return encode_y(y)
    raise AssertionError("no such y below 100")


def valid_point() -> bytes:
    return GuestCodeExchange(CODE, guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=HOST_KEY).start()[1:]


def test_spake2_alone_takes_a_non_canonical_identity_which_the_exchange_refuses():
    """y = 1 + p decodes to the identity, and the package's own check lets it through as a group element."""
    from spake2.parameters.ed25519 import ParamsEd25519

    ParamsEd25519.group.bytes_to_element(encode_y(1 + P))  # no error: hence the canonical check
    host = HostCodeExchange(CODE, host_key=HOST_KEY)
    with pytest.raises(PakeError, match="not the canonical encoding"):
        host.answer(b"A" + encode_y(1 + P), guest_key=GUEST_KEY, guest_nonce=NONCE)


MALFORMED = {
    "short": lambda side: side + bytes(31),
    "long": lambda side: side + valid_point() + b"\0",
    "wrong side": lambda side: (b"B" if side == b"A" else b"A") + valid_point(),
    "not on the curve": lambda side: side + not_on_curve(),
    "identity": lambda side: side + encode_y(1),
    "small order": lambda side: side + sorted(SMALL_ORDER_KEYS)[1],
    "identity, not canonical": lambda side: side + encode_y(1 + P),
    "identity, negative zero": lambda side: side + encode_y(1, sign=1),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_the_host_refuses_a_malformed_first_message(name):
    host = HostCodeExchange(CODE, host_key=HOST_KEY)
    with pytest.raises(PakeError) as caught:
        host.answer(MALFORMED[name](b"A"), guest_key=GUEST_KEY, guest_nonce=NONCE)
    assert not isinstance(caught.value, CodeMismatch)


@pytest.mark.parametrize("name", MALFORMED)
def test_the_guest_refuses_a_malformed_answer(name):
    guest = GuestCodeExchange(CODE, guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=HOST_KEY)
    guest.start()
    with pytest.raises(PakeError):
        guest.answer(MALFORMED[name](b"B"), bytes(32))


def test_the_guest_refuses_its_own_message_reflected():
    guest = GuestCodeExchange(CODE, guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=HOST_KEY)
    own = guest.start()
    with pytest.raises(PakeError, match="ReflectionThwarted"):
        guest.answer(b"B" + own[1:], bytes(32))


def test_a_confirmation_of_the_wrong_size_is_malformed():
    guest = GuestCodeExchange(CODE, guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=HOST_KEY)
    host = HostCodeExchange(CODE, host_key=HOST_KEY)
    host_message, host_confirm = host.answer(guest.start(), guest_key=GUEST_KEY, guest_nonce=NONCE)
    with pytest.raises(PakeError, match="32 bytes"):
        host.check(b"short")
    with pytest.raises(PakeError, match="32 bytes"):
        guest.answer(host_message, host_confirm[:31])


def test_each_side_runs_once_and_in_order():
    guest = GuestCodeExchange(CODE, guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=HOST_KEY)
    with pytest.raises(PakeError, match="out of order"):
        guest.answer(b"B" + valid_point(), bytes(32))
    first = guest.start()
    with pytest.raises(PakeError, match="started already"):
        guest.start()
    host = HostCodeExchange(CODE, host_key=HOST_KEY)
    with pytest.raises(PakeError, match="out of order"):
        host.check(bytes(32))
    host_message, host_confirm = host.answer(first, guest_key=GUEST_KEY, guest_nonce=NONCE)
    with pytest.raises(PakeError, match="one code exchange per connection"):
        host.answer(first, guest_key=GUEST_KEY, guest_nonce=NONCE)
    confirm = guest.answer(host_message, host_confirm)
    with pytest.raises(PakeError, match="out of order"):
        guest.answer(host_message, host_confirm)
    host.check(confirm)
    with pytest.raises(PakeError, match="out of order"):
        host.check(confirm)


@pytest.mark.parametrize("bad", [bytes(31), sorted(SMALL_ORDER_KEYS)[0]])
def test_unusable_identity_keys_and_codes_are_refused(bad):
    with pytest.raises(PakeError, match="host key"):
        HostCodeExchange(CODE, host_key=bad)
    with pytest.raises(PakeError, match="guest key"):
        GuestCodeExchange(CODE, guest_key=bad, guest_nonce=NONCE, host_key=HOST_KEY)
    with pytest.raises(PakeError, match="nonce"):
        GuestCodeExchange(CODE, guest_key=GUEST_KEY, guest_nonce=b"short", host_key=HOST_KEY)
    with pytest.raises(PakeError, match="join code"):
        GuestCodeExchange(" - ", guest_key=GUEST_KEY, guest_nonce=NONCE, host_key=HOST_KEY)

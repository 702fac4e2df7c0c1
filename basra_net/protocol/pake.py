"""The join code as a password-authenticated key exchange (PROTOCOL.md, section 14.9).

SPAKE2 (the `spake2` package, as magic-wormhole uses it) turns the short code
both players hold into a shared key, bound to the host key the client met in
the TLS handshake and to the guest's key and nonce.  Each side then proves it
holds that key with an HMAC over both messages.  Someone in the middle who
does not know the code gets one guess per connection, checked online by the
other side; the messages let nobody test a guess offline.

Both sides are small state machines with bytes in and bytes out, one
exchange per object.  Randomness comes from `entropy` (a function of a byte
count), os.urandom unless a test or the vectors pass a fixed one.
"""

from __future__ import annotations

import hmac
import os
import struct
from collections.abc import Callable

import spake2
from spake2.ed25519_basic import NotOnCurve
from spake2.parameters.ed25519 import ParamsEd25519

from .joincode import normalize_code
from .shuffle import NONCE_SIZE, PUBLIC_KEY_SIZE, is_weak_public_key, lp

MESSAGE_SIZE = 33  # a side byte and one encoded Ed25519 point
CONFIRM_SIZE = 32
GUEST_SIDE, HOST_SIDE = b"A", b"B"

_GUEST_ID_LABEL = b"basra-net/v2/pake/guest"
_HOST_ID_LABEL = b"basra-net/v2/pake/host"
_HOST_CONFIRM_LABEL = b"basra-net/v2/pake/host-confirm"
_GUEST_CONFIRM_LABEL = b"basra-net/v2/pake/guest-confirm"
_VERSION = struct.pack(">H", 2)

Entropy = Callable[[int], bytes]


class PakeError(Exception):
    """A malformed exchange: a message of the wrong size, side or point, or a step out of order (bad_message)."""


class CodeMismatch(PakeError):
    """The other side's confirmation is wrong: it does not hold the code, or the two sides saw different keys (wrong_code)."""


def _password(code: str) -> bytes:
    password = normalize_code(code)
    if not password or not password.isascii():
        raise PakeError("a join code is one or more ASCII letters and digits")
    return password.encode("ascii")


def _key(name: str, key: bytes) -> bytes:
    if not isinstance(key, bytes) or len(key) != PUBLIC_KEY_SIZE or is_weak_public_key(key):
        raise PakeError(f"the {name} is not a usable Ed25519 key")
    return key


def guest_identity(guest_key: bytes, guest_nonce: bytes) -> bytes:
    """idA: the guest's key and the nonce of its hello."""
    if not isinstance(guest_nonce, bytes) or len(guest_nonce) != NONCE_SIZE:
        raise PakeError(f"the hello's nonce must be {NONCE_SIZE} bytes")
    return lp(_GUEST_ID_LABEL) + lp(_key("guest key", guest_key)) + lp(guest_nonce)


def host_identity(host_key: bytes) -> bytes:
    """idB: the protocol version and the host key (on the client: its certificate's key)."""
    return lp(_HOST_ID_LABEL) + _VERSION + lp(_key("host key", host_key))


def _check_message(message: bytes, side: bytes) -> None:
    """Size, side byte, and a canonically encoded point of the prime-order subgroup other than the identity."""
    if not isinstance(message, bytes) or len(message) != MESSAGE_SIZE:
        raise PakeError(f"a code exchange message is {MESSAGE_SIZE} bytes")
    if message[:1] != side:
        raise PakeError(f"a code exchange message from side {side.decode()} must start with {side.hex()}")
    group = ParamsEd25519.group
    try:
        element = group.bytes_to_element(message[1:])
    except (ValueError, NotOnCurve) as err:
        raise PakeError(f"the code exchange message is not a point of the group ({type(err).__name__})") from None
    if element.to_bytes() != message[1:]:
        raise PakeError("the code exchange message is not the canonical encoding of its point")


def _confirmations(key: bytes, guest_message: bytes, host_message: bytes) -> tuple[bytes, bytes]:
    transcript = lp(guest_message) + lp(host_message)
    host = hmac.digest(key, lp(_HOST_CONFIRM_LABEL) + transcript, "sha256")
    guest = hmac.digest(key, lp(_GUEST_CONFIRM_LABEL) + transcript, "sha256")
    return host, guest


def _finish(side: spake2.SPAKE2_A | spake2.SPAKE2_B, inbound: bytes) -> bytes:
    try:
        return side.finish(inbound)
    except spake2.SPAKEError as err:  # ReflectionThwarted, OffSides
        raise PakeError(f"the code exchange message was refused ({type(err).__name__})") from None


class GuestCodeExchange:
    """The client's side (SPAKE2 side A): start() for the hello, then answer() the host's `pake`."""

    def __init__(self, code: str, *, guest_key: bytes, guest_nonce: bytes, host_key: bytes, entropy: Entropy = os.urandom) -> None:
        self._spake = spake2.SPAKE2_A(
            _password(code), idA=guest_identity(guest_key, guest_nonce), idB=host_identity(host_key), entropy_f=entropy
        )
        self._message: bytes | None = None
        self._done = False
        self.key: bytes | None = None  # the shared key, once the host's confirmation held

    def start(self) -> bytes:
        """The `pake` field of the hello."""
        if self._message is not None:
            raise PakeError("the exchange has started already")
        self._message = self._spake.start()
        return self._message

    def answer(self, host_message: bytes, host_confirm: bytes) -> bytes:
        """Check the host's message and confirmation; return the `confirm` of `pake_confirm`.

        CodeMismatch means the host does not know the code or is not the
        host whose key the client saw: the client pins nothing.
        """
        if self._message is None or self._done:
            raise PakeError("the host's code exchange message came out of order")
        self._done = True
        _check_message(host_message, HOST_SIDE)
        if not isinstance(host_confirm, bytes) or len(host_confirm) != CONFIRM_SIZE:
            raise PakeError(f"a key confirmation is {CONFIRM_SIZE} bytes")
        key = _finish(self._spake, host_message)
        expected_host, guest = _confirmations(key, self._message, host_message)
        if not hmac.compare_digest(expected_host, host_confirm):
            raise CodeMismatch("the host could not prove that it knows the join code")
        self.key = key
        return guest


class HostCodeExchange:
    """The host's side (SPAKE2 side B): answer() the hello's `pake`, then check() the client's `pake_confirm`."""

    def __init__(self, code: str, *, host_key: bytes, entropy: Entropy = os.urandom) -> None:
        self._password = _password(code)
        self._host_key = _key("host key", host_key)
        self._entropy = entropy
        self._guest_confirm: bytes | None = None
        self._done = False

    def answer(self, guest_message: bytes, *, guest_key: bytes, guest_nonce: bytes) -> tuple[bytes, bytes]:
        """The `pake` and `confirm` fields of the host's `pake` message, for the hello's `pake`, key and nonce."""
        if self._guest_confirm is not None or self._done:
            raise PakeError("one code exchange per connection")
        _check_message(guest_message, GUEST_SIDE)
        side = spake2.SPAKE2_B(
            self._password, idA=guest_identity(guest_key, guest_nonce), idB=host_identity(self._host_key), entropy_f=self._entropy
        )
        host_message = side.start()
        key = _finish(side, guest_message)
        host_confirm, self._guest_confirm = _confirmations(key, guest_message, host_message)
        return host_message, host_confirm

    def check(self, guest_confirm: bytes) -> None:
        """Raise CodeMismatch unless the client proved it holds the same key (the code, and the same keys)."""
        if self._guest_confirm is None or self._done:
            raise PakeError("a key confirmation came out of order")
        self._done = True
        if not isinstance(guest_confirm, bytes) or len(guest_confirm) != CONFIRM_SIZE:
            raise PakeError(f"a key confirmation is {CONFIRM_SIZE} bytes")
        if not hmac.compare_digest(self._guest_confirm, guest_confirm):
            raise CodeMismatch("the client could not prove that it knows the join code")

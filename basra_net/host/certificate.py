"""The host's TLS certificate: self-signed with its identity key, so the key players pin is the one that signs deals."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.x509.oid import NameOID

from ..files import write_private
from ..protocol.fingerprint import key_fingerprint
from .identity import KEY_FILE, public_key_bytes

CERT_FILE = "host_certificate.pem"
VALIDITY = datetime.timedelta(days=100 * 365)  # trust comes from the pin, not from dates


def _certificate_for(identity: Ed25519PrivateKey) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"basra-net host {key_fingerprint(public_key_bytes(identity))}")])
    now = datetime.datetime.now(datetime.timezone.utc)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(identity.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + VALIDITY)
        .sign(identity, None)  # Ed25519 signs without a separate hash
    )


def server_tls_context(identity: Ed25519PrivateKey, folder: Path) -> ssl.SSLContext:
    """TLS 1.3 only, presenting a certificate for the identity key (made once, kept beside the key)."""
    cert_path = folder / CERT_FILE
    current = None
    if cert_path.exists():
        current = x509.load_pem_x509_certificate(cert_path.read_bytes())
    wanted_key = public_key_bytes(identity)
    if current is None or current.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    ) != wanted_key:
        write_private(cert_path, _certificate_for(identity).public_bytes(serialization.Encoding.PEM))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    # No session tickets: no client resumes a TLS session (a seat resumes by its token, in a fresh handshake),
    # and each ticket cost the host an encryption (about a sixth of its handshake's CPU for the two) and 255 bytes.
    context.num_tickets = 0
    context.load_cert_chain(cert_path, folder / KEY_FILE)
    return context

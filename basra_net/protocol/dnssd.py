"""What a host says about itself on the LAN: the DNS-SD TXT record of `_basra._tcp` (PROTOCOL.md, section 16).

Sans-I/O: the host turns its state into TXT key/value pairs here, a browser
turns what it heard back into an ``Announcement``.  Anyone on the LAN can
announce anything, so parsing is strict and a record that does not parse
is ignored, never half-believed: an announcement is a hint where to
connect, and the key the host presents at connect time must match the
fingerprint announced here (the pin and the join code decide the rest).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .fingerprint import key_fingerprint

SERVICE_TYPE = "_basra._tcp.local."
TXT_VERSION = "1"
KINDS = ("host", "serve")  # `basra host` (one table, the host plays a seat) or `basra serve` (many tables)
MAX_NAME = 32  # characters of a table or host name kept from a record
_FINGERPRINT_HEX = re.compile(r"[0-9a-f]{16}")
_COUNT = re.compile(r"[0-9]{1,4}")
_VERSIONS = re.compile(r"[0-9]{1,3}(,[0-9]{1,3}){0,15}")
_DEALS = re.compile(r"[a-z]{1,32}(,[a-z]{1,32}){0,7}")


@dataclass(frozen=True)
class Announcement:
    kind: str  # one of KINDS
    table: str  # the table's name (for `basra serve`, the server's)
    host: str  # the announcing machine's name
    versions: tuple[int, ...]  # protocol versions the host speaks
    fingerprint: str  # the host key's fingerprint as shown on screens: '3f2a 9c01 77be 04d1'
    code: bool  # a join code is needed
    tls: bool  # False for a host started with --plain
    seats: int  # seats free right now
    tables: int | None  # for `basra serve`: tables open now
    deals: tuple[str, ...] | None = None  # the deal modes the table offers, the preferred first; None: not said (an older host)


def txt_properties(announcement: Announcement) -> dict[str, str]:
    """The TXT record's key/value pairs (RFC 6763, section 6), short keys first-come."""
    properties = {
        "txtvers": TXT_VERSION,
        "kind": announcement.kind,
        "table": announcement.table,
        "host": announcement.host,
        "v": ",".join(str(v) for v in announcement.versions),
        "fp": announcement.fingerprint.replace(" ", ""),
        "code": "1" if announcement.code else "0",
        "tls": "1" if announcement.tls else "0",
        "seats": str(announcement.seats),
    }
    if announcement.tables is not None:
        properties["tables"] = str(announcement.tables)
    if announcement.deals is not None:
        properties["deal"] = ",".join(announcement.deals)
    return properties


def parse_txt(properties: dict[bytes, bytes | None]) -> Announcement | None:
    """The announcement a TXT record carries, or None when it is not one this version understands."""
    try:
        text = {key.decode("ascii").lower(): (value or b"").decode("utf-8") for key, value in properties.items()}
    except UnicodeDecodeError:
        return None
    if text.get("txtvers") != TXT_VERSION or text.get("kind") not in KINDS:
        return None
    fingerprint = text.get("fp", "")
    versions, seats, tables = text.get("v", ""), text.get("seats", ""), text.get("tables")
    if not (_FINGERPRINT_HEX.fullmatch(fingerprint) and _VERSIONS.fullmatch(versions) and _COUNT.fullmatch(seats)):
        return None
    if tables is not None and not _COUNT.fullmatch(tables):
        return None
    deals = text.get("deal")
    if deals is not None and not _DEALS.fullmatch(deals):
        return None
    if text.get("code") not in ("0", "1") or text.get("tls") not in ("0", "1"):
        return None
    return Announcement(
        kind=text["kind"],
        table=_printable(text.get("table", "")),
        host=_printable(text.get("host", "")),
        versions=tuple(int(v) for v in versions.split(",")),
        fingerprint=" ".join(fingerprint[i : i + 4] for i in range(0, 16, 4)),
        code=text["code"] == "1",
        tls=text["tls"] == "1",
        seats=int(seats),
        tables=None if tables is None else int(tables),
        deals=None if deals is None else tuple(deals.split(",")),
    )


def _printable(text: str) -> str:
    """A name from the network, made safe to print: no control characters, bounded length."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)[:MAX_NAME]


class AnnouncedKeyMismatch(Exception):
    """The host presents another key than the fingerprint its announcement carries: it is not the table announced."""


def check_announced_key(announced: str, host_key: bytes, where: str) -> None:
    """Raise AnnouncedKeyMismatch unless ``host_key`` has the ``announced`` fingerprint."""
    presented = key_fingerprint(host_key)
    if presented != announced:
        raise AnnouncedKeyMismatch(
            f"the table was announced with host key fingerprint {announced}, but {where} presents {presented}:"
            " refused (anyone on the LAN can announce a table; to join this host anyway, give its address)"
        )

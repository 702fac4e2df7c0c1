"""How a host is written on the command line and in the pin file; light enough for `basra --help` paths."""

from __future__ import annotations

from ..options import DEFAULT_PORT


def parse_address(text: str) -> tuple[str, int]:
    """'HOST', 'HOST:PORT' or '[IPv6]:PORT' -> (host, port); ValueError when malformed."""
    host, port = text, DEFAULT_PORT
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"unclosed '[' in {text!r}")
        host, rest = text[1:end], text[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"expected ':PORT' after the address in {text!r}")
            port = _port(rest[1:])
    elif text.count(":") == 1:
        host, port_text = text.split(":")
        port = _port(port_text)
    if not host:
        raise ValueError("no host given")
    return host, port


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{text!r} is not a port number (1-65535)")
    return int(text)


def pin_name(host: str, port: int) -> str:
    """How a host is named in the pin file and in `basra forget`."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

"""How a host is written on the command line and in the pin file; light enough for `basra --help` paths."""

from __future__ import annotations

from ..options import DEFAULT_PORT

MAX_NAME = 253  # characters in a host name (RFC 1035, written without its final dot)
MAX_LABEL = 63  # characters in each of its parts


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
    check_host(host)
    return host, port


def check_host(host: str) -> None:
    """ValueError, naming the fault, for a host no name lookup could take: checked before connecting,
    so that a typo is one line saying what is wrong rather than a resolver's error number."""
    if not host:
        raise ValueError("no host given")
    if ":" in host:
        if not _is_ipv6(host):
            raise ValueError(f"{host!r} is not an IPv6 address (an IPv6 address with a port is written [ADDRESS]:PORT)")
        return
    if all(character.isdigit() or character == "." for character in host):
        numbers = host.split(".")
        if len(numbers) != 4 or not all(number.isdigit() and int(number) <= 255 and number == str(int(number)) for number in numbers):
            raise ValueError(f"{host!r} is not an IPv4 address: four numbers from 0 to 255, separated by dots")
        return
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")  # a final dot: the root, written out
    if any(not label for label in labels):
        raise ValueError(f"{host!r} is not a host name: it has an empty part between dots")
    if len(host) > MAX_NAME:
        raise ValueError(f"the host name is {len(host)} characters long, more than a name can be ({MAX_NAME})")
    for label in labels:
        try:
            ascii_label = label.encode("idna").decode("ascii")
        except UnicodeError:
            ascii_label = ""
        if len(ascii_label) > MAX_LABEL or (len(label) > MAX_LABEL and not ascii_label):
            raise ValueError(f"{host!r} is not a host name: a part between dots is longer than {MAX_LABEL} characters")
        if not ascii_label or not all(character.isalnum() or character in "-_" for character in ascii_label):
            raise ValueError(f"{host!r} is not a host name: {label!r} is not letters, digits and hyphens")


def _is_ipv6(text: str) -> bool:
    import ipaddress  # not needed for --help

    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{text!r} is not a port number (1-65535)")
    return int(text)


def pin_name(host: str, port: int) -> str:
    """How a host is named in the pin file and in `basra forget`."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

"""What the fuzz targets share: the data provider, an input builder for the seed corpus, and the oracles.

The targets run under atheris (coverage-guided, libFuzzer) and also without
it: the test suite replays the committed corpus through each target's
``TestOneInput`` in-process, on any platform. So that a corpus file means the
same thing both ways, ``make_provider`` returns atheris's FuzzedDataProvider
when atheris is importable, and otherwise ``FallbackProvider``, which
reproduces the few methods the targets use byte for byte (the test suite
checks the two agree).

This module imports nothing from basra_net at import time except through the
functions that need it, so a target can import it after setting up atheris's
instrumentation.
"""

from __future__ import annotations

from typing import Any

try:
    import atheris
except ImportError:  # not on Linux, or the test extra is not installed
    atheris = None


class FallbackProvider:
    """The subset of atheris.FuzzedDataProvider the targets use, with the same semantics.

    Bytes are taken from the front of the input; integers from the back, most
    significant byte first, one byte per 8 bits of the range, reduced modulo
    the range size (libFuzzer's FuzzedDataProvider::ConsumeIntegralInRange).
    An exhausted input yields the low end of a range and empty bytes.
    """

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self._front = 0
        self._back = len(self._data)

    def remaining_bytes(self) -> int:
        return self._back - self._front

    def ConsumeBytes(self, count: int) -> bytes:  # noqa: N802 - atheris's spelling
        count = max(0, min(count, self._back - self._front))
        taken = self._data[self._front : self._front + count]
        self._front += count
        return taken

    def ConsumeIntInRange(self, low: int, high: int) -> int:  # noqa: N802
        if low > high:
            raise ValueError("low > high")
        span = high - low
        result = 0
        offset = 0
        while offset < 64 and (span >> offset) > 0 and self._back > self._front:
            self._back -= 1
            result = (result << 8) | self._data[self._back]
            offset += 8
        return low + result % (span + 1)


def make_provider(data: bytes):
    if atheris is not None:
        return atheris.FuzzedDataProvider(data)
    return FallbackProvider(data)


def int_bytes(low: int, high: int) -> int:
    """How many bytes ConsumeIntInRange(low, high) reads."""
    return (max(high - low, 0).bit_length() + 7) // 8


class InputBuilder:
    """Builds a fuzz input that makes a target read exactly the given values.

    Values are recorded in the order the target consumes them; ``build``
    puts the bytes at the front and the integers (little-endian, last one
    first) at the back, the inverse of FallbackProvider.
    """

    def __init__(self) -> None:
        self._front: list[bytes] = []
        self._back: list[bytes] = []

    def bytes(self, data: bytes) -> "InputBuilder":
        self._front.append(bytes(data))
        return self

    def int(self, value: int, low: int, high: int) -> "InputBuilder":
        if not low <= value <= high:
            raise ValueError(f"{value} not in {low}..{high}")
        size = int_bytes(low, high)
        self._back.append((value - low).to_bytes(size, "little") if size else b"")
        return self

    def build(self) -> bytes:
        return b"".join(self._front) + b"".join(reversed(self._back))


def pick(fdp, options):
    """One of the options, chosen by the input (atheris's PickValueInList reads differently)."""
    return options[fdp.ConsumeIntInRange(0, len(options) - 1)]


# --- oracles --------------------------------------------------------------------------------


def strict_equal(a: Any, b: Any) -> bool:
    """Equality that also tells True from 1 and a list from a tuple."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    return a == b


def check_wire_shape(value: Any, depth: int = 1) -> None:
    """A decoded body holds only the msgpack subset of PROTOCOL.md section 4."""
    from basra_net.protocol.framing import MAX_DEPTH

    if isinstance(value, dict):
        assert depth <= MAX_DEPTH, "a map nests deeper than MAX_DEPTH"
        for key, item in value.items():
            assert type(key) is str, f"a map key of type {type(key).__name__}"
            check_wire_shape(item, depth + 1)
    elif isinstance(value, list):
        assert depth <= MAX_DEPTH, "an array nests deeper than MAX_DEPTH"
        for item in value:
            check_wire_shape(item, depth + 1)
    else:
        assert type(value) in (type(None), bool, int, str, bytes), f"a value of type {type(value).__name__}"



def check_reportable(error, allowed_codes) -> None:
    """A ProtocolError has an expected code, and can go to the peer as a valid `error` message."""
    from basra_net.protocol.framing import decode_body, encode_frame
    from basra_net.protocol.messages import Error, from_wire, to_wire

    assert error.code in allowed_codes, f"error code {error.code!r} where only {sorted(allowed_codes)} may come"
    frame = encode_frame(to_wire(Error(error.code, error.message)))
    report = from_wire(decode_body(frame[4:]))  # raises ProtocolError if the peer would refuse it
    assert report == Error(error.code, error.message)


def fuzz_main(test_one_input) -> None:
    """Run a target under atheris with the command line's libFuzzer flags."""
    import sys

    if atheris is None:
        sys.exit("atheris is not installed: pip install atheris (Linux), or install the project's test extra")
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()

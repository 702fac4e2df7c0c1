#!/usr/bin/env python3
"""Write the hand-made seed inputs of fuzz/corpus/ (and the msgpack dictionary, fuzz/msgpack.dict).

    python fuzz/make_corpus.py

Seeds are named seed-*; files atheris adds while fuzzing are named by their
SHA-1 and are left alone. The seeds are built from the example sessions of
tests/vectors/example_session.json (PROTOCOL.md section 12) and from
messages made here, framed as the targets read their input (see the
docstring of each target): whole and chunked streams, single bodies, and
truncated or corrupted ones.
"""

from __future__ import annotations

import json
import os
import random
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import msgpack  # noqa: E402
from fuzz_common import InputBuilder  # noqa: E402

from basra_net.engine.events import Move  # noqa: E402
from basra_net.engine.scoring import GameScore  # noqa: E402
from basra_net.protocol import messages as m  # noqa: E402
from basra_net.protocol.framing import MAX_FRAME, decode_body, encode_frame  # noqa: E402

VECTORS = HERE.parent / "tests" / "vectors" / "example_session.json"
FRAME_DIR = HERE / "corpus" / "frame_decoder"
HOST_DIR = HERE / "corpus" / "host_connection"
DICT = HERE / "msgpack.dict"

# fuzz_frame_decoder.py
STREAM_MODE, BODY_MODE = 0, 3
# fuzz_host_connection.py
STEP_RAW, STEP_COMMIT, STEP_TURN, STEP_EOF = 0, 1, 2, 3
STEPS = 8


def session_frames() -> dict[str, dict[str, list[bytes]]]:
    """Each example session's frames, by sender."""
    data = json.loads(VECTORS.read_text())
    sessions = {}
    for session in data["sessions"]:
        by_sender: dict[str, list[bytes]] = {"host": [], "guest": []}
        for frame in session["frames"]:
            by_sender[frame["from"]].append(bytes.fromhex(frame["hex"]))
        sessions[session["name"]] = by_sender
    return sessions


SCORE = GameScore(20, 30, 1, 0, 10, 0, 40)


def sample_messages() -> list[m.Message]:
    """One valid message of every type, the keep-alive pair included when the package has it."""
    messages = [
        m.Hello((1,), "Omar", bytes(range(32)), "main", "K7M2QX"),
        m.Welcome(1, 1, bytes(16), bytes(32), "classic", 60, bytes(16), 0),
        m.MatchStart(("Hoda", "Omar")),
        m.Commit(1, bytes(32), bytes(64)),
        m.Seed(1, bytes(32)),
        m.Deal(1, 1, 0, (0, 13, 26, 39), (1, 14, 27, 40), 40, (10,), 1),
        m.YourTurn(7, (Move(0, (), "drop"), Move(1, (14,), "capture"), Move(10, (2, 3), "sweep"))),
        m.Play(7, 1, (14,)),
        m.Played(1, 0, 6, (2, 3), "capture", (4, 5), 1),
        m.GameEnd(1, 0, (7, 8), (SCORE, SCORE), (40, 40)),
        m.Reveal(1, bytes(32), bytes(64)),
        m.MatchEnd(0, (101, 60), "target"),
        m.Error("stale_request", "request 3 is not the open request 4"),
        m.Leave("bye"),
    ]
    for name in ("Ping", "Pong"):
        if hasattr(m, name):
            messages.append(getattr(m, name)(1))
    if hasattr(m, "Chat"):
        messages.append(m.Chat(text="well played"))
    return messages


def framed(wire: dict) -> bytes:
    body = msgpack.packb(wire, use_bin_type=True)
    return struct.pack(">I", len(body)) + body


def body_of(frame: bytes) -> bytes:
    return frame[4:]


# --- fuzz_frame_decoder.py ------------------------------------------------------------------


def stream_input(stream: bytes, chunks: list[int] | None = None) -> bytes:
    """Stream mode: the stream in one piece, or in chunks of the given sizes (1..255)."""
    builder = InputBuilder().int(STREAM_MODE, 0, 3)
    if chunks is None:
        return builder.int(0, 0, 255).bytes(stream).build()
    at = 0
    for size in chunks:
        builder.int(size, 0, 255).bytes(stream[at : at + size])
        at += size
    if at < len(stream):
        builder.int(0, 0, 255).bytes(stream[at:])
    return builder.build()


def body_input(body: bytes) -> bytes:
    return InputBuilder().int(BODY_MODE, 0, 3).bytes(body).build()


def bad_bodies() -> dict[str, bytes]:
    """Bodies that break one rule of PROTOCOL.md section 4 (or one of section 6) each."""
    ok = {"type": "leave", "reason": ""}
    packed = msgpack.packb(ok)
    deep: object = {"type": "x"}
    for _ in range(8):
        deep = {"type": "x", "a": deep}
    return {
        "empty": b"",
        "array": msgpack.packb(["type", "leave"]),
        "float": msgpack.packb({"type": "leave", "reason": 1.5}),
        "ext": msgpack.packb({"type": "leave", "reason": msgpack.ExtType(5, b"x")}),
        "timestamp": b"\x82\xa4type\xa5leave\xa6reason\xd6\xff\x00\x00\x00\x00",
        "trailing": packed + b"\xc0",
        "truncated": packed[:-3],
        "dup-key": b"\x83" + packed[1:] + b"\xa4type\xa5leave",
        "dup-long-key": b"\x82" + msgpack.packb("k" * 600) + b"\x01" + msgpack.packb("k" * 600) + b"\x02",
        "int-key": b"\x82\xa4type\xa5leave\x01\x02",
        "bin-key": b"\x82\xa4type\xa5leave\xc4\x01k\x02",
        "bad-utf8": b"\x81\xa4type\xa2\xff\xfe",
        "never-used": b"\x81\xa4type\xc1",
        "lying-count": b"\xdf\xff\xff\xff\xff\xa4type\xa5leave",
        "lying-array": b"\x82\xa4type\xa5leave\xa1a\xdd\xff\xff\xff\xff\xc0",
        "no-type": msgpack.packb({"reason": "x"}),
        "type-not-str": msgpack.packb({"type": 7}),
        "too-deep": msgpack.packb(deep),
        "deep-ok": msgpack.packb({"type": "x", "a": [[[[[[1]]]]]]}),
        "unknown-type": msgpack.packb({"type": "hello2"}),
        "unprintable-type": msgpack.packb({"type": "\x1b[31m"}),
        "bool-not-int": msgpack.packb({"type": "seed", "game": True, "seed": bytes(32)}, use_bin_type=True),
        "str-not-bin": msgpack.packb({"type": "seed", "game": 1, "seed": "x" * 32}, use_bin_type=True),
        "big-int": msgpack.packb({"type": "play", "request": 2**64 - 1, "card": "AS", "captures": []}),
        "bad-card": msgpack.packb({"type": "play", "request": 1, "card": "1S", "captures": []}),
        "dup-card": msgpack.packb({"type": "play", "request": 1, "card": "AS", "captures": ["2S", "2S"]}),
        "control-name": msgpack.packb({"type": "hello", "versions": [1], "name": "a\x07", "nonce": bytes(32)}, use_bin_type=True),
        "long-text": msgpack.packb({"type": "leave", "reason": "x" * 513}),
        "missing-field": msgpack.packb({"type": "welcome", "version": 1}),
        "null-optional": msgpack.packb(
            {"type": "hello", "versions": [1], "name": "Omar", "nonce": bytes(32), "table": None, "code": None},
            use_bin_type=True,
        ),
        "extra-field": msgpack.packb({"type": "leave", "reason": "", "later": {"a": [1, b"x", None]}}, use_bin_type=True),
    }


MAX_STREAM = 3000  # bytes of a session's stream in one seed: long inputs slow every execution down


def prefix(frames: list[bytes], limit: int) -> bytes:
    """The first frames, as many as fit in ``limit`` bytes (at least one)."""
    stream = frames[0]
    for frame in frames[1:]:
        if len(stream) + len(frame) > limit:
            break
        stream += frame
    return stream


def frame_decoder_seeds() -> dict[str, bytes]:
    rng = random.Random(6)
    seeds: dict[str, bytes] = {}
    for name, frames in session_frames().items():
        for sender, items in frames.items():
            stream = prefix(items, MAX_STREAM)
            seeds[f"{name}-{sender}"] = stream_input(stream)
            sizes = [rng.randint(1, 255) for _ in range(len(stream) // 60 + 1)]
            seeds[f"{name}-{sender}-chunked"] = stream_input(stream, sizes)
        guest = b"".join(frames["guest"])
        seeds[f"{name}-guest-cut"] = stream_input(guest[: len(guest) - 7])
        flipped = bytearray(guest)
        flipped[len(flipped) // 2] ^= 0x40
        seeds[f"{name}-guest-flipped"] = stream_input(bytes(flipped))
    for message in sample_messages():
        frame = encode_frame(m.to_wire(message))
        seeds[f"body-{message.TYPE}"] = body_input(body_of(frame))
        seeds[f"bytewise-{message.TYPE}"] = stream_input(frame, [1] * min(len(frame), 12))
    for name, body in bad_bodies().items():
        seeds[f"bad-{name}"] = body_input(body)
    seeds["frame-len-0"] = stream_input(b"\x00\x00\x00\x00" + b"\x80")
    seeds["frame-len-max+1"] = stream_input(struct.pack(">I", MAX_FRAME + 1) + b"\x80")
    seeds["frame-len-max"] = stream_input(struct.pack(">I", MAX_FRAME) + b"\x81\xa4type")
    seeds["header-only"] = stream_input(b"\x00\x00")
    return seeds


# --- fuzz_host_connection.py ----------------------------------------------------------------


class HostScript:
    """An input for fuzz_host_connection.py, step by step."""

    def __init__(self) -> None:
        self.builder = InputBuilder()
        self.request = 0
        self.said_hello = False

    def raw(self, data: bytes, *, welcome_seat: int | None = None, hello: bool = False) -> "HostScript":
        """Feed bytes as they are, in raw steps of at most 255 bytes.

        ``hello``: the bytes end with a hello the connection accepts; the
        harness then reads whether to welcome it (and to which seat).
        """
        for at in range(0, len(data), 255):
            piece = data[at : at + 255]
            self.builder.int(STEP_RAW, 0, STEPS - 1).int(len(piece), 0, 255).bytes(piece)
        if hello:
            if welcome_seat is None:
                self.builder.int(0, 0, 3)
            else:
                self.builder.int(1, 0, 3).int(welcome_seat, 0, 1)
        return self

    def commit(self) -> "HostScript":
        self.builder.int(STEP_COMMIT, 0, STEPS - 1)
        return self

    def your_turn(self, skip: int = 0) -> "HostScript":
        self.builder.int(STEP_TURN, 0, STEPS - 1).int(skip, 0, 3)
        self.request += 1 + skip
        return self

    def eof(self) -> "HostScript":
        self.builder.int(STEP_EOF, 0, STEPS - 1)
        return self

    def send(self, message: m.Message) -> "HostScript":
        """Feed one intact frame; a first hello is welcomed to seat 1."""
        first_hello = isinstance(message, m.Hello) and not self.said_hello
        self.said_hello = self.said_hello or first_hello
        return self.raw(encode_frame(m.to_wire(message)), hello=first_hello, welcome_seat=1)

    def build(self) -> bytes:
        return self.builder.build()


def host_connection_seeds() -> dict[str, bytes]:
    hello = m.Hello((1,), "Omar", bytes(range(32)))
    seeds: dict[str, bytes] = {}
    sessions = session_frames()
    for name, frames in sessions.items():
        guest = frames["guest"]
        script = HostScript().raw(guest[0], hello=True, welcome_seat=1)  # every session starts with a hello
        for frame in guest[1:]:
            wire = decode_body(body_of(frame))
            # The host's side as the session had it: a commit before each seed, a your_turn before each play.
            if wire["type"] == "seed":
                script.commit()
            elif wire["type"] == "play" and 0 <= wire["request"] - script.request - 1 <= 3:
                script.your_turn(wire["request"] - script.request - 1)
            script.raw(frame)
        seeds[f"{name}-guest"] = script.build()

    # The session a seat 1 plays: hello, seed, plays (one stale), an error report, a ping, a leave.
    s = HostScript().send(hello).commit().send(m.Seed(1, bytes(32))).your_turn()
    s.send(m.Play(s.request, 5, ())).your_turn(2).send(m.Play(s.request - 1, 7, (3,))).send(m.Play(s.request, 7, (3,)))
    s.send(m.Error("illegal_move", "not that"))
    if hasattr(m, "Ping"):
        s.send(m.Ping(1)).send(m.Pong(1))
    seeds["happy-path-leave"] = s.send(m.Leave("bye")).build()

    s = HostScript().send(hello).your_turn().send(m.Play(1, 0, ())).commit().send(m.Seed(2, bytes(32)))
    seeds["wrong-seed-then-eof"] = s.send(m.Seed(1, bytes(32))).eof().build()

    s = HostScript().send(hello).send(m.Play(0, 0, ())).send(m.Seed(1, bytes(32))).send(hello)
    seeds["refusals-when-seated"] = s.send(m.Deal(1, 1, 0, (0, 1, 2, 3), (4, 5, 6, 7), 40, (), 1)).build()

    seeds["before-hello"] = HostScript().send(m.Leave("early")).build()
    seeds["hello-not-welcomed"] = HostScript().raw(encode_frame(m.to_wire(hello)), hello=True).send(m.Leave("x")).build()
    seeds["fatal-error-report"] = HostScript().send(hello).send(m.Error("internal", "oops")).build()
    seeds["bad-message-seated"] = (
        HostScript().send(hello).raw(framed({"type": "play", "request": -1, "card": "AS", "captures": []})).build()
    )
    frame = encode_frame(m.to_wire(hello))
    seeds["eof-mid-frame"] = HostScript().raw(frame[:30]).eof().build()
    seeds["junk"] = HostScript().raw(b"\x00\x00\x00\x05\x81\xa4type\xc1").build()
    return seeds


# --- the dictionary -------------------------------------------------------------------------


def dictionary() -> list[bytes]:
    """msgpack tokens of the protocol: the field names and type names as fixstr, card names, a few heads."""
    words: set[str] = {"type"}
    for message in sample_messages():
        wire = m.to_wire(message)
        words.update(wire)
        words.add(wire["type"])
    words.update(m.PLAY_KINDS)
    words.update(m.MATCH_END_REASONS)
    words.update(getattr(m, "REACTIONS", ()))
    words.update(("egyptian", "classic", "AS", "10D", "JC", "7D", "QH", "KS"))
    tokens = sorted(msgpack.packb(word) for word in words)
    tokens += [b"\xc4\x20", b"\xc4\x40", b"\xc4\x10", b"\x91\x01", b"\xdc\x00\x00", b"\xde\x00\x00", b"\xcf", b"\xd3"]
    return tokens


def write_dictionary(path: Path) -> None:
    lines = ["# msgpack tokens of the basra-net protocol; written by fuzz/make_corpus.py"]
    for i, token in enumerate(dictionary()):
        lines.append(f'kw{i}="' + "".join(f"\\x{b:02x}" for b in token) + '"')
    path.write_text("\n".join(lines) + "\n")


def write(folder: Path, seeds: dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("seed-*"):
        old.unlink()
    for name, data in seeds.items():
        (folder / f"seed-{name}").write_bytes(data)


def main() -> None:
    write(FRAME_DIR, frame_decoder_seeds())
    write(HOST_DIR, host_connection_seeds())
    write_dictionary(DICT)
    for folder in (FRAME_DIR, HOST_DIR):
        files = list(folder.iterdir())
        print(f"{folder.relative_to(HERE.parent)}: {len(files)} files, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    os.chdir(HERE.parent)
    main()

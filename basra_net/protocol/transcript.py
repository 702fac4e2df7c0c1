"""The transcript file: one channel of a match, message by message (PROTOCOL.md, sections 11 and 14.10).

A transcript is a sequence of frames (the wire framing) in a file: a header
map, then one record per message exchanged between the host and a seat, in
the order they were sent, plus notes the writer adds (a verification result,
a deal the host abandoned).  The host and the joining player each write one;
both verify the same way.  Format 1 (version 1's matches) keeps each message
as a map; format 2 (version 2's) keeps each frame's exact body, which the
signed record hashes.  This module turns records into bytes and bytes into
records; the caller reads and writes the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ProtocolError
from .framing import FrameDecoder, decode_body, encode_frame
from .messages import Message, from_wire, to_wire
from .verify import GUEST, HOST, Discrepancy, GameCheck, MatchVerifier

FORMAT = 1
SIGNED_FORMAT = 2  # version 2: records keep the frame bodies the signatures cover
FORMATS = (FORMAT, SIGNED_FORMAT)
ROLES = (HOST, GUEST)
NOTE_KINDS = ("verification", "abandoned_deal", "connection")


class TranscriptError(Exception):
    """The bytes are not a transcript this version can read."""


@dataclass(frozen=True)
class Note:
    kind: str
    game: int | None
    text: str


@dataclass
class Transcript:
    role: str
    records: list[tuple[str, Message]] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    format: int = FORMAT
    bodies: list[tuple[str, bytes]] = field(default_factory=list)  # format 2: each record's frame body, in order


def header(role: str, format: int = FORMAT) -> bytes:
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}")
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}")
    return encode_frame({"type": "transcript", "format": format, "role": role})


def record(sender: str, message: Message) -> bytes:
    return wire_record(sender, to_wire(message))


def wire_record(sender: str, wire: dict) -> bytes:
    """A format-1 record of a message given as its wire map."""
    if sender not in ROLES:
        raise ValueError(f"sender must be one of {ROLES}")
    return encode_frame({"type": "record", "from": sender, "message": wire})


def body_record(sender: str, body: bytes) -> bytes:
    """A format-2 record: the frame body exactly as it was sent or received."""
    if sender not in ROLES:
        raise ValueError(f"sender must be one of {ROLES}")
    return encode_frame({"type": "record", "from": sender, "body": body})


def note(kind: str, game: int | None, text: str) -> bytes:
    if kind not in NOTE_KINDS:
        raise ValueError(f"note kind must be one of {NOTE_KINDS}")
    return encode_frame({"type": "note", "kind": kind, "game": game, "text": text})


def parse(data: bytes) -> Transcript:
    """Every record of a transcript file; TranscriptError names the first thing wrong."""
    decoder = FrameDecoder()
    decoder.feed(data)
    frames = []
    try:
        while (frame := decoder.next_message()) is not None:
            frames.append(frame)
    except ProtocolError as err:
        raise TranscriptError(f"frame {len(frames) + 1}: {err}") from None
    if decoder.buffered:
        raise TranscriptError(f"the file ends inside frame {len(frames) + 1} (truncated)")
    if not frames or frames[0].get("type") != "transcript":
        raise TranscriptError("the file does not start with a transcript header")
    head = frames[0]
    if head.get("format") not in FORMATS or type(head.get("format")) is not int:
        raise TranscriptError(f"transcript format {head.get('format')!s:.20} is not format 1 or 2")
    if head.get("role") not in ROLES:
        raise TranscriptError("the header names no role (host or guest)")
    transcript = Transcript(role=head["role"], format=head["format"])
    for number, frame in enumerate(frames[1:], start=2):
        kind = frame.get("type")
        if kind == "record":
            sender = frame.get("from")
            try:
                if transcript.format == FORMAT:
                    wire = frame.get("message")
                    if sender not in ROLES or type(wire) is not dict:
                        raise TranscriptError(f"frame {number}: a record needs 'from' (host or guest) and a 'message' map")
                else:
                    body = frame.get("body")
                    if sender not in ROLES or type(body) is not bytes:
                        raise TranscriptError(f"frame {number}: a record needs 'from' (host or guest) and a 'body' (bin)")
                    wire = decode_body(body)
                    transcript.bodies.append((sender, body))
                transcript.records.append((sender, from_wire(wire)))
            except ProtocolError as err:
                raise TranscriptError(f"frame {number}: {err}") from None
        elif kind == "note":
            game, text = frame.get("game"), frame.get("text")
            if frame.get("kind") not in NOTE_KINDS or type(text) is not str or not (game is None or type(game) is int):
                raise TranscriptError(f"frame {number}: a malformed note")
            transcript.notes.append(Note(frame["kind"], game, text))
        else:
            raise TranscriptError(f"frame {number}: unknown record type")
    return transcript


@dataclass
class VerifyReport:
    checks: list[GameCheck]
    problems: list[Discrepancy]  # every discrepancy, games first, in order
    verifier: MatchVerifier

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(transcript: Transcript) -> VerifyReport:
    verifier = MatchVerifier()
    for sender, message in transcript.records:
        verifier.observe(sender, message)
    problems = [p for check in verifier.checks for p in check.discrepancies]
    problems.extend(verifier.finish())
    if verifier.welcome is None:
        problems.insert(0, Discrepancy(None, "handshake", "a welcome from the host", "none"))
    return VerifyReport(verifier.checks, problems, verifier)

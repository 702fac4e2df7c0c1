"""The files a match leaves in the data directory: its transcript, written as the match goes, and the tickets to resume it.

Both sides write transcripts (the host's own seat and a served table too), so this sits below client/ and host/.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from .files import LocalFileError, data_dir, open_private, private_dir, write_private
from .protocol import transcript
from .protocol.framing import encode_frame
from .protocol.messages import Message, to_wire


def default_transcript_path(match_id: bytes, role: str) -> Path:
    folder = private_dir(data_dir() / "transcripts")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return folder / f"{stamp}-{match_id.hex()[:12]}-{role}.basra"


class TranscriptFile:
    """Appends transcript frames to a file as the match goes.

    Each append goes to the file at once (no buffer) so that a crash loses at
    most the frame being written; appends are a few hundred bytes, so they are
    written synchronously rather than through a worker thread.  An append the
    disk refuses is cut off again, so the file stays whole frames, and none
    follows it: the file is a readable prefix of the match.
    """

    def __init__(self, path: Path, role: str, format: int = transcript.FORMAT) -> None:
        self.path = path
        self.role = role
        # The host learns the version, and so the format, only when seat 1 sits down: the header is written
        # with the first record, and the format may be set until then.
        self.format = format
        self._started = False
        self._size = 0  # bytes of whole frames in the file
        self.failed = False  # a write failed: what the file holds stops there
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open_private(path)  # the first welcome holds the seat's live resume token
        except OSError as err:
            raise LocalFileError("the transcript", path, err) from None

    def _write(self, frame: bytes) -> None:
        if self.failed:
            return  # told once: a file that lost a record is not written further, so it stays a clean prefix
        data = frame if self._started else transcript.header(self.role, self.format) + frame
        self._started = True
        descriptor = self._file.fileno()
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view):]
        except OSError as err:
            self.failed = True
            with contextlib.suppress(OSError):
                os.ftruncate(descriptor, self._size)
            raise LocalFileError("the transcript", self.path, err) from None
        self._size += len(data)

    def record(self, sender: str, message: Message, frame: bytes | None = None) -> None:
        """Record a message; in format 2 its frame (as sent or received) is kept, else it is encoded here."""
        if self.format == transcript.FORMAT:
            self._write(transcript.record(sender, message))
        else:
            self._write(transcript.body_record(sender, (frame or encode_frame(to_wire(message)))[4:]))

    def note(self, kind: str, game: int | None, text: str) -> None:
        self._write(transcript.note(kind, game, text))

    def close(self) -> None:
        if not self._file.closed:
            try:
                self._write(b"")  # a file with no record still has its header
            finally:
                self._file.close()


RESUME_FILE = "resume.json"


@dataclass(frozen=True)
class ResumeTicket:
    """What `basra join` keeps to resume a match it was cut off from: the seat's token and its transcript."""

    match_id: bytes
    token: bytes
    transcript: Path
    # Hidden hands: the game in progress and the seat's secret lock for it, as secret as its hand (PROTOCOL.md 15.4).
    lock: tuple[int, bytes] | None = None


class ResumeTickets:
    """The tickets of matches in progress, one per host, in the data directory (written atomically)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict:
        try:
            entries = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return entries if isinstance(entries, dict) else {}

    def _write(self, entries: dict) -> None:
        try:
            write_private(self.path, json.dumps(entries, indent=1).encode())
        except OSError as err:
            raise LocalFileError("the resume ticket", self.path, err) from None

    def get(self, host: str) -> ResumeTicket | None:
        entry = self._read().get(host)
        try:
            lock = entry.get("lock") if isinstance(entry, dict) else None
            return ResumeTicket(
                bytes.fromhex(entry["match"]), bytes.fromhex(entry["token"]), Path(entry["transcript"]),
                (int(lock[0]), bytes.fromhex(lock[1])) if lock is not None else None,
            )
        except (TypeError, KeyError, ValueError):
            return None

    def put(self, host: str, ticket: ResumeTicket) -> None:
        entries = self._read()
        entries[host] = {"match": ticket.match_id.hex(), "token": ticket.token.hex(), "transcript": str(ticket.transcript)}
        if ticket.lock is not None:
            entries[host]["lock"] = [ticket.lock[0], ticket.lock[1].hex()]
        self._write(entries)

    def drop(self, host: str) -> None:
        entries = self._read()
        if entries.pop(host, None) is not None:
            self._write(entries)

"""The files a match leaves in the data directory: its transcript, written as the match goes, and the tickets to resume it.

Both sides write transcripts (the host's own seat and a served table too), so this sits below client/ and host/.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; one player per data directory there
    fcntl = None  # type: ignore[assignment]

from .files import PRIVATE_FILE_MODE, LocalFileError, data_dir, open_private, private_dir, write_private
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

    def record_sent(self, sender: str, wire: dict, frame: bytes) -> None:
        """Record a message given as its wire map and its frame, as sent: nothing is encoded again."""
        self._write(transcript.wire_record(sender, wire) if self.format == transcript.FORMAT else transcript.body_record(sender, frame[4:]))

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
    """What `basra join` keeps to resume a match it was cut off from: the seat's token and its transcript.

    It is found again by the host it was kept for and the player's name and table: two players sharing a data
    directory may be cut off from one host at once, and each resumes its own seat.
    """

    host: str  # the host's address as `basra join` names it
    name: str | None  # the player's name; None in a ticket of an earlier version, which named no player
    table: str | None  # the table asked for (`--table`), None for the host's only or default one
    match_id: bytes
    seat: int
    token: bytes
    transcript: Path
    # Hidden hands: the game in progress and the seat's secret lock for it, as secret as its hand (PROTOCOL.md 15.4).
    lock: tuple[int, bytes] | None = None

    @property
    def key(self) -> str:
        return f"{self.host} {self.match_id.hex()} {self.seat}"

    def is_for(self, host: str, name: str, table: str | None) -> bool:
        return self.host == host and (self.name is None or (self.name, self.table) == (name, table))


# A match whose transcript has not grown for this long is not coming back: no host waits longer than a day
# (the longest grace), and a week leaves room for a host restarted late from its journal.
TICKET_STALE_AFTER = 7 * 24 * 3600


def ticket_is_stale(ticket: ResumeTicket, now: float) -> bool:
    """Whether the match is past resuming: its transcript written last long ago (one not yet begun is not)."""
    try:
        return now - ticket.transcript.stat().st_mtime > TICKET_STALE_AFTER
    except OSError:
        return False


class ResumeTickets:
    """The tickets of matches in progress, one per host, match and seat, in the data directory (written atomically).

    A file of an earlier version kept one ticket per host, under the host's address alone: its tickets are read
    as tickets for any player at that host, and written back under their own keys.  Each change drops the
    tickets of matches past resuming (`ticket_is_stale`), so the file does not keep every match a player
    walked away from.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, ResumeTicket]:
        try:
            entries = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        tickets = {}
        for key, entry in (entries.items() if isinstance(entries, dict) else ()):
            try:
                lock = entry.get("lock")
                ticket = ResumeTicket(
                    host=entry.get("host", key), name=entry.get("name"), table=entry.get("table"),
                    match_id=bytes.fromhex(entry["match"]), seat=int(entry.get("seat", 1)), token=bytes.fromhex(entry["token"]),
                    transcript=Path(entry["transcript"]), lock=(int(lock[0]), bytes.fromhex(lock[1])) if lock is not None else None,
                )
            except (AttributeError, TypeError, KeyError, ValueError, IndexError):
                continue  # not a ticket: resuming from it could not work
            tickets[ticket.key] = ticket
        return tickets

    def _write(self, tickets: dict[str, ResumeTicket]) -> None:
        entries = {
            key: {
                "host": t.host, "name": t.name, "table": t.table, "match": t.match_id.hex(), "seat": t.seat,
                "token": t.token.hex(), "transcript": str(t.transcript),
                **({"lock": [t.lock[0], t.lock[1].hex()]} if t.lock is not None else {}),
            }
            for key, t in tickets.items()
        }
        try:
            write_private(self.path, json.dumps(entries, indent=1).encode())
        except OSError as err:
            raise LocalFileError("the resume ticket", self.path, err) from None

    def find(self, host: str, name: str, table: str | None) -> ResumeTicket | None:
        """The ticket this player keeps for this host and table: the newest of its own, else one of an earlier version."""
        fitting = [t for t in self._read().values() if t.is_for(host, name, table)]
        own = [t for t in fitting if t.name is not None]
        return (own or fitting or [None])[-1]

    def any_for(self, host: str) -> bool:
        return any(t.host == host for t in self._read().values())

    def get(self, key: str) -> ResumeTicket | None:
        return self._read().get(key)

    @contextlib.contextmanager
    def _changing(self) -> Iterator[dict[str, ResumeTicket]]:
        """The tickets, read and written back under a lock: two players sharing the file each keep their own change."""
        try:
            descriptor = os.open(self.path.with_name(f"{self.path.name}.lock"), os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
        except OSError as err:
            raise LocalFileError("the resume ticket", self.path, err) from None
        try:
            if fcntl is not None:
                fcntl.flock(descriptor, fcntl.LOCK_EX)  # held for a read and a small write, so a blocking wait is brief
            tickets = self._read()
            yield tickets
            now = time.time()
            self._write({key: t for key, t in tickets.items() if not ticket_is_stale(t, now)})
        finally:
            os.close(descriptor)  # and with it the lock

    def put(self, ticket: ResumeTicket) -> None:
        with self._changing() as tickets:
            tickets[ticket.key] = ticket

    def drop(self, key: str) -> None:
        with self._changing() as tickets:
            tickets.pop(key, None)

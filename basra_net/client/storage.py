"""Files a player keeps: the data directory and transcript files."""

from __future__ import annotations

import os
import time
from pathlib import Path

import platformdirs

from ..protocol import transcript
from ..protocol.messages import Message


def data_dir() -> Path:
    """Where basra-net keeps keys and transcripts; BASRA_HOME overrides (tests, portable installs)."""
    override = os.environ.get("BASRA_HOME")
    path = Path(override) if override else Path(platformdirs.user_data_dir("basra-net", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_transcript_path(match_id: bytes, role: str) -> Path:
    folder = data_dir() / "transcripts"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return folder / f"{stamp}-{match_id.hex()[:12]}-{role}.basra"


class TranscriptFile:
    """Appends transcript frames to a file as the match goes.

    Each append is flushed at once so that a crash loses at most the frame
    being written; appends are a few hundred bytes, so they are written
    synchronously rather than through a worker thread.
    """

    def __init__(self, path: Path, role: str) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "wb")
        self._write(transcript.header(role))

    def _write(self, frame: bytes) -> None:
        self._file.write(frame)
        self._file.flush()

    def record(self, sender: str, message: Message) -> None:
        self._write(transcript.record(sender, message))

    def note(self, kind: str, game: int | None, text: str) -> None:
        self._write(transcript.note(kind, game, text))

    def close(self) -> None:
        self._file.close()

"""The data directory, and the files a player keeps in it, readable by their owner only.

Transcripts hold live resume tokens, the pins decide whom a player trusts,
and the identity keys make signatures a player's own; so the data directory
and its folders are 0700 and every file in them 0600, whatever the umask, and
a directory or file left more open by an earlier version is tightened when
it is next used.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

import platformdirs

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def _tighten(path: Path, mode: int) -> None:
    if os.name == "posix" and stat.S_IMODE(path.stat().st_mode) & ~mode:
        os.chmod(path, mode)


def private_dir(path: Path) -> Path:
    """The folder, made if need be, open to its owner only."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    _tighten(path, PRIVATE_DIR_MODE)
    return path


class LocalFileError(OSError):
    """A file of the player's own could not be written (the disk is full, the data directory was removed).

    An OSError still, for code that treats every OSError alike; its text says, in one line, which file failed
    and why, so that a player is never told the network failed when the disk did.
    """

    def __init__(self, what: str, path: Path, err: OSError) -> None:
        super().__init__(f"cannot write {what} {path}: {err.strerror or err}")


def data_dir() -> Path:
    """Where basra-net keeps keys and transcripts; BASRA_HOME overrides (tests, portable installs)."""
    override = os.environ.get("BASRA_HOME")
    path = Path(override) if override else Path(platformdirs.user_data_dir("basra-net", appauthor=False))
    return private_dir(path)


def open_private(path: Path) -> BinaryIO:
    """The file, created or emptied, for writing; open to its owner only even if it existed before."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), PRIVATE_FILE_MODE)
    if hasattr(os, "fchmod"):
        os.fchmod(fd, PRIVATE_FILE_MODE)
    return os.fdopen(fd, "wb")


def write_private(path: Path, data: bytes) -> None:
    """Replace the whole file at once (a temporary beside it, then a rename), open to its owner only.

    The temporary is this process's own: two players sharing a data directory may write the same file at once.
    """
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open_private(temporary) as file:
        file.write(data)
    os.replace(temporary, path)


def create_private(path: Path, data: bytes) -> bool:
    """Write the file only if it does not exist yet, all at once; False when another process made it first."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open_private(temporary) as file:
        file.write(data)
    try:
        os.link(temporary, path)  # fails if the file exists: never a half-written key under the real name
    except FileExistsError:
        return False
    finally:
        temporary.unlink()
    return True


def tighten_file(path: Path) -> None:
    _tighten(path, PRIVATE_FILE_MODE)

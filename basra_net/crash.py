"""What an unexpected exception leaves behind: a crash report with its traceback, and one line for the user.

The report goes into the data directory (BASRA_HOME, or the user data
directory), under crashes/; when that cannot be written, into the system's
temporary directory, so that a broken data directory still yields a report.
"""

from __future__ import annotations

import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path


def write_crash_report(err: BaseException, argv: list[str]) -> str:
    """Write the report; return the line to show (what went wrong, and where the details are)."""
    text = (
        f"basra {' '.join(argv)}\n"
        f"time: {time.strftime('%Y-%m-%d %H:%M:%S %z')}\n"
        f"python: {sys.version.split()[0]} on {platform.platform()}\n\n"
        + "".join(traceback.format_exception(err))
    )
    name = f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{id(err) & 0xFFFF:04x}.txt"
    summary = f"unexpected error ({type(err).__name__}: {_first_line(err)})"
    for folder in _report_folders():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / name
            path.write_text(text, encoding="utf-8")
        except OSError:
            continue
        return f"{summary}; this is a bug, and the details are in {path}"
    return f"{summary}; this is a bug (no crash report could be written)"


def _first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[0][:200] if lines else "no message"


def _report_folders() -> list[Path]:
    folders = []
    try:
        from .files import data_dir

        folders.append(data_dir() / "crashes")
    except Exception:  # the data directory itself may be what is broken
        pass
    folders.append(Path(tempfile.gettempdir()) / "basra-net-crashes")
    return folders

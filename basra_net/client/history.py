"""`basra history`: the matches whose transcripts are in the data directory, newest first.

Each transcript is read and verified once: what a line shows (the date, the
opponent, the host key's fingerprint, the result, the deal and the verdict)
is kept in `history.json` beside the transcripts, under the file's name,
size and modification time, so a long history lists at once and a transcript
that grew (a match resumed) is read again.  `basra verify` and `basra replay`
name a past match by its number here (1, the newest, is also `--last`).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from typing import TYPE_CHECKING

from ..exits import EXIT_OK
from ..files import LocalFileError, data_dir, write_private

if TYPE_CHECKING:
    from ..protocol.messages import MatchEnd

TRANSCRIPTS = "transcripts"
CACHE_FILE = "history.json"
CACHE_VERSION = 1
_STAMP = re.compile(r"^(\d{8}-\d{6})-")  # the start of a name the data directory gives a transcript


@dataclass
class PastMatch:
    """One transcript, as a line of the history."""

    file: str  # the transcript's path
    date: str  # when the match began, "YYYY-MM-DD HH:MM"
    role: str  # "host" or "guest": whose file it is
    opponent: str
    fingerprint: str  # the host key's
    result: str  # "won 101-64", "lost 40-101", "abandoned ...", "unfinished ..."
    deal: str  # "hidden hands" or "commit-reveal"
    verified: str  # basra verify's verdict in a few words
    ok: bool  # whether that verdict holds

    @property
    def path(self) -> Path:
        return Path(self.file)


def describe_transcript(path: Path) -> PastMatch:
    """What the history shows of one transcript; OSError or TranscriptError when it cannot be read."""
    # The verifier is imported only for a transcript not yet in the cache: a listing from the cache needs none of it.
    from ..protocol.fingerprint import key_fingerprint
    from ..protocol.messages import HIDDEN_DEAL, MatchEnd, MatchStart, Welcome
    from .verify_file import read_transcript, verdict_in_words

    parsed = read_transcript(path)
    verdict, ok, _ = verdict_in_words(parsed)
    viewer = 0 if parsed.role == "host" else 1
    welcome = next((m for _, m in parsed.records if isinstance(m, Welcome)), None)
    start = next((m for _, m in parsed.records if isinstance(m, MatchStart)), None)
    end = next((m for _, m in parsed.records if isinstance(m, MatchEnd)), None)
    return PastMatch(
        file=str(path),
        date=_date(path),
        role=parsed.role,
        opponent=start.names[1 - viewer] if start is not None else "",
        fingerprint=key_fingerprint(welcome.host_key) if welcome is not None else "",
        result=_result(end, viewer),
        deal=("hidden hands" if start.deal == HIDDEN_DEAL else "commit-reveal") if start is not None else "",
        verified=verdict,
        ok=ok,
    )


def _date(path: Path) -> str:
    stamp = _STAMP.match(path.name)
    when = datetime.strptime(stamp.group(1), "%Y%m%d-%H%M%S") if stamp else datetime.fromtimestamp(path.stat().st_mtime)
    return when.strftime("%Y-%m-%d %H:%M")


def _result(end: MatchEnd | None, viewer: int) -> str:
    if end is None:
        return "unfinished"
    score = f"{end.totals[viewer]}-{end.totals[1 - viewer]}"
    outcome = "no winner" if end.winner is None else "won" if end.winner == viewer else "lost"
    return f"{outcome} {score}" + (" (abandoned)" if end.termination.abandoned else "")


def past_matches(folder: Path | None = None) -> list[PastMatch]:
    """Every readable transcript in the folder, newest first; the cache read and brought up to date."""
    folder = folder if folder is not None else data_dir() / TRANSCRIPTS
    cache_path = folder.parent / CACHE_FILE
    cached = _read_cache(cache_path)
    fresh: dict[str, dict] = {}
    matches = []
    for path in sorted(folder.glob("*.basra")) if folder.is_dir() else []:
        try:
            status = path.stat()
        except OSError:
            continue
        stamp = [status.st_size, status.st_mtime_ns]
        entry = cached.get(path.name)
        match = _cached_match(entry) if isinstance(entry, dict) and entry.get("stamp") == stamp else False
        if match is False:
            from ..protocol.transcript import TranscriptError

            try:
                match = describe_transcript(path)
            except (OSError, TranscriptError):
                match = None  # not a transcript: skipped until it changes
        fresh[path.name] = {"stamp": stamp, "match": asdict(match) if match is not None else None}
        if match is not None:
            matches.append(match)
    if fresh != cached:
        try:
            write_private(cache_path, json.dumps({"version": CACHE_VERSION, "files": fresh}).encode())
        except LocalFileError:
            pass  # a cache that cannot be written is read afresh next time
    return sorted(matches, key=lambda match: (match.date, match.file), reverse=True)


def _cached_match(entry: dict) -> PastMatch | None | bool:
    """The match a cache entry holds, None for a file that is no transcript, False for an entry unfit to use."""
    try:
        return None if entry["match"] is None else PastMatch(**entry["match"])
    except (KeyError, TypeError):
        return False


def _read_cache(path: Path) -> dict[str, dict]:
    try:
        cache = json.loads(path.read_text())
        return cache["files"] if cache.get("version") == CACHE_VERSION and isinstance(cache["files"], dict) else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def named_transcript(argument: Path | None, last: bool, command: str) -> Path | None:
    """The transcript a command names: a file, `--last`, or a number from `basra history`; None, said, when none."""
    if argument is not None and (argument.exists() or not str(argument).isdigit()):
        return argument
    index = 1 if argument is None else int(str(argument))
    if argument is None and not last:
        print(f"basra {command}: name a transcript: a FILE, --last, or a number from `basra history`", file=sys.stderr)
        return None
    matches = past_matches()
    if not 1 <= index <= len(matches):
        have = f"the history has {len(matches)} match{'es' if len(matches) != 1 else ''}" if matches else "no match in the history yet"
        print(f"basra {command}: no match number {index}: {have} (`basra history` lists them)", file=sys.stderr)
        return None
    path = matches[index - 1].path
    print(f"basra {command}: match {index} of `basra history`: {path}", flush=True)
    return path


def show_history(as_json: bool) -> int:
    """`basra history`."""
    matches = past_matches()
    if as_json:
        print(json.dumps([{"number": n, **asdict(m)} for n, m in enumerate(matches, 1)], indent=1))
        return EXIT_OK
    if not matches:
        print(f"basra history: no match yet in {data_dir() / TRANSCRIPTS}")
        return EXIT_OK
    for number, match in enumerate(matches, 1):
        against = f"v {match.opponent}" if match.opponent else "before the match began"
        print(f"{number:>3}  {match.date}  {against:<22} {match.result:<22} {match.deal:<14} {match.verified}")
        print(f"     {match.role}, host key {match.fingerprint or '(none)'}: {match.path.name}")
    print("basra verify N or basra replay N (or --last) opens one.")
    return EXIT_OK

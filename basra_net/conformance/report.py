"""Cases and their verdicts, printed one line each as they are decided."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


class CaseFailed(Exception):
    """The peer did something other than what the section requires; the text says what."""


@dataclass(frozen=True)
class Verdict:
    section: str
    name: str
    status: str
    detail: str

    def line(self) -> str:
        return f"{self.status}  {self.section:<10} {self.name}: {self.detail}"


@dataclass
class Report:
    say: Callable[[str], None] = print
    verdicts: list[Verdict] = field(default_factory=list)

    def add(self, section: str, name: str, status: str, detail: str) -> None:
        verdict = Verdict(f"§{section}" if section[0].isdigit() else section, name, status, detail)
        self.verdicts.append(verdict)
        self.say(verdict.line())

    def passed(self, section: str, name: str, detail: str) -> None:
        self.add(section, name, PASS, detail)

    def failed(self, section: str, name: str, detail: str) -> None:
        self.add(section, name, FAIL, detail)

    def skipped(self, section: str, name: str, detail: str) -> None:
        self.add(section, name, SKIP, detail)

    def summary(self) -> str:
        counts = {status: sum(v.status == status for v in self.verdicts) for status in (PASS, FAIL, SKIP)}
        return f"{counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped"

    @property
    def exit_code(self) -> int:
        """0 when no case failed and at least one ran."""
        return 0 if self.verdicts and all(v.status != FAIL for v in self.verdicts) else 1

    def failures(self) -> list[str]:
        return [v.name for v in self.verdicts if v.status == FAIL]

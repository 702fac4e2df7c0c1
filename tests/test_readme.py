"""README's quick start is what CI runs: the test command in README is the command in .ci/run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "README's quick start has no sh block"
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_quick_start_is_two_commands_one_to_play_and_one_to_test():
    play, test = quick_start_commands()
    assert play.endswith("basra host --bot")
    assert test.endswith("python -m pytest")
    assert "pip install '.[test]'" in test


def test_ci_runs_readmes_test_command_exactly():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert quick_start_commands()[1] in ci_lines

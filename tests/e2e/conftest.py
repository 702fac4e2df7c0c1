"""Fixtures for tests that run the real `basra` command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def basra_env(tmp_path: Path) -> dict[str, str]:
    """The environment for a basra subprocess: its own data directory, no colour."""
    env = dict(os.environ)
    env["BASRA_HOME"] = str(tmp_path / "home")
    env["NO_COLOR"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env

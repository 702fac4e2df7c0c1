"""Fixtures for tests that run the real `basra` command."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from .netns import NamespacesUnavailable, namespace_pair


@pytest.fixture
def basra_env(tmp_path: Path) -> dict[str, str]:
    """The environment for a basra subprocess: its own data directory, no colour."""
    env = dict(os.environ)
    env["BASRA_HOME"] = str(tmp_path / "home")
    env["NO_COLOR"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture
def two_hosts():
    """Two network namespaces joined by a veth pair; yields (host ns, join ns, host address)."""
    with contextlib.ExitStack() as stack:
        try:
            pair = stack.enter_context(namespace_pair())
        except NamespacesUnavailable as why:
            pytest.skip(str(why))
        yield pair

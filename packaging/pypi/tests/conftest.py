"""Fixtures of the `ask_user` package's tests: run with the wheel installed (`.ci/python`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def ask_user_command() -> str:
    """The wheel's `ask-user` script, beside this interpreter."""
    found = shutil.which("ask-user", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("the wheel's `ask-user` script is not installed beside this Python")
    return found


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """A state directory of the test's own (private, as the inbox wants it)."""
    directory = tmp_path / "state"
    directory.mkdir(mode=0o700)
    return directory


@pytest.fixture
def shell(state_dir: Path, tmp_path: Path):
    """Runs `ask-user ARGS --state-dir <state_dir>` through the wheel's script (without
    `--state-dir` when ARGS name a database)."""

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "xdg")}
        done = subprocess.run(
            [ask_user_command(), *args, *([] if "--pg" in args else ["--state-dir", str(state_dir)])],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        if check and done.returncode != 0:
            pytest.fail(f"ask-user {' '.join(args)} exited {done.returncode}: {done.stderr}")
        return done

    return run

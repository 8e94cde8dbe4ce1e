"""The ``ask-user`` command of the wheel: the same command line as the binary."""

from __future__ import annotations

import signal
import sys


def main() -> None:
    """Runs ``ask-user`` with this process's arguments and exits with its status."""
    from . import _native

    # The command handles its own signals, as the binary does; Python's handler would only hold
    # Ctrl-C until the command returned.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_native.run_cli(["ask-user", *sys.argv[1:]]))

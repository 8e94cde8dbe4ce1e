"""``python -m ask_user``: the ``ask-user`` command."""

from ._cli import main

main()

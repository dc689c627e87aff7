"""Placeholder until this sub-command is written."""


def register(subparsers) -> None:
    pass

"""`python -m app` runs the command-line interface, in a child process so that a death by signal gets a sentence
(app.engine.child_process.run_supervised)."""

import os
import sys


def run() -> int:
    """The `specchat-cli` entry point."""
    if os.environ.get("SPECCHAT_SUPERVISED") == "1":
        from app.cli import main

        return main()
    from app.engine.child_process import run_supervised

    return run_supervised([sys.executable, "-m", "app", *sys.argv[1:]])


if __name__ == "__main__":
    raise SystemExit(run())

"""`python -m app` runs the command-line interface."""

from app.cli import main

raise SystemExit(main())

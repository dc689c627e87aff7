"""Print pyproject.toml's mypy exceptions list as it stands: the modules of app/ that mypy reports errors in when
the list is left out. Run from anywhere: `.venv/bin/python .ci/mypy_exceptions.py`; paste its output over the
block between the two `mypy exceptions` marker comments in pyproject.toml."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "# mypy exceptions: begin", "# mypy exceptions: end"


def main() -> int:
    config = (ROOT / "pyproject.toml").read_text()
    start, stop = config.index(BEGIN), config.index(END)
    with tempfile.TemporaryDirectory() as folder:
        without = Path(folder) / "pyproject.toml"
        without.write_text(config[:start] + config[stop + len(END):])
        result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(without), "--no-incremental"],
                                cwd=ROOT, capture_output=True, text=True)
    paths = sorted({m.group(1) for m in re.finditer(r"^(app/\S+?)\.py:\d+: error:", result.stdout, re.M)})
    modules = [p.removesuffix("/__init__").replace("/", ".") for p in paths]
    print(BEGIN)
    print("[[tool.mypy.overrides]]")
    print("module = [")
    for module in modules:
        print(f'    "{module}",')
    print("]")
    print("ignore_errors = true")
    print(END)
    return 0


if __name__ == "__main__":
    sys.exit(main())

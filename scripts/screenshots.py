"""Refresh the README's screenshots (docs/screenshots/*.png) by running the browser tests that take them.

Tests on their own write screenshots to a temporary folder, so `make test` leaves the tree clean; this script
points them at docs/screenshots instead. Usage: `python3 scripts/screenshots.py [extra pytest arguments]`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "screenshots"


def main(argv: list[str]) -> int:
    """Run the browser tests with QRELKIT_SCREENSHOTS=docs/screenshots; returns pytest's exit code."""
    TARGET.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, QRELKIT_SCREENSHOTS=str(TARGET))
    command = [sys.executable, "-m", "pytest", "-q", "-m", "browser", "tests/browser", *argv]
    code = subprocess.call(command, cwd=ROOT, env=env)
    print(f"screenshots in {TARGET.relative_to(ROOT)}: {sorted(p.name for p in TARGET.glob('*.png'))}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

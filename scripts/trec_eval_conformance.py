"""Run trec_eval 10.0's `make quicktest` lines with `qrelkit trec_eval` in place of `./trec_eval`, diff byte for byte.

Usage: python scripts/trec_eval_conformance.py [TEST_DIR]  (default ../shared/trec_eval_test, from the
current folder or beside the repository: trec_eval's
test/ folder with its QUICKTEST file of command lines). Runs each line from a temporary folder where
`test/` links to TEST_DIR, prints identical/differs (with the first differing lines) and `N of M
byte-identical`. A script, not a test: trec_eval's files stay outside the repository.
"""

from __future__ import annotations

import difflib
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    candidates = (
        [Path(argv[0])]
        if argv
        else [
            Path("../shared/trec_eval_test"),
            ROOT.parent / "shared" / "trec_eval_test",
            ROOT.parent.parent / "shared" / "trec_eval_test",
        ]
    )
    test_dir = next((c for c in candidates if (c / "QUICKTEST").is_file()), candidates[0]).resolve()
    lines = [ln for ln in (test_dir / "QUICKTEST").read_text().splitlines() if ln.strip()]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    same = 0
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "test").symlink_to(test_dir)
        for number, line in enumerate(lines, 1):
            command, _, check = line.partition("|")
            words = shlex.split(command)
            assert words[0] == "./trec_eval", line
            expected_file = shlex.split(check)[-1]
            cmd = [sys.executable, "-m", "annotator", "trec_eval", *words[1:]]
            done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True)
            expected = (Path(tmp) / expected_file).read_bytes()
            if done.stdout == expected:
                same += 1
                print(f"{number:2}  identical  {command.strip()}")
                continue
            print(f"{number:2}  differs    {command.strip()}  (exit {done.returncode})")
            diff = difflib.unified_diff(
                expected.decode(errors="replace").splitlines(),
                done.stdout.decode(errors="replace").splitlines(),
                "expected",
                "qrelkit",
                n=0,
                lineterm="",
            )
            for shown, text in enumerate(diff):
                if shown >= 8:
                    print("      …")
                    break
                print(f"      {text}")
            for text in done.stderr.decode(errors="replace").splitlines()[:2]:
                print(f"      stderr: {text}")
    print(f"{same} of {len(lines)} byte-identical")
    return 0 if same == len(lines) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

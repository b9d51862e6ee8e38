"""The `qrelkit` command: one argparse tree; each command group is one module of this package."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from eval_core.errors import InputError

# Modules that each expose `register(subparsers)`, in the order `qrelkit --help` lists them.
COMMAND_MODULES = (
    "annotator.cli.eval",
    "annotator.cli.compare",
    "annotator.cli.robustness",
    "annotator.cli.agreement",
    "annotator.cli.judge",
    "annotator.cli.store",
    "annotator.cli.user",
    "annotator.cli.guideline",
    "annotator.cli.release",
    "annotator.cli.app",
)


def build_parser() -> argparse.ArgumentParser:
    """Assemble the parser from every command module so `qrelkit --help` lists them all."""
    parser = argparse.ArgumentParser(
        prog="qrelkit",
        description="Golden sets for retrieval evaluation: judge, agree, release, evaluate.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command. The one error path: bad input (`path:line: problem`) and refusals (an unknown name, a
    duplicate, a missing or stale database, an actor without the right) print `qrelkit: error: …` — an
    import's further bad lines as `qrelkit: rejected: …` — and exit 2; a failed gate exits 1."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (InputError, LookupError, ValueError, PermissionError, RuntimeError) as exc:
        print(f"qrelkit: error: {exc}", file=sys.stderr)
        for line in getattr(exc, "more", ()):
            print(f"qrelkit: rejected: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `qrelkit eval … | head`: the reader left; silence the flush at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())

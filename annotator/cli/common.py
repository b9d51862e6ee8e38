"""Helpers shared by the store's command groups: JSON reports and one-line refusals."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from eval_core.errors import InputError


def print_json(data: object) -> None:
    """Reports go to stdout as indented JSON, so people can read them and scripts can parse them."""
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def guarded(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Refusals (unknown names, duplicates, a stale schema) exit 2 with one clear line, like bad input."""

    def wrapper(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except InputError:
            raise
        except (LookupError, ValueError, PermissionError, RuntimeError) as exc:
            print(f"qrelkit: error: {exc}", file=sys.stderr)
            return 2

    return wrapper

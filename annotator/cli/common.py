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


def db_option(parser: argparse.ArgumentParser) -> None:
    """The one `--db URL` option every store command takes."""
    parser.add_argument("--db", metavar="URL", default=None,
                        help="database URL (default: $QRELKIT_DB_URL, else sqlite:///./qrelkit.db)")


def store_engine(args: argparse.Namespace):
    """The store at --db / QRELKIT_DB_URL, refused unless it is at the newest schema (imports the store lazily)."""
    from db.engine import database_url, get_engine
    from db.schema import current_revision, head_revision

    engine = get_engine(args.db)
    current, head = current_revision(engine), head_revision()
    if current != head:
        state = "has no qrelkit schema" if current is None else f"is at schema revision {current}"
        raise RuntimeError(f"database {database_url(args.db)} {state}; run `qrelkit init` or `qrelkit db upgrade` "
                           f"(newest: {head})")
    return engine

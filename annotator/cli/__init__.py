"""The `qrelkit` command: one argparse tree; each command group is one module of this package."""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import importlib
import os
import sys
from typing import NoReturn

from eval_core.errors import USER_ERRORS

# Every command and the module whose `register(subparsers)` adds it, in the order `qrelkit --help` lists them.
# `qrelkit CMD …` imports and registers only CMD's module (tests/cli/test_metrics_startup.py checks this table
# against what each module registers, and that every command's help is the same either way).
COMMANDS = {
    "eval": "annotator.cli.eval",
    "trec_eval": "annotator.cli.trec_eval",
    "compare": "annotator.cli.compare",
    "diagnose": "annotator.cli.compare",
    "robustness": "annotator.cli.robustness",
    "reliability": "annotator.cli.reliability",
    "agreement": "annotator.cli.agreement",
    "consensus": "annotator.cli.agreement",
    "annotators": "annotator.cli.annotators",
    "control": "annotator.cli.control",
    "prejudge": "annotator.cli.prejudge",
    "judge-probe": "annotator.cli.prejudge",
    "judge-trust": "annotator.cli.judge_trust",
    "post-edit": "annotator.cli.judge_trust",
    "init": "annotator.cli.store",
    "db": "annotator.cli.store",
    "project": "annotator.cli.store",
    "import": "annotator.cli.store",
    "user": "annotator.cli.user",
    "guideline": "annotator.cli.guideline",
    "pool": "annotator.cli.release",
    "assign": "annotator.cli.release",
    "release": "annotator.cli.release",
    "disputes": "annotator.cli.release",
    "adjudicate": "annotator.cli.release",
    "export": "annotator.cli.release",
    "evaluate-run": "annotator.cli.release",
    "holes": "annotator.cli.release",
    "rejudge": "annotator.cli.rejudge",
    "serve": "annotator.cli.app",
    "demo": "annotator.cli.app",
}


# Commands that call no BLAS routine: NumPy's OpenBLAS starts a thread per core when it is imported, about 50 ms of
# CPU for nothing in a small `qrelkit eval` (issue 26: fixed costs). Their NumPy gets one BLAS thread unless the
# environment says otherwise; their results never touch BLAS, so they are the same for any count.
NO_BLAS_COMMANDS = frozenset({"eval", "trec_eval"})


def _one_blas_thread(command: str | None) -> None:
    """OPENBLAS_NUM_THREADS=1 for a NO_BLAS_COMMANDS command, before NumPy is first imported (after, it is too
    late, and an embedding program's environment is left alone); a value already set wins."""
    if command in NO_BLAS_COMMANDS and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


# Commands whose only effects are their stdout and stderr (no file written, no database, no thread left running):
# their process ends with os._exit once both are flushed, skipping the interpreter's teardown — freeing NumPy's and
# pyarrow's objects, clearing every module, Arrow's C++ destructors — 0.03–0.06 s of a 0.5 s trec_eval call that a
# user makes once per run (issue 26).
EXIT_AT_ONCE = frozenset({"eval", "trec_eval"})
# Their process also collects cyclic garbage after YOUNG_OBJECTS new container objects rather than 700: importing
# NumPy, pyarrow and qrelkit's modules made ~50 collections that found nothing (≈ 14 ms); the work itself makes few
# Python objects (a 10k × 1,000 run: about as many as the imports), so memory is the same.
YOUNG_OBJECTS = 100_000


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, asking the terminal's width when help or a usage line is formatted rather than when
    the parser is built: argparse makes a formatter for every add_argument, and its width comes from
    shutil.get_terminal_size, whose import (shutil, bz2, lzma) is ≈ 6 ms of a command that prints no help."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        self._asked = (indent_increment, max_help_position) if width is None else None
        super().__init__(prog, indent_increment, max_help_position, 80 if width is None else width)

    def format_help(self) -> str:
        if self._asked is not None:  # the width and help position argparse would have set, from the terminal now
            import shutil

            indent, position = self._asked
            self._asked = None
            self._width = shutil.get_terminal_size().columns - 2
            self._max_help_position = min(position, max(self._width - 20, indent * 2))
        return super().format_help()


class RawDescriptionHelpFormatter(HelpFormatter, argparse.RawDescriptionHelpFormatter):
    """argparse's RawDescriptionHelpFormatter (descriptions printed as written), the width asked for late."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `qrelkit` parser with `command`'s module only (a known command: start-up pays for one command
    group, not ten), else with every module so `qrelkit --help` and a mistyped command list them all."""
    parser = argparse.ArgumentParser(
        prog="qrelkit",
        description="Golden sets for retrieval evaluation: judge, agree, release, evaluate.",
        formatter_class=HelpFormatter,
    )
    # prog given: argparse would format the parser's usage (and so ask the terminal's width) to find it
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", prog="qrelkit")
    modules = [COMMANDS[command]] if command in COMMANDS else dict.fromkeys(COMMANDS.values())
    for name in modules:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command. The one error path: bad input (`path:line: problem`) and refusals (an unknown name, a
    duplicate, a missing or stale database, an actor without the right) print `qrelkit: error: …` — an
    import's further bad lines as `qrelkit: rejected: …` — and exit 2; so do a bad output path, a full disk,
    a database that refuses and anything unexpected: one sentence, never a traceback. A failed gate exits 1."""
    if argv is None:  # the process's own entry point (the `qrelkit` script, `python -m annotator`)
        at_once = len(sys.argv) > 1 and sys.argv[1] in EXIT_AT_ONCE
        if at_once:
            gc.set_threshold(YOUNG_OBJECTS)
        status = main(sys.argv[1:])
        if at_once:
            exit_now(status)
        leave_quickly()
        return status
    _one_blas_thread(argv[0] if argv else None)
    parser = build_parser(argv[0] if argv else None)
    args, extra = parser.parse_known_args(argv)
    if extra:
        refuse_unknown(parser, argv, extra)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except USER_ERRORS as exc:
        print(f"qrelkit: error: {exc}", file=sys.stderr)
        for line in getattr(exc, "more", ()):
            print(f"qrelkit: rejected: {line}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `qrelkit eval … | head`: the reader left (before OSError, its base class);
        # silence the flush at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a bad output path, a full disk, an unreadable file: one sentence, no traceback
        print(f"qrelkit: error: {os_sentence(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the database refused, or a bug: still one sentence (the details go to the log)
        store = sys.modules.get("sqlalchemy.exc")
        if store is not None and isinstance(exc, store.DBAPIError):
            reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else type(exc).__name__
            print(f"qrelkit: error: the database refused: {reason[:300]}", file=sys.stderr)
        else:
            print(
                f"qrelkit: error: unexpected {type(exc).__name__}: {str(exc)[:300]} (please report it)", file=sys.stderr
            )
        import logging  # only here: 5 ms of every command's start-up otherwise

        logging.getLogger("qrelkit").debug("command failed", exc_info=True)
        return 2


def refuse_unknown(parser: argparse.ArgumentParser, argv: list[str], extra: list[str]) -> NoReturn:
    """Arguments the command does not take: its own usage line and error (the innermost command's, `qrelkit user
    add`, not the top parser's), naming the options it has that the first unknown option may have meant
    (`qrelkit eval … -m map`: --metrics)."""
    own, words = parser, list(argv)
    while (sub := next((a for a in own._actions if isinstance(a, argparse._SubParsersAction)), None)) is not None:
        name = next((w for w in words if w in sub.choices), None)
        if name is None:
            break
        own, words = sub.choices[name], words[words.index(name) + 1 :]
    message = f"unrecognized arguments: {' '.join(extra)}"
    flag = next((word.split("=")[0] for word in extra if word.startswith("-") and len(word) > 1), None)
    if flag is not None:
        options = [o for o in own._option_string_actions if o.startswith("--") and o != "--help"]
        if flag.startswith("--"):
            import difflib

            meant = difflib.get_close_matches(flag, options, n=3, cutoff=0.6)
        else:  # -m: the long options that begin with its letter
            meant = [o for o in options if o[2:3] == flag[1:2]]
        if meant:
            message += f" (did you mean {' or '.join(meant)}?)"
    own.error(message)


def exit_now(status: int) -> NoReturn:
    """End an EXIT_AT_ONCE command's process with `status` as soon as its output is out: flush stdout (a reader
    that left is silenced, as in `main`; a full disk is `main`'s one sentence and exit 2), then stderr, then
    os._exit, which runs no atexit handler and tears nothing down."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as exc:
        print(f"qrelkit: error: {os_sentence(exc)}", file=sys.stderr)
        status = 2
    with contextlib.suppress(OSError):
        sys.stderr.flush()
    os._exit(status)


def leave_quickly() -> None:
    """Before the process exits: close the store's connections (db.store.engine.dispose_engines), collect what
    is garbage now, then freeze what is left, so the interpreter's teardown does not walk again the objects
    SQLAlchemy and SQLModel built — about 0.1 s of CPU of a 0.5 s store command (docs/store.md, *Start-up*).
    Only at the process's end: frozen objects are never collected."""
    store = sys.modules.get("db.store.engine")
    if store is not None:
        store.dispose_engines()
    gc.collect()
    gc.freeze()


def os_sentence(exc: OSError) -> str:
    """What an OSError means to the user, in one sentence naming the file."""
    where = f"{exc.filename}" if exc.filename else "the file"
    if exc.errno == errno.ENOSPC:
        return f"cannot write {where}: the disk is full (nothing was written)"
    if exc.errno == errno.ENAMETOOLONG:
        return f"cannot write {str(where)[:80]}…: the file name is too long for this file system"
    if isinstance(exc, IsADirectoryError):
        return f"{where} is a directory; give a file name"
    if isinstance(exc, FileNotFoundError):
        return f"{where}: no such file or folder"
    return f"{where}: {exc.strerror or exc}"


if __name__ == "__main__":
    sys.exit(main())

"""What every command group shares: the one `--db` option, the schema-checked store, choices read from the
registries without importing them for `qrelkit --help`, JSON reports and stage progress bars."""

from __future__ import annotations

import argparse
import importlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any


def print_json(data: object) -> None:
    """A report as indented JSON on stdout, for scripts (`--format json`)."""
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def report_option(parser: argparse.ArgumentParser, flag: str = "--format") -> None:
    """--format text|json (`import`, whose --format is the file's layout: --report-format): a readable summary
    by default, the report's JSON (its shape kept) for machines."""
    parser.add_argument(
        flag,
        dest="report",
        choices=("text", "json"),
        default="text",
        help="text (default): a readable summary; json: the full report for scripts",
    )


def emit(args: argparse.Namespace, data: object) -> None:
    """Print a command's report: JSON with --format json, else the same data as readable indented lines."""
    if getattr(args, "report", "text") == "json":
        print_json(data)
    else:
        print("\n".join(readable(data)))


def _scalar(value: object) -> str:
    """One value as people read it: "—" for none, yes/no, floats to 4 significant digits, text literally."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict | list) and not value:
        return "none"
    return str(value)


def _flat(item: object) -> bool:
    return isinstance(item, dict) and all(not isinstance(v, dict | list) or not v for v in item.values())


# Report keys under which the keys are data — a run's, an annotator's or a query's name — not field names: the
# release card's per-run means, variances and judged shares, the diff's runs, robustness values. They are printed as
# typed (a run called bm25_rm3_k1 keeps its underscores), while a field name reads as words (min_grades → min grades).
DATA_KEYED = frozenset(
    {"means", "query_variance", "judged", "runs", "values", "interval", "mean", "per_annotator", "per_run", "labels"}
)
_FIELD_NAME = re.compile(r"[a-z]+(?:_[a-z]+)*")


def _key(key: object, data_keyed: bool) -> str:
    """A key as printed: a field name (lowercase words joined by single underscores) as words, anything else —
    and every key of a DATA_KEYED dict — exactly as given."""
    text = str(key)
    return text.replace("_", " ") if not data_keyed and _FIELD_NAME.fullmatch(text) else text


def readable(data: object, indent: int = 0, data_keyed: bool = False) -> list[str]:
    """Nested report data as indented `key: value` lines; a list of flat records as an aligned table. Field
    names read as words; names from data (run, annotator and query names) are printed as typed (DATA_KEYED)."""
    pad = "  " * indent
    if isinstance(data, dict):
        lines = []
        for key, value in data.items():
            name, inner = _key(key, data_keyed), str(key) in DATA_KEYED
            if isinstance(value, list) and value and not any(isinstance(v, dict | list) for v in value):
                lines.append(f"{pad}{name}: {', '.join(map(_scalar, value))}")
            elif isinstance(value, dict | list) and value:
                lines += [f"{pad}{name}:", *readable(value, indent + 1, inner)]
            else:
                lines.append(f"{pad}{name}: {_scalar(value)}")
        return lines
    if isinstance(data, list):
        if data and all(_flat(item) for item in data) and len({tuple(item) for item in data}) == 1:
            header = list(data[0])
            rows = [[_scalar(item[k]) for k in header] for item in data]
            widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
            return [
                pad + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                for r in [[_key(h, False) for h in header], *rows]
            ]
        lines = []
        for item in data:
            if isinstance(item, dict | list) and item:
                lines += [f"{pad}-", *readable(item, indent + 1)]
            else:
                lines.append(f"{pad}- {_scalar(item)}")
        return lines
    return [pad + _scalar(data)]


class LazyChoices(Sequence):
    """A registry constant (e.g. db.imports.IMPORT_KINDS) as argparse choices, imported only when a command is
    parsed or its help shown, so `qrelkit --help` never loads pandas or SQLAlchemy. Give the argument a
    metavar, or argparse iterates the choices while the parser is built."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def _values(self) -> Sequence[str]:
        return tuple(getattr(importlib.import_module(self.module), self.name))

    def __getitem__(self, index: Any) -> Any:
        return self._values()[index]

    def __len__(self) -> int:
        return len(self._values())

    def __iter__(self) -> Iterator[str]:
        return iter(self._values())

    def __contains__(self, value: object) -> bool:
        return value in self._values()


def scale_type(text: str) -> tuple[int, int]:
    """argparse type for `--scale low-high`, so a bad scale is a usage error naming the option."""
    from eval_core.io.records import parse_scale

    try:
        return parse_scale(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def relevance_options(parser: argparse.ArgumentParser) -> None:
    """--scale and --rel-level, read the same way by eval, compare and diagnose (and printed by the app)."""
    parser.add_argument(
        "--scale",
        type=scale_type,
        metavar="LOW-HIGH",
        help="the qrels' grading scale, e.g. 1-3: its lowest grade means not relevant and gains 0 "
        "in nDCG and ERR (gain = grade - LOW); --rel-level defaults to LOW+1 and --max-grade "
        "to HIGH; a grade outside it is an error (default: the scale a release's JSONL or CSV "
        "names on its lines; other qrels: grades are gains as written, as in trec_eval)",
    )
    parser.add_argument(
        "--rel-level",
        type=int,
        default=None,
        metavar="N",
        help="grade at which a fragment counts as relevant for binary metrics (default 1, or LOW+1 with --scale)",
    )


def averaging_options(parser: argparse.ArgumentParser) -> None:
    """--missing and --trec-eval-version, read the same way by eval and compare."""
    parser.add_argument(
        "--missing",
        choices=("zero", "skip"),
        default="zero",
        help="qrels queries a run lacks: zero = scored 0 and averaged over every qrels query (trec_eval -c); "
        "skip = left out, the mean over the run's queries (as pytrec_eval and ranx report) (default zero)",
    )
    parser.add_argument(
        "--trec-eval-version",
        choices=("9", "10"),
        default="10",
        help="ranking rules: 10 compares scores as float64; 9 as float32, as trec_eval 9 and pytrec_eval do, so "
        "scores equal in float32 tie (default 10)",
    )


def lead_option(parser: argparse.ArgumentParser, what: str) -> None:
    """--lead LEAD (args.user; --user is the older spelling): the active lead a command acts as, checked in the
    store; `what` says what the lead is recorded as."""
    parser.add_argument(
        "--lead", "--user", dest="user", default=None, metavar="LEAD", help=f"{what} (--user is the older spelling)"
    )


def db_option(parser: argparse.ArgumentParser) -> None:
    """The one `--db URL` option every command that opens the store takes."""
    parser.add_argument(
        "--db",
        metavar="URL",
        default=None,
        help="database URL, or a SQLite file's path (default: $QRELKIT_DB_URL, else sqlite:///./qrelkit.db)",
    )


def sqlite_file(url: str) -> Path | None:
    """The file behind a SQLite URL (None for in-memory databases and other engines)."""
    if not url.startswith("sqlite"):
        return None
    path = url.split("///", 1)[1] if "///" in url else ""
    return Path(path.split("?", 1)[0]) if path and path != ":memory:" else None


def store_engine(args: argparse.Namespace):
    """The store at --db / QRELKIT_DB_URL, refused unless it exists and is at the newest schema. Only `init`
    and `demo` create a database: any other command on a missing SQLite file says so instead of leaving an
    empty file behind."""
    from db.store.engine import database_url, get_engine
    from db.store.schema import current_revision, head_revision

    url = database_url(args.db)
    path = sqlite_file(url)
    if path is not None and not path.exists():
        raise LookupError(
            f"no database at {path}: create one with `qrelkit init --db {url}` (or `qrelkit demo` for a demo project)"
        )
    engine = get_engine(args.db)
    current, head = current_revision(engine), head_revision()
    if current != head:
        state = "has no qrelkit schema" if current is None else f"is at schema revision {current}"
        raise RuntimeError(f"database {url} {state}; run `qrelkit init` or `qrelkit db upgrade` (newest: {head})")
    return engine


def stage_bar(total: int, desc: str) -> tuple[Any, Callable[[str], None]]:
    """A stage-by-stage progress bar on stderr and the callback that advances it."""
    from eval_core.progress import bar as progress_bar

    bar = progress_bar(total=total, desc=desc, unit="step", leave=False)

    def step(label: str) -> None:
        bar.set_postfix_str(label)
        bar.update(1)

    return bar, step

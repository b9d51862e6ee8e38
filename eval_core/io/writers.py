"""Qrels and runs written to files all or nothing: atomic replacement, the user's umask, killed writers' leftovers."""

from __future__ import annotations

import gzip
import json
import os
import secrets
import time
from collections.abc import Iterable, Iterator, Sequence
from enum import StrEnum
from glob import escape as glob_escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from eval_core.io.formats import read_qrels, read_run

if TYPE_CHECKING:
    import pandas as pd


class QrelsGrades(StrEnum):
    """How TREC and BEIR qrels written from graded judgments hold the grades: as gains from the scale's lowest
    grade (grade − low, so the lowest grade is 0, not relevant, and the field's tools read them right with
    default options), or as judged on the scale. JSONL and CSV always keep the grades as judged."""

    GAINS = "gains"
    AS_JUDGED = "as-judged"


STALE_TMP_SECONDS = 3600  # a temporary file of no live process, or this old, was left by a killed writer


def remove_stale_temporaries(path: Path) -> int:
    """Delete what killed writers of `path` left (`.NAME.PID.*.tmp` of a process that is gone, or any
    `.NAME.*.tmp` older than STALE_TMP_SECONDS); returns how many. A live writer's file is left alone."""
    removed = 0
    try:
        candidates = list(path.parent.glob(f".{glob_escape(path.name)}.*.tmp"))
    except OSError:
        return 0
    for tmp in candidates:
        pid = tmp.name[len(path.name) + 2 :].split(".", 1)[0]
        try:
            alive = pid.isdigit() and _process_alive(int(pid))
            if not alive or time.time() - tmp.stat().st_mtime > STALE_TMP_SECONDS:
                tmp.unlink()
                removed += 1
        except OSError:
            continue
    return removed


def _process_alive(pid: int) -> bool:
    """True when a process with this id exists (ours included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _create_temporary(path: Path) -> tuple[int, str]:
    """A new, empty temporary file beside `path` (`.NAME.PID.RANDOM.tmp`), opened for writing. It is created
    with mode 0666 as open() creates files, so the kernel applies the user's umask (or the directory's default
    ACL) itself: the umask is never read, and reading it (os.umask sets it) would race with other threads."""
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def write_atomically(path: str | Path, lines: Iterable[str]) -> None:
    """Write all lines or nothing: a temporary file in the same directory (named with this process's id, so
    the next run can tell a killed writer's leftover from a live one and removes it), renamed into place, with
    the mode open() would give a new file (the user's umask)."""
    path = Path(path)
    remove_stale_temporaries(path)
    fd, tmp = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as raw:
            fh: Any = gzip.GzipFile(fileobj=raw, mode="wb") if path.suffix == ".gz" else raw
            for chunk in lines:
                fh.write(chunk.encode("utf-8"))
            if fh is not raw:
                fh.close()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_qrels(src: Any, path: str | Path, fmt: str = "trec") -> None:
    """Write qrels as TREC (`qid 0 docid grade`), BEIR TSV, JSONL or CSV, atomically (gzip if `.gz`)."""
    from eval_core.io.spreadsheet import escape_frame

    q = read_qrels(src)
    rows = list(zip(q["query_id"], q["doc_id"], q["grade"].tolist(), strict=True))
    if fmt == "trec":
        lines: Iterator[str] = (f"{a} 0 {b} {g}\n" for a, b, g in rows)
    elif fmt == "beir":
        lines = iter(["query-id\tcorpus-id\tscore\n", *(f"{a}\t{b}\t{g}\n" for a, b, g in rows)])
    elif fmt == "jsonl":
        lines = (json.dumps({"query_id": a, "doc_id": b, "grade": g}, ensure_ascii=False) + "\n" for a, b, g in rows)
    elif fmt == "csv":
        lines = iter([escape_frame(q).to_csv(index=False)])
    else:
        raise ValueError(f"unknown qrels format {fmt!r}: use trec, beir, jsonl or csv")
    write_atomically(path, lines)


def write_run(src: Any, path: str | Path, tag: str = "qrelkit") -> None:
    """Write a run as TREC (`qid Q0 docid rank score tag`), ranked in trec_eval's order, atomically."""
    r = ranked(read_run(src))
    lines = (
        f"{a} Q0 {b} {k} {s!r} {tag}\n"
        for a, b, k, s in zip(r["query_id"], r["doc_id"], r["rank"].tolist(), r["score"].tolist(), strict=True)
    )
    write_atomically(path, lines)


def ranked(run: pd.DataFrame, queries: Sequence[str] | None = None, depth: int | None = None) -> pd.DataFrame:
    """Run rows in trec_eval order (score desc, docid desc) with 1-based `rank`, optionally cut at `depth`.

    A numeric sort on (query, score); doc ids are compared only inside tied score groups.
    """
    import pandas as pd

    rows = run if queries is None else run[run["query_id"].isin(list(queries))]
    qcode, _ = pd.factorize(rows["query_id"], sort=True)
    score = rows["score"].to_numpy(np.float64)
    order = np.lexsort((-score, qcode))
    sq, ss = qcode[order], score[order]
    tie = (sq[1:] == sq[:-1]) & (ss[1:] == ss[:-1])
    if tie.any():
        tied = np.zeros(len(order), dtype=bool)
        tied[:-1] |= tie
        tied[1:] |= tie
        pos = np.flatnonzero(tied)
        group = np.cumsum(np.concatenate(([True], ~tie[pos[:-1]])))  # neighbours in one tie ⇔ same group
        sub = pd.DataFrame({"g": group, "d": rows["doc_id"].iloc[order[pos]].to_numpy(), "i": order[pos]})
        order[pos] = sub.sort_values(["g", "d"], ascending=[True, False], kind="stable")["i"].to_numpy()
    block = np.concatenate(([True], sq[1:] != sq[:-1])) if len(sq) else np.zeros(0, dtype=bool)
    starts = np.flatnonzero(block)
    rank = np.arange(len(sq)) - np.repeat(starts, np.diff(np.append(starts, len(sq)))) + 1
    keep = slice(None) if depth is None else rank <= depth
    out = rows[["query_id", "doc_id"]].iloc[order[keep]].reset_index(drop=True)
    return out.assign(score=ss[keep], rank=rank[keep])

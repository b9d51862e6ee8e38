"""A release card says how its run metrics were averaged (missing queries as zero, trec_eval 10 ranking), and
they were averaged that way: a run that skips a query of the release scores 0 there (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from annotator.cli import main
from db.releases import get_release
from eval_core.ranking.evaluation import averaging


def _write(folder: Path) -> list[tuple[str, Path]]:
    """q1 (a graded 3, c graded 0) and q2 (b graded 2); run r1 answers q1 only (a, c), r2 both (q1: c, a; q2: b)."""

    def jsonl(name: str, rows: list[dict]) -> Path:
        path = folder / name
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return path

    def run(name: str, lists: dict[str, list[str]]) -> Path:
        path = folder / f"{name}.run"
        path.write_text(
            "".join(f"{q} Q0 {d} {i + 1} {9 - i} {name}\n" for q, docs in lists.items() for i, d in enumerate(docs))
        )
        return path

    return [
        ("queries", jsonl("q.jsonl", [{"id": "q1", "text": "one"}, {"id": "q2", "text": "two"}])),
        ("fragments", jsonl("f.jsonl", [{"id": d, "text": f"text {d}"} for d in "abc"])),
        ("r1", run("r1", {"q1": ["a", "c"]})),
        ("r2", run("r2", {"q1": ["c", "a"], "q2": ["b"]})),
        (
            "judgments",
            jsonl(
                "j.jsonl",
                [
                    {"query_id": q, "fragment_id": f, "annotator": "ana", "grade": g}
                    for q, f, g in (("q1", "a", 3), ("q1", "c", 0), ("q2", "b", 2))
                ],
            ),
        ),
    ]


def test_the_card_names_its_averaging_and_uses_it(engine, store_url, tmp_path, capsys) -> None:
    db = ["--db", store_url]
    assert main(["project", "create", "p", *db]) == 0
    for kind, path in _write(tmp_path):
        command = ["import", "run", str(path), "--name", kind] if kind.startswith("r") else ["import", kind, str(path)]
        assert main([*command, "--project", "p", *db]) == 0
    capsys.readouterr()
    assert main(["release", "--project", "p", *db]) == 0
    text = capsys.readouterr().out
    card = get_release(engine, "p", 1).card
    entry = card["averaging"]
    assert (entry["missing"], entry["trec_eval_version"]) == ("zero", 10)
    assert entry["sentence"] == averaging("zero", 10)["sentence"]
    assert entry["sentence"].startswith("Averaging: missing queries as zero: a qrels query the run does not answer")
    assert "averaging:\n  missing: zero\n  trec eval version: 10\n" in text
    # nDCG@10 by hand. r1: q1 ranks a (3) first → 1; q2 is missing → 0 under "zero": (1 + 0) / 2 = 0.5 (skipping
    # it would give 1.0). r2: q1 has a at rank 2 → (3 / log2 3) / 3 = 0.6309; q2 has b first → 1; mean 0.8155.
    means = card["reliability"]["metrics"][0]["means"]
    assert card["reliability"]["metrics"][0]["metric"] == "ndcg@10"
    assert means["r1"] == pytest.approx(0.5)
    assert means["r2"] == pytest.approx((1 / math.log2(3) + 1) / 2)


def test_every_averaging_reads_as_a_sentence() -> None:
    assert averaging("skip", 9)["sentence"] == (
        "Averaging: missing queries skipped: each mean is over the run's own queries, as pytrec_eval and ranx "
        "report (--missing skip); runs ranked as trec_eval 9 and pytrec_eval rank them: scores compared as float32, "
        "so scores equal in float32 tie and fall to docid descending (--trec-eval-version 9)."
    )
    assert "trec_eval -c" in averaging()["sentence"] and "float64" in averaging()["sentence"]
    with pytest.raises(ValueError, match="missing must be one of zero, skip"):
        averaging("drop")
    with pytest.raises(ValueError, match="trec_eval_version must be 9 or 10"):
        averaging("zero", 8)

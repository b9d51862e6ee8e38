"""Text reports print names from data as typed: a run called bm25_rm3_k1 keeps its underscores in the release
card `qrelkit release` prints, while the card's field names read as words (min_grades → min grades)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from annotator.cli import main
from annotator.cli.common import readable

RUNS = ("bm25_rm3_k1", "dense__v2__", "_x_")


def test_field_names_read_as_words_and_data_keys_as_typed() -> None:
    data = {
        "min_grades": 1,
        "reliability": {"metrics": [{"metric": "ndcg@10", "means": {"bm25_rm3_k1": 0.5, "dense_run": 0.25}}]},
        "diff": {"runs": {"bm25_rm3_k1": {"ndcg@10": {"old": 0.5, "new_value": 0.75}}}},
        "q_7": 3,  # not a field name (a digit): as given
    }
    assert readable(data) == [
        "min grades: 1",
        "reliability:",
        "  metrics:",
        "    -",
        "      metric: ndcg@10",
        "      means:",
        "        bm25_rm3_k1: 0.5",
        "        dense_run: 0.25",  # a field-like name, kept because it is a key of `means`
        "diff:",
        "  runs:",
        "    bm25_rm3_k1:",
        "      ndcg@10:",
        "        old: 0.5",
        "        new value: 0.75",  # below a run's metric, names are fields again
        "q_7: 3",
    ]
    assert readable([{"run_name": "bm25_rm3_k1", "n": 2}]) == ["run name     n", "bm25_rm3_k1  2"]  # width 11


def _files(folder: Path) -> dict[str, Path]:
    """Eight queries of six fragments, two people's grades, and one run per name in RUNS (seeded orders)."""
    rng = random.Random(5)
    queries = [{"id": f"q{i}", "text": f"query {i}"} for i in range(8)]
    fragments = [{"id": f"d{i}_{j}", "text": f"text {i} {j}"} for i in range(8) for j in range(6)]
    grades = [
        {"query_id": f"q{i}", "fragment_id": f"d{i}_{j}", "annotator": who, "grade": rng.randint(0, 3)}
        for i in range(8)
        for j in range(6)
        for who in ("ana", "ben")
    ]
    out = {}
    for name, records in (("queries", queries), ("fragments", fragments), ("judgments", grades)):
        out[name] = folder / f"{name}.jsonl"
        out[name].write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    for name in RUNS:
        lines = []
        for i in range(8):
            docs = [f"d{i}_{j}" for j in range(6)]
            rng.shuffle(docs)
            lines += [f"q{i} Q0 {d} {r + 1} {10 - r} {name}\n" for r, d in enumerate(docs)]
        out[name] = folder / f"{name}.run"
        out[name].write_text("".join(lines), encoding="utf-8")
    return out


def test_the_release_card_keeps_run_names_as_typed(store_url, tmp_path, capsys) -> None:
    files = _files(tmp_path)
    db = ["--db", store_url]
    assert main(["project", "create", "p", *db]) == 0
    for kind in ("queries", "fragments"):
        assert main(["import", kind, str(files[kind]), "--project", "p", *db]) == 0
    for name in RUNS:
        assert main(["import", "run", str(files[name]), "--name", name, "--project", "p", *db]) == 0
    assert main(["import", "judgments", str(files["judgments"]), "--project", "p", *db]) == 0
    capsys.readouterr()
    assert main(["release", "--project", "p", *db]) == 0
    text = capsys.readouterr().out
    assert "min grades: 1" in text and "content hash: " in text
    for name in RUNS:  # each run's mean, variance and judged share under its own name
        assert sum(line.strip().startswith(f"{name}: ") for line in text.splitlines()) == 3, name
    assert "bm25 rm3 k1" not in text and "dense  v2" not in text

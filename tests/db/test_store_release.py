"""Releases: consensus snapshot, files, card, immutability, diffs with run metric moves, and the round trip."""

from __future__ import annotations

import hashlib
import json
import uuid

import krippendorff
import numpy as np
import pandas as pd
import pytest
import pytrec_eval
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select, update

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.imports import import_judgments
from db.projects import add_guideline, create_project
from db.releases import create_release, diff_releases, get_release, list_releases, release_files, render_files
from db.store.engine import get_engine, session_scope
from db.store.models import Judgment
from db.store.schema import init_db
from tests.helpers import judge, seed

SCALE = [0, 1, 2, 3]


QUERIES = {"q1": "what is recall", "q2": "what is ndcg"}
FRAGS = {f"f{i}": f"fragment text {i}" for i in range(1, 8)}
GRADES = {
    ("q1", "f1"): {"ann": 3, "bob": 2},
    ("q1", "f2"): {"ann": 0, "bob": 1},
    ("q1", "f3"): {"ann": 1, "bob": None},
    ("q2", "f4"): {"ann": None, "bob": None},
    ("q2", "f5"): {"ann": 2, "bob": 3, "cat": 3},
}
ADJ = {("q1", "f2"): (1, "partial answer", "lea")}
# By DESIGN.md's rule (adjudication wins, else the lower median of the real grades; a pair with none is left out):
EXPECTED_TREC = "q1 0 f1 2\nq1 0 f2 1\nq1 0 f3 1\nq2 0 f5 3\n"
EXPECTED_JSONL = (
    '{"query_id": "q1", "fragment_id": "f1", "grade": 2, "grades": {"ann": 3, "bob": 2}, "rule": "median", '
    '"provenance": "human consensus"}\n'
    '{"query_id": "q1", "fragment_id": "f2", "grade": 1, "grades": {"ann": 0, "bob": 1}, "rule": "median", '
    '"adjudication": {"grade": 1, "reason": "partial answer", "by": "lea"}, "provenance": "adjudication"}\n'
    '{"query_id": "q1", "fragment_id": "f3", "grade": 1, "grades": {"ann": 1, "bob": null}, "rule": "median", '
    '"provenance": "human consensus"}\n'
    '{"query_id": "q2", "fragment_id": "f5", "grade": 3, "grades": {"ann": 2, "bob": 3, "cat": 3}, '
    '"rule": "median", "provenance": "human consensus"}\n'
)


def judged_project(engine, project, runs=None) -> None:
    """The GRADES/ADJ fixture stored in project demo."""
    seed(engine, project.id, QUERIES, FRAGS, runs)
    judge(engine, project.id, GRADES, ADJ)


def test_release_files_follow_the_rule_and_formats(engine, project):
    judged_project(engine, project)
    info = create_release(engine, "demo", actor="lea")
    files = release_files(engine, "demo", 1)
    assert info.version == 1 and info.created_by == "lea"
    assert files["qrels.trec"].decode() == EXPECTED_TREC
    assert files["judgments.jsonl"].decode() == EXPECTED_JSONL.replace("}\n", ', "scale": "0-3"}\n')  # named
    assert files["qrels.tsv"].decode() == "query-id\tcorpus-id\tscore\nq1\tf1\t2\nq1\tf2\t1\nq1\tf3\t1\nq2\tf5\t3\n"
    assert files["qrels.csv"].decode().splitlines()[:4] == [
        "query_id,fragment_id,grade,n_grades,adjudicated,grades,scale",
        'q1,f1,2,2,0,"{""ann"": 3, ""bob"": 2}",0-3',
        'q1,f2,1,2,1,"{""ann"": 0, ""bob"": 1}",0-3',
        'q1,f3,1,1,0,"{""ann"": 1, ""bob"": null}",0-3',
    ]
    assert info.content_hash == hashlib.sha256((EXPECTED_TREC + EXPECTED_JSONL).encode()).hexdigest()
    assert json.loads(files["card.json"])["content_hash"] == info.content_hash


def test_card_counts_distribution_and_agreement(engine, project):
    judged_project(engine, project)
    card = create_release(engine, "demo", actor=OPERATOR).card
    # can't-judges: bob on q1/f3 and both on q2/f4, which has no real grade, so no label (left out).
    assert card["counts"] == {
        "queries": 2,
        "pairs": 4,
        "judgments": 9,
        "annotators": 3,
        "adjudicated": 1,
        "cant_judge": 3,
        "pairs_left_out": 1,
    }
    assert card["grade_distribution"] == {"0": 0, "1": 2, "2": 1, "3": 1}
    assert card["judgment_grade_distribution"] == {"0": 1, "1": 2, "2": 2, "3": 3}
    assert card["rule"] == "median" and card["min_grades"] == 1 and card["version"] == 1
    # Reference: the krippendorff package, annotators × units with NaN for missing, ordinal on 0–3.
    units = [("q1", "f1"), ("q1", "f2"), ("q1", "f3"), ("q2", "f5")]
    data = np.array(
        [[np.nan if GRADES[u].get(a) is None else GRADES[u][a] for u in units] for a in ("ann", "bob", "cat")],
        dtype=float,
    )
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=SCALE)
    alpha = card["agreement"]["alpha_ordinal"]
    assert alpha["value"] == pytest.approx(expected, abs=1e-9)
    assert alpha["ci"] is None or alpha["ci"][0] <= alpha["ci"][1]


def test_min_grades_drops_thin_pairs_unless_adjudicated(engine, project):
    judged_project(engine, project)
    create_release(engine, "demo", min_grades=2, actor=OPERATOR)
    # f3 has one real grade (bob could not judge); f2 is adjudicated, so it stays.
    assert release_files(engine, "demo", 1)["qrels.trec"].decode() == "q1 0 f1 2\nq1 0 f2 1\nq2 0 f5 3\n"


def test_latest_adjudication_wins(engine, project):
    judged_project(engine, project)
    judge(engine, project.id, {}, {("q1", "f2"): (3, "on second thought", "lea")})
    create_release(engine, "demo", actor=OPERATOR)
    line = release_files(engine, "demo", "latest")["judgments.jsonl"].decode().splitlines()[1]
    assert json.loads(line)["adjudication"] == {"grade": 3, "reason": "on second thought", "by": "lea"}
    assert json.loads(line)["grade"] == 3


def test_no_judged_pairs_is_a_clear_error(engine, project):
    seed(engine, project.id, QUERIES, FRAGS)
    judge(engine, project.id, {("q2", "f4"): {"ann": None}})
    with pytest.raises(ValueError, match="no judged pairs to release"):
        create_release(engine, "demo", actor=OPERATOR)
    assert list_releases(engine, "demo") == []


def _trec_means(qrels: str, run: dict[str, dict[str, float]]) -> dict[str, float]:
    """Reference means from pytrec_eval (trec_eval 9.x) for the headline metrics."""
    judged: dict[str, dict[str, int]] = {}
    for line in qrels.splitlines():
        q, _, f, g = line.split()
        judged.setdefault(q, {})[f] = int(g)
    scores = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut_10", "P_10", "recip_rank", "map", "recall_10"})
    per = scores.evaluate({q: d for q, d in run.items() if q in judged})
    names = {"ndcg@10": "ndcg_cut_10", "P@10": "P_10", "mrr": "recip_rank", "map": "map", "recall@10": "recall_10"}
    return {ours: float(np.mean([per.get(q, {}).get(theirs, 0.0) for q in judged])) for ours, theirs in names.items()}


def test_new_release_diffs_labels_and_run_metrics_and_old_one_is_untouched(engine, project):
    run = {"q1": ["f3", "f1", "f2"], "q2": ["f6", "f5"]}
    judged_project(engine, project, {"R": run})
    v1 = create_release(engine, "demo", actor=OPERATOR)
    v1_files = release_files(engine, "demo", 1)
    FRAGS_ADDED = {("q1", "f1"): {"bob": 3}, ("q1", "f3"): {"ann": None}, ("q2", "f6"): {"ann": 1}}
    judge(engine, project.id, FRAGS_ADDED)
    v2 = create_release(engine, "demo", actor=OPERATOR)
    assert (v1.version, v2.version) == (1, 2) and v1.content_hash != v2.content_hash
    assert (
        release_files(engine, "demo", 1) == v1_files and get_release(engine, "demo", 1).content_hash == v1.content_hash
    )
    diff = v2.card["diff"]
    assert diff["previous"] == 1
    assert diff["counts"] == {"added": 1, "removed": 1, "changed": 1, "unchanged": 2}
    assert diff["added"] == [{"query_id": "q2", "fragment_id": "f6", "grade": 1}]
    assert diff["removed"] == [{"query_id": "q1", "fragment_id": "f3", "grade": 1}]
    assert diff["changed"] == [{"query_id": "q1", "fragment_id": "f1", "old": 2, "new": 3}]
    scores = {q: {d: float(100 - r) for r, d in enumerate(docs, start=1)} for q, docs in run.items()}
    old = _trec_means(v1_files["qrels.trec"].decode(), scores)
    new = _trec_means(release_files(engine, "demo", 2)["qrels.trec"].decode(), scores)
    moves = diff["runs"]["R"]
    for metric in old:
        assert moves[metric]["old"] == pytest.approx(old[metric], abs=1e-9)
        assert moves[metric]["new"] == pytest.approx(new[metric], abs=1e-9)
    assert diff_releases(engine, "demo", 1, 2)["runs"]["R"] == moves  # stored evaluations, same floats
    assert diff_releases(engine, "demo", 1, 2)["counts"] == diff["counts"]


@pytest.fixture
def fresh_url(store_url, tmp_path):
    """A second empty database on the same engine kind as `store_url`."""
    if store_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'fresh.db'}"
        return
    schema = f"t_{uuid.uuid4().hex[:16]}"
    base = store_url.split("?")[0]
    admin = sa.create_engine(base)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    yield f"{base}?options=-csearch_path%3D{schema}"
    get_engine.cache_clear()
    with admin.begin() as conn:
        conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
    admin.dispose()


def test_round_trip_export_import_export_is_identical(engine, project, fresh_url, tmp_path):
    judged_project(engine, project)
    create_release(engine, "demo", actor=OPERATOR)
    before = release_files(engine, "demo")
    path = tmp_path / "release.jsonl"
    path.write_bytes(before["judgments.jsonl"])
    other = init_db(fresh_url)
    fresh = create_project(other, "demo", actor=OPERATOR)
    seed(other, fresh.id, QUERIES, FRAGS)
    create_user(other, "lea", "lead", actor=OPERATOR)  # the adjudicating lead must exist there too
    import_judgments(other, "demo", path, actor=OPERATOR)
    create_release(other, "demo", actor=OPERATOR)
    after = release_files(other, "demo")
    for name in ("qrels.trec", "qrels.tsv", "judgments.jsonl", "qrels.csv"):
        assert after[name] == before[name], name
    other.dispose()


def test_cli_release_and_export(engine, project, store_url, tmp_path, capsys):
    judged_project(engine, project)
    assert (
        main(
            [
                "release",
                "--project",
                "demo",
                "--rule",
                "median",
                "--min-grades",
                "1",
                "--db",
                store_url,
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["counts"]["pairs"] == 4
    for fmt, name in (
        ("trec", "qrels.trec"),
        ("beir", "qrels.tsv"),
        ("jsonl", "judgments.jsonl"),
        ("csv", "qrels.csv"),
    ):
        out = tmp_path / name
        assert (
            main(
                [
                    "export",
                    "--project",
                    "demo",
                    "--release",
                    "latest",
                    "--format",
                    fmt,
                    "-o",
                    str(out),
                    "--db",
                    store_url,
                ]
            )
            == 0
        )
        assert out.read_bytes() == release_files(engine, "demo", 1)[name]
    assert (
        main(["export", "--project", "demo", "--release", "7", "--format", "trec", "-o", str(out), "--db", store_url])
        == 2
    )
    assert "has no release 7" in capsys.readouterr().err


_ids = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            _ids,
            _ids,
            st.dictionaries(_ids, st.one_of(st.none(), st.integers(0, 3)), min_size=1, max_size=4),
            st.booleans(),
        ),
        min_size=1,
        max_size=5,
        unique_by=lambda r: (r[0], r[1]),
    )
)
def test_rendered_jsonl_is_exactly_json_dumps(rows):
    # Reference: the standard library's json.dumps(ensure_ascii=False), line by line.
    labels = pd.DataFrame(
        {
            "query_id": [r[0] for r in rows],
            "fragment_id": [r[1] for r in rows],
            "grade": [1] * len(rows),
            "grades": [r[2] for r in rows],
            "rule": "median",
            "adjudicated": [r[3] for r in rows],
        }
    )
    adj = pd.DataFrame(
        [(q, f, 2, 'why "so"\n', "lea") for q, f, _, a in rows if a],
        columns=["query_id", "fragment_id", "grade", "reason", "by"],
    )
    _, jsonl = render_files(labels, adj)
    expected = []
    for q, f, grades, adjudicated in rows:
        record = {"query_id": q, "fragment_id": f, "grade": 1, "grades": dict(sorted(grades.items())), "rule": "median"}
        if adjudicated:
            record["adjudication"] = {"grade": 2, "reason": 'why "so"\n', "by": "lea"}
        expected.append(json.dumps(record, ensure_ascii=False) + "\n")
    assert jsonl == "".join(expected)


def test_a_release_created_meanwhile_is_not_overwritten(engine, project, monkeypatch):
    judged_project(engine, project)
    import db.releases as releases

    real_card = releases._card
    calls = []

    def card_with_a_rival(*args, **kwargs):
        if not calls:  # while this release is being computed, another one is written
            calls.append(True)
            create_release(engine, "demo", actor=OPERATOR)
        return real_card(*args, **kwargs)

    monkeypatch.setattr(releases, "_card", card_with_a_rival)
    with pytest.raises(RuntimeError, match="release 1 of 'demo' was created meanwhile"):
        create_release(engine, "demo", actor=OPERATOR)
    assert [r.version for r in list_releases(engine, "demo")] == [1]


def test_a_lead_decision_alone_makes_a_label(engine, project):
    seed(engine, project.id, QUERIES, FRAGS)
    judge(engine, project.id, {}, {("q2", "f7"): (2, "obvious", "lea")})
    card = create_release(engine, "demo", actor=OPERATOR).card
    assert release_files(engine, "demo")["judgments.jsonl"].decode() == (
        '{"query_id": "q2", "fragment_id": "f7", "grade": 2, "grades": {}, "rule": "median", '
        '"adjudication": {"grade": 2, "reason": "obvious", "by": "lea"}, "provenance": "adjudication", '
        '"scale": "0-3"}\n'
    )
    assert card["counts"]["judgments"] == 0 and card["agreement"]["alpha_ordinal"]["value"] is None


def test_card_lists_the_guideline_versions_behind_the_labels(engine, project):
    judged_project(engine, project)
    first = add_guideline(engine, "demo", "grade 3 = fully answers", actor=OPERATOR)
    second = add_guideline(engine, "demo", "grade 3 = fully answers, with its source", actor=OPERATOR)
    with session_scope(engine, write=True) as s:
        ids = s.execute(select(Judgment.id).order_by(Judgment.id)).scalars().all()
        s.execute(update(Judgment).where(Judgment.id.in_(ids[:2])).values(guideline_id=first.id))
        s.execute(update(Judgment).where(Judgment.id == ids[2]).values(guideline_id=second.id))
    assert create_release(engine, "demo", actor=OPERATOR).card["guideline_versions"] == [1, 2]


def test_card_counts_a_cant_judge_whose_pair_got_no_label(engine, project):
    # q1/f1 graded twice; q1/f2's only judgment is ann's can't-judge, so the pair has no label: the card still
    # counts that can't-judge (1 of 3 judgments) and says one judged pair was left out of the release.
    seed(engine, project.id, QUERIES, FRAGS)
    judge(engine, project.id, {("q1", "f1"): {"ann": 2, "bob": 2}, ("q1", "f2"): {"ann": None}})
    counts = create_release(engine, "demo", actor=OPERATOR).card["counts"]
    assert (counts["pairs"], counts["cant_judge"], counts["pairs_left_out"]) == (1, 1, 1)

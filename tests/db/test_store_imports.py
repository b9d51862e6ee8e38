"""Imports: formats, idempotent re-import by external id, trec_eval ranks, and all-or-nothing on bad input."""

from __future__ import annotations

import gzip
import json

import pytest
import pytrec_eval
import sqlalchemy as sa

from db import imports
from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user, deactivate
from db.imports import (
    ImportRejected,
    Judges,
    JudgmentsSource,
    import_fragments,
    import_judgments,
    import_queries,
    import_run,
)
from db.store.frames import adjudications_frame, judgments_frame
from db.store.models import (
    Adjudication,
    Fragment,
    Judgment,
    JudgmentHistory,
    Pair,
    Project,
    Query,
    Run,
    RunEntry,
    User,
)
from eval_core.errors import InputError

TABLES = (Project, User, Query, Fragment, Pair, Judgment, JudgmentHistory, Adjudication, Run, RunEntry)


def _write(path, text: str | bytes):
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def _snapshot(engine) -> dict:
    with engine.connect() as conn:
        return {
            t.__tablename__: sorted(map(tuple, conn.execute(sa.select(t.__table__)).all()), key=repr) for t in TABLES
        }


@pytest.fixture
def corpus(engine, project, tmp_path):
    """q1, q2 and fragments d1-d4 imported into project demo."""
    import_queries(
        engine,
        "demo",
        _write(tmp_path / "queries.csv", "id,text,category\nq1,return window,policy\nq2,shipping cost,\n"),
        actor=OPERATOR,
    )
    import_fragments(
        engine,
        "demo",
        _write(
            tmp_path / "corpus.jsonl",
            "".join(
                json.dumps({"_id": f"d{i}", "title": f"Doc {i}", "text": f"text of d{i}", "metadata": {"lang": "en"}})
                + "\n"
                for i in range(1, 5)
            ),
        ),
        actor=OPERATOR,
    )
    return tmp_path


def test_queries_reimport_by_external_id(engine, project, tmp_path):
    first = import_queries(
        engine, "demo", _write(tmp_path / "q.csv", "id,text,category\nq1,a,x\nq2,b,\n"), actor=OPERATOR
    )
    assert (first.created, first.updated, first.unchanged) == (2, 0, 0)
    again = import_queries(engine, "demo", tmp_path / "q.csv", actor=OPERATOR)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 2)
    beir = import_queries(
        engine,
        "demo",
        _write(tmp_path / "queries.jsonl", '{"_id": "q2", "text": "b2"}\n{"_id": "q3", "text": "c"}\n'),
        actor=OPERATOR,
    )
    assert (beir.created, beir.updated, beir.unchanged) == (1, 1, 0)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(Query.external_id, Query.text, Query.category).order_by(Query.external_id)).all()
    assert [tuple(r) for r in rows] == [("q1", "a", "x"), ("q2", "b2", None), ("q3", "c", None)]


def test_fragments_beir_and_csv(engine, corpus):
    with engine.connect() as conn:
        row = conn.execute(
            sa.select(Fragment.title, Fragment.meta, Fragment.doc_id).where(Fragment.external_id == "d1")
        ).one()
    assert tuple(row) == ("Doc 1", {"lang": "en"}, None)
    rep = import_fragments(
        engine,
        "demo",
        _write(
            corpus / "f.csv", "id,doc_id,title,text,section\nd1,doc-A,Doc 1,text of d1,intro\nd5,doc-B,,new text,\n"
        ),
        actor=OPERATOR,
    )
    assert (rep.created, rep.updated, rep.unchanged) == (1, 1, 0)
    with engine.connect() as conn:
        rows = dict(conn.execute(sa.select(Fragment.external_id, Fragment.meta)).all())
    assert rows["d1"] == {"section": "intro"} and rows["d5"] is None


def test_run_ranks_follow_trec_eval(engine, corpus):
    # Ranks in the file are ignored: trec_eval orders by score descending, ties by docid descending.
    run = _write(corpus / "bm25.trec", "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d3 3 1.0 t\nq2 Q0 zz 1 5 t\n")
    rep = import_run(engine, "demo", run, actor=OPERATOR)
    assert (rep.created, rep.records) == (1, 4)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(RunEntry.doc_external_id, RunEntry.rank, RunEntry.fragment_id)
            .join(Run)
            .where(Run.name == "bm25")
            .order_by(RunEntry.query_id, RunEntry.rank)
        ).all()
    assert [(d, r) for d, r, _ in rows] == [("d2", 1), ("d3", 2), ("d1", 3), ("zz", 1)]
    with engine.connect() as conn:
        zz = conn.execute(sa.select(Fragment.id, Fragment.has_text).where(Fragment.external_id == "zz")).one()
    assert rows[-1][2] == zz.id and zz.has_text is False  # a document outside the corpus waits for its text
    # Cross-check with pytrec_eval: with only d3 relevant, reciprocal rank 1/2 means d3 ranks 2nd.
    # Cross-check with pytrec_eval (trec_eval's own tie-breaking): d3's reciprocal rank there is 1 / our rank.
    ev = pytrec_eval.RelevanceEvaluator({"q1": {"d3": 1}}, {"recip_rank"})
    recip = ev.evaluate({"q1": {"d1": 1.0, "d2": 2.0, "d3": 1.0}})["q1"]["recip_rank"]
    assert recip == pytest.approx(1 / dict((d, r) for d, r, _ in rows)["d3"])
    assert import_run(engine, "demo", run, actor=OPERATOR).unchanged == 1
    changed = import_run(engine, "demo", _write(corpus / "bm25.trec", "q1 Q0 d4 1 3 t\n"), actor=OPERATOR)
    assert changed.updated == 1
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(RunEntry)).scalar_one() == 1
        assert conn.execute(sa.select(Run.n_lines)).scalar_one() == 1


def test_run_gzip_and_name(engine, corpus):
    path = corpus / "dense.v2.trec.gz"
    path.write_bytes(gzip.compress(b"q1 Q0 d1 1 0.5 dense\n"))
    assert import_run(engine, "demo", path, actor=OPERATOR).created == 1
    assert import_run(engine, "demo", path, name="other", actor=OPERATOR).created == 1
    with engine.connect() as conn:
        assert sorted(conn.execute(sa.select(Run.name)).scalars()) == ["dense.v2", "other"]


def test_judgments_flat_then_reimport(engine, corpus):
    path = _write(
        corpus / "j.csv", "query_id,fragment_id,annotator,grade,note\nq1,d1,ann,2,ok\nq1,d2,ann,,\nq1,d1,newbie,3,\n"
    )
    rep = import_judgments(engine, "demo", path, actor=OPERATOR)
    assert (rep.created, rep.updated, rep.unchanged) == (3, 0, 0)
    with engine.connect() as conn:
        newbie = conn.execute(sa.select(User.password_hash, User.role).where(User.username == "newbie")).one()
    assert tuple(newbie) == (None, "annotator")  # an account that cannot log in
    frame = judgments_frame(engine, "demo")
    assert frame[["fragment_id", "annotator"]].values.tolist() == [["d1", "ann"], ["d1", "newbie"], ["d2", "ann"]]
    assert frame["grade"].isna().tolist() == [False, False, True]
    assert import_judgments(engine, "demo", path, actor=OPERATOR).unchanged == 3
    rep = import_judgments(
        engine,
        "demo",
        _write(corpus / "j2.jsonl", '{"query_id":"q1","fragment_id":"d1","annotator":"ann","grade":1,"note":"ok"}\n'),
        actor=OPERATOR,
    )
    assert (rep.created, rep.updated) == (0, 1)
    with engine.connect() as conn:
        hist = conn.execute(
            sa.select(JudgmentHistory.action, JudgmentHistory.old_grade, JudgmentHistory.new_grade)
            .join(User, User.id == JudgmentHistory.user_id)
            .where(User.username == "ann")
            .order_by(JudgmentHistory.id)
        ).all()
    assert [tuple(h) for h in hist] == [("import", None, 2), ("import", None, None), ("import", 2, 1)]


def test_release_jsonl_imports_grades_and_adjudication(engine, corpus):
    lines = [
        {
            "query_id": "q1",
            "fragment_id": "d1",
            "grade": 2,
            "grades": {"a": 1, "b": 3},
            "rule": "median",
            "adjudication": {"grade": 2, "reason": "read the whole doc", "by": "lead1"},
        },
        {"query_id": "q2", "fragment_id": "d3", "grade": 0, "grades": {"a": 0, "b": None}, "rule": "median"},
    ]
    path = _write(corpus / "judgments.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    create_user(engine, "lead1", "lead", actor=OPERATOR)
    assert import_judgments(engine, "demo", path, actor=OPERATOR).created == 4
    assert import_judgments(engine, "demo", path, actor=OPERATOR).unchanged == 4
    frame = judgments_frame(engine, "demo")
    assert [
        [q, f, a, None if g is None or g != g else int(g)]
        for q, f, a, g in frame[["query_id", "fragment_id", "annotator", "grade"]]
        .astype(object)
        .where(frame.notna(), None)
        .values.tolist()
    ] == [["q1", "d1", "a", 1], ["q1", "d1", "b", 3], ["q2", "d3", "a", 0], ["q2", "d3", "b", None]]
    assert adjudications_frame(engine, "demo").values.tolist() == [["q1", "d1", 2, "read the whole doc", "lead1"]]
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(Adjudication)).scalar_one() == 1
        assert conn.execute(sa.select(User.role).where(User.username == "lead1")).scalar_one() == "lead"


BAD_INPUTS = {
    # name: (file name, content, line the error must name, words in the problem)
    "run wrong field count": ("run.trec", "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 0.5\n", 2, "expected 6 fields"),
    "csv wrong field count": ("q.csv", "id,text,category\nq9,x,a\nq10,y\n", 3, "expected 3 fields"),
    "unknown query in run": ("run.trec", "q1 Q0 d1 1 1.0 t\nq7 Q0 d1 1 1.0 t\n", 2, "unknown query id 'q7'"),
    "unknown query in judgments": (
        "j.csv",
        "query_id,fragment_id,annotator,grade\nq1,d1,a,1\nq7,d1,a,1\n",
        3,
        "unknown query id 'q7'",
    ),
    "grade off the scale": (
        "j.csv",
        "query_id,fragment_id,annotator,grade\nq1,d1,a,1\nq1,d2,a,4\n",
        3,
        "outside the scale 0-3",
    ),
    "duplicate query ids": ("q.jsonl", '{"id":"q9","text":"a"}\n{"id":"q9","text":"b"}\n', 2, "duplicate query id"),
    "duplicate fragment ids": ("f.csv", "id,text\nd9,a\nd9,b\n", 3, "duplicate fragment id"),
    "duplicate run lines": (
        "run.trec",
        "q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 0.5 t\n",
        2,
        "doc 'd1' repeated for query 'q1' (first on line 1)",
    ),
    "duplicate judgments": (
        "j.csv",
        "query_id,fragment_id,annotator,grade\nq1,d1,a,1\nq1,d1,a,2\n",
        3,
        "duplicate judgment",
    ),
    "query id with a space": (
        "q.jsonl",
        '{"id":"q9","text":"a"}\n{"id":"q 10","text":"b"}\n',
        2,
        "query id 'q 10' contains whitespace; TREC qrels and run files separate fields",
    ),
    "fragment id with a tab": ("f.csv", 'id,text\nd9,a\n"d\t10",b\n', 3, "fragment id 'd\\t10' contains whitespace"),
    "judged id with a space": (
        "j.csv",
        'query_id,fragment_id,annotator,grade\nq1,d1,a,1\nq1,"d 1",a,1\n',
        3,
        "fragment_id 'd 1' contains whitespace",
    ),
    "grade NaN": (
        "j.jsonl",
        '{"query_id":"q1","fragment_id":"d1","annotator":"a","grade":NaN}\n',
        1,
        "grade must be an integer",
    ),
    "grade NaN text": (
        "j.csv",
        "query_id,fragment_id,annotator,grade\nq1,d1,a,1\nq1,d2,a,NaN\n",
        3,
        "grade must be an integer or empty for can't judge, got 'NaN'",
    ),
    "grade ?": (
        "j.csv",
        "query_id,fragment_id,annotator,grade\nq1,d1,a,1\nq1,d2,a,?\n",
        3,
        "grade must be an integer or empty for can't judge, got '?'",
    ),
    "unknown guideline version": (
        "j.csv",
        "query_id,fragment_id,annotator,grade,guideline\nq1,d1,a,1,7\n",
        2,
        "guideline version '7' does not exist in project 'demo' (versions: none yet)",
    ),
    "reason beside a grade": (
        "j.jsonl",
        '{"query_id":"q1","fragment_id":"d1","annotator":"a","grade":2,"cant_judge_reason":"foreign language"}\n',
        1,
        "grade 2 with a can't-judge reason",
    ),
    "time without offset": (
        "j.jsonl",
        '{"query_id":"q1","fragment_id":"d1","annotator":"a","grade":2,"time":"2026-01-02T03:04:05"}\n',
        1,
        "has no UTC offset",
    ),
    "judgments CSV separated by ';'": (
        "j.csv",
        "query_id;fragment_id;annotator;grade\nq1;d1;a;1\n",
        1,
        "it looks like a CSV separated by ';'",
    ),
    "a run given as judgments": ("j.trec", "q1 Q0 d1 1 1.0 t\n", 1, "not judgments: `qrelkit import run`"),
    "qrels given as judgments": ("j.txt", "q1 0 d1 2\n", 1, "name whose grades they are with --annotator NAME"),
    "qrels given as a run": (
        "run.trec",
        "q1 0 d1 2\n",
        1,
        "not a run: grades go in with `qrelkit import "
        "judgments FILE` (TREC or BEIR qrels: with --annotator NAME, whose grades they are)",
    ),
    "a release given as a run": (
        "run.jsonl",
        '{"query_id": "q1", "fragment_id": "d1", "grade": 2, "grades": {"a": 2}, "rule": "median"}\n',
        1,
        "not a run: grades go in with `qrelkit import",
    ),
    "empty file": ("q.csv", "", None, "empty file"),
    "empty run": ("run.trec", "", 1, "empty file"),
    "non-UTF-8": ("f.csv", b"id,text\nd9,ok\nd10,caf\xe9\n", 3, "not valid UTF-8"),
    "non-UTF-8 run": ("run.trec", b"q1 Q0 d1 1 1.0 t\nq1 Q0 d\xff 1 1.0 t\n", 2, "not valid UTF-8"),
    "10 MB line": (
        "f.jsonl",
        '{"id":"d9","text":"ok"}\n{"id":"d10","text":"' + "x" * 10_000_000 + '"}\n',
        2,
        "at most 1000000",
    ),
    "10 MB run line": ("run.trec", "q1 Q0 " + "d" * 10_000_000 + " 1 1.0 t\n", 1, "at most 500"),
}
IMPORTERS = {"run": import_run, "q": import_queries, "f": import_fragments, "j": import_judgments}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_names_path_line_and_changes_nothing(engine, corpus, case):
    name, content, line, words = BAD_INPUTS[case]
    path = _write(corpus / name, content)
    before = _snapshot(engine)
    with pytest.raises(InputError) as err:
        IMPORTERS[name.split(".")[0]](engine, "demo", path, actor=OPERATOR)
    where = f"{path}:{line}: " if line else f"{path}: "
    assert str(err.value).startswith(where) and words in str(err.value)
    assert "qrels first" not in str(err.value)  # eval's advice (argument order); an import has no such order
    assert _snapshot(engine) == before


def test_run_for_missing_project_changes_nothing(engine, corpus):
    path = _write(corpus / "run.trec", "q1 Q0 d1 1 1.0 t\n")
    before = _snapshot(engine)
    with pytest.raises(InputError, match=r"run\.trec: no project named 'nope' \(projects: demo\)"):
        import_run(engine, "nope", path, actor=OPERATOR)
    assert _snapshot(engine) == before


def test_every_bad_line_is_reported(engine, corpus):
    path = _write(
        corpus / "j.csv", "query_id,fragment_id,annotator,grade\nq1,d1,a,9\nq1,d1,b,1\nq5,d1,a,1\nq1,d8,a,1\n"
    )
    before = _snapshot(engine)
    with pytest.raises(ImportRejected) as err:
        import_judgments(engine, "demo", path, actor=OPERATOR)
    # d8 (line 5) would wait for its text; the grade 9 (line 2) and the query q5 (line 4) refuse the file, so
    # nothing is written, d8 included
    assert [r.split(": ", 1)[0] for r in err.value.report.rejected] == [f"{path}:2", f"{path}:4"]
    assert "and 1 more" in str(err.value)
    assert _snapshot(engine) == before
    with pytest.raises(ImportRejected) as err:
        import_judgments(engine, "demo", path, actor=OPERATOR, source=JudgmentsSource(require_texts=True))
    assert [r.split(": ", 1)[0] for r in err.value.report.rejected] == [f"{path}:2", f"{path}:4", f"{path}:5"]
    assert "or leave out --require-texts" in err.value.report.rejected[-1]


def test_failure_while_writing_rolls_everything_back(engine, corpus, monkeypatch):
    monkeypatch.setattr(imports, "CHUNK", 2)
    calls = []

    def explode_on_second_chunk(session, run_id, frame, fragments, show):
        calls.append(run_id)
        session.execute(
            RunEntry.__table__.insert(),
            [
                {
                    "run_id": run_id,
                    "query_id": int(frame["query_id"][0]),
                    "doc_external_id": "x",
                    "rank": 1,
                    "score": 1.0,
                }
            ],
        )
        raise RuntimeError("disk full")

    monkeypatch.setattr(imports, "_insert_run_entries", explode_on_second_chunk)
    before = _snapshot(engine)
    with pytest.raises(RuntimeError, match="disk full"):
        import_run(engine, "demo", _write(corpus / "run.trec", "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 0.5 t\n"), actor=OPERATOR)
    assert calls and _snapshot(engine) == before


def test_fast_and_line_readers_agree(engine, corpus, monkeypatch):
    """The columnar fast path and the line-by-line reader store the same entries (ties, unknown docs, gzip)."""
    text = "".join(f"q{1 + i % 2} Q0 d{j} {j} {float(j % 3)} t\n" for i in range(2) for j in range(1, 6))
    (corpus / "fast.trec").write_text(text)
    import_run(engine, "demo", corpus / "fast.trec", name="fast", actor=OPERATOR)
    from eval_core.io import trec_text

    monkeypatch.setattr(trec_text, "_fast_trec", lambda path, kind: None)
    import_run(engine, "demo", corpus / "fast.trec", name="slow", actor=OPERATOR)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                Run.name,
                RunEntry.query_id,
                RunEntry.doc_external_id,
                RunEntry.fragment_id,
                RunEntry.rank,
                RunEntry.score,
            )
            .join(Run)
            .order_by(RunEntry.query_id, RunEntry.rank)
        ).all()
        hashes = dict(conn.execute(sa.select(Run.name, Run.content_hash)).all())
    fast = [tuple(r[1:]) for r in rows if r[0] == "fast"]
    assert fast == [tuple(r[1:]) for r in rows if r[0] == "slow"] and len(fast) == 10
    assert hashes["fast"] == hashes["slow"]
    # score ties (0.0 for d3; 1.0 for d1, d4; 2.0 for d2, d5) are broken by docid descending, as trec_eval does
    assert [d for _q, d, *_ in fast[:5]] == ["d5", "d2", "d4", "d1", "d3"]


def test_run_creates_the_fragments_it_names_without_text_and_reports_them_with_lines(engine, corpus):
    run = _write(
        corpus / "r.trec",
        "q1 Q0 d1 1 3.0 t\nq1 Q0 ghost 2 2.0 t\nq2 Q0 d2 1 1.0 t\nq2 Q0 spook 2 0.5 t\nq2 Q0 ghost 3 0.1 t\n",
    )
    report = import_run(engine, "demo", run, actor=OPERATOR)
    assert report.rejected == [] and report.records == 5
    # ghost (lines 2 and 5) and spook (line 4): two fragments, each named at its first line
    assert report.without_text["count"] == 2
    assert report.without_text["examples"] == [f"{run}:2: 'ghost'", f"{run}:4: 'spook'"]
    assert report.without_text["note"].startswith("2 fragment(s) have no text yet:")
    assert "`qrelkit import fragments FILE`" in report.to_dict()["without_text"]["note"]
    with engine.connect() as conn:
        made = conn.execute(
            sa.select(Fragment.external_id, Fragment.text, Fragment.has_text, Fragment.content_hash)
            .where(~Fragment.has_text)
            .order_by(Fragment.external_id)
        ).all()
    assert [(e, t, h) for e, t, h, _ in made] == [("ghost", "", False), ("spook", "", False)]
    # never a real text's hash (64 hex digits), never each other's
    assert all(not all(c in "0123456789abcdef" for c in d) and len(d) == 64 for *_, d in made)
    assert made[0][3] != made[1][3]
    again = import_run(
        engine, "demo", _write(corpus / "k.trec", "q1 Q0 d1 1 3.0 t\nq1 Q0 ghost 2 1.0 t\n"), actor=OPERATOR
    )
    assert "without_text" not in again.to_dict()  # ghost exists now (still without text): nothing new


def test_adjudication_must_name_an_active_lead(engine, corpus):
    create_user(engine, "ann", "annotator", actor=OPERATOR)
    create_user(engine, "old", "lead", actor=OPERATOR)
    deactivate(engine, "old", actor=OPERATOR)
    line = {"query_id": "q1", "fragment_id": "d1", "grade": 2, "grades": {"a": 1}, "rule": "median"}
    for by, why in (("ann", "role annotator"), ("old", "deactivated"), ("ghost", "no such user")):
        path = _write(
            corpus / "j.jsonl", json.dumps({**line, "adjudication": {"grade": 3, "reason": "r", "by": by}}) + "\n"
        )
        before = _snapshot(engine)
        with pytest.raises(ImportRejected) as err:
            import_judgments(engine, "demo", path, actor=OPERATOR)
        assert str(err.value) == (f"{path}:1: adjudication by {by!r} ({why}): an adjudication must name an active lead")
        assert _snapshot(engine) == before


def test_imported_judgments_in_a_project_with_a_guideline(engine, corpus):
    """Imports without a guideline version carry the version in force (said in the report), beside app judgments
    under it: one frame, one guideline type."""
    from db.grading import record_judgment
    from db.projects import add_guideline
    from db.releases import create_release

    add_guideline(engine, "demo", "grade what is there", actor=OPERATOR)
    report = import_judgments(
        engine,
        "demo",
        _write(corpus / "j.csv", "query_id,fragment_id,annotator,grade\nq1,d1,ann,2\nq1,d2,ann,0\n"),
        actor=OPERATOR,
    )
    assert report.to_dict()["guideline"] == {"version": 1, "from": "the version in force", "judgments": 2}
    frame = judgments_frame(engine, "demo")
    assert frame["guideline"].tolist() == ["1", "1"]
    from db.store.models import Assignment

    create_user(engine, "bea", "annotator", actor=OPERATOR)
    with engine.begin() as conn:
        pair = conn.execute(
            sa.select(Pair.id)
            .join(Query, Query.id == Pair.query_id)
            .join(Fragment, Fragment.id == Pair.fragment_id)
            .where(Query.external_id == "q1", Fragment.external_id == "d1")
        ).scalar_one()
        bea = conn.execute(sa.select(User.id).where(User.username == "bea")).scalar_one()
        conn.execute(sa.insert(Assignment).values(project_id=1, pair_id=pair, user_id=bea, position=1))
    record_judgment(engine, pair, "bea", 3)
    frame = judgments_frame(engine, "demo")
    assert frame[["annotator", "guideline"]].values.tolist() == [["ann", "1"], ["bea", "1"], ["ann", "1"]]
    card = create_release(engine, "demo", actor=OPERATOR).card
    assert card["guideline_versions"] == [1] and card["counts"]["judgments"] == 3


# --- who judged: a file's annotator_kind / model / prompt_version columns --------------------------------------


def _line(annotator: str, fragment: str = "d1", **who) -> str:
    return json.dumps({"query_id": "q1", "fragment_id": fragment, "annotator": annotator, "grade": 2, **who}) + "\n"


KIND_CONFLICTS = {
    "kind against the option": (
        [_line("ann2"), _line("llm", annotator_kind="model")],
        Judges("human"),
        2,
        "annotator_kind is 'model' on this line, but the import says --annotator-kind human; "
        "leave out --annotator-kind or that column",
    ),
    "model against the option": (
        [_line("llm", annotator_kind="model", model="llama-3")],
        Judges("model", "gpt-4o"),
        1,
        "model is 'llama-3' on this line, but the import says --model gpt-4o",
    ),
    "prompt against the option": (
        [_line("llm2", annotator_kind="model", prompt_version="p1")],
        Judges("model", prompt_version="p2"),
        1,
        "prompt_version is 'p1' on this line, but the import says --prompt-version p2",
    ),
    "unknown kind": (
        [_line("x", annotator_kind="robot")],
        Judges(),
        1,
        "annotator_kind 'robot' must be one of human, model",
    ),
    "a person with a model": (
        [_line("x", model="gpt-4o")],
        Judges(),
        1,
        "annotator 'x' is human here, but the line gives a model or prompt_version",
    ),
    "kind changes between lines": (
        [_line("x", annotator_kind="model"), _line("x", "d2", annotator_kind="human")],
        Judges(),
        2,
        "annotator 'x' is kind 'human' here but 'model' at line 1",
    ),
    "model changes between lines": (
        [_line("x", annotator_kind="model", model="a"), _line("x", "d2", annotator_kind="model", model="b")],
        Judges(),
        2,
        "annotator 'x' is model 'b' here but 'a' at line 1",
    ),
    "a person in the store as a model": (
        [_line("ann", annotator_kind="model")],
        Judges(),
        1,
        "annotator 'ann' is a human annotator in the store; it cannot be imported "
        "as model (annotator_kind on this line)",
    ),
    "a model judge in the store as a person": (
        [_line("llm")],
        Judges(),
        1,
        "annotator 'llm' is a model annotator in the store; it cannot be "
        "imported as human (no annotator_kind column: people by default)",
    ),
    "another model in the store": (
        [_line("llm", annotator_kind="model", model="llama-3")],
        Judges(),
        1,
        "model judge 'llm' is model 'gpt-4o' in the store, not 'llama-3'",
    ),
    "prompt version too long": (
        [_line("y", annotator_kind="model", prompt_version="p" * 65)],
        Judges(),
        1,
        "prompt_version is 65 characters; at most 64",
    ),
}


@pytest.fixture
def people_and_judge(engine, corpus):
    """Person `ann` and model judge `llm` (model gpt-4o) already in the store."""
    from db.model_judges import model_annotator

    create_user(engine, "ann", "annotator", actor=OPERATOR)
    model_annotator(engine, "llm", "gpt-4o", "v1", actor=OPERATOR)
    return corpus


@pytest.mark.parametrize("case", list(KIND_CONFLICTS))
def test_who_judged_conflicts_name_the_line_and_write_nothing(engine, people_and_judge, case):
    lines, judges, line, words = KIND_CONFLICTS[case]
    path = _write(people_and_judge / "j.jsonl", "".join(lines))
    before = _snapshot(engine)
    with pytest.raises(ImportRejected) as err:
        import_judgments(engine, "demo", path, actor=OPERATOR, judges=judges)
    assert str(err.value).startswith(f"{path}:{line}: {words}")
    assert _snapshot(engine) == before


def test_who_judged_columns_make_people_and_model_judges(engine, people_and_judge):
    """A CSV (blank cells for people) with a new model judge graded under two prompts: the judge's account takes
    the prompt of its latest grade by time (not by line), each judgment keeps its own."""
    path = _write(
        people_and_judge / "j.csv",
        "query_id,fragment_id,annotator,grade,time,annotator_kind,model,prompt_version\n"
        "q1,d1,ann,1,2026-01-01T00:00:00+00:00,human,,\n"
        "q1,d1,judge,2,2026-01-03T00:00:00+00:00,model,qwen-3, p2 \n"
        "q1,d2,judge,3,2026-01-02T00:00:00+00:00,model,qwen-3,p1\n"
        "q1,d2,newbie,0,2026-01-02T00:00:00+00:00,,,\n"
        "q2,d3,llm,1,2026-01-02T00:00:00+00:00,model,gpt-4o,v1\n",
    )
    assert import_judgments(engine, "demo", path, actor=OPERATOR).created == 5
    with engine.connect() as conn:
        users = {
            name: (kind, model, prompt)
            for name, kind, model, prompt in conn.execute(
                sa.select(User.username, User.kind, User.model_name, User.prompt_version)
            )
        }
        stamps = sorted(
            map(
                tuple,
                conn.execute(
                    sa.select(User.username, Judgment.prompt_version).join(User, User.id == Judgment.user_id)
                ).all(),
            )
        )
    assert users == {
        "ann": ("human", None, None),
        "newbie": ("human", None, None),
        "judge": ("model", "qwen-3", "p2"),
        "llm": ("model", "gpt-4o", "v1"),
    }
    assert stamps == [("ann", None), ("judge", "p1"), ("judge", "p2"), ("llm", "v1"), ("newbie", None)]
    kinds = judgments_frame(engine, "demo").drop_duplicates("annotator").set_index("annotator")["annotator_kind"]
    assert kinds.to_dict() == {"ann": "human", "judge": "model", "llm": "model", "newbie": "human"}


def test_a_file_without_who_columns_imports_as_the_option_says(engine, corpus):
    path = _write(corpus / "j.jsonl", _line("umbrela") + _line("umbrela", "d2"))
    import_judgments(engine, "demo", path, actor=OPERATOR, judges=Judges("model", "gpt-4o", "u1"))
    people = _write(corpus / "p.jsonl", _line("someone"))
    import_judgments(engine, "demo", people, actor=OPERATOR)
    with engine.connect() as conn:
        users = {
            name: (kind, model, prompt)
            for name, kind, model, prompt in conn.execute(
                sa.select(User.username, User.kind, User.model_name, User.prompt_version)
            )
        }
    assert users == {"umbrela": ("model", "gpt-4o", "u1"), "someone": ("human", None, None)}


def test_a_quick_import_shows_no_progress_bar_stuck_at_zero(capsys) -> None:
    """Eight records read at once drew "0 rec" and vanished; a bar appears only after half a second."""
    from db.imports import _progress

    assert list(_progress(range(8), True, "reading")) == list(range(8))
    assert "rec" not in capsys.readouterr().err

"""A collection without texts becomes a project: qrels and runs naming fragments never imported create them
without a text; they are evaluated and released, never served or sent to a model, until `import fragments`
fills them in (SQLite and PostgreSQL)."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.assignment import assign
from db.evaluations import evaluate_stored_run, holes_without_text, judge_holes
from db.grading import next_pair, record_judgment
from db.imports import (
    Judges,
    JudgmentsSource,
    content_hash,
    import_fragments,
    import_judgments,
    import_queries,
    import_run,
)
from db.projects import add_guideline, set_queue_order
from db.releases import create_release
from db.store.engine import session_scope
from db.store.frames import fragments_text
from db.store.models import Assignment, Fragment, Judgment, JudgmentHistory, Pair
from db.textless import TextsWaiting, create_textless, texts_waiting
from eval_core.errors import Refused
from tests.helpers import run

# NIST-style qrels over a corpus the project does not hold: only d1 has a text.
QRELS = "q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 3\nq2 0 d2 0\n"
TEXTS = {"d2": "the return window is thirty days", "d3": "shipping is free above fifty euros"}


@pytest.fixture
def nist(engine, project, tmp_path):
    """Queries q1, q2; fragment d1 with its text; NIST's grades for d1, d2, d3 imported as a reference (d2, d3
    have no text)."""
    queries = tmp_path / "queries.tsv"
    queries.write_text("q1\treturn window\nq2\tshipping cost\n")
    import_queries(engine, "demo", queries, actor=OPERATOR)
    corpus = tmp_path / "d1.jsonl"
    corpus.write_text('{"id": "d1", "text": "returns are accepted"}\n')
    import_fragments(engine, "demo", corpus, actor=OPERATOR)
    qrels = tmp_path / "nist.qrels"
    qrels.write_text(QRELS)
    return import_judgments(
        engine, "demo", qrels, actor=OPERATOR, source=JudgmentsSource("nist"), judges=Judges("reference")
    )


def _fragments(engine) -> dict[str, tuple]:
    with engine.connect() as conn:
        rows = conn.execute(sa.select(Fragment.external_id, Fragment.text, Fragment.has_text, Fragment.content_hash))
        return {ext: (text, has_text, digest) for ext, text, has_text, digest in rows}


def _pair(engine, query: str, fragment: str) -> int:
    from db.store.models import Query

    with engine.connect() as conn:
        return conn.execute(
            sa.select(Pair.id)
            .join(Query, Query.id == Pair.query_id)
            .join(Fragment, Fragment.id == Pair.fragment_id)
            .where(Query.external_id == query, Fragment.external_id == fragment)
        ).scalar_one()


def test_qrels_naming_unknown_fragments_create_them_without_text(engine, nist, tmp_path):
    assert (nist.created, nist.records) == (4, 4)
    qrels = tmp_path / "nist.qrels"
    # d2 first named on line 2, d3 on line 3; d2 again on line 4 is the same fragment
    assert nist.without_text["count"] == 2
    assert nist.without_text["examples"] == [f"{qrels}:2: 'd2'", f"{qrels}:3: 'd3'"]
    assert nist.without_text["note"].startswith("2 fragment(s) have no text yet: ")
    frags = _fragments(engine)
    assert sorted(frags) == ["d1", "d2", "d3"]
    assert frags["d2"][:2] == ("", False) and frags["d3"][:2] == ("", False)
    assert frags["d1"][1] is True
    # a text-less hash is never a real text's (that of "" included) nor another text-less fragment's
    assert content_hash("") not in {frags["d2"][2], frags["d3"][2]} and frags["d2"][2] != frags["d3"][2]
    # 3 of the 4 pairs wait for their text (q1-d2, q2-d3, q2-d2), each graded by nist
    assert texts_waiting(engine, "demo") == TextsWaiting(fragments=2, pairs=3, unjudged=0)
    assert fragments_text(engine, "demo") == {"d1": "returns are accepted"}  # no empty text for snippets


def test_require_texts_refuses_the_file_in_one_collapsed_line_and_writes_nothing(engine, project, tmp_path):
    from db.imports import ImportRejected

    queries = tmp_path / "q.tsv"
    queries.write_text("q1\treturn window\n")
    import_queries(engine, "demo", queries, actor=OPERATOR)
    qrels = tmp_path / "typo.qrels"
    qrels.write_text("".join(f"q1 0 D{i} 1\n" for i in range(250)))
    with pytest.raises(ImportRejected) as err:
        import_judgments(engine, "demo", qrels, actor=OPERATOR, source=JudgmentsSource("nist", require_texts=True))
    assert len(err.value.more) == 1  # 250 near-identical lines, one line
    assert err.value.more[0].startswith(f"{qrels}: 250 lines like line 1: fragment id 'D0' has no text ")
    assert _fragments(engine) == {}
    # without the option they come in waiting for their text; with it, a file naming one of them is refused
    import_judgments(engine, "demo", qrels, actor=OPERATOR, source=JudgmentsSource("nist"))
    again = tmp_path / "again.qrels"
    again.write_text("q1 0 D7 2\n")
    with pytest.raises(ImportRejected, match=r"again\.qrels:1: fragment id 'D7' has no text in this project"):
        import_judgments(engine, "demo", again, actor=OPERATOR, source=JudgmentsSource("ann", require_texts=True))


def test_textless_pairs_are_released_and_evaluated(engine, nist, tmp_path):
    made = create_release(engine, "demo", actor=OPERATOR)
    with engine.connect() as conn:
        from db.store.models import Release

        qrels = conn.execute(sa.select(Release.qrels_trec).where(Release.id == made.id)).scalar_one()
    assert sorted(line.split() for line in qrels.splitlines()) == sorted(line.split() for line in QRELS.splitlines())
    ranking = tmp_path / "R.trec"
    ranking.write_text("q1 Q0 d2 1 2.0 R\nq1 Q0 d1 2 1.0 R\nq2 Q0 d3 1 1.0 R\n")
    import_run(engine, "demo", ranking, actor=OPERATOR)
    result, _ = evaluate_stored_run(engine, "demo", "R", 1)
    # q1: d2 (gain 1) at rank 1, d1 (gain 2) at 2: DCG = 1 + 2/log2(3) = 2.2618595, ideal 2 + 1/log2(3) =
    # 2.6309298, nDCG 0.8597190; q2: d3 (3) first of its ideal d3, d2 (0): 1. Mean 0.9298595.
    assert result.mean["ndcg@10"] == pytest.approx(0.9298595, abs=1e-6)
    # relevant at grade >= 1: q1 {d1, d2} both in the top 10 (P 2/10), q2 {d3} (P 1/10)
    assert result.mean["P@10"] == pytest.approx(0.15) and result.mean["recall@10"] == pytest.approx(1.0)


def test_next_pair_never_serves_a_textless_pair_until_its_text_is_imported(
    engine, project, nist, tmp_path, monkeypatch
):
    create_user(engine, "ann", "annotator", actor=OPERATOR)
    every = [_pair(engine, q, f) for q, f in (("q1", "d1"), ("q1", "d2"), ("q2", "d3"), ("q2", "d2"))]
    report = assign(engine, "demo", overlap=1, annotators=["ann"], actor=OPERATOR, pair_ids=every)
    assert (report.created, report.waiting_for_text) == (1, 3)  # only q1-d1 has its text
    first = next_pair(engine, "demo", "ann")
    assert first is not None and (first.query_external_id, first.fragment_external_id) == ("q1", "d1")
    # an assignment of a text-less pair made by any other path is not served either, nor can it be graded
    with engine.begin() as conn:
        user_id = conn.execute(sa.text("SELECT id FROM users WHERE username = 'ann'")).scalar_one()
        conn.execute(
            sa.insert(Assignment.__table__).values(
                project_id=project.id, pair_id=every[1], user_id=user_id, position=0, created_at=sa.func.now()
            )
        )
    served = next_pair(engine, "demo", "ann")
    assert served is not None and served.pair_id == every[0]
    # under another queue order, the order picks within the query in progress: offered the text-less q1-d2 it
    # would take it (this stand-in policy takes the highest pair id), so it must never be offered
    monkeypatch.setattr("db.queue_order.replay_next", lambda policy, known, todo: max(todo))
    set_queue_order(engine, "demo", "move-to-front", actor=OPERATOR)
    served = next_pair(engine, "demo", "ann")
    assert served is not None and served.pair_id == every[0]
    set_queue_order(engine, "demo", "pool", actor=OPERATOR)
    monkeypatch.undo()
    with pytest.raises(Refused, match=r"waits for its fragment's text"):
        record_judgment(engine, every[1], "ann", 2)
    record_judgment(engine, every[0], "ann", 2)
    assert next_pair(engine, "demo", "ann") is None
    with engine.connect() as conn:
        history = conn.execute(sa.select(sa.func.count()).select_from(JudgmentHistory)).scalar_one()
        judgments = sorted(map(tuple, conn.execute(sa.select(Judgment.pair_id, Judgment.user_id, Judgment.grade))))

    corpus = tmp_path / "texts.jsonl"
    corpus.write_text(
        "".join(f'{{"id": "{ext}", "text": "{text}", "title": "T {ext}"}}\n' for ext, text in TEXTS.items())
        + '{"id": "d1", "text": "returns are accepted"}\n'
    )
    filled = import_fragments(engine, "demo", corpus, actor=OPERATOR)
    assert (filled.created, filled.updated, filled.unchanged, filled.texts_filled) == (0, 0, 1, 2)
    assert filled.to_dict()["texts_filled"] == 2
    frags = _fragments(engine)
    assert sorted(frags) == ["d1", "d2", "d3"]  # filled in place, no duplicate
    assert frags["d2"] == (TEXTS["d2"], True, content_hash(TEXTS["d2"]))
    assert texts_waiting(engine, "demo").pairs == 0
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(JudgmentHistory)).scalar_one() == history
        assert sorted(map(tuple, conn.execute(sa.select(Judgment.pair_id, Judgment.user_id, Judgment.grade)))) == (
            judgments
        )
    now = next_pair(engine, "demo", "ann")  # the forced assignment (position 0) is servable now
    assert now is not None and now.pair_id == every[1] and now.fragment_text == TEXTS["d2"]
    again = assign(engine, "demo", overlap=1, annotators=["ann"], actor=OPERATOR, pair_ids=every)
    assert (again.created, again.waiting_for_text) == (2, 0)  # q2-d3 and q2-d2; q1-d1 and q1-d2 already held


def test_a_model_judge_is_never_sent_a_textless_pair(engine, nist):
    from annotator.judge_run import prejudge

    add_guideline(engine, "demo", "Grade 0-3 by relevance.", actor=OPERATOR)
    sent = []

    def judge(query: str, fragment: str, guideline: str) -> int:
        sent.append((query, fragment))
        return 1

    report = prejudge(engine, "demo", judge, model="m", annotator="llm", actor=OPERATOR)
    assert (report.pairs, report.without_text, report.created) == (1, 3, 1)
    assert len(sent) == 1 and "returns are accepted" in sent[0][1]


def test_holes_make_pairs_that_wait_for_their_text_and_say_so(engine, nist, store_url, tmp_path):
    ranking = tmp_path / "S.trec"
    ranking.write_text("q1 Q0 d1 1 3.0 S\nq1 Q0 d9 2 2.0 S\nq1 Q0 d2 3 1.0 S\nq1 Q0 d8 4 0.5 S\n")
    made = import_run(engine, "demo", ranking, actor=OPERATOR)
    assert made.without_text["count"] == 2  # d9 and d8 are new, without a text
    # top 3: d1 has a text, d2 has none but nist graded it, d9 has none and no grade: one
    assert (holes_without_text(engine, "demo", "S", k=3), holes_without_text(engine, "demo", "S", k=4)) == (1, 2)
    code, out, err = run(["holes", "S", "--k", "3", "--project", "demo", "--db", store_url])
    assert code == 0 and out == "1 new pairs from the unjudged top-3 of S\n"  # q1-d9; q1-d1 and q1-d2 exist
    assert "note: 1 unjudged pair(s) have no text yet (their fragments were never imported)" in err
    assert "import their texts with `qrelkit import fragments FILE`" in err
    # pairs waiting: q1-d2, q2-d3, q2-d2 (graded) and q1-d9 (not); fragments without text: d2, d3, d9, d8
    waiting = texts_waiting(engine, "demo")
    assert (waiting.fragments, waiting.pairs, waiting.unjudged) == (4, 4, 1)
    assert waiting.sentence().startswith("4 pair(s) wait for their text (1 of them unjudged; 4 fragment(s)")
    assert judge_holes(engine, "demo", "S", k=3, actor=OPERATOR) == 0


def test_a_run_stored_before_0017_gets_its_fragments_from_holes_and_imports(engine, project, nist, tmp_path):
    from tests.helpers import seed

    seed(engine, project.id, {}, {}, {"old": {"q1": ["d1", "ghost", "d7"]}})  # entries with no fragment, as before 0017
    assert holes_without_text(engine, "demo", "old", k=3) == 2
    assert judge_holes(engine, "demo", "old", k=2, actor=OPERATOR) == 1  # ghost, now a fragment without text
    assert _fragments(engine)["ghost"][:2] == ("", False)
    corpus = tmp_path / "d7.jsonl"
    corpus.write_text('{"id": "d7", "text": "a late text"}\n')
    import_fragments(engine, "demo", corpus, actor=OPERATOR)
    assert holes_without_text(engine, "demo", "old", k=3) == 1  # d7 is linked to its new fragment: only ghost


def test_the_pairs_export_gives_a_script_no_empty_text_to_grade(engine, nist, tmp_path):
    from db.exports import export_pairs

    out = tmp_path / "pairs.jsonl"
    assert export_pairs(engine, "demo", "jsonl", out) == 4
    texts = {(r["query_id"], r["fragment_id"]): r["text"] for r in map(json.loads, out.read_text().splitlines())}
    assert texts == {
        ("q1", "d1"): "returns are accepted",
        ("q1", "d2"): None,
        ("q2", "d3"): None,
        ("q2", "d2"): None,
    }


def test_adjudication_shows_no_text_rather_than_an_empty_one(engine, nist):
    from db.adjudication import pair_detail

    assert pair_detail(engine, "demo", _pair(engine, "q1", "d2"))["fragment"]["text"] is None
    assert pair_detail(engine, "demo", _pair(engine, "q1", "d1"))["fragment"]["text"] == "returns are accepted"


def test_a_control_pair_needs_its_text(engine, nist):
    from db.control import add_control

    add_guideline(engine, "demo", "Grade 0-3 by relevance.", actor=OPERATOR)
    with pytest.raises(ValueError, match=r"pair \('q1', 'd2'\) waits for its fragment's text"):
        add_control(engine, "demo", "q1", "d2", 1, "the window is stated", actor=OPERATOR)
    assert add_control(engine, "demo", "q1", "d1", 2, "returns are stated", actor=OPERATOR).added == 1


def test_controls_from_a_release_leave_out_the_pairs_waiting_for_their_text(engine, nist):
    from db.adjudication import adjudicate
    from db.control import controls_from_release

    create_user(engine, "boss", "lead", actor=OPERATOR)
    adjudicate(engine, _pair(engine, "q1", "d1"), 2, "returns are stated", actor="boss")
    adjudicate(engine, _pair(engine, "q1", "d2"), 1, "the window is stated", actor="boss")
    create_release(engine, "demo", actor=OPERATOR)
    report = controls_from_release(engine, "demo", 1, "1/10", actor="boss")
    # two adjudicated pairs in the release; q1-d2 has no text: one control pair
    assert (report.added, report.without_text) == (1, 1)
    assert report.to_dict()["without_text"] == 1


def test_the_cli_says_how_many_fragments_came_without_text(engine, project, store_url, tmp_path):
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\treturn window\n")
    import_queries(engine, "demo", queries, actor=OPERATOR)
    qrels = tmp_path / "nist.qrels"
    qrels.write_text("q1 0 D1 2\nq1 0 D2 0\n")
    argv = ["import", "judgments", str(qrels), "--annotator", "nist", "--project", "demo", "--db", store_url]
    code, out, err = run([*argv, "--report-format", "json"])
    assert code == 0
    report = json.loads(out)
    assert report["without_text"]["count"] == 2
    assert report["without_text"]["examples"] == [f"{qrels}:1: 'D1'", f"{qrels}:2: 'D2'"]
    assert err.startswith("note: 2 fragment(s) have no text yet: ")
    code, _, err = run([*argv, "--require-texts"])  # D1 and D2 still wait for their texts
    assert code == 2 and f"{qrels}:1: fragment id 'D1' has no text in this project (never imported)" in err
    ranking = tmp_path / "r.trec"
    ranking.write_text("q1 Q0 D1 1 1.0 r\n")
    code, _, err = run(["import", "run", str(ranking), "--require-texts", "--project", "demo", "--db", store_url])
    assert code == 2 and "--require-texts applies to `import judgments` only" in err


def test_the_bulk_insert_of_textless_fragments_is_the_imports_transaction(engine, project, nist):
    # create_textless writes through the driver (sqlite3 executemany / psycopg COPY), not SQLAlchemy: its rows must
    # still be the caller's transaction's (gone on rollback), and the ids it returns must be the stored ones
    with pytest.raises(RuntimeError), session_scope(engine, write=True) as session:
        got = create_textless(session, project.id, ["e2", "e1"])
        stored = dict(
            session.execute(
                sa.select(Fragment.external_id, Fragment.id).where(Fragment.external_id.in_(["e1", "e2"]))
            ).all()
        )
        assert got == stored and len(set(got.values())) == 2
        assert create_textless(session, project.id, []) == {}
        raise RuntimeError("the import failed after creating them")
    assert sorted(_fragments(engine)) == ["d1", "d2", "d3"]

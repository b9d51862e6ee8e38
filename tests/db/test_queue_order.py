"""Queue orders: each policy's first picks follow its definition on hand-built pools, the bandit is seeded,
and the store serves an annotator's next pair in the project's queue order (SQLite and PostgreSQL)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import sqlalchemy as sa

from annotator.cli import main
from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.assignment import assign
from db.grading import next_pair, record_judgment
from db.pooling import pool
from db.projects import get_project, set_queue_order
from db.store.models import Assignment, Fragment, Judgment, Pair, Project, Query, Run, RunEntry
from eval_core.queue_order import (
    ORDER_NAMES,
    ORDERS,
    Bandit,
    MoveToFront,
    QueryPool,
    found_at,
    judging_curve,
    make_order,
    replay_next,
)


def sequence(policy, relevant) -> list:
    """The whole order the policy judges when `relevant` is the truth."""
    out = []
    while (f := policy.next()) is not None:
        out.append(f)
        policy.observe(f, f in relevant)
    return out


# Two runs and a fragment no run ranked (pooled by BM25, say): pool order is best rank, then run A before B.
POOL = QueryPool(("a1", "b1", "a2", "a3", "b2", "x"), (("a1", "a2", "a3"), ("b1", "a3", "b2")))


@pytest.mark.parametrize("order", ORDER_NAMES)
def test_every_order_judges_each_fragment_once(order):
    rng = np.random.default_rng(3)
    frags = tuple(f"d{i}" for i in range(40))
    runs = tuple(tuple(rng.permutation(frags)[:15]) for _ in range(4))
    seen = sequence(
        make_order(order, QueryPool(frags, runs), seed=1, model_grades={"d5": 1.0}),
        {f for f in frags if rng.random() < 0.3},
    )
    assert sorted(seen) == sorted(frags)


def test_pool_order_is_the_pool():
    assert sequence(make_order("pool", POOL), {"a1"}) == list(POOL.fragments)


def test_move_to_front_stays_after_relevant_and_moves_after_non_relevant():
    # A: a1 relevant (stay), a2 not (A to the back); B: b1, a3 relevant (stay), b2 not (B to the back);
    # A's a3 is judged already, both runs are used up, the unranked x comes last.
    assert sequence(MoveToFront(POOL), {"a1", "b1", "a3"}) == ["a1", "a2", "b1", "a3", "b2", "x"]
    # A non-relevant first fragment moves on at once, and a relevant one keeps B at the front.
    assert sequence(MoveToFront(POOL), {"b1", "b2"})[:4] == ["a1", "b1", "a3", "a2"]


def test_bandit_first_pick_is_the_largest_posterior_draw():
    pool = QueryPool(
        tuple(f"r{r}d{d}" for d in range(3) for r in range(3)),
        tuple(tuple(f"r{r}d{d}" for d in range(3)) for r in range(3)),
    )
    for seed in range(20):
        draws = np.random.default_rng(seed).beta([1.0, 1.0, 1.0], [1.0, 1.0, 1.0])  # Beta(1, 1) prior per run
        assert Bandit(pool, seed=seed).next() == f"r{int(np.argmax(draws))}d0"


def test_bandit_posterior_discounts_each_runs_past():
    pool = QueryPool(("a", "b", "c", "z"), (("a", "b", "c"), ("z",)))
    bandit = Bandit(pool, seed=0, discount=0.5)
    pulls = []
    while len(pulls) < 4:
        fragment = bandit.next()
        pulls.append(fragment)
        bandit.observe(fragment, fragment in {"a", "c"})
    alpha, beta = bandit.posterior()
    run0 = [f for f in pulls if f != "z"]
    assert run0 == ["a", "b", "c"]  # each run is pulled top-down
    # run 0 saw R, N, R: rel = 0.5·(0.5·1 + 0) + 1 = 1.25, nrel = 0.5·(0.5·0 + 1) + 0 = 0.5 on a Beta(1, 1) prior;
    # run 1 saw one non-relevant: Beta(1, 2)
    assert alpha.tolist() == [2.25, 1.0] and beta.tolist() == [1.5, 2.0]


def test_bandit_follows_the_productive_run():
    rel_run = tuple(f"g{i}" for i in range(30))
    dud = tuple(f"n{i}" for i in range(30))
    pool = QueryPool(rel_run + dud, (dud, rel_run))
    picks = sequence(Bandit(pool, seed=5), set(rel_run))[:30]
    assert sum(p.startswith("g") for p in picks) >= 25


def test_bandit_is_deterministic_for_a_seed():
    rng = np.random.default_rng(0)
    frags = tuple(range(200))
    runs = tuple(tuple(int(x) for x in rng.permutation(200)[:60]) for _ in range(8))
    pool, truth = QueryPool(frags, runs), set(range(0, 200, 4))
    assert sequence(Bandit(pool, seed=11), truth) == sequence(Bandit(pool, seed=11), truth)
    assert sequence(Bandit(pool, seed=11), truth) != sequence(Bandit(pool, seed=12), truth)


def test_model_uncertain_puts_grades_near_the_boundary_first():
    pool = QueryPool(("f1", "f2", "f3", "f4", "f5"))
    grades = {"f1": 3.0, "f2": 0.5, "f3": 1.0, "f4": 0.0}
    # boundary at rel_level 1 is 0.5: f2 (0), then f3 and f4 (0.5 each, pool order), f1 (2.5), ungraded f5
    assert sequence(make_order("model-uncertain", pool, model_grades=grades), set()) == ["f2", "f3", "f4", "f1", "f5"]
    assert sequence(make_order("model-uncertain", pool), set()) == list(pool.fragments)


def test_replay_feeds_known_grades_and_skips_other_peoples_pairs():
    assert replay_next(MoveToFront(POOL), {"a1": True}, {"a2", "b1"}) == "a2"
    assert replay_next(MoveToFront(POOL), {"a1": False}, {"a2", "b1"}) == "b1"
    # a1 is nobody's grade yet and not mine: dropped without moving A to the back
    assert replay_next(MoveToFront(POOL), {}, {"a2", "b1"}) == "a2"
    assert replay_next(MoveToFront(POOL), {}, set()) is None


def test_found_at_takes_the_ceiling_of_each_budget():
    curve = np.array([1, 1, 2, 3, 3, 3, 4, 4, 4, 4])
    # 10 pairs: 1, 3 (⌈2.5⌉) and 5 judged; 2 pairs whose 2nd is relevant: 1, 1 (⌈0.5⌉) and 1 judged find none
    assert found_at(
        [curve, judging_curve(make_order("pool", QueryPool(("a", "b"))), {"b"})], (0.1, 0.25, 0.5)
    ).tolist() == [1 + 0, 2 + 0, 3 + 0]


def test_unknown_order_and_bad_pool_are_refused():
    with pytest.raises(ValueError, match="unknown queue order 'best'"):
        make_order("best", POOL)
    with pytest.raises(ValueError, match="not in the pool"):
        QueryPool(("a",), (("a", "b"),))


# --- the store ---

TRUTH = {"a1", "b1", "a3"}
RUNS = {"A": ["a1", "a2", "a3"], "B": ["b1", "a3", "b2"]}


@pytest.fixture
def pooled(engine, project):
    """One query pooled from runs A and B at depth 3, every pair assigned to ann (overlap 1)."""

    create_user(engine, "ann", "annotator", actor=OPERATOR)
    create_user(engine, "lead", "lead", actor=OPERATOR)
    with engine.begin() as conn:
        qid = conn.execute(
            sa.insert(Query.__table__)
            .values(project_id=project.id, external_id="q1", text="query")
            .returning(Query.__table__.c.id)
        ).scalar_one()
        fids = {}
        for name in ("a1", "a2", "a3", "b1", "b2"):
            fids[name] = conn.execute(
                sa.insert(Fragment.__table__)
                .values(
                    project_id=project.id,
                    external_id=name,
                    text=f"text {name}",
                    content_hash=hashlib.sha256(name.encode()).hexdigest(),
                )
                .returning(Fragment.__table__.c.id)
            ).scalar_one()
        for run, docs in RUNS.items():
            rid = conn.execute(
                sa.insert(Run.__table__)
                .values(project_id=project.id, name=run, content_hash=run, n_lines=3, created_at=sa.func.now())
                .returning(Run.__table__.c.id)
            ).scalar_one()
            for rank, doc in enumerate(docs, start=1):
                conn.execute(
                    sa.insert(RunEntry.__table__).values(
                        run_id=rid,
                        query_id=qid,
                        doc_external_id=doc,
                        fragment_id=fids[doc],
                        rank=rank,
                        score=10.0 - rank,
                    )
                )
    pool(engine, "demo", depth=3, bm25=0, actor=OPERATOR)
    assign(engine, "demo", overlap=1, annotators=["ann"], actor=OPERATOR)
    return engine


def served(engine, username: str = "ann") -> list[str]:
    """Judge the queue to the end with TRUTH's grades (3 relevant, 0 not); the fragments in the order served."""

    out = []
    while (view := next_pair(engine, "demo", username)) is not None:
        out.append(view.fragment_external_id)
        record_judgment(engine, view.pair_id, username, 3 if view.fragment_external_id in TRUTH else 0)
    return out


def test_store_serves_pool_order_by_default(pooled):

    assert get_project(pooled, "demo").queue_order == "pool"
    assert served(pooled) == ["a1", "b1", "a2", "a3", "b2"]  # best rank, then run A's before B's


def test_store_serves_the_projects_move_to_front_order(pooled):

    assert set_queue_order(pooled, "demo", "move-to-front", actor=OPERATOR).queue_order == "move-to-front"
    assert served(pooled) == ["a1", "a2", "b1", "a3", "b2"]


def test_store_order_counts_grades_recorded_by_others(pooled):
    set_queue_order(pooled, "demo", "move-to-front", actor=OPERATOR)
    first = next_pair(pooled, "demo", "ann")
    assert first.fragment_external_id == "a1"
    record_judgment(pooled, first.pair_id, "lead", 0)  # a lead may grade a pair assigned to someone else
    assert next_pair(pooled, "demo", "ann").fragment_external_id == "a1"  # still hers to grade
    with pooled.begin() as conn:
        conn.execute(sa.delete(Assignment.__table__).where(Assignment.__table__.c.pair_id == first.pair_id))
    # the lead's non-relevant a1 sent run A to the back: B's b1 comes next, not A's a2
    assert next_pair(pooled, "demo", "ann").fragment_external_id == "b1"


def test_store_bandit_order_is_a_seeded_permutation(pooled):

    set_queue_order(pooled, "demo", "bandit", actor=OPERATOR)
    first = served(pooled)
    assert sorted(first) == ["a1", "a2", "a3", "b1", "b2"]

    with pooled.begin() as conn:
        conn.execute(sa.delete(Judgment.__table__))
        conn.execute(sa.update(Assignment.__table__).values(done=False))
    assert served(pooled) == first  # same grades, same seed: same order


def test_queue_order_setting_is_checked(pooled):

    with pytest.raises(PermissionError):
        set_queue_order(pooled, "demo", "bandit", actor="ann")
    with pytest.raises(ValueError, match="unknown queue order 'fastest'"):
        set_queue_order(pooled, "demo", "fastest", actor=OPERATOR)
    assert set_queue_order(pooled, "demo", "bandit", actor="lead").queue_order == "bandit"
    with pytest.raises(sa.exc.IntegrityError), pooled.begin() as conn:  # the database refuses it too
        conn.execute(sa.update(Project.__table__).values(queue_order="fastest"))


def test_cli_project_set(pooled, store_url, capsys):

    assert (
        main(["project", "set", "demo", "--queue-order", "move-to-front", "--db", store_url, "--format", "json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["queue_order"] == "move-to-front"
    assert served(pooled)[:2] == ["a1", "a2"]
    with pytest.raises(SystemExit):
        main(["project", "set", "demo", "--queue-order", "fastest", "--db", store_url])
    assert "invalid choice: 'fastest'" in capsys.readouterr().err


def test_migration_gives_existing_projects_pool_order_and_a_check(empty_store_url):
    from db.store.engine import get_engine
    from db.store.schema import upgrade

    engine = get_engine(empty_store_url)
    assert upgrade(engine, "0004") == "0004"
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO projects (id, name, scale_min, scale_max, overlap, overlap_fraction, "
            "agreement_threshold, created_at) VALUES (1, 'old', 0, 3, 2, 1.0, 0.6, "
            "'2026-01-02 03:04:05')"
        )
    assert upgrade(engine, "0005") == "0005"
    with engine.connect() as conn:  # read at 0005 in SQL: today's models hold columns of later revisions
        assert conn.exec_driver_sql("SELECT queue_order FROM projects").scalar_one() == "pool"
    upgrade(engine)
    assert get_project(engine, "old").queue_order == "pool"
    assert set_queue_order(engine, "old", "model-uncertain", actor=OPERATOR).queue_order == "model-uncertain"
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.exec_driver_sql("UPDATE projects SET queue_order = 'fastest'")
    engine.dispose()
    get_engine.cache_clear()


def test_project_page_sets_the_queue_order(tmp_path, monkeypatch):
    """The lead picks the bandit on the Project page; the store then holds it and the page says so."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from annotator.app.auth import TOKEN_KEY
    from db.accounts.sessions import create_session
    from db.projects import create_project
    from db.store.engine import get_engine
    from db.store.schema import init_db

    url = f"sqlite:///{tmp_path / 'page.db'}"
    engine = init_db(url)
    create_project(engine, "demo", actor=OPERATOR)
    lead = create_user(engine, "lea", "lead", actor=OPERATOR)
    monkeypatch.setenv("QRELKIT_DB_URL", url)
    monkeypatch.setenv("QRELKIT_PROJECT", "demo")
    page = Path(__file__).resolve().parents[2] / "annotator" / "app" / "screens" / "lead_project.py"
    at = AppTest.from_file(str(page), default_timeout=60)
    at.session_state[TOKEN_KEY] = create_session(engine, lead.id, client="apptest").token
    at.session_state["project"] = "demo"
    at.run()
    assert not at.exception
    box = next(b for b in at.selectbox if b.label.startswith("Queue order"))
    assert box.value == "pool" and list(box.options) == [ORDERS[name] for name in ORDER_NAMES]
    box.set_value("bandit")
    next(b for b in at.button if b.label == "Save queue order").click().run()
    assert not at.exception
    assert get_project(engine, "demo").queue_order == "bandit"
    assert any(s.value.endswith(f"{ORDERS['bandit']}.") for s in at.success)
    engine.dispose()
    get_engine.cache_clear()


def test_max_mean_bandit_pulls_the_largest_posterior_mean():
    pool = QueryPool(("a1", "a2", "b1", "b2"), (("a1", "a2"), ("b1", "b2")))
    bandit = make_order("bandit-max-mean", pool)
    assert bandit.next() == "a1"  # means tie at 1/2: the run listed first
    bandit.observe("a1", False)  # run A: Beta(1, 2), mean 1/3 < 1/2
    assert bandit.next() == "b1"
    bandit.observe("b1", False)  # both 1/3 again: back to A
    assert bandit.next() == "a2"


def test_docs_table_lists_exactly_the_registered_orders():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "queue_order.md").read_text(encoding="utf-8")
    section = text[text.index("## The orders") : text.index("### What the bandit implements")]
    documented = [line.split("`")[1] for line in section.splitlines() if line.startswith("| `")]
    assert documented == list(ORDER_NAMES)


def test_back_follows_the_grading_order_under_an_order(pooled):
    from db.grading import previous_pair

    set_queue_order(pooled, "demo", "move-to-front", actor=OPERATOR)
    for _ in range(2):  # a1 (relevant), a2 (not: run A to the back)
        view = next_pair(pooled, "demo", "ann")
        record_judgment(pooled, view.pair_id, "ann", 3 if view.fragment_external_id in TRUTH else 0)
    current = next_pair(pooled, "demo", "ann")
    assert current.fragment_external_id == "b1"  # position 2 of 5: a2 (position 3) was graded before it
    back = previous_pair(pooled, "demo", "ann", current.pair_id)
    assert back.fragment_external_id == "a2" and back.grade == 0
    assert previous_pair(pooled, "demo", "ann", back.pair_id).fragment_external_id == "a1"
    assert previous_pair(pooled, "demo", "ann").fragment_external_id == "a2"
    assert previous_pair(pooled, "demo", "ann", previous_pair(pooled, "demo", "ann", back.pair_id).pair_id) is None


def test_store_serves_model_uncertain_pairs_first(pooled):
    from db.store.models import User, utcnow

    judge = create_user(pooled, "judge", "annotator", actor=OPERATOR)
    model_grades = {"a1": 3, "a2": 1, "a3": 0, "b1": 2, "b2": 1}
    with pooled.begin() as conn:
        conn.execute(sa.update(User.__table__).where(User.__table__.c.id == judge.id).values(kind="model"))
        pair_of = dict(
            conn.execute(
                sa.select(Fragment.__table__.c.external_id, Pair.__table__.c.id).join(
                    Pair.__table__, Pair.__table__.c.fragment_id == Fragment.__table__.c.id
                )
            ).all()
        )
        now = utcnow()
        conn.execute(
            sa.insert(Judgment.__table__),
            [
                {
                    "project_id": 1,
                    "pair_id": pair_of[f],
                    "user_id": judge.id,
                    "grade": g,
                    "revision": 1,
                    "created_at": now,
                    "updated_at": now,
                }
                for f, g in model_grades.items()
            ],
        )
    assert served(pooled)[:1] == ["a1"]  # pool order ignores model grades
    with pooled.begin() as conn:
        conn.execute(sa.delete(Judgment.__table__).where(Judgment.__table__.c.user_id != judge.id))
        conn.execute(sa.update(Assignment.__table__).values(done=False))
    set_queue_order(pooled, "demo", "model-uncertain", actor=OPERATOR)
    # boundary 0.5 on 0-3: a2, a3, b2 at 0.5 (pool order a2, a3, b2), then b1 at 1.5, a1 at 2.5
    assert served(pooled) == ["a2", "a3", "b2", "b1", "a1"]


def test_store_order_follows_a_re_pooling(pooled):
    """A run pooled later (same pairs, new provenance) joins the order: the cached pool is rebuilt."""
    set_queue_order(pooled, "demo", "move-to-front", actor=OPERATOR)
    assert next_pair(pooled, "demo", "ann").fragment_external_id == "a1"
    with pooled.begin() as conn:
        fid = conn.execute(sa.select(Fragment.__table__.c.id).where(Fragment.__table__.c.external_id == "b2")).scalar()
        rid = conn.execute(
            sa.insert(Run.__table__)
            .values(project_id=1, name="0-first", content_hash="0", n_lines=1, created_at=sa.func.now())
            .returning(Run.__table__.c.id)
        ).scalar_one()
        conn.execute(
            sa.insert(RunEntry.__table__).values(
                run_id=rid, query_id=1, doc_external_id="b2", fragment_id=fid, rank=1, score=1.0
            )
        )
    assert next_pair(pooled, "demo", "ann").fragment_external_id == "a1"  # stored, not pooled: not in the order
    pool(pooled, "demo", depth=1, runs=["0-first"], bm25=0, actor=OPERATOR)
    assert next_pair(pooled, "demo", "ann").fragment_external_id == "b2"  # its run now heads the queue

"""Migrations: the packaged Alembic chain builds exactly the models' schema, and 0001 data survives to head."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

from db.grading import next_pair
from db.projects import default_labels, stored_labels
from db.store.engine import get_engine
from db.store.schema import MIGRATIONS, alembic_config, current_revision, head_revision, init_db, upgrade


def test_packaged_chain_and_head():
    names = sorted(p.name for p in (MIGRATIONS / "versions").glob("*.py"))
    assert names == [
        "0001_initial_schema.py",
        "0002_assignment_done.py",
        "0003_sessions.py",
        "0004_labels_notes_text_hashes.py",
        "0005_queue_order.py",
        "0006_model_judges.py",
        "0007_query_context.py",
        "0008_control_pairs.py",
        "0009_rejudge.py",
        "0010_qualification.py",
        "0011_fragment_documents.py",
        "0012_qualification_retakes.py",
        "0013_judge_trust.py",
        "0014_reference_annotators.py",
        "0015_login_in_flight.py",
        "0016_model_consensus_rules.py",
        "0017_textless_fragments_run_request.py",
    ]
    assert head_revision() == "0017"
    from alembic.script import ScriptDirectory  # the cheap read (file names) agrees with Alembic's own chain

    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == head_revision()


def test_upgrade_is_idempotent_and_matches_models(empty_store_url):
    engine = init_db(empty_store_url)
    assert upgrade(engine) == "0017"
    assert upgrade(engine) == "0017"
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), SQLModel.metadata)
    assert diff == []
    engine.dispose()
    get_engine.cache_clear()


def test_database_at_0001_with_data_upgrades_intact(empty_store_url):
    engine = get_engine(empty_store_url)
    assert current_revision(engine) is None
    assert upgrade(engine, "0001") == "0001"
    with engine.begin() as conn:
        run = conn.exec_driver_sql
        now = "2026-01-02 03:04:05"
        run(
            f"INSERT INTO projects (id, name, scale_min, scale_max, overlap, overlap_fraction, agreement_threshold, "
            f"created_at) VALUES (1, 'old', 0, 3, 2, 1.0, 0.6, '{now}')"
        )
        for uid, name in ((1, "ann"), (2, "other")):
            run(
                f"INSERT INTO users (id, username, role, active, created_at) VALUES ({uid}, '{name}', 'annotator', "
                f"true, '{now}')"
            )
        run("INSERT INTO queries (id, project_id, external_id, text) VALUES (1, 1, 'q1', 'query one')")
        for fid in (1, 2, 3):
            run(
                f"INSERT INTO fragments (id, project_id, external_id, text, content_hash) "
                f"VALUES ({fid}, 1, 'f{fid}', 'text {fid}', 'h{fid}')"
            )
            run(
                f"INSERT INTO pairs (id, project_id, query_id, fragment_id, created_at) VALUES ({fid}, 1, 1, {fid}, "
                f"'{now}')"
            )
            run(
                f"INSERT INTO assignments (project_id, pair_id, user_id, position, created_at) "
                f"VALUES (1, {fid}, 1, {fid}, '{now}')"
            )
        run(
            f"INSERT INTO assignments (project_id, pair_id, user_id, position, created_at) VALUES (1, 1, 2, 1, '{now}')"
        )
        for pid in (1, 2):  # ann judged pairs 1 and 2 under revision 0001
            run(
                f"INSERT INTO judgments (project_id, pair_id, user_id, grade, revision, created_at, updated_at) "
                f"VALUES (1, {pid}, 1, {pid + 1}, 1, '{now}', '{now}')"
            )
    assert upgrade(engine) == "0017"
    with engine.connect() as conn:
        done = dict(conn.execute(sa.text("SELECT pair_id, done FROM assignments WHERE user_id = 1")).all())
        other = conn.execute(sa.text("SELECT done FROM assignments WHERE user_id = 2")).scalar_one()
        grades = conn.execute(sa.text("SELECT pair_id, grade FROM judgments ORDER BY pair_id")).all()
        counts = [
            conn.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar_one()
            for t in ("projects", "users", "queries", "fragments", "pairs", "assignments", "judgments")
        ]
        labels, order = conn.execute(sa.text("SELECT grade_labels, queue_order FROM projects")).one()
        kinds = conn.execute(sa.text("SELECT DISTINCT kind FROM users")).scalars().all()
        every = conn.execute(sa.text("SELECT control_every FROM projects")).scalar_one()
    assert every is None  # 0008: an old project serves no control pairs until a lead sets a rate
    assert {k: bool(v) for k, v in done.items()} == {1: True, 2: True, 3: False}
    assert not other
    assert [tuple(g) for g in grades] == [(1, 2), (2, 3)]
    assert counts == [1, 2, 1, 3, 3, 4, 1 + 1]
    # the frozen defaults of 0004-0006: a 0-3 project gets the bundled guideline's grade names
    labels = json.loads(labels) if isinstance(labels, str) else labels
    assert labels == stored_labels(default_labels((0, 3))) and labels["0"] == "Not relevant"
    assert (order, kinds) == ("pool", ["human"])
    view = next_pair(engine, "old", "ann")
    assert (view.fragment_external_id, view.position, view.total) == ("f3", 3, 3)
    engine.dispose()
    get_engine.cache_clear()


def test_a_round_at_0011_becomes_attempt_1_with_its_grades_and_retakes_block_the_way_down(empty_store_url):
    """0012 rebuilds qualification_rounds on SQLite (foreign keys on): the round and its grades survive, the
    one-round-per-annotator rule becomes one per attempt, a closed row needs who and when; a retake cannot be
    carried back to 0011, which says so instead of dropping it."""
    engine = get_engine(empty_store_url)
    assert upgrade(engine, "0011") == "0011"
    now = "2026-01-02 03:04:05"
    with engine.begin() as conn:
        run = conn.exec_driver_sql
        run(
            f"INSERT INTO projects (id, name, scale_min, scale_max, overlap, overlap_fraction, agreement_threshold, "
            f"created_at) VALUES (1, 'old', 0, 3, 2, 1.0, 0.6, '{now}')"
        )
        run(
            f"INSERT INTO users (id, username, role, active, created_at) VALUES (1, 'ann', 'annotator', true, "
            f"'{now}'), (2, 'lea', 'lead', true, '{now}')"
        )
        run("INSERT INTO queries (id, project_id, external_id, text) VALUES (1, 1, 'q1', 'query one')")
        run("INSERT INTO fragments (id, project_id, external_id, text, content_hash) VALUES (1, 1, 'f1', 't', 'h')")
        run(f"INSERT INTO pairs (id, project_id, query_id, fragment_id, created_at) VALUES (1, 1, 1, 1, '{now}')")
        run(
            f"INSERT INTO qualification_rounds (id, project_id, user_id, status, pairs, threshold, weights, kappa, "
            f"started_at) VALUES (7, 1, 1, 'failed', 1, 0.6, 'linear', 0.1, '{now}')"
        )
        run(
            "INSERT INTO qualification_grades (round_id, pair_id, position, settled, reason, grade) "
            "VALUES (7, 1, 1, 3, 'why', 0)"
        )
    assert upgrade(engine, "0012") == "0012"
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT id, attempt, status, kappa FROM qualification_rounds")).one() == (
            7,
            1,
            "failed",
            0.1,
        )
        assert conn.execute(
            sa.text("SELECT round_id, pair_id, settled, reason, grade FROM qualification_grades")
        ).one() == (7, 1, 3, "why", 0)
    insert = (
        "INSERT INTO qualification_rounds (project_id, user_id, attempt, status, pairs, threshold, weights, "
        "started_at{extra}) VALUES (1, 1, {attempt}, '{status}', 0, 0.6, 'linear', '{now}'{values})"
    )
    for attempt, status, extra, values in (
        (1, "opened", ", opened_by_id, opened_at", f", 2, '{now}'"),
        (2, "closed", "", ""),
    ):
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:  # attempt 1 taken; closed by nobody
            conn.exec_driver_sql(insert.format(attempt=attempt, status=status, extra=extra, values=values, now=now))
    with engine.begin() as conn:
        conn.exec_driver_sql(
            insert.format(
                attempt=2, status="closed", extra=", closed_by_id, closed_at", values=f", 2, '{now}'", now=now
            )
        )
    config = alembic_config()
    with (
        pytest.raises(RuntimeError, match="cannot downgrade below 0012: 1 qualification round"),
        engine.begin() as conn,
    ):
        config.attributes["connection"] = conn
        command.downgrade(config, "0011")
    assert current_revision(engine) == "0012"
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM qualification_rounds WHERE attempt = 2")
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0011")
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT round_id, grade FROM qualification_grades")).one() == (7, 0)
    engine.dispose()
    get_engine.cache_clear()


def test_0014_lets_users_be_references_and_refuses_to_drop_one(empty_store_url):
    """0014 widens users.kind to 'reference' in place (SQLite: the stored CHECK is rewritten, no rebuild): an
    account made at 0013 survives, a reference account can be made, any other kind is still refused, and the
    way back to 0013 is refused while a reference account exists."""
    engine = get_engine(empty_store_url)
    assert upgrade(engine, "0013") == "0013"
    now = "2026-01-02 03:04:05"
    insert = (
        "INSERT INTO users (username, role, active, created_at, kind) "
        "VALUES ('{name}', 'annotator', true, '{now}', '{kind}')"
    )
    with engine.begin() as conn:
        conn.exec_driver_sql(insert.format(name="ann", now=now, kind="human"))
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.exec_driver_sql(insert.format(name="nist", now=now, kind="reference"))
    assert upgrade(engine, "0014") == "0014"
    with engine.begin() as conn:
        conn.exec_driver_sql(insert.format(name="nist", now=now, kind="reference"))
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.exec_driver_sql(insert.format(name="bot", now=now, kind="robot"))
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT username, kind FROM users ORDER BY id")).all() == [
            ("ann", "human"),
            ("nist", "reference"),
        ]
    config = alembic_config()
    with pytest.raises(RuntimeError, match="cannot downgrade below 0014: 1 reference"), engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0013")
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM users WHERE kind = 'reference'")
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0013")
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.exec_driver_sql(insert.format(name="nist", now=now, kind="reference"))
    engine.dispose()
    get_engine.cache_clear()


def test_0016_lets_releases_name_a_model_rule_and_keeps_their_evaluations(empty_store_url):
    """0016 rebuilds releases on SQLite while evaluations and control pairs point at it: they survive; a
    release by dawid-skene is refused at 0015 and accepted at 0016, and blocks the way down with a reason."""
    engine = get_engine(empty_store_url)
    assert upgrade(engine, "0015") == "0015"
    now = "2026-01-02 03:04:05"
    release = (
        "INSERT INTO releases (id, project_id, version, rule, min_grades, content_hash, card, qrels_trec, "
        "judgments_jsonl, created_at) VALUES ({id}, 1, {id}, '{rule}', 1, 'h', '{{}}', '', '', '{now}')"
    )
    with engine.begin() as conn:
        run = conn.exec_driver_sql
        run(
            f"INSERT INTO projects (id, name, scale_min, scale_max, overlap, overlap_fraction, agreement_threshold, "
            f"created_at) VALUES (1, 'old', 0, 3, 2, 1.0, 0.6, '{now}')"
        )
        run(
            "INSERT INTO runs (id, project_id, name, content_hash, n_lines, created_at) "
            f"VALUES (1, 1, 'bm25', 'h', 0, '{now}')"
        )
        run(release.format(id=1, rule="median", now=now))
        run(
            f"INSERT INTO evaluations (run_id, release_id, means, per_query, created_at) "
            f"VALUES (1, 1, '{{}}', '{{}}', '{now}')"
        )
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.exec_driver_sql(release.format(id=2, rule="dawid-skene", now=now))
    assert upgrade(engine) == "0017"
    with engine.begin() as conn:
        conn.exec_driver_sql(release.format(id=2, rule="dawid-skene", now=now))
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.exec_driver_sql(release.format(id=3, rule="vote", now=now))
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT run_id, release_id FROM evaluations")).one() == (1, 1)
        assert conn.execute(sa.text("SELECT id, rule FROM releases ORDER BY id")).all() == [
            (1, "median"),
            (2, "dawid-skene"),
        ]
    config = alembic_config()
    with pytest.raises(RuntimeError, match="cannot downgrade below 0016: 1 release"), engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0015")
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM releases WHERE id = 2")
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0015")
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT run_id, release_id FROM evaluations")).one() == (1, 1)
    engine.dispose()
    get_engine.cache_clear()


def test_0017_keeps_every_fragment_textful_and_guards_the_way_down(empty_store_url):
    """Fragments stored at 0016 have their text (has_text true after 0017); a run's request round-trips as JSON;
    a fragment waiting for its text blocks the way down with a reason, and once it has it the way down is open."""
    engine = get_engine(empty_store_url)
    assert upgrade(engine, "0016") == "0016"
    now = "2026-01-01 00:00:00"
    with engine.begin() as conn:
        run = conn.exec_driver_sql
        run(
            f"INSERT INTO projects (id, name, scale_min, scale_max, overlap, overlap_fraction, agreement_threshold, "
            f"created_at) VALUES (1, 'p', 0, 3, 2, 1.0, 0.6, '{now}')"
        )
        run("INSERT INTO fragments (id, project_id, external_id, text, content_hash) VALUES (1, 1, 'f1', 'x', 'h')")
        run(
            "INSERT INTO runs (id, project_id, name, content_hash, n_lines, created_at) "
            f"VALUES (1, 1, 'r', 'h', 0, '{now}')"
        )
    assert upgrade(engine) == "0017"
    with engine.begin() as conn:
        assert conn.execute(sa.text("SELECT has_text FROM fragments")).scalar_one() in (True, 1)
        conn.execute(sa.text("UPDATE runs SET request = :r"), {"r": json.dumps({"url": "http://127.0.0.1:9200"})})
        stored = conn.execute(sa.text("SELECT request FROM runs")).scalar_one()  # PostgreSQL's driver decodes
        assert (json.loads(stored) if isinstance(stored, str) else stored) == {"url": "http://127.0.0.1:9200"}
        conn.execute(sa.text("UPDATE fragments SET has_text = false, text = ''"))
    config = alembic_config()
    with pytest.raises(RuntimeError, match="cannot downgrade below 0017: 1 fragment"), engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0016")
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE fragments SET has_text = true, text = 'x'"))
        config.attributes["connection"] = conn
        command.downgrade(config, "0016")
    assert current_revision(engine) == "0016"
    engine.dispose()
    get_engine.cache_clear()

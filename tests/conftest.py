"""Shared fixtures and the rule that CI runs browser and PostgreSQL tests instead of skipping them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
PG_URL = os.environ.get("QRELKIT_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def pytest_configure(config) -> None:
    """AppTests run the pages with the Streamlit runner settings `qrelkit serve` gives (annotator.cli.app)."""
    from streamlit import config as streamlit_config

    from annotator.cli.app import RUNNER_SETTINGS

    for key, value in RUNNER_SETTINGS.items():
        streamlit_config.set_option(key, value)


def require(condition: bool, reason: str) -> None:
    """Skip locally when a component is missing, but fail in CI, where every test must run."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_url() -> str:
    """URL of a reachable PostgreSQL server (skips locally, fails in CI when it is down)."""
    try:
        import sqlalchemy as sa

        engine = sa.create_engine(PG_URL)
        with engine.connect() as conn:
            conn.execute(sa.text("select 1"))
        engine.dispose()
        ok, why = True, ""
    except Exception as exc:  # any failure to connect means "not available"
        ok, why = False, f"PostgreSQL not reachable at {PG_URL}: {exc}"
    require(ok, why)
    return PG_URL


# --- Store fixtures (db/): every store test runs on SQLite and, marked `postgres`, on PostgreSQL. ---
#   store_kind  "sqlite" or "postgresql" (the parameter both fixtures below share)
#   store_url   URL of a database at the head schema with no rows (ids restart at 1): a SQLite file in tmp_path,
#               or a PostgreSQL schema selected by `options=-csearch_path=…` in the URL (so subprocesses and the
#               CLI given the URL see the same data)
#   engine      the engine for store_url (get_engine's), disposed afterwards
#   empty_store_url  a database with no schema at all (migration tests)
#   project     a ProjectInfo for project "demo" (scale 0-3, overlap 2) in `engine`
#   queue       users and 12 assigned pairs in "demo" (see its docstring)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_kind(request) -> str:
    """Which engine a store test runs on."""
    return request.param


def pg_schema(base: str):
    """Create a PostgreSQL schema of its own; returns (URL with that search_path, drop callback)."""
    import uuid

    import sqlalchemy as sa

    schema = f"t_{uuid.uuid4().hex[:16]}"
    admin = sa.create_engine(base, pool_pre_ping=True)  # a browser test restarts the server mid-session
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))

    def drop() -> None:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        admin.dispose()

    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options=-csearch_path%3D{schema}", drop


def _create_at_head(url: str) -> None:
    """create_all + stamp head (5x faster than replaying migrations; test_store_schema proves they agree)."""
    from alembic import command
    from sqlmodel import SQLModel

    import db.store.models  # noqa: F401  (registers the tables: a test module may import nothing of db)
    from db.store.engine import get_engine
    from db.store.schema import alembic_config

    eng = get_engine(url)
    SQLModel.metadata.create_all(eng)
    config = alembic_config()
    with eng.begin() as conn:
        config.attributes["connection"] = conn
        command.stamp(config, "head")
    eng.dispose()
    get_engine.cache_clear()


@pytest.fixture
def empty_store_url(store_kind, tmp_path, request):
    """A fresh database with no schema at all (for migration tests); a PostgreSQL schema is dropped afterwards."""
    if store_kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    url, drop = pg_schema(request.getfixturevalue("pg_url"))
    yield url
    drop()


@pytest.fixture(scope="session")
def _sqlite_head_template(tmp_path_factory):
    """One SQLite file at head, copied for each test."""
    path = tmp_path_factory.mktemp("store-template") / "head.db"
    _create_at_head(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def _pg_head_url(pg_url):
    """One PostgreSQL schema at head for the session, emptied before each test."""
    url, drop = pg_schema(pg_url)
    _create_at_head(url)
    yield url
    drop()


@pytest.fixture
def store_url(store_kind, tmp_path, request) -> str:
    """URL of a database at the head schema with no rows (ids restart at 1): a copied SQLite file, or a shared
    PostgreSQL schema emptied first. `engine` is this database; pass the URL to the CLI or to subprocesses."""
    import shutil

    import sqlalchemy as sa
    from sqlmodel import SQLModel

    if store_kind == "sqlite":
        target = tmp_path / "store.db"
        shutil.copyfile(request.getfixturevalue("_sqlite_head_template"), target)
        return f"sqlite:///{target}"
    url = request.getfixturevalue("_pg_head_url")
    tables = list(reversed(SQLModel.metadata.sorted_tables))
    admin = sa.create_engine(url)
    with admin.begin() as conn:
        for table in tables:
            conn.execute(table.delete())
        conn.execute(
            sa.text(
                "SELECT setval(pg_get_serial_sequence(t, 'id'), 1, false) FROM unnest(CAST(:names AS text[])) AS t"
            ),
            {"names": [t.name for t in tables]},
        )
    admin.dispose()
    return url


@pytest.fixture
def engine(store_url):
    """The store at `store_url` (get_engine's cached engine for it); disposed afterwards."""
    from db.store.engine import get_engine

    eng = get_engine(store_url)
    yield eng
    eng.dispose()
    get_engine.cache_clear()


@pytest.fixture
def project(engine):
    """Project "demo" (scale 0-3, overlap 2) in the test store."""
    from db.accounts.permissions import OPERATOR
    from db.projects import create_project

    return create_project(engine, "demo", actor=OPERATOR)


@pytest.fixture
def queue(engine, project):
    """Users ann1, ann2 (annotators) and boss (lead), all without passwords (hashing is slow on purpose); queries
    q1-q3 × fragments f1-f4 as 12 pairs, every pair assigned to ann1 and ann2 in (query, fragment) order, positions
    1-12. Returns {(query external id, fragment external id): pair id}."""
    import sqlalchemy as sa

    from db.accounts.permissions import OPERATOR
    from db.accounts.users import create_user
    from db.store.models import Assignment, Fragment, Pair, Query

    users = {
        name: create_user(engine, name, role, actor=OPERATOR).id
        for name, role in (("ann1", "annotator"), ("ann2", "annotator"), ("boss", "lead"))
    }
    pairs = {}
    with engine.begin() as conn:
        for q in range(1, 4):
            conn.execute(
                sa.insert(Query.__table__).values(
                    project_id=project.id, external_id=f"q{q}", text=f"query {q}", category="odd" if q % 2 else "even"
                )
            )
        for f in range(1, 5):
            conn.execute(
                sa.insert(Fragment.__table__).values(
                    project_id=project.id,
                    external_id=f"f{f}",
                    text=f"fragment {f}",
                    title=f"T{f}",
                    content_hash=f"h{f}",
                )
            )
        qid = dict(conn.execute(sa.select(Query.external_id, Query.id)).all())
        fid = dict(conn.execute(sa.select(Fragment.external_id, Fragment.id)).all())
        position = 0
        for q in range(1, 4):
            for f in range(1, 5):
                pid = conn.execute(
                    sa.insert(Pair.__table__)
                    .values(
                        project_id=project.id, query_id=qid[f"q{q}"], fragment_id=fid[f"f{f}"], created_at=sa.func.now()
                    )
                    .returning(Pair.__table__.c.id)
                ).scalar_one()
                pairs[(f"q{q}", f"f{f}")] = pid
                position += 1
                for user in ("ann1", "ann2"):
                    conn.execute(
                        sa.insert(Assignment.__table__).values(
                            project_id=project.id,
                            pair_id=pid,
                            user_id=users[user],
                            position=position,
                            created_at=sa.func.now(),
                        )
                    )
    return pairs


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory) -> Path:
    """The demo project (`qrelkit demo`: release 1 cut from 30 judged queries, runs baseline and dense) in a
    SQLite file, built once per test session; tests copy it (never write to it)."""
    from annotator.demo import build_demo
    from db.store.schema import init_db

    folder = tmp_path_factory.mktemp("demo-template")
    engine = init_db(f"sqlite:///{folder / 'demo.db'}")
    build_demo(engine)
    engine.dispose()
    return folder


# --- AppTest fixtures (annotator/app/): the seed-000 lead store of tests/helpers.py, built once per module.
#   template    that store in a SQLite file (tests copy it)
#   store       a private copy, QRELKIT_DB_URL and QRELKIT_PROJECT pointing the app at it (its engine)
#   scan_components_once  Streamlit's component scan cached for a module: a module of AppTests asks for it with
#               pytestmark = pytest.mark.usefixtures("scan_components_once")


@pytest.fixture(scope="module")
def scan_components_once():
    """AppTest rescans every installed distribution for Streamlit components on each new AppTest (seconds
    on a busy machine); the installed set does not change during the tests, so scan once."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    original = manifest_scanner.scan_component_manifests
    manifest_scanner.scan_component_manifests = functools.lru_cache(maxsize=1)(original)
    yield
    manifest_scanner.scan_component_manifests = original


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """The seeded store, built once per module; each test gets its own copy."""
    from tests.helpers import build_store

    folder = tmp_path_factory.mktemp("lead-template")
    build_store(f"sqlite:///{folder / 'lead.db'}")
    return folder


@pytest.fixture
def store(template, tmp_path, monkeypatch):
    """A private copy of the seeded store; QRELKIT_DB_URL points the app at it."""
    from tests.helpers import PROJECT, private_store

    return private_store(template, "lead.db", PROJECT, tmp_path, monkeypatch)

"""Accounts, projects and guideline versions: hashing, login rules, and constraints the database enforces."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from db.models import User
from db.projects import (
    ProjectNotFound,
    add_guideline,
    create_project,
    current_guideline,
    get_project,
    list_guidelines,
    list_projects,
    update_policy,
)
from db.users import authenticate, create_user, list_users, set_active, set_password, verify_password


def test_passwords_are_salted_scrypt_and_checked(engine):
    alice = create_user(engine, "alice", "annotator", "s3cret")
    assert alice.can_login and alice.role == "annotator"
    with engine.connect() as conn:
        stored = conn.execute(sa.select(User.password_hash).where(User.username == "alice")).scalar_one()
    assert stored.startswith("scrypt$") and "s3cret" not in stored
    create_user(engine, "bob", "lead", "s3cret")
    with engine.connect() as conn:
        hashes = conn.execute(sa.select(User.password_hash).order_by(User.username)).scalars().all()
    assert hashes[0] != hashes[1]  # salted
    assert verify_password("s3cret", stored) and not verify_password("S3cret", stored)
    assert authenticate(engine, "alice", "s3cret") == alice
    assert authenticate(engine, "alice", "wrong") is None
    assert authenticate(engine, "nobody", "s3cret") is None


def test_accounts_without_password_or_inactive_cannot_log_in(engine):
    ghost = create_user(engine, "ghost", "annotator")
    assert not ghost.can_login
    assert authenticate(engine, "ghost", "") is None
    set_password(engine, "ghost", "pw")
    assert authenticate(engine, "ghost", "pw") is not None
    assert not set_active(engine, "ghost", False).can_login
    assert authenticate(engine, "ghost", "pw") is None
    assert [u.username for u in list_users(engine, role="annotator")] == ["ghost"]


def test_user_validation_and_database_check(engine):
    create_user(engine, "carol", "annotator", "pw")
    with pytest.raises(ValueError, match="already exists"):
        create_user(engine, "carol", "lead", "pw")
    with pytest.raises(ValueError, match="role"):
        create_user(engine, "dave", "admin", "pw")
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(sa.insert(User.__table__).values(username="eve", role="admin", active=True,
                                                      created_at=sa.func.now()))


def test_projects(engine):
    info = create_project(engine, "alpha", scale=(0, 2), overlap=3, overlap_fraction=0.5, threshold=0.7)
    assert (info.scale, info.overlap, info.overlap_fraction, info.threshold) == ((0, 2), 3, 0.5, 0.7)
    assert get_project(engine, "alpha") == info
    create_project(engine, "beta")
    assert [p.name for p in list_projects(engine)] == ["alpha", "beta"]
    with pytest.raises(ProjectNotFound, match="no project named 'gamma' \\(projects: alpha, beta\\)"):
        get_project(engine, "gamma")
    with pytest.raises(ValueError, match="already exists"):
        create_project(engine, "alpha")
    with pytest.raises(ValueError, match="scale"):
        create_project(engine, "bad", scale=(3, 1))
    assert update_policy(engine, "alpha", overlap=1).overlap == 1
    with pytest.raises(ValueError, match="overlap"):
        update_policy(engine, "alpha", overlap=0)
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(sa.text("UPDATE projects SET scale_max = 0 WHERE name = 'beta'"))


def test_guideline_versions(engine, project):
    create_user(engine, "boss", "lead", "pw")
    assert current_guideline(engine, "demo") is None
    v1 = add_guideline(engine, "demo", "Grade 3 = fully answers.", username="boss")
    assert (v1.version, v1.created_by) == (1, "boss")
    assert add_guideline(engine, "demo", "Grade 3 = fully answers.").id == v1.id  # unchanged text: no-op
    v2 = add_guideline(engine, "demo", "Grade 3 = fully and only answers.")
    assert v2.version == 2 and current_guideline(engine, "demo").id == v2.id
    assert [g.version for g in list_guidelines(engine, "demo")] == [1, 2]
    with pytest.raises(ValueError, match="empty"):
        add_guideline(engine, "demo", "  ")

"""Accounts, projects and guideline versions: hashing, password policy, who may change an account, login rules,
and constraints the database enforces."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from db.accounts.permissions import OPERATOR
from db.accounts.users import (
    activate,
    authenticate,
    create_user,
    deactivate,
    get_user,
    list_users,
    set_password,
    set_role,
    verify_password,
)
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
from db.store.models import User

OP = {"actor": OPERATOR}


def test_passwords_are_salted_scrypt_and_checked(engine):
    alice = create_user(engine, "alice", "annotator", "s3cret-pw", **OP)
    assert alice.can_login and alice.role == "annotator"
    with engine.connect() as conn:
        stored = conn.execute(sa.select(User.password_hash).where(User.username == "alice")).scalar_one()
    assert stored.startswith("scrypt$") and "s3cret" not in stored
    create_user(engine, "bob", "lead", "s3cret-pw", **OP)
    with engine.connect() as conn:
        hashes = conn.execute(sa.select(User.password_hash).order_by(User.username)).scalars().all()
    assert hashes[0] != hashes[1]  # salted
    assert verify_password("s3cret-pw", stored) and not verify_password("S3cret-pw", stored)
    assert authenticate(engine, "alice", "s3cret-pw") == alice
    assert authenticate(engine, "alice", "wrong-password") is None
    assert authenticate(engine, "nobody", "s3cret-pw") is None


def test_accounts_without_password_or_inactive_cannot_log_in(engine):
    ghost = create_user(engine, "ghost", "annotator", **OP)
    assert not ghost.can_login
    assert authenticate(engine, "ghost", "") is None
    set_password(engine, "ghost", "ghost-password", **OP)
    assert authenticate(engine, "ghost", "ghost-password") is not None
    assert not deactivate(engine, "ghost", **OP).can_login
    assert authenticate(engine, "ghost", "ghost-password") is None
    assert [u.username for u in list_users(engine, role="annotator")] == ["ghost"]
    assert activate(engine, "ghost", **OP).can_login
    assert authenticate(engine, "ghost", "ghost-password") is not None


def test_user_validation_and_database_check(engine):
    create_user(engine, "carol", "annotator", "password", **OP)
    with pytest.raises(ValueError, match="already exists"):
        create_user(engine, "carol", "lead", "password", **OP)
    with pytest.raises(ValueError, match="role"):
        create_user(engine, "dave", "admin", "password", **OP)
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(
            sa.insert(User.__table__).values(username="eve", role="admin", active=True, created_at=sa.func.now())
        )


def test_projects(engine):
    info = create_project(engine, "alpha", scale=(0, 2), overlap=3, overlap_fraction=0.5, threshold=0.7, **OP)
    assert (info.scale, info.overlap, info.overlap_fraction, info.threshold) == ((0, 2), 3, 0.5, 0.7)
    assert get_project(engine, "alpha") == info
    create_project(engine, "beta", **OP)
    assert [p.name for p in list_projects(engine)] == ["alpha", "beta"]
    with pytest.raises(ProjectNotFound, match="no project named 'gamma' \\(projects: alpha, beta\\)"):
        get_project(engine, "gamma")
    with pytest.raises(ValueError, match="already exists"):
        create_project(engine, "alpha", **OP)
    with pytest.raises(ValueError, match="scale"):
        create_project(engine, "bad", scale=(3, 1), **OP)
    assert update_policy(engine, "alpha", overlap=1, **OP).overlap == 1
    with pytest.raises(ValueError, match="overlap"):
        update_policy(engine, "alpha", overlap=0, **OP)
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(sa.text("UPDATE projects SET scale_max = 0 WHERE name = 'beta'"))


def test_guideline_versions(engine, project):
    create_user(engine, "boss", "lead", **OP)
    assert current_guideline(engine, "demo") is None
    v1 = add_guideline(engine, "demo", "Grade 3 = fully answers.", actor="boss")
    assert (v1.version, v1.created_by) == (1, "boss")
    assert add_guideline(engine, "demo", "Grade 3 = fully answers.", **OP).id == v1.id  # unchanged text: no-op
    v2 = add_guideline(engine, "demo", "Grade 3 = fully and only answers.", **OP)
    assert v2.version == 2 and current_guideline(engine, "demo").id == v2.id
    assert [g.version for g in list_guidelines(engine, "demo")] == [1, 2]
    with pytest.raises(ValueError, match="empty"):
        add_guideline(engine, "demo", "  ", **OP)


@pytest.mark.parametrize(
    "password, problem",
    [
        ("", "at least 8 characters"),
        ("seven77", "at least 8 characters"),
        ("        ", "only whitespace"),
        ("\t\n \u00a0\u2003  \r", "only whitespace"),
        ("x" * 1025, "at most 1024"),
    ],
)
def test_password_policy_holds_wherever_a_password_is_set(engine, password, problem):
    create_user(engine, "lead1", "lead", **OP)
    with pytest.raises(ValueError, match=problem):
        create_user(engine, "ann", "annotator", password, **OP)
    with pytest.raises(ValueError, match=problem):
        set_password(engine, "lead1", password, **OP)
    assert [u.username for u in list_users(engine)] == ["lead1"] and not get_user(engine, "lead1").can_login


def test_eight_characters_and_passphrases_with_spaces_are_accepted(engine):
    create_user(engine, "ann", "annotator", "12345678", **OP)
    set_password(engine, "ann", " correct horse battery staple ", **OP)
    assert authenticate(engine, "ann", " correct horse battery staple ") is not None
    assert authenticate(engine, "ann", "correct horse battery staple") is None  # no silent trimming


def test_only_an_active_lead_changes_accounts_and_a_user_may_change_only_their_own_password(engine):
    create_user(engine, "lea", "lead", "lead-password", **OP)
    create_user(engine, "ana", "annotator", "ana-password", **OP)
    with pytest.raises(PermissionError, match="only a lead"):
        create_user(engine, "mallory", "lead", "mallory-pw", actor="ana")
    with pytest.raises(PermissionError, match="only a lead"):
        set_role(engine, "ana", "lead", actor="ana")
    with pytest.raises(PermissionError, match="only a lead"):
        set_password(engine, "lea", "taken-over!", actor="ana")
    with pytest.raises(PermissionError, match="no user named"):
        deactivate(engine, "lea", actor="nobody")
    set_password(engine, "ana", "ana-new-password", actor="ana")
    assert authenticate(engine, "ana", "ana-new-password") is not None
    assert create_user(engine, "ben", "annotator", actor="lea").role == "annotator"
    deactivate(engine, "lea", **OP)
    with pytest.raises(PermissionError, match="deactivated"):
        create_user(engine, "cy", "annotator", actor="lea")
    with pytest.raises(PermissionError, match="deactivated"):
        set_password(engine, "lea", "lea-again-pw", actor="lea")
    assert [u.username for u in list_users(engine)] == ["ana", "ben", "lea"]


def test_set_role_promotes_and_demotes_and_refuses_unknown_roles(engine):
    create_user(engine, "ana", "annotator", **OP)
    assert set_role(engine, "ana", "lead", **OP).role == "lead"
    assert create_user(engine, "ben", "annotator", actor="ana").username == "ben"  # now a lead
    assert set_role(engine, "ana", "annotator", actor="ana").role == "annotator"  # a lead may step down
    with pytest.raises(PermissionError, match="only a lead"):
        create_user(engine, "cy", "annotator", actor="ana")
    with pytest.raises(ValueError, match="role must be one of annotator, lead"):
        set_role(engine, "ben", "admin", **OP)
    with pytest.raises(LookupError, match="no user named 'zed'"):
        set_role(engine, "zed", "lead", **OP)


@pytest.mark.parametrize("disguise", ["LEA", "Lea", "\uff4c\uff45\uff41", "l\u0435a", "\u04cf\u0435\u0430"])
def test_a_name_that_looks_like_an_existing_account_is_refused_with_the_reason(engine, disguise):
    create_user(engine, "lea", "lead", "password", **OP)
    with pytest.raises(ValueError, match=r"looks like the existing account 'lea'|mixes letters") as refused:
        create_user(engine, disguise, "annotator", "password", **OP)
    assert "\n" not in str(refused.value)
    assert [u.username for u in list_users(engine)] == ["lea"]


@pytest.mark.parametrize(
    "hidden", ["\u200b", "\u200d", "\u202e", "\u2066", "\x07", "\x00", "\u00a0", "\u2028", "\ufeff", "\x85"]
)
def test_names_with_invisible_control_or_bidi_characters_are_refused(engine, hidden):
    with pytest.raises(ValueError, match=f"U\\+{ord(hidden):04X}"):
        create_user(engine, f"lea{hidden}x", "annotator", "password", **OP)


def test_distinct_names_in_any_one_script_are_accepted(engine):
    for name in ("lea", "léa", "Nguyễn Văn An", "田中さん", "Алексей", "ana.b-2"):
        create_user(engine, name, "annotator", **OP)
    assert len(list_users(engine)) == 6


def test_delete_removes_an_account_without_grades_and_refuses_one_with_them(engine, queue):
    from db.accounts.users import delete_user
    from db.grading import record_judgment

    assert delete_user(engine, "ann2", **OP) == {"assignments": 12, "sessions": 0}  # open work goes with it
    assert "ann2" not in [u.username for u in list_users(engine)]
    record_judgment(engine, queue[("q1", "f1")], "ann1", 2)
    with pytest.raises(ValueError, match=r"'ann1' holds 1 judgments, 1 judgment history rows; .*deactivate"):
        delete_user(engine, "ann1", **OP)
    with pytest.raises(LookupError):
        delete_user(engine, "ann2", **OP)
    with pytest.raises(PermissionError):
        delete_user(engine, "boss", actor="ann1")

"""Accounts: annotators and leads, scrypt-hashed passwords under one policy, and who may change them.

Every change names its actor (db.accounts.permissions): the CLI passes OPERATOR, the app the logged-in username.
Deactivating an account, changing its password or its role ends all of its sessions in the same transaction,
so an open tab (or a copied cookie) can do nothing more. Names are compared by their look (NFKC, case-folded,
Unicode's confusables skeleton, db.accounts.lookalikes): a name that looks like an existing one is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import unicodedata
from dataclasses import dataclass

from sqlalchemy import delete, func, or_, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from db.accounts.lookalikes import FORMULA_STARTS, hidden_character, mixes_scripts, name_key, scripts
from db.accounts.permissions import Actor, Operator, require_lead, require_role
from db.store.engine import affected, session_scope
from db.store.models import (
    Adjudication,
    Assignment,
    Guideline,
    Judgment,
    JudgmentHistory,
    Release,
    User,
    UserSession,
    pk,
    utcnow,
)
from eval_core.errors import Conflict, NotFound
from eval_core.vocab import ROLES, AnnotatorKind

MIN_PASSWORD_LENGTH = 8  # NIST SP 800-63B: memorized secrets of at least 8 characters
MAX_PASSWORD_LENGTH = 1024  # long passphrases are welcome; megabytes of input are not
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}
_DUMMY_HASH: str | None = None
log = logging.getLogger("qrelkit.auth")


@dataclass(frozen=True)
class UserInfo:
    """A user as the app sees it (never the password hash)."""

    id: int
    username: str
    role: str
    active: bool
    can_login: bool
    kind: str = AnnotatorKind.HUMAN.value  # or a model judge (see db.model_judges)


def check_password(password: str) -> str:
    """The password policy, the same wherever a password is set: 8+ characters, not only whitespace."""
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_LENGTH:
        raise ValueError(f"password must be at least {MIN_PASSWORD_LENGTH} characters")
    if not password.strip():
        raise ValueError("password must not be only whitespace")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise ValueError(f"password must be at most {MAX_PASSWORD_LENGTH} characters")
    return password


def hash_password(password: str) -> str:
    """Salted scrypt hash in a self-describing `scrypt$n$r$p$salt$hash` form (policy checked first)."""
    check_password(password)
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, dklen=32, **_SCRYPT)
    return f"scrypt${_SCRYPT['n']}${_SCRYPT['r']}${_SCRYPT['p']}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    """Constant-time check of `password` against a hash from hash_password."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
    except ValueError:
        return False
    if scheme != "scrypt":
        return False
    candidate = hashlib.scrypt(
        password.encode("utf-8"), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p), dklen=len(digest) // 2
    )
    return hmac.compare_digest(candidate.hex(), digest)


def user_info(user: User) -> UserInfo:
    """Detach a row into plain data."""
    assert user.id is not None
    return UserInfo(user.id, user.username, user.role, user.active, bool(user.password_hash) and user.active, user.kind)


def user_row(session: Session, username: str) -> User:
    """The row for `username`, or LookupError naming it."""
    user = session.exec(select(User).where(User.username == username)).first()
    if user is None:
        raise NotFound(f"no user named {username!r}")
    return user


# Cyrillic and Greek letters drawn like Latin ones once case-folded (from Unicode's confusables list).
def check_username(username: str) -> str:
    """Usernames are trimmed, 1-200 characters, with no control, format (zero-width, bidi), separator other
    than a plain space, default-ignorable, blank or unattached combining character, letters of one script (a
    Latin name with one Cyrillic letter is a disguise; Japanese, Chinese and Korean combinations are one), and
    no first character a spreadsheet would run as a formula (=, +, -, @)."""
    name = (username or "").strip()
    if not name or len(name) > 200:
        raise ValueError(f"username must be 1-200 characters, got {username!r}")
    for ch in name:
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") or (ch.isspace() and ch != " "):
            raise ValueError(
                f"username {name!r} holds the invisible or control character U+{ord(ch):04X} "
                f"({unicodedata.name(ch, 'unnamed')}); use visible characters only"
            )
    hidden = hidden_character(name)
    if hidden is not None:
        raise ValueError(
            f"username {name!r} holds the invisible or blank character U+{ord(hidden):04X} "
            f"({unicodedata.name(hidden, 'unnamed')}); use visible characters only"
        )
    if mixes_scripts(name):
        raise ValueError(
            f"username {name!r} mixes letters of the {' and '.join(sorted(scripts(name)))} scripts; "
            f"such a name can pass for another one"
        )
    if name[0] in FORMULA_STARTS:
        raise ValueError(
            f"username {name!r} starts with {name[0]!r}, which a spreadsheet opening an export would run as a "
            f"formula; start it with a letter or digit"
        )
    return name


LOOKS_LIKE = "same letters once case, width and look-alike characters are set aside"
__all__ = ["name_key"]  # re-exported: db.imports compares names by it


def account_keys(session: Session) -> dict[str, str]:
    """name_key → username of every account: what a new name must not look like (also for the accounts a
    judgments import creates, db.imports)."""
    return {name_key(existing): existing for existing in session.execute(select(User.username)).scalars()}


def check_new_username(session: Session, username: str) -> str:
    """A valid name (check_username) that neither is nor looks like an existing account's, or ValueError
    naming the account it would be confused with (Conflict, a ValueError)."""
    name = check_username(username)
    existing = session.execute(select(User.password_hash, User.kind).where(User.username == name)).first()
    if existing is not None:
        if existing.password_hash is None and existing.kind == AnnotatorKind.HUMAN:
            raise Conflict(
                f"user {name!r} already exists, without a password (an import of their judgments made "
                f"the account): give it one with `qrelkit user set-password {name}` so they can log in"
            )
        raise Conflict(f"user {name!r} already exists")
    taken = account_keys(session).get(name_key(name))
    if taken is not None:
        raise Conflict(
            f"username {name!r} looks like the existing account {taken!r} ({LOOKS_LIKE}); choose a distinct name"
        )
    return name


def check_role(role: str) -> str:
    """One of ROLES, or ValueError listing them."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    return role


def create_user(engine: Engine, username: str, role: str, password: str | None = None, *, actor: Actor) -> UserInfo:
    """Add an account (a lead's or the operator's act); without a password it exists (e.g. for imported
    judgments) but cannot log in."""
    name = check_username(username)
    check_role(role)
    hashed = hash_password(password) if password is not None else None
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        check_new_username(session, name)
        user = User(username=name, role=role, password_hash=hashed)
        session.add(user)
        session.flush()
        log.info("user %r (%s) created by %r", name, role, actor)
        return user_info(user)


def set_password(engine: Engine, username: str, password: str, *, actor: Actor) -> UserInfo:
    """Give an account a (new) password: a lead or the operator for anyone, an active user for themselves.
    Every open session of the account ends, the changer's own included: whoever held a copied cookie is out,
    and the one who changed it logs in again with the new password (docs/security.md says why)."""
    hashed = hash_password(password)
    with session_scope(engine, write=True) as session:
        if isinstance(actor, Operator) or actor != username:
            require_lead(session, actor)
        else:
            require_role(session, actor, "annotator")
        user = user_row(session, username)
        user.password_hash = hashed
        session.add(user)
        session.flush()
        ended = end_sessions(session, pk(user))
        log.warning("password of %r set by %r; %d session(s) ended", username, actor, ended)
        return user_info(user)


def authenticate(engine: Engine, username: str, password: str) -> UserInfo | None:
    """The user if the password matches an active account; None otherwise (same work either way)."""
    global _DUMMY_HASH
    with session_scope(engine) as session:
        user = session.exec(select(User).where(User.username == (username or "").strip())).first()
        info = user_info(user) if user is not None else None
        stored = user.password_hash if user is not None else None
    if stored is None:
        _DUMMY_HASH = _DUMMY_HASH or hash_password("not a password")
        verify_password(password or "", _DUMMY_HASH)
        return None
    if not verify_password(password or "", stored) or info is None or not info.active:
        return None
    return info


def list_users(engine: Engine, role: str | None = None) -> list[UserInfo]:
    """Every account (optionally of one role), by username."""
    with session_scope(engine) as session:
        stmt = select(User).order_by(User.username)
        if role is not None:
            stmt = stmt.where(User.role == role)
        return [user_info(u) for u in session.exec(stmt)]


def people_who_grade(engine: Engine) -> list[str]:
    """The usernames pairs can be sent to for re-judging or post-editing: active people (not model judges) who
    can log in, by username (what db.adjudication.judging_people accepts)."""
    return [u.username for u in list_users(engine) if u.active and u.kind == AnnotatorKind.HUMAN and u.can_login]


def get_user(engine: Engine, username: str) -> UserInfo:
    """One account as it is now, or LookupError naming it."""
    with session_scope(engine) as session:
        return user_info(user_row(session, username))


def end_sessions(session: Session, user_id: int) -> int:
    """Revoke every open session of a user inside the caller's transaction; returns how many were open."""
    result = session.execute(
        update(UserSession)
        .where(col(UserSession.user_id) == user_id, col(UserSession.revoked_at).is_(None))
        .values(revoked_at=utcnow())
    )
    return affected(result)


def deactivate(engine: Engine, username: str, *, actor: Actor) -> UserInfo:
    """Stop an account at once: it cannot log in, gets no new assignments, and every open session ends;
    its judgments and history are kept."""
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        user = user_row(session, username)
        user.active = False
        session.add(user)
        session.flush()
        ended = end_sessions(session, pk(user))
        log.warning("user %r deactivated by %r; %d session(s) ended", username, actor, ended)
        return user_info(user)


def activate(engine: Engine, username: str, *, actor: Actor) -> UserInfo:
    """Let a deactivated account log in again (it starts with no session)."""
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        user = user_row(session, username)
        user.active = True
        session.add(user)
        session.flush()
        log.info("user %r activated by %r", username, actor)
        return user_info(user)


def set_role(engine: Engine, username: str, role: str, *, actor: Actor) -> UserInfo:
    """Make an account a lead or an annotator; a changed role ends every open session of the account (a tab
    opened as a lead must not stay one)."""
    check_role(role)
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        user = user_row(session, username)
        changed = user.role != role
        user.role = role
        session.add(user)
        session.flush()
        ended = end_sessions(session, pk(user)) if changed else 0
        log.warning("user %r is now %s (set by %r); %d session(s) ended", username, role, actor, ended)
        return user_info(user)


def delete_user(engine: Engine, username: str, *, actor: Actor) -> dict[str, int]:
    """Remove an account that holds no grades, adjudications, guidelines or releases (e.g. a model judge whose
    run graded nothing), with its open assignments and sessions; otherwise ValueError saying what it holds."""
    with session_scope(engine, write=True) as session:
        require_lead(session, actor)
        user = user_row(session, username)
        held = {
            what: int(session.execute(select(func.count()).select_from(table).where(cond)).scalar_one())
            for what, table, cond in (
                ("judgments", Judgment, Judgment.user_id == user.id),
                (
                    "judgment history rows",
                    JudgmentHistory,
                    or_(col(JudgmentHistory.user_id) == user.id, col(JudgmentHistory.changed_by_id) == user.id),
                ),
                ("adjudications", Adjudication, Adjudication.user_id == user.id),
                ("guidelines", Guideline, Guideline.created_by_id == user.id),
                ("releases", Release, Release.created_by_id == user.id),
            )
        }
        held = {what: n for what, n in held.items() if n}
        if held:
            raise ValueError(
                f"user {username!r} holds {', '.join(f'{n} {what}' for what, n in held.items())}; "
                f"an account with work in the store is kept (deactivate it instead)"
            )
        assignments = affected(session.execute(delete(Assignment).where(col(Assignment.user_id) == user.id)))
        ended = affected(session.execute(delete(UserSession).where(col(UserSession.user_id) == user.id)))
        session.delete(user)
        log.warning(
            "user %r deleted by %r (%d assignment(s), %d session(s) removed)", username, actor, assignments, ended
        )
        return {"assignments": int(assignments or 0), "sessions": int(ended or 0)}

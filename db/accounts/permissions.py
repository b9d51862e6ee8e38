"""Who may change a project: every store operation that changes one names its actor and is checked here.

An actor is a username (the app passes the logged-in user, re-read from the store on every call) or
`OPERATOR`: whoever holds the database URL and runs the CLI, who could edit the rows directly anyway.
Pages check roles too, but only as a second line: the store refuses a demoted or deactivated lead itself.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlmodel import col

from db.store.models import User
from eval_core.errors import Refused
from eval_core.vocab import Role


class Operator:
    """The CLI's identity: the holder of the database URL (repr shows in refusals and logs)."""

    def __repr__(self) -> str:
        return "OPERATOR"


OPERATOR: Final = Operator()
Actor = str | Operator


def require_role(session: Session, actor: Actor, role: str = Role.LEAD) -> int | None:
    """The actor's user id after checking it is an active account of `role` (leads may do what annotators
    may); None for the CLI operator. Raises Refused (a PermissionError) naming who and why."""
    if isinstance(actor, Operator):
        return None
    row = session.execute(
        select(col(User.id), col(User.role), col(User.active)).where(col(User.username) == actor)
    ).first()
    if row is None:
        raise Refused(f"no user named {actor!r}")
    if not row.active:
        raise Refused(f"{actor!r} is deactivated")
    if role == Role.LEAD and row.role != Role.LEAD:
        raise Refused(f"only a lead may do this; {actor!r} is {row.role}")
    return int(row.id)


def require_lead(session: Session, actor: Actor) -> int | None:
    """An active lead (or the CLI operator) may change a project's setup, adjudicate and release."""
    return require_role(session, actor, Role.LEAD)

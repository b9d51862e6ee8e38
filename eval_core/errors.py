"""qrelkit's domain errors: bad input at a file and line, and the store's refusals (refused, not found,
conflict). Each subclasses the built-in it replaces, so an `except ValueError` written before still works."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input located at a file and line, so the user can go straight to it."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


class Refused(PermissionError):
    """The actor may not do this: no such account, deactivated, not a lead, not their pair."""


class NotFound(LookupError):
    """A named thing (project, user, pair, run, release) is not in the store."""


class Conflict(ValueError):
    """The request clashes with what is stored: the name is taken, the record changed meanwhile."""


# What the CLI's one error path and the app's `user_errors` show as one sentence: the domain errors above
# (subclasses of the first three), the built-ins the store still raises for a bad value, and RuntimeError,
# how a model judge's endpoint fails (db.judges.JudgeFailed, annotator.judge_client.EndpointError).
USER_ERRORS: tuple[type[Exception], ...] = (PermissionError, LookupError, ValueError, RuntimeError)

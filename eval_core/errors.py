"""qrelkit's domain errors: bad input at a file and line, and the store's refusals (refused, not found,
conflict). Each subclasses the built-in it replaces, so an `except ValueError` written before still works."""

from __future__ import annotations

from pathlib import Path


class InputError(ValueError):
    """Bad input located at a file and line, so the user can go straight to it."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


MAX_PROBLEMS = 100  # problems kept per file (all are counted): enough to fix a file in one pass


class Problems:
    """Collects a file's problems (the first MAX_PROBLEMS kept, all counted), so one pass reports every bad line
    instead of stopping at the first: the one collector every reader and import uses."""

    def __init__(self, path: str | Path) -> None:
        self.path, self.total = str(path), 0
        self.items: list[InputError] = []

    def add(self, line: int | None, problem: str) -> None:
        """Count one problem; keep it while fewer than MAX_PROBLEMS are kept."""
        self.total += 1
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(InputError(self.path, line, problem))


class Refused(PermissionError):
    """The actor may not do this: no such account, deactivated, not a lead, not their pair."""


class NotFound(LookupError):
    """A named thing (project, user, pair, run, release) is not in the store."""


class Conflict(ValueError):
    """The request clashes with what is stored: the name is taken, the record changed meanwhile."""


# What the CLI's one error path and the app's `user_errors` show as one sentence: the domain errors above
# (subclasses of the first three), the built-ins the store still raises for a bad value, and RuntimeError,
# how a model judge's endpoint fails (db.model_judges.JudgeFailed, annotator.judge_client.EndpointError).
USER_ERRORS: tuple[type[Exception], ...] = (PermissionError, LookupError, ValueError, RuntimeError)

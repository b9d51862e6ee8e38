"""qrelkit's domain errors: bad input at a file and line, and the store's refusals (refused, not found,
conflict). Each subclasses the built-in it replaces, so an `except ValueError` written before still works."""

from __future__ import annotations

import re
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
        self.groups: dict[str, list] = {}  # problem shape → [count, its first InputError]

    def add(self, line: int | None, problem: str) -> None:
        """Count one problem; keep it while fewer than MAX_PROBLEMS are kept."""
        self.total += 1
        error = InputError(self.path, line, problem)
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(error)
        group = self.groups.setdefault(problem_shape(problem), [0, error])
        group[0] += 1

    def lines(self) -> list[str]:
        """Every problem as one line, near-identical ones collapsed into one (see collapse)."""
        counted = sum(count for count, _ in self.groups.values())
        if counted == self.total and self.groups:
            return [_group_line(self.path, count, first) for count, first in self.groups.values()]
        lines = collapse(self.items)
        hidden = self.total - len(self.items)
        return lines + ([f"{self.path}: … and {hidden:,} more problem(s)"] if hidden > 0 else [])

    def check(self) -> None:
        """Raise FileProblems when anything was wrong."""
        if self.total:
            raise FileProblems(self)


_SHAPE = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\d[\d,.]*")


def problem_shape(problem: str) -> str:
    """A problem with its quoted values and numbers blanked: near-identical lines share one shape."""
    return _SHAPE.sub("…", problem)


def _group_line(path: str, count: int, first: InputError) -> str:
    if count == 1:
        return str(first)
    return f"{path}: {count:,} lines like line {first.line}: {first.problem}"


def collapse(errors: list[InputError]) -> list[str]:
    """Problems as lines, the near-identical ones (same shape) as one: `path: 11,386 lines like line 3: unknown
    fragment id 'D1' (…)` instead of a hundred lines that differ only in an id."""
    groups: dict[str, list] = {}
    for error in errors:
        groups.setdefault(problem_shape(error.problem), [0, error])[0] += 1
    return [_group_line(errors[0].path, count, first) for count, first in groups.values()] if errors else []


class FileProblems(InputError):
    """A file with problems: the first one as the message, `more` every further line (near-identical collapsed)."""

    def __init__(self, problems: Problems) -> None:
        lines = problems.lines()
        first = problems.items[0]
        more = f" (and {problems.total - 1:,} more problem(s))" if problems.total > 1 else ""
        super().__init__(first.path, first.line, first.problem + more)
        self.more = lines if problems.total > 1 else []


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

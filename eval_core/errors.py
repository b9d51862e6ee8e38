"""The one error type for bad input, so every reader reports `path:line: problem` the same way."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input located at a file and line, so the user can go straight to it."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")

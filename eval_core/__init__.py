"""qrelkit's evaluation core: readers, ranking metrics, `evaluate()`, `compare()` and `evaluate_retriever()`,
usable without the app or the store.

The public names load on first use (PEP 562), so importing a light submodule such as `eval_core.errors`
or `eval_core.metric_registry` does not pull in pandas, scipy or the metric kernels.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

_PUBLIC = {
    "Evaluation": "eval_core.evaluate",
    "compare": "eval_core.compare",
    "evaluate": "eval_core.evaluate",
    "evaluate_judge_groups": "eval_core.evaluate",
    "evaluate_retriever": "eval_core.retriever",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    """Import the module that defines `name` when it is first asked for."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'eval_core' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])


class _Package(types.ModuleType):
    """`eval_core.compare` and `eval_core.evaluate` name functions, as they did when imported eagerly, even
    after their submodules (same names) have been imported and set as attributes of the package."""

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if name in _PUBLIC and isinstance(value, types.ModuleType):
            return getattr(value, name)
        return value


sys.modules[__name__].__class__ = _Package

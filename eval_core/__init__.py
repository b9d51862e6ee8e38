"""qrelkit's evaluation core: readers, ranking metrics, `evaluate()`, `compare()` and `evaluate_retriever()`,
usable without the app or the store.

The public names load on first use (PEP 562), so importing a light submodule such as `eval_core.errors`
or `eval_core.ranking.registry` does not pull in pandas, scipy or the metric kernels.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "Evaluation": "eval_core.ranking.evaluation",
    "compare": "eval_core.ranking.significance",
    "evaluate": "eval_core.ranking.evaluation",
    "evaluate_judge_groups": "eval_core.ranking.evaluation",
    "evaluate_retriever": "eval_core.ranking.retriever",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    """Import the module that defines `name` when it is first asked for."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'eval_core' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])

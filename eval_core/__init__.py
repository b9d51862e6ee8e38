"""qrelkit's evaluation core: readers, ranking metrics, `evaluate()`, `compare()` and `evaluate_retriever()`,
usable without the app or the store."""

from eval_core.compare import compare
from eval_core.evaluate import Evaluation, evaluate
from eval_core.retriever import evaluate_retriever

__all__ = ["Evaluation", "compare", "evaluate", "evaluate_retriever"]

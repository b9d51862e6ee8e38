"""One trec_eval invocation's options and its refusals, apart from the run that computes it (so the readers
of the other judgment formats can take both without importing the run)."""

from __future__ import annotations

from dataclasses import dataclass, field

REL_FORMATS = ("qrels", "qrels_jg", "prefs", "qrels_prefs")
RESULTS_FORMATS = ("trec_results",)


class TrecEvalError(RuntimeError):
    """A refusal, with the exit status trec_eval gives it."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Invocation:
    """trec_eval's options, parsed."""

    rel_info_file: str
    results_file: str
    measures: list[str] = field(default_factory=list)
    query: bool = False
    complete: bool = False
    rel_level: int = 1
    summary: bool = True
    judged_only: bool = False
    num_docs_in_coll: int = 0
    max_docs: int | None = None
    rel_format: str = "qrels"
    results_format: str = "trec_results"
    zscores_file: str | None = None
    version: int = 10
    debug_query: str | None = None  # -D 0.QID: evaluate only this query (the -c averages still divide by all)
    old_format: bool = False  # -o: 10.0 ignores it; 9 prints the -q lines, then refuses (exit 10)

"""Post-editing a model judge's grades: people check the model where it is most likely wrong (as TREC 2024 RAG's
post-edited qrels did). The order: how often people disagree with the model's grade on the pairs both graded
(calibration), times how much the pair can move the run ranking (the spread, over the stored runs, of the
discount the pair gets in each run's top k). Then the edit rate per model grade and the model's κ against the
post-edited grades."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from eval_core.agreement.coefficients import cohen_kappa

PAIR = ["query_id", "fragment_id"]
DEPTH = 10  # ranks that count for the ranking impact (nDCG@10's)


def disagreement(model: np.ndarray, people: np.ndarray, scale: tuple[int, int]) -> dict[int, float]:
    """For each model grade g, the share of pairs graded g by the model that people graded otherwise (on the
    pairs both graded); a grade the model never gave there gets the overall share."""
    model, people = np.asarray(model, dtype=int), np.asarray(people, dtype=int)
    overall = float(np.mean(model != people)) if len(model) else 1.0
    out = {}
    for g in range(scale[0], scale[1] + 1):
        mine = model == g
        out[g] = float(np.mean(people[mine] != g)) if mine.any() else overall
    return out


def ranking_impact(pairs: pd.DataFrame, runs: Mapping[str, pd.DataFrame], depth: int = DEPTH) -> np.ndarray:
    """Per pair (query_id, fragment_id), the standard deviation over runs of the discount 1/log2(rank + 1) it gets
    in each run's top `depth` (0 outside): a pair some runs rank high and others do not moves their difference."""
    if not runs or pairs.empty:
        return np.zeros(len(pairs))
    keys = pairs["query_id"].astype(str) + "\x1f" + pairs["fragment_id"].astype(str)
    columns = []
    for run in runs.values():
        ordered = run.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False])
        rank = ordered.groupby("query_id", sort=False).cumcount() + 1
        top = ordered[(rank <= depth).to_numpy()]
        discount = pd.Series(
            1.0 / np.log2(rank[(rank <= depth).to_numpy()].to_numpy() + 1.0),
            index=top["query_id"].astype(str) + "\x1f" + top["doc_id"].astype(str),
        )
        discount = discount[~discount.index.duplicated()]
        columns.append(keys.map(discount).fillna(0.0).to_numpy(dtype=float))
    return np.std(np.vstack(columns), axis=0)


def post_edit_order(
    candidates: pd.DataFrame, shared: pd.DataFrame, runs: Mapping[str, pd.DataFrame], scale: tuple[int, int]
) -> pd.DataFrame:
    """The model's grades (`candidates`: query_id, fragment_id, grade, plus any id columns) most likely wrong
    first: p_wrong (disagreement of its grade, from `shared`: model and people columns on pairs both graded) ×
    (impact + 0.01), so pairs no run ranks still come in order of p_wrong; ties by query and fragment."""
    p = disagreement(shared["model"].to_numpy(), shared["people"].to_numpy(), scale)
    out = candidates.copy()
    out["p_wrong"] = out["grade"].astype(int).map(p).astype(float)
    out["impact"] = ranking_impact(out, runs)
    out["score"] = out["p_wrong"] * (out["impact"] + 0.01)
    return out.sort_values(["score", "p_wrong", "query_id", "fragment_id"], ascending=[False, False, True, True])


@dataclass(frozen=True)
class EditStats:
    """People's post-edits of a model's grades: how many, how often each model grade was changed, and the
    model's κ against the post-edited grades."""

    n: int
    edited: int
    by_grade: dict[int, tuple[int, int]]  # model grade → (post-edited pairs, changed)
    kappa: float | None
    kappa_status: str
    weights: str

    def edit_rate(self, grade: int) -> float | None:
        """Share of the model's `grade` that people changed (None when none was post-edited)."""
        n, changed = self.by_grade.get(grade, (0, 0))
        return changed / n if n else None


def edit_stats(model: np.ndarray, edited: np.ndarray, scale: tuple[int, int], weights: str = "linear") -> EditStats:
    """Edit rate per model grade and κ (agreement core, `weights`) of aligned model and post-edited grades."""
    model, edited = np.asarray(model, dtype=int), np.asarray(edited, dtype=int)
    by_grade = {
        g: (int(np.count_nonzero(model == g)), int(np.count_nonzero((model == g) & (edited != g))))
        for g in range(scale[0], scale[1] + 1)
    }
    c = cohen_kappa(model.astype(float), edited.astype(float), weights, scale)
    return EditStats(len(model), int(np.count_nonzero(model != edited)), by_grade, c.value, c.status, weights)

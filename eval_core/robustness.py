"""Does a run comparison survive the disagreement in its labels? Each run's metric under every consensus rule,
each annotator's own grades, human-only vs human + model labels and a bootstrap over annotators per pair; the
Kendall τ between the rankings these induce; and, per pair of runs, whether "A beats B" holds under all of them.

Rules, single annotators and label kinds are scored by `eval_core.evaluate` on qrels built by
`eval_core.consensus`. The bootstrap ranks each run once against the pooled pairs, then swaps in every
replicate's labels (the judged rows and ranks do not change between replicates, only their grades).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from eval_core.consensus import PAIR_RULES, RULES, combine_grades, over_reference
from eval_core.io.columns import Columns
from eval_core.io.formats import load_qrels, load_run
from eval_core.io.judgments import annotator_kinds, relevant_from
from eval_core.ranking.evaluation import EvalOptions, evaluate
from eval_core.ranking.metrics import Ranked, compute, index_qrels, parse_metrics, rank_run
from eval_core.thresholds import MIN_MODEL_SHARE
from eval_core.vocab import AnnotatorKind

DEFAULT_METRIC = "ndcg@10"
DEFAULT_BOOTSTRAP = 200
CONFIDENCE = 0.95
ROWS_PER_CHUNK = 1_000_000  # replicates × rows (grades, pairs, judged run rows) held at once: bounds memory
PAIR = ["query_id", "fragment_id"]


def percent(share: float) -> str:
    """A share as a whole percentage that never claims all or none when it is not: 0.995 is ">99%", not "100%"."""
    text = f"{share:.0%}"
    if text == "100%" and share < 1:
        return ">99%"
    if text == "0%" and share > 0:
        return "<1%"
    return text


@dataclass(frozen=True)
class Condition:
    """One way of labelling the pairs, and each run's metric under it."""

    name: str  # unique and readable: "rule median", "annotator alice", "model gpt-4o", "humans + models"
    group: str  # "rule", "annotator" (a human), "model" (a model judge's own grades) or "labels"
    label: str  # the rule, the annotator's name, or the label set
    n_pairs: int
    n_queries: int
    values: dict[str, float]  # run → metric mean over this condition's queries

    def ranking(self) -> list[str]:
        """Runs best first (ties keep the given run order)."""
        return sorted(self.values, key=lambda r: -self.values[r])

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "group": self.group,
            "label": self.label,
            "n_pairs": self.n_pairs,
            "n_queries": self.n_queries,
            "values": dict(self.values),
            "ranking": self.ranking(),
        }


@dataclass(frozen=True)
class Bootstrap:
    """Replicates that redraw, for every pair, which annotators' grades form its label (with replacement)."""

    replicates: int
    seed: int
    rule: str
    mean: dict[str, float]  # run → mean metric over replicates
    interval: dict[str, tuple[float, float]]  # run → percentile interval at CONFIDENCE
    tau_mean: float | None  # mean τ between each replicate's ranking and the reference rule's
    tau_min: float | None
    same_ranking: float  # share of replicates whose ranking equals the reference's (no pair of runs reordered)

    def to_dict(self) -> dict[str, Any]:
        return {
            "replicates": self.replicates,
            "seed": self.seed,
            "rule": self.rule,
            "confidence": CONFIDENCE,
            "mean": dict(self.mean),
            "interval": {r: list(v) for r, v in self.interval.items()},
            "tau_mean": self.tau_mean,
            "tau_min": self.tau_min,
            "same_ranking": self.same_ranking,
        }


@dataclass(frozen=True)
class PairVerdict:
    """Whether one run beats another under every condition, where the order flips, and the bootstrap's share."""

    a: str
    b: str
    winner: str | None  # under the reference rule (else the majority of conditions); None when they tie
    loser: str | None
    holds: bool  # the winner is strictly ahead under every condition
    agree: dict[str, tuple[int, int]]  # group → (conditions where the winner is ahead, conditions)
    flips: list[str]  # conditions where the loser is ahead
    ties: list[str]  # conditions where they score the same
    bootstrap_share: float | None  # share of replicates where the winner (or a, on a tie) is ahead
    bootstrap_ties: float | None
    sentence: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "winner": self.winner,
            "loser": self.loser,
            "holds": self.holds,
            "agree": {g: {"ahead": w, "of": n} for g, (w, n) in self.agree.items()},
            "flips": list(self.flips),
            "ties": list(self.ties),
            "bootstrap_share": self.bootstrap_share,
            "bootstrap_ties": self.bootstrap_ties,
            "sentence": self.sentence,
        }


@dataclass(frozen=True)
class RobustnessReport:
    """Every condition's run metrics, the τ between their rankings, a verdict per pair of runs, the bootstrap."""

    metric: str
    runs: list[str]
    reference: str  # the condition whose order names each pair's winner
    conditions: list[Condition]
    tau: list[list[float | None]]  # conditions × conditions, None where a ranking is all ties
    pairs: list[PairVerdict]
    bootstrap: Bootstrap | None
    notes: list[str] = field(default_factory=list)

    def table(self) -> pd.DataFrame:
        """One row per condition, indexed by (group, condition, pairs, queries), one column per run (a run's
        name never collides with those, whatever it is)."""
        index = pd.MultiIndex.from_tuples(
            [(c.group, c.name, c.n_pairs, c.n_queries) for c in self.conditions],
            names=["group", "condition", "pairs", "queries"],
        )
        return pd.DataFrame(
            [[c.values[r] for r in self.runs] for c in self.conditions],
            index=index,
            columns=pd.Index(self.runs, name="run"),
        )

    def flips(self) -> list[PairVerdict]:
        """The pairs of runs whose order does not hold under every condition."""
        return [p for p in self.pairs if not p.holds]

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "runs": list(self.runs),
            "reference": self.reference,
            "conditions": [c.to_dict() for c in self.conditions],
            "tau": {"conditions": [c.name for c in self.conditions], "values": self.tau},
            "pairs": [p.to_dict() for p in self.pairs],
            "bootstrap": None if self.bootstrap is None else self.bootstrap.to_dict(),
            "notes": list(self.notes),
        }


# ------------------------------------------------------------------------------------------- Kendall τ


def _signs(values: np.ndarray) -> np.ndarray:
    """sign(x_i − x_j) for every pair i < j of runs, per row (conditions × run pairs)."""
    i, j = np.triu_indices(values.shape[1], 1)
    return np.sign(values[:, i] - values[:, j])


def tau_b(signs_a: np.ndarray, signs_b: np.ndarray) -> np.ndarray:
    """Kendall's τ-b between every row of `signs_a` and every row of `signs_b` (NaN where one is all ties):
    (concordant − discordant) / √(untied pairs of a · untied pairs of b), as one matrix product."""
    num = signs_a @ signs_b.T
    den = np.sqrt(np.outer((signs_a != 0).sum(1), (signs_b != 0).sum(1)).astype(np.float64))
    return np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)


# ------------------------------------------------------------------------------------------- inputs


def _one_metric(metric: str) -> Any:
    """The single metric spec a ranking is compared on (`ndcg@k` would expand to several)."""
    specs = parse_metrics([metric])
    if len(specs) != 1:
        raise ValueError(f"give one metric with its cutoff, e.g. ndcg@10, not {metric!r}")
    return specs[0]


def _qrels(labels: pd.DataFrame) -> pd.DataFrame:
    """Consensus labels (or one annotator's grades) as the qrels frame evaluate() reads."""
    return pd.DataFrame(
        {
            "query_id": labels["query_id"].astype(str),
            "doc_id": labels["fragment_id"].astype(str),
            "grade": labels["grade"].astype("int64"),
        }
    )


def _real(judgments: pd.DataFrame) -> pd.DataFrame:
    """The rows that carry a grade (can't judge dropped), as plain ints."""
    real = judgments[judgments["grade"].notna()]
    return real.assign(grade=real["grade"].astype("int64"))


# ------------------------------------------------------------------------------------------- conditions


def _condition(
    name: str,
    group: str,
    label: str,
    qrels: pd.DataFrame,
    runs: dict[str, Columns],
    metric: str,
    rel_level: int,
    scale: tuple[int, int],
) -> Condition:
    """Score every run against one condition's qrels with eval_core.evaluate (gains from the scale's bottom)."""
    results = evaluate(qrels, list(runs.values()), metrics=[metric], rel_level=rel_level, scale=scale)
    values = {run: float(res.mean[metric]) for run, res in zip(runs, results, strict=True)}
    return Condition(name, group, label, len(qrels), int(qrels["query_id"].nunique()), values)


def _conditions(
    base: pd.DataFrame,
    everyone: pd.DataFrame,
    kinds: dict[str, str],
    adjudications: Any,
    runs: dict[str, Columns],
    metric: str,
    rule: str,
    rel_level: int,
    scale: tuple[int, int],
    notes: list[str],
    min_model_share: float = MIN_MODEL_SHARE,
    references: pd.DataFrame | None = None,
) -> list[Condition]:
    """Rules over the base labels, each annotator alone, and (with model judges) humans + models; the rules and
    humans + models on top of the `references`' grades, as a release. A model judge that graded under
    `min_model_share` of the pairs has no condition of its own (a note says which and why)."""

    def score(name: str, group: str, label: str, qrels: pd.DataFrame) -> Condition:
        return _condition(name, group, label, qrels, runs, metric, rel_level, scale)

    out = []
    alone = pd.Series(dtype=object)  # the reference rule's pairs no person labelled, by the reference's names
    for r in RULES:
        labels = over_reference(base, r, adjudications, scale, references)
        if len(labels) == 0:
            raise ValueError("no pair has a grade: nothing to evaluate against")
        if r == rule:
            alone = labels["reference"].dropna()
        out.append(score(f"rule {r}", "rule", r, _qrels(labels)))
    real = _real(everyone)
    n_pairs = len(everyone[PAIR].drop_duplicates())
    for annotator in sorted(kinds):
        own = real[real["annotator"].astype(str) == annotator].sort_values(PAIR)  # sums in one order, any input
        if len(own) == 0:
            notes.append(f"{annotator} has no grades (only can't-judge), so has no condition of their own")
            continue
        group = "annotator" if kinds[annotator] == AnnotatorKind.HUMAN else "model"
        graded = len(own[PAIR].drop_duplicates())
        if group == "model" and graded < min_model_share * n_pairs:
            notes.append(
                f"model judge {annotator} left out of the conditions: it graded {graded} of the {n_pairs} pairs "
                f"({graded / n_pairs:.0%}), under the {min_model_share:.0%} a model judge needs for a condition "
                "of its own (MIN_MODEL_SHARE); on so few pairs its ranking of the runs would say nothing about "
                "the labels"
                + (" (its grades still join 'humans + models')" if AnnotatorKind.HUMAN in kinds.values() else "")
            )
            continue
        out.append(score(f"{group} {annotator}", group, annotator, _qrels(own)))
    if {AnnotatorKind.HUMAN, AnnotatorKind.MODEL} <= set(kinds.values()):
        labels = over_reference(everyone, rule, adjudications, scale, references)
        out.append(score("humans + models", "labels", f"{rule} of humans + models", _qrels(labels)))
    if references is not None:
        names = ", ".join(sorted(references["annotator"].astype(str).unique()))
        notes.append(
            f"the reference {names} never votes: its grades are the base, taken by the {len(alone)} pair(s) no "
            "person labelled in every rule and in 'humans + models', as in a release"
        )
    return out


# ------------------------------------------------------------------------------------------- bootstrap


def resample_labels(
    grade: np.ndarray, pair: np.ndarray, n_pairs: int, rule: str, replicates: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap labels (replicates × pairs): each pair's n grades redrawn n times with replacement, combined by
    `rule`. `grade`/`pair` are the real grades sorted by pair code; also returns which grade each draw took
    (replicates × grades, indices into `grade`). Pairs without a grade get 0 (the caller sets them)."""
    counts = np.bincount(pair, minlength=n_pairs)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    picks = starts[pair] + np.floor(rng.random((replicates, len(grade))) * counts[pair]).astype(np.int64)
    low = int(grade.min()) if len(grade) else 0
    span = int(grade.max()) - low + 1 if len(grade) else 1
    code = (np.arange(replicates, dtype=np.int64)[:, None] * n_pairs + pair[None, :]).ravel()
    key = np.sort(code * span + (grade[picks].ravel() - low))  # one int sort orders by (replicate·pair, grade)
    labels, _ = combine_grades(key // span, key % span + low, replicates * n_pairs, rule)
    return labels.reshape(replicates, n_pairs), picks


def _bootstrap(
    base: pd.DataFrame,
    adjudications: Any,
    runs: dict[str, Columns],
    spec: Any,
    rule: str,
    replicates: int,
    seed: int,
    rel_level: int,
    scale: tuple[int, int],
    progress: Callable[[int], object] | None,
    references: pd.DataFrame | None = None,
) -> np.ndarray:
    """Each replicate's metric mean per run (replicates × runs). Adjudicated pairs and pairs only a reference
    graded keep their label in every replicate."""
    pooled = over_reference(base, rule, adjudications, scale, references)
    n_pairs = len(pooled)
    index = pd.MultiIndex.from_frame(pooled[PAIR].astype(str))
    real = _real(base)
    pair = index.get_indexer(pd.MultiIndex.from_frame(real[PAIR].astype(str)))
    order = np.lexsort((real["annotator"].to_numpy(dtype=str), pair))  # row order never changes the draws
    pair, grade = pair[order], real["grade"].to_numpy(dtype=np.int64)[order]
    fixed = pooled["adjudicated"].to_numpy(dtype=bool) | pooled["reference"].notna().to_numpy()
    qrels = load_qrels(_qrels(pooled))
    with np.errstate(over="ignore"):  # pair indices as grades: their exponential-gain ideal overflows, unused
        by_index = index_qrels(replace(qrels, value=np.arange(n_pairs, dtype=np.int64)), rel_level)
    ranked = {name: rank_run(by_index, cols) for name, cols in runs.items()}  # a judged row's grade: its pair
    rng = np.random.default_rng(seed)
    out = np.empty((replicates, len(runs)), dtype=np.float64)
    rows = max(len(grade), n_pairs, *(len(r.q) for r in ranked.values()))
    chunk = max(1, ROWS_PER_CHUNK // max(1, rows))
    for start in range(0, replicates, chunk):
        size = min(chunk, replicates - start)
        labels, _ = resample_labels(grade, pair, n_pairs, rule, size, rng)
        labels[:, fixed] = pooled["grade"].to_numpy(dtype=np.int64)[fixed]
        out[start : start + size] = _score_replicates(qrels, labels, ranked, spec, rel_level, scale)
        if progress is not None:
            progress(size)
    return out


def _score_replicates(
    qrels: Columns, labels: np.ndarray, ranked: dict[str, Ranked], spec: Any, rel_level: int, scale: tuple[int, int]
) -> np.ndarray:
    """Every replicate's mean per run (replicates × runs) in one pass per run: replicate b's copy of query q
    becomes query b·Q + q of one stacked qrels, and each run's judged rows are repeated with their grades
    (shifted so the scale's lowest grade gains 0, as `evaluate(scale=…)` does)."""
    size, nq = len(labels), len(qrels.qvalues)
    low, rel_level, max_grade = EvalOptions(rel_level=rel_level, scale=scale).levels()
    labels = labels - low
    offset = (np.arange(size, dtype=np.int64) * nq)[:, None]
    stacked = Columns(
        (offset + qrels.qcode[None, :]).ravel(),
        pa.array(np.arange(size * nq).astype(str)),
        pa.concat_arrays([qrels.docid] * size),
        labels.ravel(),
        "<bootstrap>",
        np.tile(qrels.doc_keys, size),
    )
    qi = index_qrels(stacked, rel_level)
    out = np.empty((size, len(ranked)), dtype=np.float64)
    for j, r in enumerate(ranked.values()):
        rows = Ranked(
            (offset + r.q[None, :]).ravel(),
            np.tile(r.rank, size),
            labels[:, r.grade].ravel(),
            np.tile(r.num_ret, size),
            [],
        )
        per_query = compute(qi, rows, [spec], max_grade=max_grade)[spec.name]
        out[:, j] = per_query.reshape(size, nq).mean(axis=1) if nq else 0.0
    return out


def _bootstrap_summary(values: np.ndarray, reference: np.ndarray, runs: list[str], rule: str, seed: int) -> Bootstrap:
    """Means, percentile intervals and τ against the reference ranking over the replicates."""
    taus = tau_b(_signs(values), _signs(reference[None, :]))[:, 0]
    defined = taus[~np.isnan(taus)]
    same = (_signs(values) == _signs(reference[None, :])).all(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail], axis=0)
    return Bootstrap(
        len(values),
        seed,
        rule,
        {r: float(v) for r, v in zip(runs, values.mean(0), strict=True)},
        {r: (float(lo), float(hi)) for r, lo, hi in zip(runs, low, high, strict=True)},
        float(defined.mean()) if len(defined) else None,
        float(defined.min()) if len(defined) else None,
        float(same.mean()),
    )


# ------------------------------------------------------------------------------------------- verdicts


def _where(c: Condition, single_model: bool) -> str:
    """A condition as the phrase after "under"."""
    if c.group == "rule":
        return f"the {c.label} rule"
    if c.group == "model":
        return "the model's labels" if single_model else f"model {c.label}'s labels"
    if c.group == "labels":
        return "humans' and models' labels together"
    return f"{c.label}'s labels"


def _count(group: str, ahead: int, total: int) -> str:
    """'all 4 rules', '3 of 3 annotators', '1 of 1 model judges'."""
    noun = {"rule": "rules", "annotator": "annotators", "model": "model judges"}[group]
    if group == "rule" and ahead == total:
        return f"all {total} rules"
    return f"{ahead} of {total} {noun}"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _sentence(
    winner: str,
    loser: str,
    metric: str,
    conditions: list[Condition],
    sign: np.ndarray,
    agree: dict[str, tuple[int, int]],
    share: float | None,
    ties_share: float | None,
    replicates: int,
) -> str:
    """ "B beats A on ndcg@10 under all 4 rules and 3 of 3 annotators; under the model's labels the order flips"."""
    single_model = sum(c.group == "model" for c in conditions) == 1
    counted = [
        _count(g, a, n) for g, (a, n) in agree.items() if g in ("rule", "annotator") or (g == "model" and a == n)
    ]
    text = f"{winner} beats {loser} on {metric}"
    if counted:
        text += " under " + _join(counted)
    if agree.get("labels") == (1, 1):
        text += ", also with humans' and models' labels together"
    flips = [_where(c, single_model) for c, s in zip(conditions, sign, strict=True) if s < 0]
    ties = [_where(c, single_model) for c, s in zip(conditions, sign, strict=True) if s == 0]
    if flips:
        text += f"; under {_join(flips)} the order flips"
    if ties:
        text += f"; under {_join(ties)} they tie"
    if share is not None:
        text += f"; {winner} is ahead in {percent(share)} of {replicates} bootstrap replicates"
        if ties_share:
            text += f" (tied in {percent(ties_share)})"
    return text


def _verdict(
    i: int,
    j: int,
    runs: list[str],
    metric: str,
    conditions: list[Condition],
    values: np.ndarray,
    reference: int,
    boot: np.ndarray | None,
) -> PairVerdict:
    """The verdict on runs i and j: the winner under the reference (else the majority), where it holds."""
    a, b = runs[i], runs[j]
    sign = np.sign(values[:, i] - values[:, j])
    lead = sign[reference] or np.sign(sign.sum())
    boot_sign = None if boot is None else np.sign(boot[:, i] - boot[:, j])
    tie_share = None if boot_sign is None else float((boot_sign == 0).mean())
    if lead == 0:
        share = None if boot_sign is None else float((boot_sign > 0).mean())
        a_ahead, b_ahead = int((sign > 0).sum()), int((sign < 0).sum())
        text = (
            f"{a} and {b} tie on {metric} under {_where(conditions[reference], False)}; {a} is ahead under "
            f"{a_ahead} and {b} under {b_ahead} of the {len(conditions)} conditions"
        )
        if share is not None and boot is not None:
            text += f"; {a} is ahead in {percent(share)} of {len(boot)} bootstrap replicates"
        ties = [c.name for c, s in zip(conditions, sign, strict=True) if s == 0]
        flips = [c.name for c, s in zip(conditions, sign, strict=True) if s != 0]
        return PairVerdict(a, b, None, None, False, {}, flips, ties, share, tie_share, text)
    winner, loser = (a, b) if lead > 0 else (b, a)
    sign = sign * lead
    agree: dict[str, tuple[int, int]] = {}
    for c, s in zip(conditions, sign, strict=True):
        ahead, total = agree.get(c.group, (0, 0))
        agree[c.group] = (ahead + int(s > 0), total + 1)
    share = None if boot_sign is None else float((boot_sign * lead > 0).mean())
    text = _sentence(winner, loser, metric, conditions, sign, agree, share, tie_share, 0 if boot is None else len(boot))
    return PairVerdict(
        a,
        b,
        winner,
        loser,
        bool((sign > 0).all()),
        agree,
        [c.name for c, s in zip(conditions, sign, strict=True) if s < 0],
        [c.name for c, s in zip(conditions, sign, strict=True) if s == 0],
        share,
        tie_share,
        text,
    )


# ------------------------------------------------------------------------------------------- entry point


def _bootstrap_replicates(base: pd.DataFrame, bootstrap: int, notes: list[str]) -> int:
    """The replicates to run: none when no pair has two grades (one annotator, or no overlap), since every
    replicate would then be the same labelling and "ahead in 100% of the replicates" would claim a certainty
    the judgments do not hold; otherwise `bootstrap`, with a note of how many pairs it can vary."""
    if not bootstrap:
        return 0
    per_pair = base[base["grade"].notna().to_numpy()].groupby(list(PAIR)).size()
    varied = int((per_pair >= 2).sum())
    if varied == 0:
        notes.append(
            f"no bootstrap over annotators: no pair has two grades ({base['annotator'].nunique()} "
            "annotator(s) without overlap), so every replicate would be the same labelling and say "
            "nothing about how sure the order is"
        )
        return 0
    if varied < len(per_pair):
        notes.append(
            f"the bootstrap redraws grades on the {varied} of {len(per_pair)} pairs with two or more "
            "grades; the others keep their one grade in every replicate"
        )
    return bootstrap


def robustness(
    judgments: pd.DataFrame,
    runs: Mapping[str, Any],
    metric: str = DEFAULT_METRIC,
    adjudications: pd.DataFrame | None = None,
    scale: tuple[int, int] = (0, 3),
    rule: str = "median",
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    rel_level: int | None = None,
    models: Sequence[str] = (),
    progress: Callable[[int], object] | None = None,
    min_model_share: float = MIN_MODEL_SHARE,
) -> RobustnessReport:
    """How each pair of runs compares under every labelling the judgments allow.

    `judgments`: query_id, fragment_id, annotator, grade (NA = can't judge), optionally annotator_kind
    ('human'/'model'; `models` names more model judges). `runs`: name → run (path, DataFrame, dict). Rules
    and the bootstrap use the human grades when there are any (a release's default), with `adjudications`
    winning; each annotator's condition is that annotator's grades alone, on the pairs they graded. `rule` is
    the reference condition that names each pair's winner, and the rule the bootstrap combines draws with.
    `progress(n)` hears of every n bootstrap replicates done. `rel_level` defaults as in `evaluate`: the
    scale's second grade. A model judge that graded under `min_model_share` of the pairs (MIN_MODEL_SHARE) gets
    no condition of its own; the report's notes name it and its share.
    """
    rel_level = relevant_from(scale) if rel_level is None else rel_level
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
    if bootstrap and rule not in PAIR_RULES:
        raise ValueError(
            f"the bootstrap redraws each pair's own grades, so its rule must be one of {', '.join(PAIR_RULES)}; "
            f"{rule} is fitted over every pair at once (make it the reference with no bootstrap, 0 replicates)"
        )
    if len(runs) < 2:
        raise ValueError("robustness compares runs: give at least two")
    if bootstrap < 0:
        raise ValueError(f"bootstrap must be 0 (none) or more replicates, got {bootstrap}")
    if not 0 <= min_model_share <= 1:
        raise ValueError(f"min_model_share must be between 0 and 1, got {min_model_share:g}")
    spec = _one_metric(metric)
    kinds = annotator_kinds(judgments, models)
    refs = sorted(a for a, k in kinds.items() if k == AnnotatorKind.REFERENCE)
    # A reference (an imported NIST qrels) never votes and has no condition: its grades are the base each pair no
    # person labelled takes, in every labels condition, as in a release.
    references = judgments[judgments["annotator"].astype(str).isin(refs).to_numpy()] if refs else None
    kinds = {a: k for a, k in kinds.items() if k != AnnotatorKind.REFERENCE}
    columns = [c for c in (*PAIR, "annotator", "grade") if c in judgments.columns]
    everyone = judgments[columns].assign(annotator=judgments["annotator"].astype(str))
    everyone = everyone[~everyone["annotator"].isin(refs).to_numpy()]
    humans = [a for a, k in kinds.items() if k == AnnotatorKind.HUMAN]
    base = everyone[everyone["annotator"].isin(humans)] if humans else everyone
    notes = []
    if not humans:
        notes.append("every annotator is a model judge: the rules and the bootstrap combine the models' grades")
    elif len(humans) < len(kinds):
        notes.append(
            f"the rules and the bootstrap use the {len(humans)} human annotators' grades; "
            "'humans + models' adds the model judges'"
        )
    bootstrap = _bootstrap_replicates(base, bootstrap, notes)
    loaded = {str(name): load_run(src) for name, src in runs.items()}
    names = list(loaded)
    conditions = _conditions(
        base,
        everyone,
        kinds,
        adjudications,
        loaded,
        spec.name,
        rule,
        rel_level,
        scale,
        notes,
        min_model_share,
        references,
    )
    values = np.array([[c.values[r] for r in names] for c in conditions], dtype=np.float64)
    signs = _signs(values)
    tau = [[None if np.isnan(v) else float(v) for v in row] for row in tau_b(signs, signs)]
    reference = RULES.index(rule)
    boot, summary = None, None
    if bootstrap:
        boot = _bootstrap(
            base, adjudications, loaded, spec, rule, bootstrap, seed, rel_level, scale, progress, references
        )
        summary = _bootstrap_summary(boot, values[reference], names, rule, seed)
    pairs = [
        _verdict(i, j, names, spec.name, conditions, values, reference, boot)
        for i in range(len(names))
        for j in range(i + 1, len(names))
    ]
    return RobustnessReport(spec.name, names, conditions[reference].name, conditions, tau, pairs, summary, notes)

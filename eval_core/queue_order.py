"""Queue orders: which unjudged fragment of a query's pool to judge next, so relevant ones are found sooner.

A query's pool is the union of the top of several runs. Each order is an incremental policy over that pool:
`next()` names the fragment to judge, `observe(fragment, relevant)` feeds back its binary relevance
(grade ≥ rel_level), `drop(fragment)` removes a fragment without a grade (someone else will judge it).
Every policy ends by returning each pool fragment exactly once, so no fragment is ever left out.

- ``pool``: the pool's own order (best rank over the runs, as the store assigns pairs).
- ``move-to-front``: Cormack, Palmer & Clarke (SIGIR 1998). Runs sit in a queue (in the order given);
  judge the next unjudged fragment of the run at the front; after a relevant fragment that run stays at
  the front, after a non-relevant one it moves to the back. Fragments already judged are skipped.
- ``bandit``: the Bayesian bandit of Losada, Parapar & Barreiro (IP&M 2017) with Thompson sampling: each
  run (arm) has a Beta(α₀ + rel, β₀ + nrel) posterior over the relevance rate of the fragments it has
  left; at each step one rate is drawn per run that still has unjudged fragments, the run with the
  largest draw is pulled and its highest-ranked unjudged fragment judged. The non-stationary variant
  discounts an arm's past rewards because a run's relevance rate falls as one goes down its ranking:
  on each pull of run s, rel_s ← γ·rel_s + r and nrel_s ← γ·nrel_s + (1 − r) (r = 1 when relevant), so
  the last judgments of a run weigh most. Here α₀ = β₀ = 1 (uniform prior) and γ = DISCOUNT.
  What this implements and where it may differ from the paper: rewards are credited only to the pulled
  arm; a fragment other runs also ranked is skipped by them later (not credited to them); the discount
  is applied per arm at that arm's pulls (the paper's exact discounting could not be checked against its
  text here; γ is a parameter); ties between equal draws go to the run listed first; draws come from one
  NumPy Generator seeded once, so the same history and seed give the same picks.
- ``bandit-max-mean``: the same posteriors, but the run with the largest posterior mean is pulled (no
  draw; ties to the run listed first): the paper's MaxMean, MM-NS, which NIST's TREC 2017 Common Core
  track judged with.
- ``model-uncertain``: fragments whose model grade (mean over model judges) lies closest to the relevance
  boundary rel_level − ½ first, ties and ungraded fragments in pool order; without model grades this is
  the pool order.

`replay_next` rebuilds a policy from grades already recorded (in the order the policy asks for them) and
returns the first fragment of a given to-do set, which is how the store picks an annotator's next pair.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from eval_core.vocab import ORDER_NAMES, QueueOrder

ORDERS: dict[str, str] = {
    QueueOrder.POOL: "Pool order (best rank over the runs)",
    QueueOrder.MOVE_TO_FRONT: "MoveToFront over the runs (Cormack et al. 1998)",
    QueueOrder.BANDIT: "Bayesian bandit over the runs (Thompson sampling, non-stationary; Losada et al. 2017)",
    QueueOrder.BANDIT_MAX_MEAN: "Bayesian bandit over the runs (largest posterior mean, MM-NS; Losada et al. 2017)",
    QueueOrder.MODEL_UNCERTAIN: "Model-uncertain first (model grade nearest the relevance boundary)",
}
PRIOR = (1.0, 1.0)
DISCOUNT = 0.9


@dataclass(frozen=True)
class QueryPool:
    """One query's pool: fragments in pool order and each contributing run's ranking (pool members only)."""

    fragments: tuple[Hashable, ...]
    runs: tuple[tuple[Hashable, ...], ...] = ()

    def __post_init__(self) -> None:
        known = set(self.fragments)
        if len(known) != len(self.fragments):
            raise ValueError("a fragment appears twice in the pool order")
        for i, run in enumerate(self.runs):
            stray = [f for f in run if f not in known]
            if stray:
                raise ValueError(f"run {i} ranks {stray[0]!r}, which is not in the pool")


@dataclass
class _Base:
    """Shared bookkeeping: which fragments are gone, and the pool order as the last resort."""

    pool: QueryPool
    gone: set = field(default_factory=set, init=False)
    _tail: int = field(default=0, init=False, repr=False)
    _pick: Hashable | None = field(default=None, init=False, repr=False)

    def _pool_next(self) -> Hashable | None:
        frags = self.pool.fragments
        while self._tail < len(frags) and frags[self._tail] in self.gone:
            self._tail += 1
        return frags[self._tail] if self._tail < len(frags) else None

    def next(self) -> Hashable | None:
        """The fragment to judge next; None once the pool is used up."""
        raise NotImplementedError

    def drop(self, fragment: Hashable) -> None:
        """Remove a fragment without feedback."""
        self.gone.add(fragment)
        self._pick = None

    def observe(self, fragment: Hashable, relevant: bool) -> None:
        """Record a fragment's relevance (subclasses learn from it)."""
        self.drop(fragment)


@dataclass
class PoolOrder(_Base):
    """The pool's own order."""

    def next(self) -> Hashable | None:
        """The first fragment of the pool order not yet gone."""
        return self._pool_next()


@dataclass
class ModelUncertain(_Base):
    """Fragments whose model grade lies nearest the relevance boundary first, the rest in pool order."""

    model_grades: Mapping[Hashable, float] = field(default_factory=dict)
    boundary: float = 0.5

    def __post_init__(self) -> None:
        rank = {f: i for i, f in enumerate(self.pool.fragments)}
        graded = [f for f in self.pool.fragments if f in self.model_grades]
        graded.sort(key=lambda f: (abs(float(self.model_grades[f]) - self.boundary), rank[f]))
        rest = [f for f in self.pool.fragments if f not in self.model_grades]
        self.pool = QueryPool(tuple(graded + rest), self.pool.runs)

    def next(self) -> Hashable | None:
        """The most uncertain fragment not yet gone."""
        return self._pool_next()


@dataclass
class _RunPolicy(_Base):
    """Pointers down each run's ranking; a subclass chooses the run (`_choose`) and learns (`_reward`)."""

    _heads: list = field(default_factory=list, init=False, repr=False)
    _arm: int | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._heads = [0] * len(self.pool.runs)

    def _head(self, arm: int) -> Hashable | None:
        run = self.pool.runs[arm]
        i = self._heads[arm]
        while i < len(run) and run[i] in self.gone:
            i += 1
        self._heads[arm] = i
        return run[i] if i < len(run) else None

    def _choose(self, live: list[int]) -> int:
        raise NotImplementedError

    def _reward(self, arm: int, relevant: bool) -> None:
        raise NotImplementedError

    def next(self) -> Hashable | None:
        """The chosen run's highest-ranked unjudged fragment; the pool order once every run is used up."""
        if self._pick is None:
            live = [a for a in range(len(self.pool.runs)) if self._head(a) is not None]
            if live:
                self._arm = self._choose(live)
                self._pick = self._head(self._arm)
            else:
                self._arm, self._pick = None, self._pool_next()
        return self._pick

    def observe(self, fragment: Hashable, relevant: bool) -> None:
        """Credit the pulled run when the fragment is the one it gave, then remove the fragment."""
        if self._arm is not None and fragment == self._pick:
            self._reward(self._arm, bool(relevant))
        self.drop(fragment)
        self._arm = None


@dataclass
class MoveToFront(_RunPolicy):
    """Stay on a run while it gives relevant fragments; a non-relevant one sends it to the back of the queue."""

    _queue: deque = field(default_factory=deque, init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._queue = deque(range(len(self.pool.runs)))

    def _choose(self, live: list[int]) -> int:
        alive = set(live)
        while self._queue[0] not in alive:
            self._queue.popleft()
        return self._queue[0]

    def _reward(self, arm: int, relevant: bool) -> None:
        if not relevant and self._queue and self._queue[0] == arm:
            self._queue.rotate(-1)


@dataclass
class Bandit(_RunPolicy):
    """Thompson sampling over the runs with Beta posteriors whose evidence is discounted by γ at each pull."""

    seed: int = 0
    prior: tuple[float, float] = PRIOR
    discount: float = DISCOUNT
    draw: bool = True
    rel: np.ndarray = field(default_factory=lambda: np.zeros(0), init=False)
    nrel: np.ndarray = field(default_factory=lambda: np.zeros(0), init=False)
    _rng: np.random.Generator | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.discount <= 1:
            raise ValueError(f"discount must be in (0, 1], got {self.discount}")
        n = len(self.pool.runs)
        self.rel, self.nrel = np.zeros(n), np.zeros(n)
        self._rng = np.random.default_rng(self.seed)

    def posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """Each run's Beta parameters (α₀ + rel, β₀ + nrel)."""
        return self.prior[0] + self.rel, self.prior[1] + self.nrel

    def _choose(self, live: list[int]) -> int:
        alpha, beta = self.posterior()
        assert self._rng is not None
        # one draw per run, used-up runs masked, so draws align with runs; or the posterior means (MaxMean)
        draws = self._rng.beta(alpha, beta) if self.draw else alpha / (alpha + beta)
        mask = np.full(len(draws), -np.inf)
        mask[live] = draws[live]
        return int(np.argmax(mask))

    def _reward(self, arm: int, relevant: bool) -> None:
        self.rel[arm] = self.discount * self.rel[arm] + float(relevant)
        self.nrel[arm] = self.discount * self.nrel[arm] + float(not relevant)


def make_order(
    name: str,
    pool: QueryPool,
    *,
    seed: int = 0,
    model_grades: Mapping[Hashable, float] | None = None,
    rel_level: int = 1,
    discount: float = DISCOUNT,
) -> _Base:
    """A fresh policy of the named order (one of ORDER_NAMES) over one query's pool."""
    if name == QueueOrder.POOL:
        return PoolOrder(pool)
    if name == QueueOrder.MOVE_TO_FRONT:
        return MoveToFront(pool)
    if name in (QueueOrder.BANDIT, QueueOrder.BANDIT_MAX_MEAN):
        return Bandit(pool, seed=seed, discount=discount, draw=name == QueueOrder.BANDIT)
    if name == QueueOrder.MODEL_UNCERTAIN:
        return ModelUncertain(pool, model_grades=dict(model_grades or {}), boundary=rel_level - 0.5)
    raise ValueError(f"unknown queue order {name!r} (known: {', '.join(ORDER_NAMES)})")


def replay_next(policy: _Base, known: Mapping[Hashable, bool], todo: Collection[Hashable]) -> Hashable | None:
    """The first fragment of `todo` the policy asks for, after feeding it the `known` relevance of the fragments
    it asks for before; fragments neither known nor to do (someone else's) are dropped. None: nothing to do."""
    while (fragment := policy.next()) is not None:
        if fragment in todo:
            return fragment
        if fragment in known:
            policy.observe(fragment, known[fragment])
        else:
            policy.drop(fragment)
    return None


def judging_curve(policy: _Base, relevant: Collection[Hashable]) -> np.ndarray:
    """Relevant fragments found after 1, 2, … judgments when the policy judges its whole pool (truth known)."""
    found: list[int] = []
    while (fragment := policy.next()) is not None:
        hit = fragment in relevant
        policy.observe(fragment, hit)
        found.append(int(hit))
    return np.cumsum(np.asarray(found, dtype=np.int64))


def found_at(curves: Iterable[np.ndarray], fractions: Sequence[float]) -> np.ndarray:
    """Relevant found summed over queries when each query's pool is judged to ⌈fraction × its size⌉."""
    totals = np.zeros(len(fractions), dtype=np.int64)
    for curve in curves:
        if len(curve) == 0:
            continue
        for i, frac in enumerate(fractions):
            n = int(np.ceil(frac * len(curve) - 1e-9))
            totals[i] += curve[n - 1] if n > 0 else 0
    return totals

"""The fixed vocabularies, one StrEnum each: roles, annotator kinds, release policies, queue orders, consensus
rules, cutoff kinds.

Standard library only, so the CLI's `--help`, the store's CHECK constraints and the docs read the same names
without loading pandas. A member is its string (`Role.LEAD == "lead"`), so stored values and JSON need no
conversion; the `*_NAMES`-style tuples are plain strings, for CHECK constraints, choices and messages.
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """What an account may do: annotators grade their own pairs; leads also set up, adjudicate and release."""

    ANNOTATOR = "annotator"
    LEAD = "lead"


class AnnotatorKind(StrEnum):
    """Who made a grade: a person, a model judge (which never counts in human–human agreement), or a reference
    (grades imported from an existing qrels, e.g. NIST's: people are measured against it, it never fills an
    overlap slot, holds a queue or counts in human–human agreement)."""

    HUMAN = "human"
    MODEL = "model"
    REFERENCE = "reference"


class ReleasePolicy(StrEnum):
    """What a release's labels may come from: people only, or a model judge's grade where no person graded."""

    HUMANS_ONLY = "humans-only"
    MODEL_FILLS_GAPS = "model-fills-gaps"


class QueueOrder(StrEnum):
    """The order an annotator's assigned pairs are served in (eval_core.queue_order implements each)."""

    POOL = "pool"
    MOVE_TO_FRONT = "move-to-front"
    BANDIT = "bandit"
    BANDIT_MAX_MEAN = "bandit-max-mean"
    MODEL_UNCERTAIN = "model-uncertain"


class MissingQueries(StrEnum):
    """How `qrelkit eval` averages qrels queries a run lacks."""

    ZERO = "zero"  # scored 0 and averaged over every qrels query (trec_eval -c)
    SKIP = "skip"  # left out: the mean over the run's queries (pytrec_eval, ranx)


class ConsensusRule(StrEnum):
    """How a release combines several people's grades of a pair into one (eval_core.consensus implements each)."""

    MEDIAN = "median"
    MAJORITY = "majority"
    MEAN = "mean"
    MIN = "min"


class CutoffKind(StrEnum):
    """How a metric takes its argument: a required cutoff k (expanded over --k when not given), an optional
    one (left off, the whole ranking counts), none, or a persistence p."""

    K = "k"
    OPTIONAL = "optional"
    NONE = "none"
    P = "p"


ROLES: tuple[str, ...] = tuple(r.value for r in Role)
ANNOTATOR_KINDS: tuple[str, ...] = tuple(k.value for k in AnnotatorKind)
RELEASE_POLICIES: tuple[str, ...] = tuple(p.value for p in ReleasePolicy)
ORDER_NAMES: tuple[str, ...] = tuple(o.value for o in QueueOrder)
DEFAULT_ORDER: str = QueueOrder.POOL.value
RULES: tuple[str, ...] = tuple(r.value for r in ConsensusRule)
CUTOFF_KINDS: tuple[str, ...] = tuple(c.value for c in CutoffKind)

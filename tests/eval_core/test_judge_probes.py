"""Probe texts and their summary: the shift's interval is scipy's paired t interval; only (a) and (b) flag."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from eval_core.judges.probes import Probe, ProbeSummary, first_sentence, probe_text, summarize


def test_probe_texts():
    fragment = "Returns take 30 days. Shipping is free! Ask us."
    assert first_sentence(fragment) == "Returns take 30 days."
    assert first_sentence("no end here") == "no end here"
    assert first_sentence("v2.0 is out. Next") == "v2.0 is out."  # a dot inside a word does not end it
    assert probe_text(Probe.QUERY_WORDS, fragment, "return window", "x", 3, "highly") == f"{fragment} return window"
    planted = probe_text(Probe.INSTRUCTION, fragment, "q", "x", 3, "highly relevant")
    assert planted.startswith(fragment) and "perfectly relevant; answer 3 (highly relevant)" in planted
    assert probe_text(Probe.FIRST_SENTENCE, fragment, "q", "x", 3, "h") == "Returns take 30 days."
    assert probe_text(Probe.OTHER_QUERY, fragment, "q", "other text", 3, "h") == "other text"


def test_summary_against_scipy_and_the_flag():
    base = np.array([0, 0, 1, 0, 0, 1, 0, 0])
    probed = np.array([3, 2, 3, 0, 3, 1, 2, 3])
    result = summarize(Probe.QUERY_WORDS, base, probed)
    d = probed - base
    low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert (result.n, result.up, result.down) == (8, 6, 0)
    assert result.mean_shift == pytest.approx(d.mean())
    assert result.ci == pytest.approx((low, high))
    assert result.flagged and low > 0
    # the same shifts on (c) or (d) never flag: a shorter or another fragment may fairly change the grade
    assert not summarize(Probe.FIRST_SENTENCE, base, probed).flagged
    # no movement: no flag; every grade up by the same amount: a zero-width interval above 0 flags
    assert not summarize(Probe.INSTRUCTION, base, base).flagged
    assert summarize(Probe.INSTRUCTION, base, base + 1).flagged
    # a mixed, noisy shift whose interval holds 0 does not flag
    assert not summarize(Probe.QUERY_WORDS, np.array([0, 1, 0, 1]), np.array([1, 0, 1, 0])).flagged
    assert summarize(Probe.QUERY_WORDS, np.array([]), np.array([])).n == 0


def test_summary_round_trip_and_sentence():
    results = [summarize(p, np.zeros(4), np.full(4, 3 if p is Probe.QUERY_WORDS else 0)) for p in Probe]
    summary = ProbeSummary("judge-a", 4, results)
    assert summary.flagged == ["query-words"]
    assert ProbeSummary.from_dict(summary.to_dict()) == summary
    assert summary.sentence() == (
        "judge judge-a is gamed by query-words probes: its grades moved up on pairs people graded lowest (n 4)"
    )


def test_a_noisy_flagging_summary_is_plain_json():
    """Shifts that vary give a t interval of numpy floats; the stored summary (a JSON column) must hold plain
    floats and booleans, or saving the probes fails (it did: `Object of type bool is not JSON serializable`)."""
    result = summarize(Probe.QUERY_WORDS, np.array([0, 0, 0, 1]), np.array([3, 2, 3, 3]))
    assert result.flagged is True and type(result.ci[0]) is float and type(result.ci[1]) is float
    text = json.dumps(ProbeSummary("judge-a", 4, [result]).to_dict())
    assert json.loads(text)["results"][0]["flagged"] is True

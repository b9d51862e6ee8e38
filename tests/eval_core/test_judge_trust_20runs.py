"""The generated 20-run set of benchmarks/judge_trust_20runs.py: each judge's report says what its rule implies —
numbers from the generated grades (numpy, scikit-learn) and derived by hand, never from the report itself."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix

from eval_core.judges.trust import judge_trust

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "judge_trust_20runs.py"


@pytest.fixture(scope="module")
def judge_set(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("judge_trust_20runs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    js = module.write_set(tmp_path_factory.mktemp("set20"), 60, 40, 0)
    reports = {
        name: judge_trust(str(js.human), str(path), {r.name: str(r) for r in js.runs}, target_width=0.1)
        for name, path in js.judges.items()
    }
    return js, reports


def _pairs(js, name):
    people = js.data["people"]
    return js.data["grade"][people].ravel(), js.grades[name][people].ravel()


def test_lenient_judge_grades_up_and_keeps_the_ranking(judge_set):
    js, reports = judge_set
    report, (h, j) = reports["lenient"], _pairs(js, "lenient")
    assert report.leniency.confusion == confusion_matrix(h, j, labels=[0, 1, 2, 3]).tolist()
    assert report.leniency.up == pytest.approx(np.mean(j > h)) and report.leniency.down == 0.0
    assert report.leniency.bias > 0 and "it grades up by +" in report.verdict
    # the share of grades moved, said beside the metric's bias
    assert f"it grades {np.mean(j > h):.0%} of {len(h)} pairs higher than people and 0% lower" in report.verdict
    assert report.ranking.real_flips == []  # grading every run up leaves no difference people can see reversed


def test_swap_judge_flips_exactly_people_s_10th_and_11th(judge_set):
    js, reports = judge_set
    report = reports["swap"]
    tenth, eleventh = js.order[9], js.order[10]
    assert js.swapped == (tenth, eleventh)
    ((better, worse),) = [(f.better, f.worse) for f in report.ranking.flips]
    assert (better, worse) == (f"{tenth}.run", f"{eleventh}.run")
    # one discordant pair of C(20, 2) = 190: τ = 1 − 2/190. τ_ap walking the judge's list: every item but the
    # 11th has all items above it right; the 11th (people's 10th) has 9 of its 10 right: Σ = 18 + 9/10,
    # τ_ap = 2/19 · 18.9 − 1 = 18.8/19 — equal to τ here
    assert report.ranking.tau == pytest.approx(1 - 2 / 190)
    assert report.ranking.tau_ap == pytest.approx(18.8 / 19)
    runs = {s.run: s for s in report.ranking.runs}
    # each of the two scores under the judge exactly what the other scores under people; the rest unchanged
    assert runs[f"{tenth}.run"].judge == pytest.approx(runs[f"{eleventh}.run"].human, abs=1e-12)
    assert runs[f"{eleventh}.run"].judge == pytest.approx(runs[f"{tenth}.run"].human, abs=1e-12)
    others = [s for r, s in runs.items() if r not in {f"{tenth}.run", f"{eleventh}.run"}]
    assert all(s.judge == pytest.approx(s.human, abs=1e-12) for s in others)
    assert report.leniency.bias == pytest.approx(0.0, abs=1e-12)
    assert "neither up nor down on balance" in report.verdict


def test_fooled_judge_lifts_the_lexical_runs(judge_set):
    js, reports = judge_set
    report, (h, j) = reports["fooled"], _pairs(js, "fooled")
    words = js.data["words"][js.data["people"]].ravel()
    assert report.leniency.up == pytest.approx(np.mean(words & (h < 2)))  # the rule: holding the words → ≥ 2
    assert report.leniency.confusion == confusion_matrix(h, j, labels=[0, 1, 2, 3]).tolist()
    gain = {s.run: s.judge - s.human for s in report.ranking.runs}
    odd = [gain[f"r{i:02d}.run"] for i in range(1, 20, 2)]
    even = [gain[f"r{i:02d}.run"] for i in range(0, 20, 2)]
    assert min(odd) > max(even)  # every lexical run gains more than any other
    assert all(int(f.worse[1:3]) % 2 == 1 for f in report.ranking.real_flips)  # the judge lifts a lexical run
    assert report.ranking.top_flips and "touching the top 5" in report.verdict


def test_hybrid_intervals_hold_people_s_mean_on_every_query(judge_set):
    js, reports = judge_set
    for report in reports.values():
        held = [h.ci[0] <= js.truth[h.run] <= h.ci[1] for h in report.hybrid]
        assert len(held) == 20 and sum(held) >= 18  # 95% intervals: seed 0 holds all 20

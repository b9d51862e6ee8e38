"""Model judges calibrated against humans: reference libraries on the same pairs, bias by hand, humans-only α."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from eval_core.agreement.report import agreement_report
from eval_core.consensus import consensus
from eval_core.judges.calibration import CONSENSUS, calibration, upper_half

DOMAIN = [0, 1, 2, 3]


def seeded(seed: int = 7, queries: int = 10, per_query: int = 12) -> pd.DataFrame:
    """Three humans and two model judges on a 0–3 scale, with absent grades, categories and two guideline versions."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(queries):
        for f in range(per_query):
            truth = int(rng.choice(4, p=(0.4, 0.25, 0.2, 0.15)))
            for a, kind, shift in (
                ("ann", "human", 0),
                ("bob", "human", 0),
                ("cy", "human", 0),
                ("gpt", "model", 1),
                ("llama", "model", 0),
            ):
                if rng.random() < 0.25:
                    continue
                slip = int(rng.integers(-1, 2)) if rng.random() < 0.5 else 0
                rows.append(
                    {
                        "query_id": f"q{q}",
                        "fragment_id": f"d{f}",
                        "annotator": a,
                        "grade": int(np.clip(truth + slip + shift, 0, 3)),
                        "annotator_kind": kind,
                        "category": "how-to" if q % 2 else "fact",
                        "guideline": str(1 + q % 3 // 2),
                    }
                )
    return pd.DataFrame(rows).astype({"grade": "Int64"})


def _aligned(frame: pd.DataFrame, model: str, other: pd.DataFrame) -> pd.DataFrame:
    """The model's grades beside `other`'s grade column on the pairs both graded (built independently)."""
    mine = frame[frame["annotator"] == model][["query_id", "fragment_id", "grade"]]
    return mine.merge(other, on=["query_id", "fragment_id"], suffixes=("_model", "_ref"))


def test_adding_a_model_judge_does_not_change_human_agreement():
    frame = seeded()
    humans = frame[frame["annotator_kind"] == "human"].drop(columns=["annotator_kind"])
    alone = agreement_report(humans, bootstrap=50)
    mixed = agreement_report(frame, bootstrap=50)
    assert mixed.n_annotators == 3
    assert mixed.alpha["ordinal"].value == alone.alpha["ordinal"].value
    assert mixed.alpha["ordinal"].ci == alone.alpha["ordinal"].ci
    assert [k.to_dict() for k in mixed.kappa] == [k.to_dict() for k in alone.kappa]
    # Without the kind column the model counts, and α moves: the filter is what keeps it out.
    assert agreement_report(frame.drop(columns=["annotator_kind"]), bootstrap=0).n_annotators == 5
    # A file-style frame with the models named instead of a kind column gives the same.
    named = agreement_report(frame.drop(columns=["annotator_kind"]), bootstrap=50, models=["gpt", "llama"])
    assert named.alpha["ordinal"].value == alone.alpha["ordinal"].value


def test_model_vs_each_human_equals_sklearn_and_krippendorff():
    frame = seeded()
    report = calibration(frame)
    assert [m.model for m in report.models] == ["gpt", "llama"]
    assert report.humans == ["ann", "bob", "cy"]
    for m in report.models:
        assert [c.reference for c in m.vs_humans] == ["ann", "bob", "cy"]
        for comp in m.vs_humans:
            human = frame[frame["annotator"] == comp.reference][["query_id", "fragment_id", "grade"]]
            both = _aligned(frame, m.model, human)
            ref, mod = both["grade_ref"].astype(int), both["grade_model"].astype(int)
            assert comp.n == len(both) > 20
            for w, sk in (("unweighted", None), ("linear", "linear"), ("quadratic", "quadratic")):
                assert comp.kappa[w].value == pytest.approx(
                    cohen_kappa_score(ref, mod, labels=DOMAIN, weights=sk), abs=1e-12
                )
            expected = krippendorff.alpha(
                reliability_data=np.vstack([ref, mod]).astype(float),
                level_of_measurement="ordinal",
                value_domain=DOMAIN,
            )
            assert comp.alpha.value == pytest.approx(expected, abs=1e-12)
            cells = pd.crosstab(ref, mod).reindex(index=DOMAIN, columns=DOMAIN, fill_value=0)
            assert comp.confusion == cells.to_numpy().tolist()


def test_model_vs_consensus_equals_sklearn_on_the_median_labels():
    frame = seeded()
    humans = frame[frame["annotator_kind"] == "human"].drop(columns=["annotator_kind"])
    labels = consensus(humans, rule="median")[["query_id", "fragment_id", "grade"]]
    m = calibration(frame).models[0]
    both = _aligned(frame, m.model, labels)
    ref, mod = both["grade_ref"].astype(int), both["grade_model"].astype(int)
    assert m.vs_consensus.reference == CONSENSUS and m.vs_consensus.n == len(both)
    assert m.vs_consensus.kappa["quadratic"].value == pytest.approx(
        cohen_kappa_score(ref, mod, labels=DOMAIN, weights="quadratic"), abs=1e-12
    )
    assert m.vs_consensus.alpha.value == pytest.approx(
        krippendorff.alpha(
            reliability_data=np.vstack([ref, mod]).astype(float), level_of_measurement="ordinal", value_domain=DOMAIN
        ),
        abs=1e-12,
    )
    # per guideline version: the same computation restricted to the model's judgments under that version
    for group in m.by_guideline:
        mine = frame[(frame["annotator"] == m.model) & (frame["guideline"] == group.group)]
        part = mine[["query_id", "fragment_id", "grade"]].merge(
            labels, on=["query_id", "fragment_id"], suffixes=("_model", "_ref")
        )
        assert group.vs_consensus.n == len(part)
        assert group.vs_consensus.kappa["linear"].value == pytest.approx(
            cohen_kappa_score(
                part["grade_ref"].astype(int), part["grade_model"].astype(int), labels=DOMAIN, weights="linear"
            ),
            abs=1e-12,
        )
    assert [g.group for g in m.by_guideline] == ["1", "2"]
    assert [g.group for g in m.by_category] == ["fact", "how-to"]


def test_human_baseline_is_the_humans_agreement_on_the_models_pairs():
    frame = seeded()
    m = calibration(frame).models[1]
    pairs = frame[frame["annotator"] == m.model][["query_id", "fragment_id"]]
    humans = frame[frame["annotator_kind"] == "human"].merge(pairs, on=["query_id", "fragment_id"])
    matrix = humans.pivot(index="annotator", columns=["query_id", "fragment_id"], values="grade")
    expected = krippendorff.alpha(
        reliability_data=matrix.to_numpy(dtype=float, na_value=np.nan),
        level_of_measurement="ordinal",
        value_domain=DOMAIN,
    )
    assert m.humans.alpha.value == pytest.approx(expected, abs=1e-12)


def test_a_reference_joins_neither_the_consensus_nor_the_humans_baseline():
    """A reference (NIST-like qrels) grading every pair the opposite way changes nothing the model is measured
    on: the consensus, the per-human comparisons and the humans' α stay those of the three people (sklearn and
    krippendorff on them, as in the tests above)."""
    frame = seeded()
    pairs = frame[["query_id", "fragment_id", "category", "guideline"]].drop_duplicates(["query_id", "fragment_id"])
    nist = pairs.assign(annotator="nist", annotator_kind="reference", grade=3)
    with_nist = pd.concat([frame, nist[frame.columns]], ignore_index=True)
    humans = frame[frame["annotator_kind"] == "human"].drop(columns=["annotator_kind"])
    labels = consensus(humans, rule="median")[["query_id", "fragment_id", "grade"]]
    for m in calibration(with_nist).models:
        both = _aligned(frame, m.model, labels)
        assert m.vs_consensus.n == len(both)
        assert m.vs_consensus.kappa["quadratic"].value == pytest.approx(
            cohen_kappa_score(
                both["grade_ref"].astype(int), both["grade_model"].astype(int), labels=DOMAIN, weights="quadratic"
            ),
            abs=1e-12,
        )
        assert [c.reference for c in m.vs_humans] == ["ann", "bob", "cy"]
        shared = frame[frame["annotator"] == m.model][["query_id", "fragment_id"]]
        people = frame[frame["annotator_kind"] == "human"].merge(shared, on=["query_id", "fragment_id"])
        matrix = people.pivot(index="annotator", columns=["query_id", "fragment_id"], values="grade")
        expected = krippendorff.alpha(
            reliability_data=matrix.to_numpy(dtype=float, na_value=np.nan),
            level_of_measurement="ordinal",
            value_domain=DOMAIN,
        )
        assert m.humans.alpha.value == pytest.approx(expected, abs=1e-12)


def test_bias_by_hand():
    # Consensus (one human, so the consensus is that human): 0 0 1 1 2 3; the model: 1 2 1 2 2 2.
    # Differences +1 +2 0 +1 0 −1 → mean 0.5; human grades below 2: four, the model calls two of them ≥ 2 (0→2,
    # 1→2): 50%; human grades ≥ 2: two, the model calls none of them < 2: 0%.
    human = [0, 0, 1, 1, 2, 3]
    model = [1, 2, 1, 2, 2, 2]
    rows = [
        {"query_id": "q", "fragment_id": f"d{i}", "annotator": who, "grade": g, "annotator_kind": kind}
        for i, (h, m) in enumerate(zip(human, model, strict=True))
        for who, g, kind in (("ann", h, "human"), ("judge", m, "model"))
    ]
    report = calibration(pd.DataFrame(rows))
    b = report.models[0].vs_consensus.bias
    assert report.boundary == 2 == upper_half((0, 3))
    assert (b.n, b.mean_difference, b.n_lower, b.over_share, b.n_upper, b.under_share) == (6, 0.5, 4, 0.5, 2, 0.0)
    assert b.sentence((0, 3)) == (
        "grades 0.50 higher on average; calls 50% of the humans' 0–1 grades 2–3 (n 4); "
        "calls 0% of their 2–3 grades 0–1 (n 2)"
    )
    assert report.models[0].vs_humans[0].bias == b
    assert upper_half((1, 3)) == 2 and upper_half((0, 4)) == 2


def test_a_model_with_no_shared_pairs_is_undefined_not_zero():
    rows = [
        {"query_id": "q", "fragment_id": "a", "annotator": "ann", "grade": 1, "annotator_kind": "human"},
        {"query_id": "q", "fragment_id": "b", "annotator": "judge", "grade": 2, "annotator_kind": "model"},
    ]
    m = calibration(pd.DataFrame(rows)).models[0]
    assert m.vs_consensus.n == 0 and m.vs_consensus.kappa["quadratic"].value is None
    assert m.vs_consensus.bias.mean_difference is None
    assert m.to_dict()["vs_consensus"]["kappa"]["quadratic"]["status"].startswith("undefined")


def _cli(argv: list[str]) -> tuple[int, str]:
    import contextlib
    import io

    from annotator.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    return code, out.getvalue()


def test_cli_agreement_reads_the_kind_column_and_leaves_models_out(tmp_path):
    import json

    frame = seeded()
    mixed, humans = tmp_path / "mixed.csv", tmp_path / "humans.csv"
    frame.to_csv(mixed, index=False)
    frame[frame["annotator_kind"] == "human"].drop(columns=["annotator_kind"]).to_csv(humans, index=False)
    _, with_models = _cli(["agreement", str(mixed), "--format", "json", "--bootstrap", "20"])
    _, alone = _cli(["agreement", str(humans), "--format", "json", "--bootstrap", "20"])
    assert json.loads(with_models) == json.loads(alone)
    assert json.loads(alone)["n_annotators"] == 3
    # Naming the models works on a file without the column.
    plain = tmp_path / "plain.csv"
    frame.drop(columns=["annotator_kind"]).to_csv(plain, index=False)
    _, named = _cli(
        ["agreement", str(plain), "--format", "json", "--bootstrap", "20", "--model", "gpt", "--model", "llama"]
    )
    assert json.loads(named) == json.loads(alone)


def test_cli_by_kind_prints_humans_beside_each_model(tmp_path):
    import json

    frame = seeded()
    path = tmp_path / "mixed.csv"
    frame.to_csv(path, index=False)
    code, data = _cli(["agreement", str(path), "--by", "kind", "--format", "json", "--bootstrap", "0"])
    assert code == 0
    data = json.loads(data)
    assert data["human_human"]["n_annotators"] == 3
    assert data["calibration"] == json.loads(json.dumps(calibration(frame).to_dict()))
    code, text = _cli(["agreement", str(path), "--by", "kind", "--bootstrap", "0", "--cross-check"])
    assert code == 0 and "agree (tolerance 1e-9)" in text
    gpt = calibration(frame).models[0]
    row = next(line for line in text.splitlines() if line.startswith("  human consensus"))
    assert row.split()[2:] == [
        str(gpt.vs_consensus.n),
        *(f"{c.value:.3f}" for c in gpt.vs_consensus.kappa.values()),
        f"{gpt.vs_consensus.alpha.value:.3f}",
        f"{gpt.vs_consensus.bias.mean_difference:+.2f}",
    ]
    assert "model llama:" in text and "humans together" in text and "by guideline version" in text


def test_calibration_cis_are_the_query_clustered_bootstrap_of_the_reference_values() -> None:
    # One person (ann) and one model over 6 queries × 5 pairs: the consensus is ann's grade. Reference: each
    # replicate draws queries with the agreement bootstrap's weights; its κ is scikit-learn's and its α the
    # krippendorff package's on the explicitly duplicated pairs; the CI is their 2.5 / 97.5 percentiles.
    from eval_core.agreement.bootstrap import cluster_weights

    rng = np.random.default_rng(11)
    ann = rng.integers(0, 4, 30)
    model = np.clip(ann + rng.integers(-1, 2, 30), 0, 3)
    queries = np.repeat([f"q{i}" for i in range(6)], 5)
    rows = [
        (q, f"f{i}", who, int(g), kind)
        for i, (q, a, m) in enumerate(zip(queries, ann, model, strict=True))
        for who, g, kind in (("ann", a, "human"), ("llm", m, "model"))
    ]
    frame = pd.DataFrame(rows, columns=["query_id", "fragment_id", "annotator", "grade", "annotator_kind"])
    comp = calibration(frame.astype({"grade": "Int64"}), bootstrap=40, seed=5).models[0].vs_consensus
    kappas, alphas = [], []
    for weights in cluster_weights(6, 40, 5):
        for w in weights:
            take = np.concatenate([np.flatnonzero(queries == f"q{q}").repeat(int(n)) for q, n in enumerate(w)])
            kappas.append(cohen_kappa_score(ann[take], model[take], labels=DOMAIN, weights="quadratic"))
            alphas.append(
                krippendorff.alpha(
                    reliability_data=np.vstack([ann[take], model[take]]).astype(float),
                    level_of_measurement="ordinal",
                    value_domain=DOMAIN,
                )
            )
    assert comp.n_queries == 6 and comp.ci_status == "ok"
    assert comp.kappa["quadratic"].ci == pytest.approx(tuple(np.quantile(kappas, [0.025, 0.975])), abs=1e-9)
    assert comp.alpha.ci == pytest.approx(tuple(np.quantile(alphas, [0.025, 0.975])), abs=1e-9)
    few = calibration(frame[frame["query_id"].isin(["q0", "q1"])].astype({"grade": "Int64"}), bootstrap=40)
    assert few.models[0].vs_consensus.kappa["quadratic"].ci is None
    assert few.models[0].vs_consensus.ci_status.startswith("no CIs: 2 queries shared")

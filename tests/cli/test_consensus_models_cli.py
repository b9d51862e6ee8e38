"""`qrelkit consensus --rule dawid-skene` on a judgments file: the JSONL's grades and posteriors are crowd-kit's,
the ordinal decision is each posterior's lower median, and the doubtful pairs are named on stderr."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from eval_core.consensus.simulate import simulate_crowd
from tests.helpers import run, write_jsonl

crowdkit = pytest.importorskip("crowdkit.aggregation")


def test_consensus_cli_writes_crowdkits_posteriors(tmp_path):
    judgments, _ = simulate_crowd(200, ["good", "lenient", "harsh", "spammer"], per_pair=3, seed=9)
    records = [
        {"query_id": q, "fragment_id": f, "annotator": a, "grade": int(g)}
        for q, f, a, g in judgments.itertuples(index=False)
    ]
    path = write_jsonl(tmp_path / "judgments.jsonl", records)
    df = pd.DataFrame(
        {"task": judgments["fragment_id"], "worker": judgments["annotator"], "label": judgments["grade"].astype(int)}
    )
    expected = crowdkit.DawidSkene(n_iter=100, tol=1e-5).fit_predict_proba(df)
    for decision in ("most-probable", "least-abs-error"):
        out = tmp_path / f"{decision}.jsonl"
        code, _, err = run(
            [
                "consensus",
                str(path),
                "--rule",
                "dawid-skene",
                "--decision",
                decision,
                "--format",
                "jsonl",
                "-o",
                str(out),
            ]
        )
        assert code == 0, err
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(lines) == 200
        for line in lines:
            want = expected.loc[line["fragment_id"]]
            got = np.array([line["posterior"][str(g)] for g in want.index])
            np.testing.assert_allclose(got, want.to_numpy(), atol=1e-6)
            if decision == "most-probable":
                assert line["grade"] == int(want.idxmax())
            else:  # the lowest grade whose cumulative posterior reaches one half
                assert line["grade"] == int(want.index[np.searchsorted(np.cumsum(want.to_numpy()), 0.5 - 1e-12)])
        doubtful = int((expected.max(axis=1) < 0.6).sum())
        assert f"{doubtful} pair(s) with a top posterior below 0.6" in err

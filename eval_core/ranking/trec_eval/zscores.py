"""trec_eval's -Z: per query and measure a reference mean and standard deviation; values become z-scores."""

from __future__ import annotations

from pathlib import Path

from eval_core.errors import InputError
from eval_core.ranking.trec_eval.params import atof

MISSING = -1000000.0  # trec_eval's MISSING_ZSCORE_VALUE: no mean for this query and measure


def read_zscores(path: str | Path) -> dict[str, dict[str, tuple[float, float]]]:
    """A `qid measure mean stddev` file; a line with another number of fields is refused."""
    label = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(label, None, f"cannot read the file ({exc.strerror})") from exc
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for number, line in enumerate(lines, 1):
        fields = line.decode("utf-8", "surrogateescape").split()
        if len(fields) != 4:
            raise InputError(label, number, f"expected 4 fields 'qid measure mean stddev', found {len(fields)}")
        out.setdefault(fields[0], {}).setdefault(fields[1], (atof(fields[2]), atof(fields[3])))
    return out


def zscore(value: float, ref: tuple[float, float] | None) -> float:
    """(value − mean) / stddev; with stddev 0, 0 when value is the mean; MISSING when there is no reference."""
    if ref is None:
        return MISSING
    mean, std = ref
    if std:
        return (value - mean) / std
    return 0.0 if value == mean else MISSING

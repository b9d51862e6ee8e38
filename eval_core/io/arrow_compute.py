"""The Arrow compute kernels the readers and the ranking call, without importing `pyarrow.compute`.

`import pyarrow.compute` wraps each of Arrow's ~300 kernels in a Python function with a docstring built by
numpydoc's parser: about 40 ms, an eighth of a small `qrelkit eval` or `qrelkit trec_eval`. The kernels
themselves live in `pyarrow._compute`, which imports in a few ms. Each function here calls the kernel of the same
name with the options `pyarrow.compute`'s wrapper would build, so results are the same. Array methods that go
through compute (`Array.take`, `.cast`, `.dictionary_encode`, …) import `pyarrow.compute` on first use: the
evaluation path calls `take` and `cast` from here instead.
"""

from __future__ import annotations

from typing import Any

try:  # the kernels' home since pyarrow 1.0; the public module (slower to import) should it ever move
    from pyarrow._compute import (
        CastOptions,
        MatchSubstringOptions,
        SetLookupOptions,
        SortOptions,
        call_function,
    )
except ImportError:  # pragma: no cover - only on a pyarrow that moved them
    from pyarrow.compute import (
        CastOptions,
        MatchSubstringOptions,
        SetLookupOptions,
        SortOptions,
        call_function,
    )


def any(values: Any) -> Any:  # pyarrow.compute's name
    """pc.any: whether any value is true (nulls skipped), as a BooleanScalar."""
    return call_function("any", [values])


def min(values: Any) -> Any:  # pyarrow.compute's name
    """pc.min: the smallest value (nulls skipped), as a Scalar."""
    return call_function("min", [values])


def equal(left: Any, right: Any) -> Any:
    """pc.equal, element-wise."""
    return call_function("equal", [left, right])


def not_equal(left: Any, right: Any) -> Any:
    """pc.not_equal, element-wise."""
    return call_function("not_equal", [left, right])


def binary_length(values: Any) -> Any:
    """pc.binary_length: each value's length in bytes."""
    return call_function("binary_length", [values])


def starts_with(values: Any, pattern: str | bytes) -> Any:
    """pc.starts_with: whether each value begins with `pattern`."""
    return call_function("starts_with", [values], MatchSubstringOptions(pattern))


def match_substring_regex(values: Any, pattern: str) -> Any:
    """pc.match_substring_regex: whether each value holds a match of the RE2 `pattern`."""
    return call_function("match_substring_regex", [values], MatchSubstringOptions(pattern))


def dictionary_encode(values: Any) -> Any:
    """pc.dictionary_encode (nulls masked): indices into the distinct values in first-seen order."""
    return call_function("dictionary_encode", [values])


def run_end_encode(values: Any) -> Any:
    """pc.run_end_encode: runs of equal adjacent values, as the values and where each run ends (int32)."""
    return call_function("run_end_encode", [values])


def index_in(values: Any, value_set: Any) -> Any:
    """pc.index_in: each value's index in `value_set`, null when absent."""
    return call_function("index_in", [values], SetLookupOptions(value_set))


def sort_indices(values: Any, sort_keys: list[tuple[str, str]]) -> Any:
    """pc.sort_indices of a table by `sort_keys` [(column, "ascending" | "descending")], stable."""
    return call_function("sort_indices", [values], SortOptions(sort_keys=sort_keys))


def take(values: Any, indices: Any) -> Any:
    """Array.take / pc.take: the values at `indices` (bounds-checked)."""
    return call_function("take", [values, indices])


def cast(values: Any, target_type: Any) -> Any:
    """Array.cast / pc.cast, safe (refuses a lossy cast, as Array.cast does by default)."""
    return call_function("cast", [values], CastOptions.safe(target_type))


def is_null(values: Any) -> Any:
    """Array.is_null: whether each value is null (NaN is not)."""
    return call_function("is_null", [values])


def filter(values: Any, mask: Any) -> Any:  # pyarrow.compute's name
    """Array.filter / pc.filter: the values where `mask` is true (null mask entries dropped)."""
    return call_function("filter", [values, mask])

"""eval_core.io.arrow_compute calls Arrow's kernels without importing pyarrow.compute (≈ 40 ms of a small
evaluation's start-up): each of its functions must give exactly what pyarrow.compute and the Array methods it
stands in for give, on values that reach each option (nulls, ties, absent values, bytes, lossy casts)."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as ref
import pytest

from eval_core.io import arrow_compute as pc
from tests.conftest import ROOT

WORDS = pa.array(["q1", "#c", None, "q10", "", "q1", "d\u00a0x"], pa.large_string())
BYTES = pa.array([b"q1", b"#c", b"q10", b"", b"q1"], pa.large_binary())
NUMS = pa.array([3, None, -2, 7, 7], pa.int64())


def same(got: object, expected: object) -> None:
    assert type(got) is type(expected)
    assert got.equals(expected), (got, expected)  # type: ignore[attr-defined]


@pytest.mark.parametrize("values", [WORDS, BYTES, NUMS, pa.array([], pa.large_string())])
def test_the_unary_kernels_match_pyarrow_compute(values: pa.Array) -> None:
    same(pc.dictionary_encode(values), ref.dictionary_encode(values))
    same(pc.run_end_encode(values), ref.run_end_encode(values))
    same(pc.is_null(values), values.is_null())
    if not pa.types.is_integer(values.type):
        same(pc.binary_length(values), ref.binary_length(values))
        same(pc.min(ref.binary_length(values)), ref.min(ref.binary_length(values)))
        for prefix in ("#", "q1"):
            arg = prefix.encode() if pa.types.is_large_binary(values.type) else prefix
            same(pc.starts_with(values, arg), ref.starts_with(values, arg))
            same(pc.any(pc.starts_with(values, arg)), ref.any(ref.starts_with(values, arg)))
    else:
        same(pc.min(values), ref.min(values))


def test_the_regex_match_is_re2_as_in_pyarrow_compute() -> None:
    from eval_core.io.records import BAD_ID_CHARS

    same(pc.match_substring_regex(WORDS, BAD_ID_CHARS), ref.match_substring_regex(WORDS, BAD_ID_CHARS))
    assert pc.match_substring_regex(WORDS, BAD_ID_CHARS).to_pylist() == [False, False, None, False, False, False, True]


def test_the_binary_kernels_match_pyarrow_compute() -> None:
    other = pa.array(["q1", "#d", "x", None, "", "q2", "d\u00a0x"], pa.large_string())
    same(pc.equal(WORDS, other), ref.equal(WORDS, other))
    same(pc.not_equal(WORDS, other), ref.not_equal(WORDS, other))
    same(pc.equal(WORDS, "q1"), ref.equal(WORDS, "q1"))
    value_set = pa.array(["q10", "q1"], pa.large_string())
    same(pc.index_in(WORDS, value_set), ref.index_in(WORDS, value_set=value_set))
    assert pc.index_in(WORDS, value_set).to_pylist() == [1, None, None, 0, None, 1, None]
    mask = pc.is_null(pc.index_in(WORDS, value_set))
    same(pc.filter(WORDS, mask), WORDS.filter(mask))
    same(
        pc.filter(WORDS, pa.array([True, None, False, True, None, False, True])),
        WORDS.filter(pa.array([True, None, False, True, None, False, True])),
    )


def test_take_cast_and_sort_match_the_array_methods() -> None:
    idx = pa.array([4, 0, 0, 2], pa.int64())
    same(pc.take(WORDS, idx), WORDS.take(idx))
    same(pc.take(BYTES, idx), BYTES.take(idx))
    with pytest.raises(IndexError):
        pc.take(BYTES, pa.array([9], pa.int64()))  # bounds-checked, as Array.take
    same(pc.cast(BYTES, pa.large_string()), BYTES.cast(pa.large_string()))
    same(pc.cast(WORDS, pa.large_binary()), WORDS.cast(pa.large_binary()))
    with pytest.raises(pa.ArrowInvalid):
        pc.cast(pa.array([b"\xff"], pa.large_binary()), pa.large_string())  # safe: invalid UTF-8 refused
    with pytest.raises(pa.ArrowInvalid):
        pc.cast(pa.array([1.5]), pa.int64())  # safe: a lossy cast refused, as Array.cast by default
    table = pa.table({"g": pa.array([1, 0, 1, 0, 1]), "d": BYTES})
    keys = [("g", "ascending"), ("d", "descending")]
    same(pc.sort_indices(table, sort_keys=keys), ref.sort_indices(table, sort_keys=keys))
    # by hand: group 0 holds rows 1 (#c) and 3 (""), group 1 rows 0, 2, 4 (q1, q10, q1; ties keep file order)
    assert pc.sort_indices(table, sort_keys=keys).to_pylist() == [1, 3, 2, 0, 4]


def test_importing_it_leaves_pyarrow_compute_unimported() -> None:
    code = "import sys, eval_core.io.arrow_compute\nprint('pyarrow.compute' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

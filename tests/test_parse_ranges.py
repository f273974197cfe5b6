"""``--k`` and value ranges are checked before they are expanded (``evaluate --k
1:1000000000:1`` used to build 10^9 values), and non-finite values are refused."""

from __future__ import annotations

import pytest

from coreselect.errors import InputError
from coreselect.evaluation.protocol import MAX_RANGE_VALUES, parse_k, parse_values


@pytest.mark.parametrize("spec, match", [
    ("1:1000000000:1", "1,000,000,000 values, more than 10,000"),
    ("1:1e300:1", "more than 10,000"),
    ("0,1e-9,...,1", "more than 10,000"),
    ("1:inf:1", "finite"),
    ("nan:10:1", "finite"),
    ("1:10:nan", "finite"),
    ("1:10:inf", "finite"),
])
def test_huge_or_non_finite_ranges_are_refused_before_expanding(spec, match):
    with pytest.raises(InputError, match=match):
        parse_k(spec)
    with pytest.raises(InputError, match=match):
        parse_values(spec)


@pytest.mark.parametrize("spec", ["inf", "10,nan", "-inf,5", "1e999"])
def test_non_finite_k_is_an_input_error(spec):
    with pytest.raises(InputError, match="positive integers"):
        parse_k(spec)


def test_the_largest_range_is_accepted():
    assert parse_k(f"1:{MAX_RANGE_VALUES}:1") == list(range(1, MAX_RANGE_VALUES + 1))
    with pytest.raises(InputError, match="10,001 values"):
        parse_k(f"1:{MAX_RANGE_VALUES + 1}:1")


def test_cli_refuses_a_huge_k_range_in_one_line(tmp_path):
    import paths

    from coreselect.io import from_arrays, write

    data = tmp_path / "tiny.arff"
    write(from_arrays([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], [[0], [1], [1]], name="t"), data)
    result = paths.run_cli(["evaluate", str(data), "--k", "1:1000000000:1",
                            "--out", str(tmp_path / "out")], expect=2)
    assert not (tmp_path / "out").exists()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "more than 10,000" in lines[0], result.stderr

"""Every fast parse path accepts exactly what the slow reference accepts (issue 11).

The reference is :func:`coreselect.io.text.parse_number` applied cell by cell; the fast
paths are numpy's ``fromstring`` (dense ARFF, LIBSVM) and Arrow's CSV parser (sparse ARFF).
Cells are generated to hit their legacy quirks: blank cells (read as -1 by numpy), nan/inf,
overflow, hexadecimal, underscores, non-ASCII digits, stray signs and dots.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coreselect.errors import DatasetError
from coreselect.io.arff import parse_arff_text
from coreselect.io.libsvm import read_libsvm
from coreselect.io.text import fast_numbers, parse_number

QUIRKS = ["", " ", "\t", "nan", "NaN", "inf", "-inf", "Infinity", "1e999", "-1e999", "0x10", "1_0", "1e", "e5",
          ".", "-", "+", "1.2.3", "1 2", "\u0661", "\u00b2", "+-1", "1e+", " 1 ", "01", ".5", "5.", "-0", "+3",
          "1E5", "1e-5", "2.5e+3", "?", "1-2", "--1", "1..2", "0.0", "9" * 30]

good_numbers = st.one_of(
    st.integers(-10**6, 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.floats(-1e3, 1e3, allow_nan=False).map(lambda v: f"{v:.3e}"),
)
cells = st.one_of(good_numbers, st.sampled_from(QUIRKS), st.text(alphabet="0123456789eE+-. \tnaix_", max_size=6))


def reference(tokens: list[str]) -> np.ndarray | None:
    try:
        return np.array([parse_number(t) for t in tokens], dtype=np.float64)
    except ValueError:
        return None


@settings(max_examples=200, deadline=None)
@given(st.lists(cells, min_size=1, max_size=8))
def test_fast_numbers_agree_with_reference(tokens):
    fast = fast_numbers(",".join(tokens), ",", len(tokens))
    ref = reference(tokens)
    if ref is None:
        assert fast is None, tokens
    elif fast is not None:
        np.testing.assert_array_equal(fast, ref)


def test_blank_cell_is_not_minus_one():
    assert fast_numbers("1, ,5", ",", 3) is None
    assert fast_numbers("1,\t,5", ",", 3) is None
    assert fast_numbers("1,5,", ",", 2) is None
    np.testing.assert_array_equal(fast_numbers("1, 2 ,5", ",", 3), [1, 2, 5])


def _dense_arff(rows: list[list[str]]) -> str:
    k = len(rows[0])
    head = "@relation r\n" + "".join(f"@attribute a{j} numeric\n" for j in range(k)) + "@attribute y {0,1}\n@data\n"
    return head + "".join(",".join(r) + ",1\n" for r in rows)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 4).flatmap(lambda k: st.lists(st.lists(cells, min_size=k, max_size=k), min_size=1, max_size=4)))
def test_dense_arff_fast_equals_slow(rows):
    rows = [[c for c in r] for r in rows]
    text = _dense_arff(rows)
    first_line = 4 + len(rows[0])  # "@data" is on line 3 + k; the first row follows
    expected = [reference([c.strip() for c in r]) for r in rows]
    bad = [i for i, e in enumerate(expected) if e is None]
    if bad:
        with pytest.raises(DatasetError) as exc:
            parse_arff_text(text, "t.arff", labels=1)
        assert exc.value.line == first_line + bad[0], (rows, str(exc.value))
    else:
        ds = parse_arff_text(text, "t.arff", labels=1)
        np.testing.assert_array_equal(ds.X, np.vstack(expected))


index_tokens = st.one_of(st.integers(0, 5).map(str), st.sampled_from(["+1", "01", "1.0", "1e0", "-1", "x", "", "2 ", " 3"]))


def sparse_reference(entries: list[tuple[str, str]], n_attr: int) -> np.ndarray | None:
    """The row a sparse ARFF line ``{i v,...}`` holds, from the format's definition: entries
    are separated by commas, an entry is an index and a value separated by whitespace (any
    amount, also before and after), the index a decimal integer in range and increasing
    along the row, the value a number. None when the line is malformed.

    The entry text is tokenized, not the generated pair: ``("", "1 2")`` is the entry
    `` 1 2``, index 1 and value 2 (issue 16: the old check called it malformed).
    """
    row = np.zeros(n_attr)
    last = -1
    for i, v in entries:
        tokens = f"{i} {v}".split()
        if len(tokens) != 2 or not re.fullmatch(r"[+-]?[0-9]+", tokens[0]):
            return None
        index = int(tokens[0])
        if not last < index < n_attr:
            return None
        try:
            row[index] = parse_number(tokens[1])
        except (ValueError, IndexError):
            return None
        last = index
    return row


def _sparse_text(entries: list[tuple[str, str]], n_attr: int) -> str:
    body = ",".join(f"{i} {v}" for i, v in entries)
    return ("@relation r\n" + "".join(f"@attribute a{j} numeric\n" for j in range(n_attr))
            + "@attribute y {0,1}\n@data\n{" + body + f",{n_attr} 1}}\n")


def _check_sparse(entries: list[tuple[str, str]], n_attr: int = 6) -> None:
    text = _sparse_text(entries, n_attr)  # a0..a5 numeric, y last (index n_attr)
    row = sparse_reference(entries, n_attr)
    if row is not None:
        ds = parse_arff_text(text, "t.arff", labels=1)
        np.testing.assert_array_equal(sp.csr_matrix(ds.X).toarray().ravel(), row)
    else:
        with pytest.raises(DatasetError):
            parse_arff_text(text, "t.arff", labels=1)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(index_tokens, cells), min_size=1, max_size=5))
def test_sparse_arff_fast_equals_slow(entries):
    _check_sparse(entries)


@pytest.mark.parametrize("entries, row", [
    ([("", "1 2")], [0, 2, 0, 0, 0, 0]),        # the line "{ 1 2,6 1}" of issue 16: valid
    ([("1", "2 "), (" 3", "4")], [0, 2, 0, 4, 0, 0]),
    ([("1\t", "2")], [0, 2, 0, 0, 0, 0]),
    ([("", "1 2 3")], None),                    # three tokens in one entry
    ([("", "")], None),                         # an empty entry
])
def test_sparse_arff_whitespace_examples(entries, row):
    assert (sparse_reference(entries, 6) is None) == (row is None)
    if row is not None:
        np.testing.assert_array_equal(sparse_reference(entries, 6), row)
    _check_sparse(entries)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(1, 6), cells), min_size=1, max_size=5, unique_by=lambda e: e[0]))
def test_libsvm_fast_equals_slow(tmp_path_factory, entries):
    if any(not v or v != v.strip() or " " in v or "\t" in v for _, v in entries):
        return  # whitespace splits tokens: covered by the fuzz harness, not a number question
    p = tmp_path_factory.mktemp("svm") / "t.svm"
    p.write_text("1 " + " ".join(f"{i}:{v}" for i, v in entries) + "\n2 1:1\n")
    expected = reference([v for _, v in entries])
    if expected is None:
        with pytest.raises(DatasetError) as exc:
            read_libsvm(p)
        assert exc.value.line == 1
    else:
        ds = read_libsvm(p, zero_based=False, n_features=6)
        row = np.zeros(6)
        for (i, _), v in zip(entries, expected):
            row[i - 1] = v
        np.testing.assert_array_equal(ds.X.toarray()[0], row)


# ------------------------------------------------------------------- header paths

names = st.text(alphabet="abcXYZ019_-.'\" {}%\\", min_size=1, max_size=5)
specs = st.one_of(st.sampled_from(["numeric", "REAL", "Integer", "string", "date", "{0,1}", "{a, b}", "{a,a}", "{}",
                                   "{a,}", "{'x y',z}", "{a,b", "nonsense", "numeric % c"]),
                  st.text(alphabet="{},ab01 '", max_size=6))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(names, specs, st.sampled_from(["", " ", "\t", "\r"])), min_size=1, max_size=6))
def test_header_fast_path_equals_careful_parser(decls):
    from coreselect.io.arff import _parse_header, _parse_header_fast

    header = "@relation r\n" + "".join(f"@attribute {n} {s}{tail}\n" for n, s, tail in decls)
    try:
        slow = _parse_header(header, "h.arff")
    except DatasetError:
        slow = None
    fast = _parse_header_fast(header, "h.arff")
    if fast is None:
        return  # the fast path declined: the careful parser decides alone
    assert slow is not None, header
    assert fast[0] == slow[0]
    def view(attrs):
        return [(a.name, a.kind, list(a.values)) for a in attrs]

    assert view(fast[1]) == view(slow[1]), header

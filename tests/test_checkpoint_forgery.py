"""Records rewritten with a fresh checksum (picks swapped, a step taken back, the picks of
another run, a forged relevance part, sums that are not finite): what a resumed run can
check against the data cheaply refuses them in one line, never a silently other selection
(docs/tall.md, "What a checkpoint is trusted for")."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import numpy as np
import pytest

from coreselect.selection.checkpoint import decode, encode
from coreselect.cli import main
from coreselect.errors import CheckpointError
from coreselect.selection import select as _select
# The checkpointed greedy is the weighing's: on these dense random codes the default
# ("auto") takes cmim, which records no checkpoint (refused: tests/test_conditional.py).
select = functools.partial(_select, calibration="information")


def _data(seed: int = 0, n: int = 120, d: int = 16, labels: int = 3):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, labels)) < 0.4).astype(int)
    X = rng.integers(0, 4, size=(n, d)) + (Y @ rng.integers(0, 2, size=(labels, d)))
    return X, Y


def _run(path: Path, X, Y, mode="centralized", k=5, **kwargs):
    extra = {"random_state": 3, "partitions": 3} if mode == "distributed" else {}
    return select(X, Y, k=k, mode=mode, min_bin_count=1, checkpoint=path, **extra, **kwargs)


def _rewrite(path: Path, change) -> None:
    """The record with ``change(header, arrays)`` applied and a fresh checksum."""
    header, arrays = decode(path.read_bytes(), "x")
    change(header, arrays)
    header = {k: v for k, v in header.items() if not k.startswith("payload_")}
    path.write_bytes(encode(header, arrays))


def _swap(header, arrays):
    s = arrays["greedy_selected"]
    s[[0, 1]] = s[[1, 0]]


def _swap_late(header, arrays):
    s = arrays["greedy_selected"]
    s[[2, 3]] = s[[3, 2]]


def _back(header, arrays):
    step = header["step"] - 1
    header["step"] = step
    arrays["greedy_selected"] = arrays["greedy_selected"][:step]
    arrays["greedy_pair"] = arrays["greedy_pair"][:step, :step]


def _nan(header, arrays):
    arrays["greedy_diversity_to_s"][0] = np.nan


def _diversity(header, arrays):
    arrays["greedy_diversity"] = np.float64(arrays["greedy_diversity"] + 0.5)


def _pair(header, arrays):
    arrays["greedy_pair"][2, 0] += 0.25


def _sums(header, arrays):
    sel = arrays["greedy_selected"]
    arrays["greedy_diversity_to_s"][sel[1]] += 0.3


FORGERIES = {"swapped": _swap, "swapped-late": _swap_late, "step-back": _back, "nan": _nan,
             "diversity": _diversity, "pair": _pair, "sums": _sums}


@pytest.mark.parametrize("mode", ["centralized", "distributed", "rows"])
@pytest.mark.parametrize("how", sorted(FORGERIES))
def test_a_forged_greedy_state_is_refused(tmp_path, mode, how):
    X, Y = _data()
    path = tmp_path / "run.ckpt"
    _run(path, X, Y, mode)
    _rewrite(path, FORGERIES[how])
    with pytest.raises(CheckpointError, match="checkpoint .*run.ckpt"):
        _run(path, X, Y, mode)


def test_picks_of_another_run_are_refused(tmp_path):
    X, Y = _data(0)
    X2, Y2 = _data(5)
    mine, other = tmp_path / "a.ckpt", tmp_path / "b.ckpt"
    _run(mine, X, Y)
    _run(other, X2, Y2)
    _, theirs = decode(other.read_bytes(), "x")
    _rewrite(mine, lambda header, arrays: arrays.update(theirs))
    with pytest.raises(CheckpointError, match="contradicted by the data"):
        _run(mine, X, Y)


def _forge_part(path: Path, name: str, data: bytes) -> None:
    part = path.parent / f"{path.name}.parts" / name
    part.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    _rewrite(path, lambda header, arrays: header.update({"relevance": digest}))


@pytest.mark.parametrize("column", ["top", "any"])
def test_a_forged_relevance_part_is_refused(tmp_path, column):
    """The relevance file rewritten (its checksum and the record's digest with it): the
    recomputed relevances of the picks, the most relevant and random columns differ."""
    X, Y = _data()
    path = tmp_path / "run.ckpt"
    clean = _run(path, X, Y, k=5)
    part = tmp_path / "run.ckpt.parts" / "relevance"
    header, arrays = decode(part.read_bytes(), "x")
    rel = arrays["relevance"]
    if column == "top":  # a column made the most relevant, to be picked first
        rel[int(np.argmin(rel.sum(axis=1)))] = rel.max() * 2
    else:
        rel *= 1.01
    header = {k: v for k, v in header.items() if not k.startswith("payload_")}
    _forge_part(path, "relevance", encode(header, arrays))
    with pytest.raises(CheckpointError, match="relevance of column"):
        _run(path, X, Y, k=5)
    path.unlink()
    assert _run(path, X, Y, k=5).selected.tolist() == clean.selected.tolist()


def test_a_relevance_part_of_another_run_is_refused(tmp_path):
    X, Y = _data(0)
    X2, Y2 = _data(5)
    _run(tmp_path / "a.ckpt", X, Y)
    _run(tmp_path / "b.ckpt", X2, Y2)
    theirs = (tmp_path / "b.ckpt.parts" / "relevance").read_bytes()
    _forge_part(tmp_path / "a.ckpt", "relevance", theirs)
    with pytest.raises(CheckpointError, match="of another run"):
        _run(tmp_path / "a.ckpt", X, Y)


def test_the_cli_refuses_a_forged_record_in_one_line(tmp_path, capsys):
    from coreselect.io import from_arrays, write

    X, Y = _data()
    data = tmp_path / "d.arff"
    write(from_arrays(X, Y, name="d"), data)
    path = tmp_path / "run.ckpt"
    args = ["select", str(data), "-k", "4", "--json", "--calibration", "information", "--checkpoint", str(path)]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 0
    capsys.readouterr()
    _rewrite(path, _swap)
    before = path.read_bytes()
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "contradicted" in err and path.read_bytes() == before

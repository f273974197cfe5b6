"""`datasets info FILE --missing ...` for every format: ARFF takes it, the others refuse it
(it would be ignored) with one line and exit 2 (never a TypeError from a reader that does not know the option)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from coreselect.cli import cli
from coreselect.errors import DatasetError
from coreselect.io import from_arrays, write
from coreselect.datasets.load import load

SUFFIXES = [".arff", ".csv", ".csv.gz", ".parquet", ".svm", ".libsvm.gz"]


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    ds = from_arrays(rng.integers(0, 3, (20, 4)).astype(float), rng.integers(0, 2, (20, 2)))
    out = {}
    for suf in SUFFIXES:
        p = tmp_path / f"d{suf}"
        if suf.endswith(".gz"):
            import gzip

            plain = tmp_path / f"plain{suf[:-3]}"
            write(ds, plain)
            p.write_bytes(gzip.compress(plain.read_bytes()))
        else:
            write(ds, p)
        out[suf] = p
    return out


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("missing", [None, "error", "bin"])
def test_info_missing_for_every_format(files, suffix, missing):
    args = ["datasets", "info", str(files[suffix])]
    if not suffix.startswith((".svm", ".libsvm")):
        args += ["--labels", "2"]
    if missing:
        args += ["--missing", missing]
    r = CliRunner().invoke(cli, args)
    if missing and not suffix.startswith(".arff"):  # refused where it would be ignored
        assert r.exit_code == 2 and "ARFF files only" in r.output and "Traceback" not in r.output, r.output
        if missing == "bin":
            with pytest.raises(DatasetError, match="ARFF files only"):
                    load(files[suffix], labels=None if "svm" in suffix else 2, missing="bin")
    else:
        assert r.exit_code == 0, r.output
        assert "instances:           20" in r.output

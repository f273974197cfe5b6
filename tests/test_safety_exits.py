"""Failures outside coreselect's control end in one line and exit 2 (a typed error from the
library), never an internal error:

* malformed ``$CORESELECT_STORAGE_OPTIONS`` (``config_kwargs`` not an object, a deadline that
  is not a number), refused before any connection;
* a short write in ``--temp-dir`` (a full disk: numpy's "N requested and M written", which
  carries no errno);
* a forged kept result in a build checkpoint (it decodes, but is of the wrong shape);
* an input file that vanishes mid-build: said so, not "cannot write STORE";
* ``tuning.tune`` takes what ``GDSSelector`` takes (label lists) and raises typed errors;
  label lists holding None, None rows, mixed types or nested rows say what is wrong;
* ``--labels-as-features`` where it changes nothing (the labels chosen are all the declared
  ones) is refused.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from coreselect.cli import main
from coreselect.errors import InputError, InputTypeError

BUILD = ["--row-block-size", "100", "--bins", "3", "-q"]


def _cli(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def _one_line(code: int, err: str) -> None:
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "internal error" not in err, err


def _svm(path: Path, rows: int = 300, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(rows):
        labels = ",".join(map(str, sorted(set(rng.integers(0, 4, 2).tolist()))))
        cols = sorted(set(rng.integers(0, 20, 5).tolist()))
        lines.append(labels + " " + " ".join(f"{j}:{rng.integers(1, 6)}" for j in cols))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("options", ['{"config_kwargs": 5}', '{"deadline": "soon"}',
                                     '{"config_kwargs": {"read_timeout": "2"}}',
                                     '{"config_kwargs": {"retries": 3}}',
                                     '{"deadline": true}'])
def test_malformed_storage_options(capsys, monkeypatch, options):
    import json

    from coreselect.store import fs, open_store

    monkeypatch.setattr(fs, "_FS", {})
    monkeypatch.setenv("CORESELECT_STORAGE_OPTIONS", options)
    code, _, err = _cli(capsys, "store", "verify", "s3://bucket/store")
    _one_line(code, err)
    assert "storage options" in err, err
    monkeypatch.delenv("CORESELECT_STORAGE_OPTIONS")
    with pytest.raises(InputError, match="storage options"):
        open_store("s3://bucket/store", storage_options=json.loads(options))


def test_a_short_write_in_the_temp_dir(tmp_path, capsys, monkeypatch):
    data = _svm(tmp_path / "d.svm")
    real = np.save

    def full(file, arr, *args, **kwargs):
        if isinstance(file, (str, Path)):  # numpy's own words for a short fwrite
            raise OSError("11270 requested and 8064 written")
        return real(file, arr, *args, **kwargs)

    monkeypatch.setattr(np, "save", full)
    (tmp_path / "T").mkdir()
    code, _, err = _cli(capsys, "select", data, "-k", "2", "--mode", "rows", "--temp-dir",
                        tmp_path / "T", "-q")
    _one_line(code, err)
    assert "no space left" in err, err
    assert list((tmp_path / "T").iterdir()) == []


def test_a_forged_kept_result_is_one_line(tmp_path, capsys, monkeypatch):
    from coreselect.store.checkpoint_file import decode, encode
    import coreselect.io.files as files

    _svm(tmp_path / "d" / "a.svm")
    _svm(tmp_path / "d" / "b.svm", seed=1)
    real = files.checkpoint

    def hold(stage: str) -> None:
        if stage == "build-commit":
            raise RuntimeError("stop")
        real(stage)

    monkeypatch.setattr(files, "checkpoint", hold)
    with pytest.raises(SystemExit):
        main(["store", "build", str(tmp_path / "d"), str(tmp_path / "s"), *BUILD,
              "--checkpoint", str(tmp_path / "c")])
    monkeypatch.setattr(files, "checkpoint", real)
    capsys.readouterr()
    for manifest in sorted((tmp_path / "c.parts" / "count").glob("*/manifest")):
        header, arrays = decode(manifest.read_bytes(), "m")
        header["result"]["f"]["nnz"] = "many"  # decodes; fails where it is added up
        for key in ("payload_bytes", "payload_sha256"):
            header.pop(key)
        manifest.write_bytes(encode(header, arrays))
    code, _, err = _cli(capsys, "store", "build", tmp_path / "d", tmp_path / "s", *BUILD,
                        "--checkpoint", tmp_path / "c")
    _one_line(code, err)
    assert "damaged" in err, err
    assert not (tmp_path / "s").exists()


def test_an_input_that_vanishes_mid_build_is_said_so(tmp_path, capsys, monkeypatch):
    import coreselect.store.ingest as ingest

    data = _svm(tmp_path / "d" / "a.svm")
    real = ingest.encode_task

    def vanished(shared, group):
        raise FileNotFoundError(2, "No such file or directory", str(data))

    monkeypatch.setattr(ingest, "encode_task", vanished)
    code, _, err = _cli(capsys, "store", "build", tmp_path / "d", tmp_path / "s", *BUILD)
    _one_line(code, err)
    assert "vanished" in err and "cannot write" not in err, err
    assert real is not None and not (tmp_path / "s").exists()


def _xy(n: int = 60):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (n, 8))
    lists = [[0, 1], [2], [], [1]] * (n // 4)
    return X, lists


def test_tune_takes_label_lists_as_the_selector_does():
    from coreselect.selection.sources import label_sets_to_matrix
    from coreselect.tuning import tune

    X, lists = _xy()
    got = tune(X, lists, 3)
    again = tune(X, label_sets_to_matrix(lists)[0], 3)
    assert got.choice == again.choice
    np.testing.assert_array_equal(got.order, again.order)


@pytest.mark.parametrize("bad,error,words", [
    ("mixed", InputTypeError, "mix labels of types int, str"),
    ("none item", InputTypeError, "label list 0 holds None"),
    ("none row", InputTypeError, "label list 0 is None"),
    ("nested", InputTypeError, "label list 0 holds a list"),
    ("ragged X", InputTypeError, "X must be"),
])
def test_tune_and_the_selector_say_what_is_wrong(bad, error, words):
    from coreselect import GDSSelector
    from coreselect.tuning import tune

    X, lists = _xy()
    first = {"mixed": [0, "a"], "none item": [0, None], "none row": None,
             "nested": [0, [1]]}.get(bad, [0])
    lists = [first] + lists[1:]
    if bad == "ragged X":
        X = [[1, 2], [3]] + X.tolist()[2:]
    with pytest.raises(error, match=words):
        tune(X, lists, 3)
    if bad != "ragged X":
        with pytest.raises(error, match=words):
            GDSSelector(k=2).fit(X, lists)


def test_labels_as_features_where_it_changes_nothing(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = "\n".join(f"{rng.integers(0, 2)},{rng.integers(0, 2)},{rng.random():.3f},"
                     f"{rng.random():.3f},{rng.random():.3f}" for _ in range(40))
    arff = tmp_path / "m.arff"
    arff.write_text("@relation 'm: -C 2'\n@attribute y0 {0,1}\n@attribute y1 {0,1}\n"
                    "@attribute f0 numeric\n@attribute f1 numeric\n@attribute f2 numeric\n"
                    f"@data\n{rows}\n")
    code, _, err = _cli(capsys, "select", arff, "-k", "2", "--labels", "y0,y1",
                        "--labels-as-features", "-q")
    _one_line(code, err)
    assert "changes nothing" in err, err
    code, _, err = _cli(capsys, "select", arff, "-k", "2", "--labels", "y0",
                        "--labels-as-features", "-q")  # y1 kept as a feature: it applies
    assert code == 0, err


def test_a_frozen_server_ends_a_data_file_read_near_its_timeouts(tmp_path, monkeypatch):
    """A data file's URL (the readers, not a store): botocore's tries are the tries, not
    multiplied by s3fs's own five retries (a frozen server cost 5x the read timeout)."""
    import json
    import socket
    import subprocess
    import sys
    import threading
    import time

    pytest.importorskip("s3fs")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    held, stop = [], threading.Event()

    def accept():
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    options = {"config_kwargs": {"connect_timeout": 1, "read_timeout": 1,
                                 "retries": {"max_attempts": 1}}}
    import coreselect

    env = {**os.environ, "PYTHONPATH": str(Path(coreselect.__file__).resolve().parents[1]),
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{sock.getsockname()[1]}",
           "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
           "CORESELECT_STORAGE_OPTIONS": json.dumps(options)}
    try:
        start = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "coreselect", "select", "s3://data/x.svm",
                            "-k", "2", "-q"], env=env, capture_output=True, text=True,
                           timeout=300)
        took = time.monotonic() - start
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        sock.close()
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert took < 18, took  # a few requests of 1 s each (was about 5 x that)

"""A real multi-process cluster, started with the dask command line (``dask scheduler`` and two
``dask worker`` processes, not a LocalCluster), selecting over a store on a local S3 server
with ``--scheduler ADDRESS``: the workers read their tiles from S3 themselves, and the
selection is the local store's. A scheduler that is gone is one line and exit 2.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

from coreselect.cli import main  # noqa: E402
from coreselect.store import build_store  # noqa: E402

from _remote import KEY, SECRET, DaskCliCluster, Server  # noqa: E402

pytestmark = [pytest.mark.dask, pytest.mark.slow]


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture
def cluster(monkeypatch, tmp_path):
    """An S3 server, a scheduler and two workers (separate processes, on ports they chose
    themselves), with credentials and endpoint in the environment of every process (the
    standard chain)."""
    server = Server()
    env = {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": server.url}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("CORESELECT_STORAGE_OPTIONS", raising=False)
    src = str(Path(__file__).resolve().parents[1] / "src")
    penv = {"PYTHONPATH": os.pathsep.join(
        [src] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    processes = None
    try:
        processes = DaskCliCluster(tmp_path, 2, env=penv)
        server.fs().mkdir("data")
        yield {"server": server, "address": processes.address,
               "scheduler": processes.scheduler}
    finally:
        if processes is not None:
            processes.stop()
        server.stop()


def test_cli_cluster_selects_over_s3(cluster, tmp_path, capsys):
    rng = np.random.default_rng(5)
    Y = (rng.random((400, 4)) < 0.35).astype(int)
    X = rng.normal(size=(400, 40)) + Y @ rng.normal(size=(4, 40))
    kw = dict(block_size=13, row_block_size=100, seed=2)
    build_store(X, Y, tmp_path / "local", **kw)
    url = "s3://data/cluster"
    build_store(X, Y, url, **kw)
    address = cluster["address"]
    code, out, err = run(capsys, "select", url, "-k", 5, "--mode", "rows", "--engine", "dask",
                         "--scheduler", address, "--json")
    assert code == 0, err
    code, ref, err = run(capsys, "select", tmp_path / "local", "-k", 5, "--json")
    r, c = json.loads(out), json.loads(ref)
    # --mode rows is the centralized selection, exactly; 4 row blocks on 2 worker processes
    assert r["selected"] == c["selected"] and r["objective"] == c["objective"]
    assert r["engine_info"]["scheduler"] == address and r["engine_info"]["n_workers"] == 2
    assert r["engine_info"]["row_shards"] == 4
    # the scheduler dies: one line, exit 2
    scheduler = cluster["scheduler"]
    scheduler.terminate()
    scheduler.wait(20)
    code, out, err = run(capsys, "select", url, "-k", 5, "--mode", "rows", "--engine", "dask",
                         "--scheduler", address)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err

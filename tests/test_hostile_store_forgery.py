"""Forged stores, with checksums forged too (the attacker rewrites store.json's crc32s and
its own checksum): every numeric field of store.json scaled up or down, negated, made
non-integer or huge, alone or with the derived block counts kept consistent, and n_codes.npy
raised. `store verify`, opening, and `select STORE` in every mode either refuse with a
StoreError (exit 2, one line) or, when the change is harmless, give the pristine result;
never a MemoryError, an internal error, or a different selection. All cases run in one child
process under an address-space limit, so a forgery that allocates fails fast instead of
exhausting the machine."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from coreselect.io import from_arrays
from coreselect.store import build_store

FIELDS = ["n_samples", "n_features", "n_labels", "block_size", "n_blocks", "row_block_size", "n_row_blocks",
          "seed", "n_constant", "version", "discretization.n_bins", "discretization.min_bin_count"]
TRANSFORMS = ["x1e9", "x2", "plus1", "minus1", "half", "zero", "negate", "float", "nonint", "2**70", "string"]


def forge(meta: dict, field: str, how: str, consistent: bool) -> dict:
    """``meta`` with ``field`` changed by ``how``; with ``consistent`` the block counts are
    recomputed from the shape, as a careful attacker would, and the checksum re-forged."""
    from coreselect.store._format import meta_checksum

    m = json.loads(json.dumps(meta))
    obj, key = (m["discretization"], field.split(".")[1]) if "." in field else (m, field)
    v = obj[key]
    obj[key] = {"x1e9": lambda x: x * 10**9, "x2": lambda x: x * 2, "plus1": lambda x: x + 1,
                "minus1": lambda x: x - 1, "half": lambda x: x // 2, "zero": lambda x: 0,
                "negate": lambda x: -x, "float": lambda x: float(x), "nonint": lambda x: x + 0.5,
                "2**70": lambda x: 2**70, "string": lambda x: str(x)}[how](v)
    if consistent:
        try:
            if field in ("n_samples", "row_block_size") and how in ("x1e9", "2**70"):
                m["row_block_size"] = m["n_samples"]  # one huge row block: the counts agree
            m["n_blocks"] = -(-m["n_features"] // m["block_size"])
            m["n_row_blocks"] = -(-m["n_samples"] // m["row_block_size"])
        except (TypeError, ZeroDivisionError):
            pass
    m["checksum"] = meta_checksum(m)
    return m


_CHILD = r"""
import json, resource, sys, shutil, os
limit = 3 << 30
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from click.testing import CliRunner
from coreselect.cli import cli
cases = json.loads(open(sys.argv[1]).read())
pristine_dir = sys.argv[2]
out = []
runner = CliRunner()
for case in cases:
    folder = case["folder"]
    res = {"name": case["name"]}
    for cmd in (["store", "verify", folder], ["select", folder, "-k", "4", "--mode", "centralized"],
                ["select", folder, "-k", "4", "--mode", "rows"],
                ["select", folder, "-k", "4", "--mode", "distributed", "--partitions", "2"]):
        try:
            r = runner.invoke(cli, cmd + (["--json"] if cmd[0] == "select" else []))
            text = r.output
            if r.exit_code == 0 and cmd[0] == "select":
                text = json.dumps(json.loads(text[text.index("{"):])["selected"])
            res["verify" if cmd[0] == "store" else cmd[5]] = [r.exit_code, text[-400:]]
        except BaseException as exc:
            res[cmd[0]] = [99, repr(exc)]
    out.append(res)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, (300, 40)) * (rng.random((300, 40)) < 0.3)
    Y = (rng.random((300, 3)) < 0.4).astype(int)
    Y[:, 0] |= X[:, 0] > 1
    folder = tmp_path_factory.mktemp("forge") / "pristine"
    build_store(X.astype(float), Y, folder, block_size=16, row_block_size=100, seed=1)
    return folder


def _copy(src, dst, meta):
    import shutil

    shutil.copytree(src, dst)
    (dst / "store.json").write_text(json.dumps(meta))


def _selected(output: str):
    try:
        return json.loads(output)
    except ValueError:
        return None


def _run(cases, pristine):
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(cases, fh)
    r = subprocess.run([sys.executable, "-c", _CHILD, fh.name, str(pristine)], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _judge(results, reference):
    escapes = []
    for res in results:
        for mode, (code, output) in [(k, v) for k, v in res.items() if k != "name"]:
            if code == 2 and len(output.strip().splitlines()) == 1 and "internal error" not in output:
                continue  # refused in one line
            if code == 0 and mode in reference and _selected(output) == reference[mode]:
                continue  # harmless: the pristine result
            if code == 0 and mode not in reference:
                continue  # verify passed and the selections (checked separately) agree
            escapes.append((res["name"], mode, code, output[-200:]))
    return escapes


def test_forged_store_json_fields_are_refused_or_harmless(pristine, tmp_path):
    meta = json.loads((pristine / "store.json").read_text())
    cases = [{"name": "pristine", "folder": str(pristine)}]
    for field in FIELDS:
        for how in TRANSFORMS:
            for consistent in (False, True):
                name = f"{field}-{how}-{'consistent' if consistent else 'alone'}"
                dst = tmp_path / name
                _copy(pristine, dst, forge(meta, field, how, consistent))
                cases.append({"name": name, "folder": str(dst)})
    results = _run(cases, pristine)
    base = results[0]
    reference = {m: _selected(base[m][1]) for m in ("centralized", "rows", "distributed")}
    assert all(v is not None for v in reference.values()), base
    escapes = _judge(results[1:], reference)
    assert not escapes, "\n".join(f"{n} {m} exit {c}: {o[-150:]}" for n, m, c, o in escapes[:25])


def test_forged_n_codes_with_forged_checksums_is_refused(pristine, tmp_path):
    import shutil

    from coreselect.store._format import file_crc32, meta_checksum

    cases = []
    for column in (0, 5, 17, 39):  # first, inside, across a block border, last column
        for delta in (1, 2):
            dst = tmp_path / f"s{column}-{delta}"
            shutil.copytree(pristine, dst)
            n_codes = np.load(dst / "n_codes.npy")
            n_codes[column] += delta
            np.save(dst / "n_codes.npy", n_codes)
            meta = json.loads((dst / "store.json").read_text())
            meta["files"]["n_codes.npy"] = [(dst / "n_codes.npy").stat().st_size, file_crc32(dst / "n_codes.npy")]
            meta["checksum"] = meta_checksum(meta)
            (dst / "store.json").write_text(json.dumps(meta))
            cases.append({"name": f"n_codes[{column}]+{delta}", "folder": str(dst)})
    for res in _run(cases, pristine):
        for mode in ("verify", "centralized", "rows", "distributed"):
            code, output = res[mode]
            assert code == 2 and "n_codes" in output and len(output.strip().splitlines()) == 1, (res["name"], mode,
                                                                                                output)

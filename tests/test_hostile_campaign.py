"""Smoke test of tests/tools/hostile.py: a --quick run on two classes whose fixes live here
(Parquet non-scalar columns, downloads from a hostile server) prints its table, writes its
JSON, and finds no escape in them. No timing is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quick_campaign_on_two_classes(tmp_path):
    out = tmp_path / "h.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "tools" / "hostile.py"), "--quick", "-n", "2",
                        "--classes", "parquet_nonscalar,downloads", "--out", str(out)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| class | attempts | escapes |" in r.stdout
    data = json.loads(out.read_text())
    rows = {row["class"]: row for row in data["rows"]}
    assert set(rows) == {"parquet_nonscalar", "downloads"}
    assert all(row["attempts"] == 2 for row in rows.values())
    assert [a for a in data["attempts"] if not a["behaved"]] == []


def test_every_issue_class_has_a_generator():
    sys.path.insert(0, str(ROOT / "tests" / "tools"))
    try:
        import hostile
    finally:
        sys.path.pop(0)
    assert len(hostile.CLASSES) >= 17  # issue 17's, and the later issues' (below)
    assert {"shards", "declared_bombs"} <= set(hostile.CLASSES)  # issues 29 and 31 (readers)
    # issue 31: checkpoints, object storage, scratch folders
    assert set(hostile.CLASSES_31) <= set(hostile.CLASSES)
    assert set(hostile.CLASSES_31) == {"ckpt_forgery", "ckpt_damage", "user_folders",
                                       "s3_frozen", "s3_signals", "seams31"}


def test_quick_campaign_on_checkpoint_damage(tmp_path):
    """Issue 31's cheapest class (bombs and special files as checkpoints: each refused at
    once) runs without an escape."""
    out = tmp_path / "h.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "tools" / "hostile.py"), "--quick", "-n", "4",
                        "--classes", "ckpt_damage", "--out", str(out)],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads(out.read_text())
    assert [a for a in data["attempts"] if not a["behaved"]] == []

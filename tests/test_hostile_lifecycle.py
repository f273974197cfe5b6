"""Smoke test of tests/tools/hostile_lifecycle.py: its classes are registered in hostile.py,
and a quick run of the cheapest ones (forged manifests pointing outside, malformed storage
options, a full temp folder) finds no escape. No timing is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_lifecycle_classes_are_registered():
    sys.path.insert(0, str(ROOT / "tests" / "tools"))
    try:
        import hostile
        import hostile_lifecycle
    finally:
        sys.path.pop(0)
    assert set(hostile_lifecycle.NAMES) <= set(hostile.CLASSES)
    assert set(hostile_lifecycle.NAMES) == {"ckpt_outside", "pool_kill9", "evaluate_signals",
                                            "full_tempdir", "storage_options"}


def test_quick_campaign_on_the_cheap_lifecycle_classes(tmp_path):
    out = tmp_path / "h.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "tools" / "hostile_lifecycle.py"),
                        "--quick", "-n", "2", "--classes",
                        "ckpt_outside,storage_options,full_tempdir", "--out", str(out)],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads(out.read_text())
    assert {row["class"]: row["attempts"] for row in data["rows"]} == {
        "ckpt_outside": 2, "storage_options": 2, "full_tempdir": 2}
    assert [a for a in data["attempts"] if not a["behaved"]] == []

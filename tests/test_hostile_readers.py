"""The readers' hostile classes (tests/tools/hostile.py, issues 29 and 31): row shards that
disagree, match nothing, break mid-file, arrive truncated or vanish are one line naming the
file (exit 2, or a typed error from the API), with no output written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quick_campaign_on_shards(tmp_path):
    out = tmp_path / "h.json"
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "tools" / "hostile.py"), "-n", "7",
                        "--classes", "shards", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads(out.read_text())
    assert len(data["attempts"]) == 7
    assert [a for a in data["attempts"] if not a["behaved"]] == []

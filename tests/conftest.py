"""Shared fixtures. Real datasets come from $COREDATA (default ../shared/data beside the repo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def coredata_dir() -> Path:
    return Path(os.environ.get("COREDATA", REPO_ROOT.parent / "shared" / "data")).resolve()


@pytest.fixture(scope="session")
def coredata() -> Path:
    """The folder of real multi-label datasets; skips (with the reason) when it is absent."""
    path = coredata_dir()
    if not (path / "SOURCES.md").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"COREDATA={path} holds no datasets, and CI must not skip data tests")
        pytest.skip(f"real datasets not found at {path} (set COREDATA to ../shared/data)")
    return path

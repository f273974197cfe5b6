"""The docs speak to users: what was measured and what it means, never how the work was organised.

README.md and every page under docs/ (the mutation reports are developer records and are
left out) must not mention issue numbers, sessions, helpers, goals or targets met and missed.
"target" alone stays allowed: it is also a build's output path, an object-store target, a
regression target or numba's target registry.
"""

from __future__ import annotations

import re
import sys

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
try:
    import _docs  # noqa: E402
finally:
    sys.path.remove(str(REPO_ROOT / "benchmarks"))

#: (what it is, pattern); case-insensitive, matched across line breaks
PROCESS_WORDS = [
    ("an issue number", r"\bissues?[ -]?\d"),
    ("a session", r"\bsessions?\b"),
    ("a helper", r"\bhelpers?\b"),
    ("a numbered stop", r"\bstop \d"),
    ("the team lead", r"\bthe lead\b|\blead's\b"),
    ("a goal", r"\bgoals?\b|\bover budget\b"),
    ("a target as a heading", r"\btargets?\s*:"),
    ("a target met or missed", r"\btargets?\s+(?:is\s+|are\s+)?(?:met|missed|holds?|still)\b"),
    ("something met or missed", r":\s*(?:\*\*)?(?:met|missed)\b|\b(?:is|are|not)\s+(?:\*\*)?met\b"),
    ("a target with a figure",
     r"(?:\d\s*(?:x|×|%|s|ms|GB|GiB|MB|MiB)|\d-minute|≤|≥|<=|>=)[^.|\n]{0,12}\btargets?\b"
     r"|\btargets? of\s*[≤≥<>=\d]"),
    ("a target of time, memory or speed", r"\b(?:time|memory|speed|size) targets?\b"),
    ("a target reached or broken",
     r"\b(?:above|below|at|over|meets?|breaks?|reach(?:es)?)\s+(?:the|its|our)\s+targets?\b"),
]


def pages() -> list:
    return [p for p in _docs.doc_files(REPO_ROOT)
            if not p.relative_to(REPO_ROOT).as_posix().startswith("docs/mutation")]


def process_words(text: str) -> list[tuple[int, str, str]]:
    """(line, what, the words) for every process word in ``text``."""
    found = []
    for what, pattern in PROCESS_WORDS:
        for m in re.finditer(pattern, text, re.IGNORECASE):
            found.append((text.count("\n", 0, m.start()) + 1, what, " ".join(m[0].split())))
    return sorted(found)


@pytest.mark.parametrize("doc", pages(), ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_the_page_speaks_to_users(doc):
    found = process_words(doc.read_text())
    assert not found, "\n".join(f"{doc.relative_to(REPO_ROOT)}:{line}: {what}: {words!r}"
                                for line, what, words in found)


@pytest.mark.parametrize("text", [
    "the 5-minute target", "(issue 30)", "the issue-9 calibration", "this session's rule",
    "Issue 30: rivals", "(target: at least 10)", "(targets 80 % and 70 %: met)",
    "target <= 300 s and <= 2048 MiB: missed", "the 2x target", "the ≥ 1.6× target still needs",
    "The target of ≤ 6 s is **not\nmet**", "stays above the target at these sizes",
    "the time target on many labels", "the lead's background job", "The 10 GB goal",
    "**The build is over budget", "the RCV1 process is at its target", "a helper ran it",
    "after stop 3", "the target holds per kind", "is met**",
])
def test_process_words_are_found(text):
    assert process_words(text)


@pytest.mark.parametrize("text", [
    "a link beside its target counts once", "tiles straight under the target",
    "spill under the build's temporary prefix beside the target",
    "scikit-learn, u as the target", "numba's typing and target registries",
    "`TARGET.coreselect-tmp-PID-HEX` (marked with its target, host and pid)",
    "the selected feature as the target", "peak <= 2048 MiB: yes", "an issue of the journal",
])
def test_legitimate_targets_pass(text):
    assert not process_words(text)

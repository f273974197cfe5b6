"""Numbers in the docs come from files a benchmark wrote: splice them in, or check the splice.

    python benchmarks/_docs.py            # replace every generated region by its file
    python benchmarks/_docs.py --check    # exit 1 and name every region that is not current
    python benchmarks/_docs.py --list     # every generated region and recorded table

A doc quotes a benchmark's output between two markers::

    <!-- generated: docs/results/bench/scaling.md -->
    ...the file's text, byte for byte...
    <!-- end generated -->

The file is what ``coreselect bench NAME ... --out FILE`` wrote: its first line names the
command and the date (``_common.emit``). Its relative links point from the file's own folder;
spliced, they are rewritten to point from the doc's folder (:func:`rebase_links`), so they work
in both places, on GitHub as on the site. To update a table, rerun that command, then this
script. A table measured before this rule whose run was not repeated keeps its numbers under
``<!-- recorded: COMMAND; not regenerated (WHY) -->`` (the last such comment between the
previous table or heading and the table); :data:`WHOLE_FILES` are docs that a script writes
whole. ``tests/test_docs.py`` fails on a stale region and on a table with figures that is none
of these.
"""

from __future__ import annotations

import argparse
import posixpath
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BEGIN = re.compile(r"^<!-- generated: (?P<path>\S+) -->\s*$")
END = "<!-- end generated -->"
RECORDED = re.compile(r"^<!-- recorded: (?P<what>.+?) -->\s*$")

#: docs written whole by a script (path or glob pattern -> the command that writes it)
WHOLE_FILES = {
    "docs/results/scoreboard.md": "python benchmarks/published.py report",
    "docs/results/baselines.md": "python benchmarks/baselines.py report",
    "docs/results/rivals.md": "python benchmarks/rivals.py report",
    "docs/results/linear_evaluator.md": "python benchmarks/rivals.py linear",
    "docs/mutation.md": "python tests/tools/mutation.py --jobs 2 --workers 1 --timeout 400 "
                        "--out docs/mutation.md",
    "docs/mutation-round2.md": "python tests/tools/mutation.py --round 2 --jobs 1 --workers 1 "
                               "--timeout 400 --out docs/mutation-round2.md",
    "docs/mutation-round3.md": "python tests/tools/mutation.py --round 3 --jobs 1 --no-baseline "
                               "--timeout 1200 --out docs/mutation-round3.md",
    "docs/mutation-round4.md": "python tests/tools/mutation.py --round 4 --jobs 1 --workers 1 "
                               "--timeout 1200 --out docs/mutation-round4.md",
    "docs/mutation-round5.md": "python tests/tools/mutation.py --round 5 --jobs 1 --workers 1 "
                               "--no-baseline --timeout 900 --out docs/mutation-round5.md",
    "docs/mutation-round6.md": "python tests/tools/mutation.py --round 6 --jobs 1 --workers 1 "
                               "--no-baseline --timeout 900 --out docs/mutation-round6.md",
    "docs/mutation-round7.md": "python tests/tools/mutation.py --round 7 --jobs 1 --workers 1 "
                               "--no-baseline --timeout 900 --out docs/mutation-round7.md",
    "docs/mutation-round8.md": "python tests/tools/mutation.py --round 8 --jobs 1 --workers 1 "
                               "--no-baseline --timeout 900 --out docs/mutation-round8.md",
    "docs/mutation-round9.md": "python tests/tools/mutation.py --round 9 --jobs 1 --workers 1 "
                               "--no-baseline --timeout 900 --out docs/mutation-round9.md",
    "docs/mutation-round10.md": "python tests/tools/mutation.py --round 10 --jobs 1 --workers 1 "
                                "--no-baseline --timeout 900 --out docs/mutation-round10.md",
    "docs/mutation-round11.md": "python tests/tools/mutation.py --round 11 --jobs 1 --workers 1 "
                                "--no-baseline --timeout 900 --out docs/mutation-round11.md",
    "docs/mutation-round12.md": "python tests/tools/mutation.py --round 12 --jobs 1 --workers 1 "
                                "--no-baseline --timeout 600 --out docs/mutation-round12.md",
    "docs/mutation-round13.md": "python tests/tools/mutation.py --round 13 --jobs 1 --workers 1 "
                                "--no-baseline --timeout 600 --out docs/mutation-round13.md",
    "docs/mutation-round14.md": "python tests/tools/mutation.py --round 14 --jobs 2 --workers 1 "
                                "--timeout 600 --out docs/mutation-round14.md",
    "docs/mutation-round15.md": "python tests/tools/mutation.py --round 15 --jobs 2 --workers 1 "
                                "--timeout 600 --out docs/mutation-round15.md",
    "docs/mutation-round16.md": "python tests/tools/mutation.py --round 16 --jobs 1 --workers 1 "
                                "--no-baseline --timeout 600 --out docs/mutation-round16.md",
    "docs/mutation-round17.md": "python tests/tools/mutation.py --round 17 --jobs 1 --workers 1 "
                                "--no-baseline --timeout 600 --out docs/mutation-round17.md",
    "docs/mutation-round18.md": "python tests/tools/mutation.py --round 18 --jobs 1 --workers 2 "
                                "--no-baseline --timeout 900 --out docs/mutation-round18.md",
    "docs/mutation-round19.md": "python tests/tools/mutation.py --round 19 --jobs 1 --workers 2 "
                                "--no-baseline --timeout 900 --out docs/mutation-round19.md",
    "docs/mutation-reanchored.md": "python tests/tools/mutation.py --no-baseline --jobs 1 "
                                   "--timeout 600 --match 'coefficient c without the 2,h: "
                                   "lambda weighs,old threshold (numba kernel),feature relevance "
                                   "is the max,parts in reverse order,dropped ID columns (in "
                                   "memory),keeps only the last shard,checksum cache ignores "
                                   "mtime,near (not identical) columns count as copies,kept "
                                   "co-occurrence table is not cleared' --out "
                                   "docs/mutation-reanchored.md",
    "docs/results/auto_k_rules.md": "python benchmarks/auto_k_rules.py report",
    "docs/results/dense_research.md": "python benchmarks/dense_research.py report",
    "docs/results/sparse_research.md": "python benchmarks/sparse_research.py report",
    "docs/results/holdout.md": "python benchmarks/holdout.py report",
    "docs/results/small_dense.md": "python benchmarks/small_dense.py report",
    "docs/results/empty_labelsets.md": "python benchmarks/empty_labelsets.py "
                                       "--out docs/results/empty_labelsets.md",
    "docs/results/*/summary.md": "coreselect evaluate DATA ... --out docs/results/FOLDER "
                                 "(beside its results.csv)",
}


def written_whole(rel: str) -> str | None:
    """The command that writes the doc ``rel`` (repository-relative) whole, or None."""
    from fnmatch import fnmatch

    return next((cmd for pattern, cmd in WHOLE_FILES.items() if fnmatch(rel, pattern)), None)


#: a Markdown link or image target: ``](TARGET)`` or ``](TARGET "title")``
LINK = re.compile(r"(\]\()([^)\s]+)")


def rebase_links(text: str, source: str, doc: str) -> str:
    """``text`` of the file ``source`` with its relative link targets rewritten to point from
    the folder of ``doc`` (both repository-relative paths) to the same files."""
    here, there = posixpath.dirname(source), posixpath.dirname(doc)

    def one(m: re.Match) -> str:
        target = m[2]
        if target.startswith(("#", "/")) or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            return m[0]  # an anchor, an absolute path or a URL (https:, mailto:)
        path, hash_, fragment = target.partition("#")
        moved = posixpath.relpath(posixpath.normpath(posixpath.join(here, path)), there or ".")
        return m[1] + moved + hash_ + fragment

    return LINK.sub(one, text)


def quoted(source: str, doc: str, root: Path = ROOT) -> str:
    """What a region of ``doc`` quoting ``source`` holds: the file's text, links rebased."""
    body = rebase_links((root / source).read_text(), source, doc)
    return body if body.endswith("\n") else body + "\n"


FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def in_fences(lines: list[str]) -> set[int]:
    """Indices of the lines inside fenced code blocks (markers shown there are examples)."""
    inside, fence = set(), None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m[1]
            inside.add(i)
        elif fence is not None:
            inside.add(i)
            if m and line.strip() == fence[0] * len(line.strip()) and len(m[1]) >= len(fence):
                fence = None
    return inside


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown file under docs/, in a stable order."""
    return [root / "README.md"] + sorted((root / "docs").rglob("*.md"))


@dataclass(frozen=True)
class Region:
    doc: Path
    line: int  # 1-based line of the begin marker
    source: str  # repository-relative path of the file it quotes
    text: str  # what the doc holds between the markers


def regions(doc: Path) -> list[Region]:
    """The generated regions of ``doc``; a begin marker without its end raises ValueError."""
    lines = doc.read_text().splitlines(keepends=True)
    code = in_fences(lines)
    out, i = [], 0
    while i < len(lines):
        m = BEGIN.match(lines[i]) if i not in code else None
        if m:
            for j in range(i + 1, len(lines)):
                if lines[j].strip() == END:
                    break
                if BEGIN.match(lines[j]):
                    raise ValueError(f"{doc}:{j + 1}: a generated region opens inside another")
            else:
                raise ValueError(f"{doc}:{i + 1}: '{lines[i].strip()}' has no '{END}'")
            out.append(Region(doc, i + 1, m["path"], "".join(lines[i + 1:j])))
            i = j
        i += 1
    return out


def splice(text: str, root: Path = ROOT, doc: str = "README.md") -> str:
    """``text`` (of ``doc``, repository-relative) with every generated region replaced by the
    current text of its file."""
    lines = text.splitlines(keepends=True)
    code = in_fences(lines)
    out, i = [], 0
    while i < len(lines):
        out.append(lines[i])
        m = BEGIN.match(lines[i]) if i not in code else None
        if m:
            j = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == END), None)
            if j is None:
                raise ValueError(f"line {i + 1}: '{lines[i].strip()}' has no '{END}'")
            out.append(quoted(m["path"], doc, root))
            out.append(lines[j])
            i = j
        i += 1
    return "".join(out)


def stale(root: Path = ROOT) -> list[str]:
    """One line per generated region whose text differs from its file (or whose file is gone)."""
    problems = []
    for doc in doc_files(root):
        rel = doc.relative_to(root)
        found = regions(doc)
        missing = [r for r in found if not (root / r.source).is_file()]
        problems += [f"{rel}:{r.line}: {r.source} does not exist" for r in missing]
        if missing or not found:
            continue
        for r in found:  # name each region whose text differs
            if r.text != quoted(r.source, rel.as_posix(), root):
                problems.append(f"{rel}:{r.line}: not the current text of {r.source} "
                                "(run: python benchmarks/_docs.py)")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Splice the files benchmarks wrote into the docs "
                                 "(between <!-- generated: FILE --> and <!-- end generated -->).")
    ap.add_argument("--check", action="store_true",
                    help="change nothing; exit 1 if a region is not its file's current text")
    ap.add_argument("--list", action="store_true",
                    help="list every generated region, recorded table and whole-file doc")
    a = ap.parse_args(argv)
    if a.list:
        for doc in doc_files():
            rel = doc.relative_to(ROOT)
            for r in regions(doc):
                print(f"generated  {rel}:{r.line}  <- {r.source}")
            lines = doc.read_text().splitlines()
            code = in_fences(lines)
            for n, line in enumerate(lines, 1):
                m = RECORDED.match(line) if n - 1 not in code else None
                if m:
                    print(f"recorded   {rel}:{n}  {m['what']}")
        for doc in doc_files():
            cmd = written_whole(str(doc.relative_to(ROOT)))
            if cmd:
                print(f"whole file {doc.relative_to(ROOT)}  <- {cmd}")
        return 0
    if a.check:
        problems = stale()
        print("\n".join(problems) or "every generated region is current")
        return 1 if problems else 0
    for doc in doc_files():
        text = doc.read_text()
        new = splice(text, ROOT, doc.relative_to(ROOT).as_posix())
        if new != text:
            doc.write_text(new)
            print(f"updated {doc.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Docs are code: every fenced shell and Python block of README.md and docs/**/*.md runs here.

* ``bash``/``sh``/``shell`` blocks run with ``bash -e -o pipefail``; ``console`` blocks run
  their ``$ `` lines. ``python``/``py`` blocks run in a fresh interpreter. All blocks of one
  doc run in order in one temporary folder (a block may use what an earlier one wrote), with
  ``$COREDATA`` set, ``coreselect``/``python``/``python3`` on ``PATH`` meaning this
  interpreter and this checkout, and copies of ``benchmarks/``, ``docs/`` and ``README.md``
  (commands written "from the root of a clone" work, and nothing they write reaches the
  repository).
* The Quick start's set-up lines (``python3 -m venv .venv && .venv/bin/pip install -e SPEC &&
  REST``) are recognised: the install is not repeated; the test checks that ``.ci/run``
  creates the same venv, installs the same SPEC and runs the same test command, and runs
  REST with this interpreter (the test command itself, which would run this suite inside
  itself, is run with ``--collect-only`` on one small file: its options must parse).
* A block that needs hours or the network says how it runs reduced, on the line before it
  (docs/README.md): ``<!-- docs-test: reduce OLD => NEW; ... -->`` (each OLD must occur in the
  block) or ``<!-- docs-test: needs WHY; run as: COMMAND -->``. Nothing is skipped: a block
  without a marker that cannot run fails, naming the doc, the line and the reason.

Also here: every generated region of a doc is the current text of the file its benchmark wrote
(``benchmarks/_docs.py``), and every table with figures is generated or marked recorded.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import REPO_ROOT, require_data_files

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
try:
    import _docs  # noqa: E402
finally:
    sys.path.remove(str(REPO_ROOT / "benchmarks"))

LANGS = {"bash": "shell", "sh": "shell", "shell": "shell", "console": "console",
         "python": "python", "py": "python", "python3": "python"}
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)")
MARKER = re.compile(r"^<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")
#: A guard against a hung block, not a speed target: the slowest block takes about a minute on
#: an idle 2-core machine, and several times that when the machine is busy (issue 32).
BLOCK_TIMEOUT = 1500
SETUP = re.compile(r"^python3 -m venv (?P<venv>\S+) && (?P=venv)/bin/pip install -e "
                   r"(?P<spec>\S+) && (?P<rest>.+)$")


@dataclass
class Block:
    doc: Path
    line: int  # 1-based line of the opening fence
    lang: str  # shell | console | python
    info: str
    code: str
    marker: str | None = None
    notes: list[str] = field(default_factory=list)

    def where(self) -> str:
        return f"{rel(self.doc)}:{self.line} ({self.info} block)"


def rel(doc: Path) -> str:
    """``doc`` relative to the repository where it lies there (the tests also parse probes)."""
    try:
        return str(doc.relative_to(REPO_ROOT))
    except ValueError:
        return str(doc)


def blocks(doc: Path) -> list[Block]:
    """The runnable fenced blocks of ``doc``, with the docs-test marker right before each."""
    lines = doc.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m["fence"], m["info"].lower()
        body, j = [], i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence[0] * len(fence))
                                      and not lines[j].strip().strip(fence[0])):
            body.append(lines[j][len(m["indent"]):] if lines[j].startswith(m["indent"]) else lines[j])
            j += 1
        if j == len(lines):
            raise AssertionError(f"{rel(doc)}:{i + 1}: unclosed code fence")
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mk = MARKER.match(lines[k].strip()) if k >= 0 else None
        if info in LANGS:
            out.append(Block(doc, i + 1, LANGS[info], info, "\n".join(body) + "\n",
                             mk["body"] if mk else None))
        elif mk:
            raise AssertionError(f"{rel(doc)}:{k + 1}: a docs-test marker "
                                 f"before a '{info or 'plain'}' block, which never runs")
        i = j + 1
    return out


def apply_marker(block: Block) -> str:
    """The code to run for ``block``: as written, or as its marker reduces it."""
    if block.marker is None:
        return block.code
    body = block.marker
    why = re.match(r"needs (?P<why>[^;]+);\s*(?P<rest>reduce .+)$", body)
    if why:  # "needs network; reduce OLD => NEW": the reason, then the reduction
        block.notes.append(f"needs {why['why'].strip()}")
        body = why["rest"]
    if body.startswith("reduce "):
        code = block.code
        for pair in body[len("reduce "):].split(";"):
            if "=>" not in pair:
                raise AssertionError(f"{block.where()}: marker 'reduce' wants 'OLD => NEW', "
                                     f"got {pair.strip()!r}")
            old, new = (unquote(s) for s in pair.split("=>", 1))
            if old not in code:
                raise AssertionError(f"{block.where()}: the marker reduces {old!r}, which the "
                                     "block no longer holds (update the marker with the block)")
            code = code.replace(old, new)
            block.notes.append(f"reduced: {old!r} -> {new!r}")
        return code
    m = re.match(r"needs (?P<why>[^;]+);\s*run as:\s*(?P<cmd>.+)$", body)
    if m:
        block.notes.append(f"needs {m['why'].strip()}: run as {m['cmd']!r}")
        return m["cmd"] + "\n"
    raise AssertionError(f"{block.where()}: unknown docs-test marker {body!r} (known: "
                         "'reduce OLD => NEW; ...', 'needs WHY; reduce OLD => NEW; ...', "
                         "'needs WHY; run as: COMMAND'; see docs/README.md)")


def unquote(s: str) -> str:
    s = s.strip()
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'`" else s


# -- the Quick start's set-up lines ---------------------------------------------------------
def ci_steps() -> tuple[str, str, str]:
    """``(venv, install spec, test command)`` of .ci/run."""
    text = (REPO_ROOT / ".ci" / "run").read_text()
    venv = re.search(r"^python3 -m venv (\S+)\s*$", text, re.M)
    spec = re.search(r"^\S+ -m pip install .*-e (\S+)\s*$", text, re.M)
    test = re.search(r"^(\S+/bin/python -m pytest .*)$", text, re.M)
    assert venv and spec and test, ".ci/run no longer creates a venv, installs with -e and " \
        "runs pytest as the README's Quick start does"
    return venv[1], spec[1], test[1].strip()


def setup_line(line: str, block: Block) -> str | None:
    """The part of a Quick start set-up line to run here, or None if ``line`` is not one."""
    m = SETUP.match(line.strip())
    if not m:
        return None
    venv, spec, rest = m["venv"], m["spec"], m["rest"]
    ci_venv, ci_spec, ci_test = ci_steps()
    assert venv == ci_venv, f"{block.where()}: venv {venv!r}, .ci/run uses {ci_venv!r}"
    assert unquote(spec) in (".", unquote(ci_spec)), \
        f"{block.where()}: installs {spec}, .ci/run installs {ci_spec}"
    if "pytest" in rest:
        assert unquote(spec) == unquote(ci_spec), \
            f"{block.where()}: the test line installs {spec}, .ci/run installs {ci_spec}"
        assert rest.strip() == ci_test, (f"{block.where()}: the README's test command is "
                                         f"{rest.strip()!r}, .ci/run runs {ci_test!r}")
        block.notes.append("test command checked against .ci/run, run with --collect-only")
        rest = (f"{rest} --collect-only -p no:cacheprovider "
                f"{shlex.quote(str(REPO_ROOT / 'tests' / 'test_parse_ranges.py'))}")
    block.notes.append(f"install line recognised ({spec}); not re-installed")
    return rest.replace(f"{venv}/bin/", "")


# -- running --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shims(tmp_path_factory) -> Path:
    """``coreselect``, ``python`` and ``python3`` that mean this interpreter and checkout."""
    bin_dir = tmp_path_factory.mktemp("docs-bin")
    for name, target in (("coreselect", f'"{sys.executable}" -m coreselect'),
                         ("python", f'"{sys.executable}"'), ("python3", f'"{sys.executable}"')):
        path = bin_dir / name
        path.write_text(f'#!/bin/sh\nexec {target} "$@"\n')
        path.chmod(0o755)
    return bin_dir


def workdir(tmp: Path) -> Path:
    """A folder that looks like the root of a clone, made of copies (nothing reaches the repo)."""
    shutil.copytree(REPO_ROOT / "benchmarks", tmp / "benchmarks",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO_ROOT / "docs", tmp / "docs")
    shutil.copy2(REPO_ROOT / "README.md", tmp / "README.md")
    (tmp / "tests").symlink_to(REPO_ROOT / "tests")
    (tmp / "src").symlink_to(REPO_ROOT / "src")
    shutil.copy2(REPO_ROOT / "pyproject.toml", tmp / "pyproject.toml")
    return tmp


def environment(bin_dir: Path, data: Path, home: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "COV_")) and k != "CORESELECT_BENCHMARKS"}
    src = str(REPO_ROOT / "src")
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", COREDATA=str(data),
               MPLBACKEND="Agg", COREDATA_HOME=str(home), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([src] + [p for p in env.get("PYTHONPATH", "").split(
                   os.pathsep) if p and p != src]))
    return env


def kill_group(pgid: int) -> None:
    """SIGKILL every process left in the process group ``pgid`` (a block's servers, clusters,
    workers: whatever it started and did not stop, or everything on a timeout)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # nothing left


def run_in_own_group(cmd: list[str], cwd: Path, env: dict,
                     timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)`` in a new
    session, whose process group is killed when the block ends, fails or times out: a block
    that starts servers in the background (``&``) relies on its shell's ``trap``, which a
    kill of the shell alone skips, and its processes would outlive the test."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        kill_group(proc.pid)
        proc.communicate()
        raise
    finally:
        kill_group(proc.pid)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def run_block(block: Block, cwd: Path, env: dict) -> None:
    code = apply_marker(block)
    if block.lang == "python":
        cmd = [sys.executable, "-c", code]
    else:
        if block.lang == "console":
            code = "\n".join(l[2:] for l in code.splitlines() if l.startswith("$ ")) + "\n"
        lines = []
        for line in code.splitlines():
            run = setup_line(line, block)
            lines.append(line if run is None else run)
        code = "\n".join(lines) + "\n"
        cmd = ["bash", "-e", "-o", "pipefail", "-c", code]
    try:
        proc = run_in_own_group(cmd, cwd, env, BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.where()} ran past {BLOCK_TIMEOUT} s (a hang?); reduce it with a "
                    f"docs-test marker (docs/README.md)\n--- as run ---\n{code}", pytrace=False)
    if proc.returncode != 0:
        notes = "".join(f"\n  {n}" for n in block.notes)
        pytest.fail(f"{block.where()} failed with exit code {proc.returncode}{notes}\n"
                    f"--- as run (cwd: a copy of the clone's root) ---\n{code}"
                    f"--- stderr (end) ---\n{proc.stderr[-3000:]}\n"
                    f"--- stdout (end) ---\n{proc.stdout[-1500:]}", pytrace=False)


def _may_run(doc: Path) -> bool:
    """Whether ``doc`` has a runnable fence or a marker (parsed in the test, so that a broken
    doc fails its own test instead of the collection of this module)."""
    text = doc.read_text()
    return "docs-test:" in text or any(
        (m := FENCE.match(line)) and m["info"].lower() in LANGS for line in text.splitlines())


DOCS = _docs.doc_files(REPO_ROOT)
RUNNABLE = [d for d in DOCS if _may_run(d)]


@pytest.mark.parametrize("doc", RUNNABLE, ids=[str(d.relative_to(REPO_ROOT)) for d in RUNNABLE])
def test_every_block_of_the_doc_runs(doc, shims, tmp_path):
    data = require_data_files()
    cwd = workdir(tmp_path / "clone")
    env = environment(shims, data, tmp_path / "home")
    for block in blocks(doc):
        run_block(block, cwd, env)


def test_the_readme_has_blocks_and_the_quick_start_two_setup_lines():
    readme = blocks(REPO_ROOT / "README.md")
    assert readme, "README.md has no runnable block"
    quick = readme[0]
    setup = [l for l in quick.code.splitlines() if SETUP.match(l.strip())]
    assert len(setup) == 2 and len(quick.code.strip().splitlines()) == 2, \
        f"{quick.where()}: the Quick start holds exactly two set-up commands"


# -- the block parser and the markers themselves ----------------------------------------------
def test_markers_reduce_and_refuse(tmp_path, monkeypatch):
    doc = tmp_path / "x.md"
    doc.write_text("text\n\n<!-- docs-test: reduce --k 400 => --k 4; `a b` => c -->\n"
                   "```bash\nrun --k 400 a b\n```\n\n```json\n{\"not\": \"run\"}\n```\n"
                   "<!-- docs-test: needs network; run as: echo offline -->\n```sh\nfetch\n```\n"
                   "```python\nprint(1)\n```\n")
    monkeypatch.setattr(Block, "where", lambda self: f"x.md:{self.line}")
    bs = blocks(doc)
    assert [(b.lang, b.line) for b in bs] == [("shell", 4), ("shell", 12), ("python", 15)]
    assert apply_marker(bs[0]) == "run --k 4 c\n"
    assert apply_marker(bs[1]) == "echo offline\n"
    assert apply_marker(bs[2]) == "print(1)\n"
    stale = Block(doc, 1, "shell", "bash", "run --k 10\n", "reduce --k 400 => --k 4")
    with pytest.raises(AssertionError, match="no longer holds"):
        apply_marker(stale)
    with pytest.raises(AssertionError, match="unknown docs-test marker"):
        apply_marker(Block(doc, 1, "shell", "bash", "x\n", "skip"))
    doc.write_text("<!-- docs-test: reduce a => b -->\n```text\na\n```\n")
    with pytest.raises(AssertionError, match="never runs"):
        blocks(doc)


def test_a_failing_block_names_its_doc_and_line(shims, tmp_path, monkeypatch):
    monkeypatch.setattr(Block, "where", lambda self: f"x.md:{self.line} ({self.info} block)")
    env = environment(shims, tmp_path, tmp_path / "home")
    bad = Block(tmp_path / "x.md", 7, "shell", "bash", "true\ncoreselect no-such-command\ntrue\n")
    with pytest.raises(pytest.fail.Exception, match=r"x\.md:7 \(bash block\) failed with exit"):
        run_block(bad, tmp_path, env)
    ok = Block(tmp_path / "x.md", 9, "python", "python",
               "import coreselect, os; assert os.environ['COREDATA']\n")
    run_block(ok, tmp_path, env)


def _gone(pid: int, within: float = 60.0) -> bool:
    """Whether process ``pid`` has ended (killed processes are reaped by init or a subreaper,
    which may take a moment: polled, bounded)."""
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":  # killed, waiting for its parent to reap it
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
@pytest.mark.parametrize("ending", ["ends", "fails", "times out"])
def test_a_block_leaves_no_process_behind(shims, tmp_path, monkeypatch, ending):
    """What a block starts in the background (a server, a cluster) is killed with its process
    group when the block ends, fails or runs past its limit (issue 32: a timed-out doc left a
    moto server, a scheduler and two workers running for an hour)."""
    monkeypatch.setattr(Block, "where", lambda self: f"x.md:{self.line} ({self.info} block)")
    env = environment(shims, tmp_path, tmp_path / "home")
    last = {"ends": "true", "fails": "false", "times out": "sleep 600"}[ending]
    code = ("sleep 600 > /dev/null 2>&1 & echo $! > bg.pid\n"
            "bash -c 'sleep 600' > /dev/null 2>&1 & echo $! > bg2.pid\n" + last + "\n")
    if ending == "times out":
        monkeypatch.setattr(sys.modules[__name__], "BLOCK_TIMEOUT", 5)
    block = Block(tmp_path / "x.md", 3, "shell", "bash", code)
    if ending == "ends":
        run_block(block, tmp_path, env)
    else:
        with pytest.raises(pytest.fail.Exception, match="failed with exit|ran past"):
            run_block(block, tmp_path, env)
    for name in ("bg.pid", "bg2.pid"):
        pid = int((tmp_path / name).read_text())
        assert _gone(pid), f"{name}: process {pid} outlived its block"


# -- numbers come from files a script wrote ---------------------------------------------------
def test_generated_regions_are_the_files_their_benchmarks_wrote():
    problems = _docs.stale(REPO_ROOT)
    assert not problems, "\n".join(problems)
    for doc in DOCS:
        for r in _docs.regions(doc):
            first = (REPO_ROOT / r.source).read_text().splitlines()[0]
            assert re.match(r"^\*Written by `([A-Z_]+=\S+ )*(coreselect bench |python benchmarks/)\S+.*` on "
                            r"\d{4}-\d\d-\d\d \d\d:\d\d UTC\.", first), \
                f"{r.source} (quoted by {doc.relative_to(REPO_ROOT)}:{r.line}) does not open " \
                f"with the command and date that wrote it: {first[:120]!r}"


def _tables(lines: list[str]):
    """``(first line index, rows)`` of every Markdown table."""
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(
                r"^\|(\s*:?-{3,}:?\s*\|)+\s*$", lines[i + 1]):
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            yield i, lines[i + 2:j]
            i = j
        else:
            i += 1


def _has_figures(rows: list[str]) -> bool:
    """Whether a table's body holds a measured figure (digits outside code and links)."""
    for row in rows:
        text = re.sub(r"`[^`]*`", "", row)
        text = re.sub(r"\]\([^)]*\)", "]", text)
        if re.search(r"\d", text):
            return True
    return False


def test_every_table_with_figures_is_generated_or_marked_recorded():
    sources = {(REPO_ROOT / r.source).resolve() for d in DOCS for r in _docs.regions(d)}
    unmarked = []
    for doc in DOCS:
        name = rel(doc)
        if doc.resolve() in sources or _docs.written_whole(name):
            continue
        lines = doc.read_text().splitlines()
        inside = _docs.in_fences(lines)  # tables shown inside code blocks are examples
        for r in _docs.regions(doc):
            end = next(j for j in range(r.line, len(lines)) if lines[j].strip() == _docs.END)
            inside.update(range(r.line, end))
        for start, rows in _tables(lines):
            if start in inside or not _has_figures(rows):
                continue
            k = start - 1
            while k >= 0 and not lines[k].startswith(("#", "|")) and \
                    not _docs.RECORDED.match(lines[k]):
                k -= 1
            if k < 0 or not _docs.RECORDED.match(lines[k]):
                unmarked.append(f"{name}:{start + 1}: {lines[start][:80]}")
    assert not unmarked, ("tables with figures that no benchmark file backs (splice the file "
                          "its benchmark wrote, or mark an old run <!-- recorded: COMMAND; not "
                          "regenerated (WHY) -->):\n" + "\n".join(unmarked))


def test_the_docs_test_is_documented():
    text = (REPO_ROOT / "docs" / "README.md").read_text()
    for word in ("docs-test: reduce", "docs-test: needs", "generated:", "recorded:"):
        assert word in text, f"docs/README.md does not document {word!r}"


def test_splice_and_stale_on_a_probe_clone(tmp_path):
    """A region is replaced by its file; a changed file, a missing file or a missing end
    marker are reported; a marker shown inside a code block is an example, not a region."""
    (tmp_path / "docs" / "results").mkdir(parents=True)
    src = tmp_path / "docs" / "results" / "t.md"
    src.write_text("*Written by `coreselect bench x` on 2026-01-01 00:00 UTC. Machine: m.*\n\n| a |\n")
    doc = tmp_path / "README.md"
    example = "```markdown\n<!-- generated: docs/results/none.md -->\n<!-- end generated -->\n```\n"
    doc.write_text(f"# t\n\n<!-- generated: docs/results/t.md -->\nold\n<!-- end generated -->\n\n{example}")
    assert [r.source for r in _docs.regions(doc)] == ["docs/results/t.md"]
    assert _docs.stale(tmp_path) == ["README.md:3: not the current text of docs/results/t.md "
                                     "(run: python benchmarks/_docs.py)"]
    doc.write_text(_docs.splice(doc.read_text(), tmp_path))
    assert _docs.stale(tmp_path) == [] and example in doc.read_text()
    assert src.read_text() in doc.read_text()
    src.write_text(src.read_text() + "| b |\n")
    assert len(_docs.stale(tmp_path)) == 1
    src.unlink()
    assert "does not exist" in _docs.stale(tmp_path)[0]
    doc.write_text("<!-- generated: docs/results/t.md -->\nno end\n")
    with pytest.raises(ValueError, match="has no"):
        _docs.regions(doc)


def test_spliced_links_point_from_the_doc_that_quotes_them(tmp_path):
    """A file under docs/results/bench/ links from its own folder; spliced into README.md or
    docs/results/index.md its relative links are rewritten to reach the same files."""
    bench = tmp_path / "docs" / "results" / "bench"
    bench.mkdir(parents=True)
    (bench / "t.md").write_text(
        "*Written by `coreselect bench x` on 2026-01-01 00:00 UTC. Machine: m.*\n\n"
        "[a](../rivals.md), [b](auto_k.md#cost), ![p](t.png), [c](https://x.org/a.md), "
        "[d](#here)\n")
    region = "<!-- generated: docs/results/bench/t.md -->\n<!-- end generated -->\n"
    readme = _docs.splice(region, tmp_path, "README.md")
    assert ("[a](docs/results/rivals.md), [b](docs/results/bench/auto_k.md#cost), "
            "![p](docs/results/bench/t.png), [c](https://x.org/a.md), [d](#here)") in readme
    index = _docs.splice(region, tmp_path, "docs/results/index.md")
    assert "[a](rivals.md), [b](bench/auto_k.md#cost), ![p](bench/t.png)" in index
    (tmp_path / "README.md").write_text(readme)
    assert _docs.stale(tmp_path) == []  # the rebased text is the current one


def test_relative_links_in_generated_regions_resolve():
    """Every relative link a generated region holds names a file that exists, seen from the
    doc that quotes it (as GitHub and the site resolve it)."""
    broken = []
    for doc in DOCS:
        for r in _docs.regions(doc):
            for m in _docs.LINK.finditer(r.text):
                target = m[2].partition("#")[0]
                if not target or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^/", target):
                    continue
                if not (doc.parent / target).exists():
                    broken.append(f"{rel(doc)}:{r.line} ({r.source}): {m[2]}")
    assert not broken, "\n".join(broken)


def test_needs_then_reduce(tmp_path):
    b = Block(tmp_path / "x.md", 1, "shell", "bash", "coreselect datasets fetch yeast\n",
              "needs network; reduce coreselect datasets fetch => env X=1 coreselect datasets fetch")
    assert apply_marker(b) == "env X=1 coreselect datasets fetch yeast\n"
    assert b.notes[0] == "needs network"

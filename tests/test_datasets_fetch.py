"""Verified downloads into the cache, served offline from a local http.server mirror; names and
paths resolving to $COREDATA first (offline)."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from coreselect.cli import cli
import coreselect.datasets.fetch as fetch_mod
from coreselect.datasets.fetch import cache_dir, fetch
from coreselect.datasets.load import load
from coreselect.datasets import registry
from coreselect.errors import DatasetError, FetchError


class _Handler(http.server.SimpleHTTPRequestHandler):
    requests: list[str] = []

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):
        type(self).requests.append(self.path)
        super().do_GET()


@pytest.fixture
def serve():
    """serve(folder) -> base URL of an http.server on 127.0.0.1 serving that folder."""
    servers = []

    def start(folder: Path) -> str:
        handler = functools.partial(_Handler, directory=str(folder))
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def env(tmp_path, monkeypatch):
    home = tmp_path / "cache"
    monkeypatch.setenv("COREDATA_HOME", str(home))
    monkeypatch.delenv("COREDATA_MIRROR", raising=False)
    monkeypatch.setenv("COREDATA", "")  # no local copy: these tests download; see the offline tests below
    fetch_mod._verified_cache.clear()
    _Handler.requests.clear()
    return home


def _leftovers(home: Path) -> list[Path]:
    return [p for p in home.rglob("*") if p.is_file() and (p.name.startswith(".") or p.suffix == ".part")]


def test_cache_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.delenv("COREDATA_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "coreselect"
    monkeypatch.setenv("COREDATA_HOME", str(tmp_path / "h"))
    assert cache_dir() == tmp_path / "h"


def test_fetch_then_cache_hit(coredata, serve, env, monkeypatch):
    monkeypatch.setenv("COREDATA_MIRROR", serve(coredata) + "/")
    paths = fetch("emotions")
    assert paths == [env / "mulan/emotions/emotions.arff"]
    assert (env / "mulan/emotions/emotions.xml").is_file()
    n = len(_Handler.requests)
    assert n == 4  # union, xml, train, test
    ds = load("emotions")
    assert (ds.n_features, ds.n_samples, ds.n_labels) == (72, 593, 6)
    fetch("emotions")
    assert len(_Handler.requests) == n  # cache hit: no network
    assert not _leftovers(env)


def test_load_stacks_scene_parts(coredata, serve, env, monkeypatch):
    monkeypatch.setenv("COREDATA_MIRROR", serve(coredata))
    ds = load("scene")
    assert (ds.n_features, ds.n_samples, ds.n_labels) == (294, 2407, 6)


def test_tampered_and_truncated_downloads_are_rejected(coredata, serve, env, monkeypatch, tmp_path):
    mirror = tmp_path / "mirror"
    shutil.copytree(coredata / "mulan" / "medical", mirror / "mulan" / "medical")
    arff = mirror / "mulan/medical/medical.arff"
    arff.chmod(0o644)
    data = arff.read_bytes()
    monkeypatch.setenv("COREDATA_MIRROR", serve(mirror))
    arff.write_bytes(data[: len(data) // 2])  # truncated (consistent Content-Length)
    with pytest.raises(DatasetError, match="checksum mismatch"):
        fetch("medical")
    assert not (env / "mulan/medical/medical.arff").exists()
    assert not _leftovers(env)
    arff.write_bytes(data.replace(b"@data", b"@DATA"))  # tampered, same size
    with pytest.raises(DatasetError, match="tampered"):
        load("medical")
    assert not (env / "mulan/medical/medical.arff").exists()
    arff.write_bytes(data)
    assert fetch("medical")[0].is_file()


def test_cached_file_corrupted_later_is_fetched_again(coredata, serve, env, monkeypatch):
    monkeypatch.setenv("COREDATA_MIRROR", serve(coredata))
    p = fetch("music")[0]
    p.write_bytes(b"garbage")
    fetch_mod._verified_cache.clear()
    assert fetch("music")[0].read_bytes()[:10] != b"garbage"


def test_missing_file_404(serve, env, monkeypatch, tmp_path):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("COREDATA_MIRROR", serve(tmp_path / "empty"))
    with pytest.raises(DatasetError, match="HTTP 404"):
        fetch("emotions")
    assert not _leftovers(env)


def test_unreachable_mirror(env, monkeypatch):
    monkeypatch.setenv("COREDATA_MIRROR", "http://127.0.0.1:9")
    with pytest.raises(DatasetError, match="failed"):
        fetch("emotions", timeout=5)


def test_unverified_needs_opt_out(env):
    with pytest.raises(DatasetError, match="--no-verify"):
        fetch("mediamill")


def test_unknown_name_suggests():
    with pytest.raises(DatasetError, match="did you mean"):
        fetch("emotion")


def test_cli_fetch_and_list(coredata, serve, env, monkeypatch):
    monkeypatch.setenv("COREDATA_MIRROR", serve(coredata))
    runner = CliRunner()
    r = runner.invoke(cli, ["datasets", "fetch", "enron"])  # with the progress bar
    assert r.exit_code == 0, r.output
    assert r.stdout.strip().endswith("mulan/enron/enron.arff")
    r = runner.invoke(cli, ["datasets", "list"])
    assert r.exit_code == 0
    line = next(l for l in r.output.splitlines() if l.startswith("enron "))
    assert "cached" in line and "1001" in line and "1702" in line
    for name in ("emotions", "rcv1subset3", "tmc2007", "eurlex-ev", "mediamill", "bibtex"):
        assert f"\n{name} " in r.output
    r = runner.invoke(cli, ["datasets", "fetch", "nosuchset"])
    assert r.exit_code == 2 and "unknown dataset" in r.output and "Traceback" not in r.output
    r = runner.invoke(cli, ["datasets", "fetch", "rcv1subset2"])
    assert r.exit_code == 2 and "--no-verify" in r.output


# --- $COREDATA first: offline with a local copy ----------------------------------------------------

@pytest.fixture
def offline(coredata, env, monkeypatch):
    """COREDATA set, an empty cache, and a mirror that refuses every connection."""
    monkeypatch.setenv("COREDATA", str(coredata))
    monkeypatch.setenv("COREDATA_MIRROR", "http://127.0.0.1:9")
    return env


def test_names_resolve_to_coredata_offline(coredata, offline):
    assert fetch("scene") == [coredata / "mulan/scene/scene-train.arff", coredata / "mulan/scene/scene-test.arff"]
    ds = load("scene")
    assert (ds.name, ds.n_samples, ds.n_features) == ("scene", 2407, 294)
    ds = load("rcv1v2/rcv1subset1.arff.gz")  # the README's example: a path relative to $COREDATA
    assert (ds.n_samples, ds.n_features, ds.n_labels) == (6000, 47236, 101)
    ds = load("mulan/emotions/emotions-train.arff")
    assert (ds.n_samples, ds.n_labels) == (391, 6)
    assert not offline.exists()  # nothing downloaded, no cache folder made


def test_cli_names_resolve_to_coredata_offline(coredata, offline):
    runner = CliRunner()
    r = runner.invoke(cli, ["datasets", "fetch", "scene"])
    assert r.exit_code == 0, r.output
    assert r.stdout.split() == [str(coredata / "mulan/scene/scene-train.arff"),
                                str(coredata / "mulan/scene/scene-test.arff")]
    r = runner.invoke(cli, ["select", "scene", "-k", "3", "--json"])
    assert r.exit_code == 0, r.output
    assert '"dataset": "scene"' in r.stdout
    r = runner.invoke(cli, ["datasets", "list"])
    assert "local" in next(l for l in r.output.splitlines() if l.startswith("scene "))
    r = runner.invoke(cli, ["datasets", "fetch", "--help"])
    assert "COREDATA_MIRROR=file://" in r.output and "$COREDATA" in r.output
    assert not offline.exists()


def test_coredata_copy_that_differs_is_refused(coredata, env, monkeypatch, tmp_path):
    local = tmp_path / "local"
    shutil.copytree(coredata / "mulan" / "medical", local / "mulan" / "medical")
    arff = local / "mulan/medical/medical.arff"
    arff.chmod(0o644)
    arff.write_bytes(arff.read_bytes().replace(b"@data", b"@DATA"))
    monkeypatch.setenv("COREDATA", str(local))
    with pytest.raises(DatasetError, match="does not match the registry's SHA-256"):
        load("medical")
    assert load(arff).n_samples == 978  # its path: used as it is


def test_registry_file_paths_fall_back_to_the_mirror(coredata, serve, env, monkeypatch, tmp_path):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("COREDATA", str(tmp_path / "empty"))
    monkeypatch.setenv("COREDATA_MIRROR", serve(coredata))
    ds = load("mulan/emotions/emotions-test.arff")
    assert ds.n_samples == 202 and (env / "mulan/emotions/emotions.xml").is_file()
    assert sorted(_Handler.requests) == ["/mulan/emotions/emotions-test.arff", "/mulan/emotions/emotions.xml"]


def test_file_mirror_url(coredata, env, monkeypatch):
    monkeypatch.setenv("COREDATA_MIRROR", coredata.as_uri())  # file:///...
    assert fetch("emotions")[0] == env / "mulan/emotions/emotions.arff"


def test_bad_environment_is_one_line(tmp_path, monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.setenv("COREDATA_HOME", str(afile))
    monkeypatch.setenv("COREDATA", "")  # no local copy (unset: ../shared/data)
    with pytest.raises(DatasetError, match="COREDATA_HOME=.* is a file"):
        fetch("emotions")
    r = CliRunner().invoke(cli, ["datasets", "fetch", "emotions"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "COREDATA_HOME" in r.output
    r = CliRunner().invoke(cli, ["datasets", "list"])
    assert r.exit_code == 0
    monkeypatch.setenv("COREDATA", str(afile))
    with pytest.raises(DatasetError, match="COREDATA=.* is not a folder"):
        load("emotions")


def test_suggested_names_are_listed_names():
    listed = set(registry.names())
    for typo in ("emotion", "rcv1sub", "rcv1v2-subset", "cal50", "CAL-500", "scen", "tmc2007500", "yeastmeka"):
        close = registry.close_names(typo)
        assert set(close) <= listed, (typo, close)
    with pytest.raises(DatasetError) as info:
        load("rcv1sub9")
    suggested = str(info.value).split("did you mean ")[1].split("?")[0].split(", ")
    assert suggested and set(suggested) <= listed
    r = CliRunner().invoke(cli, ["datasets", "list", "--json"])
    # JSON Lines: one object per dataset, one per line
    names = {__import__("json").loads(line)["name"] for line in r.stdout.splitlines()}
    assert names == listed | {"synthesized"}  # the generated one has no registry entry


def test_fetch_errors_are_dataset_and_os_errors(env, monkeypatch):
    monkeypatch.setenv("COREDATA_MIRROR", "http://127.0.0.1:9")
    with pytest.raises(FetchError) as info:
        fetch("emotions", timeout=5)
    assert isinstance(info.value, DatasetError) and isinstance(info.value, OSError)
    assert "neither in $COREDATA" in str(info.value)


@pytest.mark.parametrize("mirror,words", [
    ("s3://bucket/data", "s3:// mirrors are not"), ("gs://bucket/data", "gs:// mirrors are not"),
    ("ftp://host/data", "ftp:// mirrors are not"), ("/srv/data", "is not a URL; for a local"),
])
def test_a_mirror_of_another_scheme_says_what_is_supported(env, monkeypatch, mirror, words):
    """One line that says which mirrors work, before anything is written (urllib's 'unknown
    url type: s3' said neither)."""
    monkeypatch.setenv("COREDATA_MIRROR", mirror)
    with pytest.raises(FetchError) as exc:
        fetch("emotions")
    message = str(exc.value)
    assert words in message and "https://, http:// or file://" in message, message
    assert "\n" not in message and "unknown url type" not in message
    assert not _leftovers(env)
    r = CliRunner().invoke(cli, ["datasets", "fetch", "emotions"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert words in r.output

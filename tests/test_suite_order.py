"""Under ``-n N --dist loadfile`` the slowest files are handed out first (conftest.py), so that
the two workers of the README's test command finish together."""

from __future__ import annotations

from types import SimpleNamespace

import conftest


def _items(*nodeids: str) -> list:
    return [SimpleNamespace(nodeid=n) for n in nodeids]


def _config(dist: str | None = None, worker_flag: bool | None = None):
    if worker_flag is not None:  # a worker: xdist reset its option, the controller passed ours
        return SimpleNamespace(option=SimpleNamespace(dist="no"),
                               workerinput={"coreselect_slowest_first": worker_flag})
    return SimpleNamespace(option=SimpleNamespace(dist=dist))


def test_slowest_files_first_then_most_tests_with_each_file_in_its_order():
    slow, slower = conftest._SLOWEST_FILES[1], conftest._SLOWEST_FILES[0]
    items = _items("tests/test_a.py::one", f"tests/{slow}::x", "tests/test_b.py::one",
                   "tests/test_b.py::two", f"tests/{slower}::y", f"tests/{slow}::z",
                   "tests/test_a.py::two", "tests/test_a.py::three")
    conftest.pytest_collection_modifyitems(None, _config(worker_flag=True), items)
    assert [i.nodeid for i in items] == [
        f"tests/{slower}::y", f"tests/{slow}::x", f"tests/{slow}::z",
        "tests/test_a.py::one", "tests/test_a.py::two", "tests/test_a.py::three",
        "tests/test_b.py::one", "tests/test_b.py::two"]


def test_order_is_left_alone_unless_files_are_handed_out_whole():
    nodeids = ("tests/test_a.py::one", f"tests/{conftest._SLOWEST_FILES[0]}::x")
    for config in (_config(worker_flag=False), _config(dist="no"), _config(dist="load")):
        items = _items(*nodeids)
        conftest.pytest_collection_modifyitems(None, config, items)
        assert tuple(i.nodeid for i in items) == nodeids


def test_the_controller_passes_the_choice_and_keeps_xdist_from_reordering():
    node = SimpleNamespace(config=_config(dist="loadfile"), workerinput={})
    conftest.pytest_configure_node(node)
    assert node.workerinput["coreselect_slowest_first"] is True
    config = SimpleNamespace(option=SimpleNamespace(dist="loadfile", loadscopereorder=True))
    conftest.pytest_configure(config)
    assert config.option.loadscopereorder is False

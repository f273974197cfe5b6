"""The seams a new user falls into between the command line, the API and the data folder:

* ``--labels`` / ``load(labels=...)`` name a label file under ``$COREDATA`` as the data path does;
* ``evaluate`` prints its table without ``--out``, caps ``--k`` at the features there are (one
  line says so), and scores a given train/test split (``--test FILE``, ``--split``);
* command-line errors name the command's options, never the Python parameters behind them;
* ``datasets list`` names every dataset the way the docs write it, matched in any case;
* each command says which files it wrote, one line each on stderr.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import coreselect
from coreselect.cli import main


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


# ----------------------------------------------------------------- label files under $COREDATA
def test_label_file_is_looked_up_under_coredata_like_the_data(coredata, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no mulan/ here: both paths only exist under $COREDATA
    monkeypatch.setenv("COREDATA", str(coredata))
    rel_data, rel_xml = "mulan/emotions/emotions.arff", "mulan/emotions/emotions.xml"
    ds = coreselect.load(rel_data, labels=rel_xml)
    direct = coreselect.load(str(coredata / rel_data), labels=str(coredata / rel_xml))
    assert ds.label_names == direct.label_names and ds.X.shape == direct.X.shape
    code, out, err = run(capsys, "select", rel_data, "--labels", rel_xml, "-k", "3", "-q", "--json")
    assert code == 0, err
    code, out, err = run(capsys, "select", rel_data, "--labels", "mulan/emotions/nothing.xml",
                         "-k", "3", "-q")
    assert code == 2 and "no such label file" in err

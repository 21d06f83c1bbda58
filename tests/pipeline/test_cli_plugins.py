"""``gpuc plugins``: table and JSON listing of discovered plugins."""

from __future__ import annotations

import json

import gpucompiler.plugin as gp
from gpucompiler.cli import main


class Listed(gp.Plugin):
    name = "listed"
    version = "3.1"

    @gp.callback("optimize.early", order=-1)
    def first(self, job, module):
        pass

    @gp.callback("ad", markers=("__a", "__b"))
    def second(self, job, module):
        pass


def test_json_lists_plugins_stages_and_markers(register, capsys):
    register(Listed)
    assert main(["plugins", "--json"]) == 0
    data = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    assert data["listed"] == {"name": "listed", "version": "3.1", "callbacks": [
        {"callback": "first", "stage": "optimize.early", "order": -1, "markers": []},
        {"callback": "second", "stage": "ad", "order": 0, "markers": ["__a", "__b"]}]}
    assert data["mock_enzyme"]["callbacks"][0]["markers"] == ["__autodiff"]
    assert list(data) == sorted(data)


def test_table_has_one_row_per_callback(register, capsys):
    register(Listed)
    assert main(["plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["plugin", "version", "stage", "callback", "order", "markers"]
    rows = [line.split() for line in lines[1:]]
    assert ["listed", "3.1", "ad", "second", "0", "__a,__b"] in rows
    assert ["mock_enzyme", "1.0", "ad", "lower_autodiff", "0", "__autodiff"] in rows

"""The tool in plain CPython: `python -m pytest`."""

import json

from app import {{name}}


def test_counts_words():
    assert json.loads({{name}}.call('{"text": "one two  three"}').value) == {"words": 3}


def test_runs_without_arguments():
    assert json.loads({{name}}.call("{}").value) == {"words": 0}

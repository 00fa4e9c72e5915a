"""read_json: the contents, or an error naming the file and line."""

import pytest

from tfbert.utils.json_file import read_json


def test_reads_the_contents(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "bert", "layers": [1, 2]}')
    assert read_json(path) == {"model_type": "bert", "layers": [1, 2]}


def test_malformed_json_names_file_and_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{\n  "a": 1,\n  oops\n}')
    with pytest.raises(ValueError, match=r"config.json:3: invalid JSON: "):
        read_json(path)

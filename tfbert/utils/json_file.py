"""Reading a JSON file so that a malformed one is reported by file and line."""

import json


def read_json(path):
    """The contents of the JSON file `path`.

    Raises:
      ValueError: `path:line: invalid JSON: reason` if it is not valid JSON.
    """
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(
                f"{path}:{e.lineno}: invalid JSON: {e.msg}") from e

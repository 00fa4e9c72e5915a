"""The README's shell commands run as written, in order, from a checkout's
root on the bundled data: the GLUE command exports the model that the
`tfbert-query` command then queries."""

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

# `make` targets install, run the demo and run this suite itself: they are
# not run from inside the suite.
NOT_RUN_HERE = ("make",)


def readme_commands():
    """The commands of the README's ```sh blocks, continuation lines joined
    and comments dropped."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if line:
                commands.append(line)
    return commands


def test_readme_shows_these_programs():
    # A new program in the README is run by the test below, or added to
    # NOT_RUN_HERE with the reason.
    assert {command.split()[0] for command in readme_commands()} == {
        "make", "tfbert-glue", "tfbert-query", "tfbert-export-tfhub"}


@pytest.mark.slow
def test_readme_commands_run_as_written(tmp_path):
    # The checkout's root, as far as the commands see it: its bundled data
    # at the documented path, what they write in a fresh directory.
    (tmp_path / "tfbert").symlink_to(REPO_ROOT / "tfbert")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO_ROOT),
               PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ.get("PATH", ""))
    outputs = []
    for command in readme_commands():
        if command.split()[0] in NOT_RUN_HERE:
            continue
        result = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, (command, result.stderr[-3000:])
        outputs.append(result.stdout)
    assert (tmp_path / "saved_models" / "sst2" / "1" / "saved_model.pb"
            ).is_file()
    assert (tmp_path / "runs" / "sst2" / "eval_results.json").is_file()
    for name in ("minilm_encoder", "minilm_preprocess"):
        assert (tmp_path / "saved_models" / "hub" / name / "saved_model.pb"
                ).is_file()
    query = next(out for command, out in zip(
        [c for c in readme_commands() if c.split()[0] not in NOT_RUN_HERE],
        outputs) if command.startswith("tfbert-query"))
    answers = [json.loads(line) for line in query.splitlines()]
    assert len(answers) == 2
    for answer in answers:
        assert answer["label"] in ("negative", "positive")
        assert sum(answer["probabilities"]) == pytest.approx(1, abs=1e-5)

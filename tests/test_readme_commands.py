"""The README's shell commands run as written, in order, from a checkout's
root on the bundled data and the shared data beside the checkout
(`../shared/data`): the GLUE command exports the model that the
`tfbert-query` command then queries."""

import json
import os
import re
import subprocess
import sys

import numpy as np
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
        "make", "tfbert-glue", "tfbert-query", "tfbert-export-tfhub",
        "printf", "tfbert-extract-features", "tfbert-squad-choices",
        "tfbert-multiple-choice",
        "tfbert-sentence", "tfbert-classify", "tfbert-ner"}


def console_scripts(directory):
    """Writes into `directory` the console scripts setup.py declares, as
    `pip install` would (so the programs are this checkout's even where the
    virtualenv was installed before one was added)."""
    # Adjacent string literals joined, as Python joins them.
    setup = re.sub(r'"\s+"', "", (REPO_ROOT / "setup.py").read_text(
        encoding="utf-8"))
    for name, module, function in re.findall(
            r'"([\w-]+) = ([\w.]+):(\w+)"', setup):
        script = directory / name
        script.write_text(f"#!{sys.executable}\nimport sys\n"
                          f"from {module} import {function}\n"
                          f"sys.exit({function}())\n")
        script.chmod(0o755)


def exported(directory):
    """Whether `directory` holds a TF Serving export (a version directory
    with a SavedModel)."""
    return any(directory.glob("*/saved_model.pb"))


# Its programs run one after the other: it starts first (tests/conftest.py).
@pytest.mark.slow(runs=len(readme_commands()))
def test_readme_commands_run_as_written(tmp_path, shared_data_dir):
    # The checkout's root, as far as the commands see it: its bundled data
    # at the documented path, the shared data at ../shared/data,
    # what they write in a fresh directory.
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data_dir)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "tfbert").symlink_to(REPO_ROOT / "tfbert")
    (tmp_path / "bin").mkdir()
    console_scripts(tmp_path / "bin")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO_ROOT),
               PATH=os.pathsep.join([str(tmp_path / "bin"),
                                     os.path.dirname(sys.executable),
                                     os.environ.get("PATH", "")]))
    outputs = []
    for command in readme_commands():
        if command.split()[0] in NOT_RUN_HERE:
            continue
        result = subprocess.run(["bash", "-c", command], cwd=checkout, env=env,
                                capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, (command, result.stderr[-3000:])
        outputs.append(result.stdout)
    assert (checkout / "saved_models" / "sst2" / "1" / "saved_model.pb"
            ).is_file()
    assert (checkout / "runs" / "sst2" / "eval_results.json").is_file()
    for name in ("minilm_encoder", "minilm_preprocess", "minilm_embedding"):
        assert (checkout / "saved_models" / "hub" / name / "saved_model.pb"
                ).is_file()
    for name in ("swag", "stsb", "reviews", "pos"):
        assert exported(checkout / "saved_models" / name), name
        assert (checkout / "runs" / name / "eval_results.json").is_file()
    assert json.loads((checkout / "runs" / "swag" / "eval_results.json")
                      .read_text())["dev"]["num_examples"] == 16
    for name in ("train", "dev"):
        assert (checkout / "squad_choices" / f"{name}.jsonl").stat().st_size
    # The texts.txt the README writes: two lines, the second a pair.
    lines = (checkout / "features.jsonl").read_text().splitlines()
    assert len(lines) == 2
    for token in json.loads(lines[1])["features"]:
        assert [layer["index"] for layer in token["layers"]] == [-1, -2, -3, -4]
        assert all(len(layer["values"]) == 384 for layer in token["layers"])
    reviews = (REPO_ROOT / "tfbert" / "data" / "demo" / "SST-2" / "dev.tsv"
               ).read_text().splitlines()
    assert np.load(checkout / "features.npy").shape == (len(reviews) - 1,
                                                         4 * 384)
    predictions = (checkout / "runs" / "reviews" / "predictions" / "dev.tsv"
                   ).read_text().splitlines()
    assert len(predictions) == 1 + 8  # A header and --max_predict_examples.
    query = next(out for command, out in zip(
        [c for c in readme_commands() if c.split()[0] not in NOT_RUN_HERE],
        outputs) if command.startswith("tfbert-query"))
    answers = [json.loads(line)["outputs"] for line in query.splitlines()]
    assert len(answers) == 2
    for answer in answers:
        assert answer["label"] in ("negative", "positive")
        assert sum(answer["probabilities"]) == pytest.approx(1, abs=1e-5)

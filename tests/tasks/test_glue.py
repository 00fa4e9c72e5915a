"""End-to-end GLUE runs with a tiny encoder: the `tfbert-glue` program
(`python -m tasks.glue`) in a subprocess where the process itself is under
test (files, exit, export, kill and resume, two workers), the same lifecycle
in this process (`run_task`) where only the learning is."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import SHOW_ALL
from tests.tasks.conftest import run_task
from tests.tasks.conftest import write_glue_subset as _subset
from tfbert.data import glue as glue_data
from tfbert.tasks.glue import GlueTask

pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO)


def run_glue(args, check=True):
    result = subprocess.run([sys.executable, "-m", "tasks.glue", *args],
                            cwd=REPO, env=ENV, capture_output=True, text=True,
                            timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(result.stdout[-3000:] + result.stderr[-5000:])
    return result


def _common(tiny_checkpoint, data_dir, model_dir, *extra):
    return [f"--init_checkpoint={tiny_checkpoint}", f"--data_dir={data_dir}",
            f"--model_dir={model_dir}", "--max_seq_length=48",
            "--train_batch_size=8", "--eval_batch_size=16",
            "--learning_rate=1e-3", "--num_train_epochs=1", "--seed=3", *extra]


def test_single_sentence_train_eval_predict_export(tmp_path, shared_data_dir,
                                                   tiny_checkpoint):
    data = _subset(shared_data_dir, "sst2", tmp_path / "data")
    dev = (data / "SST-2" / "dev.tsv").read_text().splitlines()[1:]
    test_rows = ["index\tsentence"] + [f"{i}\t{row.split(chr(9))[0]}"
                                      for i, row in enumerate(dev)]
    (data / "SST-2" / "test.tsv").write_text("\n".join(test_rows) + "\n")
    model_dir, export_dir = tmp_path / "model", tmp_path / "export" / "sst2"
    run_glue(["--task=sst2", "--do_train", "--do_eval", "--do_predict",
              f"--export_dir={export_dir}",
              *_common(tiny_checkpoint, data, model_dir)])
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["task"] == "sst2"
    assert results["dev"]["num_examples"] == 24
    predictions = (model_dir / "predictions" / "SST-2.tsv").read_text().splitlines()
    assert predictions[0] == "index\tprediction" and len(predictions) == 25
    assert {line.split("\t")[1] for line in predictions[1:]} <= {"0", "1"}
    # TF Serving layout, nothing half-written beside the version.
    assert sorted(os.listdir(export_dir)) == ["1"]
    assert (export_dir / "1" / "assets.extra" / "tf_serving_warmup_requests").exists()
    # A second export takes the next version.
    run_glue(["--task=sst2", f"--export_dir={export_dir}",
              *_common(tiny_checkpoint, data, model_dir)])
    assert sorted(os.listdir(export_dir)) == ["1", "2"]


def _learnable(shared_data_dir, task, out_dir, n=48):
    """A task whose dev set is its training set: a working training loop
    must fit it far above what the untrained model scores."""
    data = _subset(shared_data_dir, task, out_dir, n_train=n, n_dev=n)
    directory = data / glue_data.get_task(task).directory
    (directory / "dev.tsv").write_text((directory / "train.tsv").read_text())
    return data


def test_classifier_learns_its_training_set(tmp_path, shared_data_dir,
                                            tiny_checkpoint):
    data = _learnable(shared_data_dir, "sst2", tmp_path / "data")
    labels = [e.label for e in glue_data.read_examples(
        data / "SST-2" / "train.tsv", "sst2")]
    majority = max(labels.count("0"), labels.count("1")) / len(labels)
    model_dir = tmp_path / "model"
    run_task(GlueTask, ["--task=sst2", "--do_train", "--do_eval",
                        *_common(tiny_checkpoint, data, model_dir),
                        "--num_train_epochs=12", "--learning_rate=3e-3"])
    accuracy = json.loads((model_dir / "eval_results.json").read_text())[
        "dev"]["accuracy"]
    assert accuracy >= 0.9 > majority + 0.2, (accuracy, majority)


def test_regression_task_learns(tmp_path, shared_data_dir, tiny_checkpoint):
    data = _learnable(shared_data_dir, "stsb", tmp_path / "data")
    model_dir = tmp_path / "model"
    run_task(GlueTask, ["--task=stsb", "--do_train", "--do_eval",
                        *_common(tiny_checkpoint, data, model_dir),
                        "--num_train_epochs=30", "--learning_rate=5e-3"])
    results = json.loads((model_dir / "eval_results.json").read_text())["dev"]
    assert set(results) == {"pearson", "spearman", "num_examples"}
    # An untrained head scores about 0; measured 0.71-0.95 across runs (CPU
    # float reductions are not bitwise stable over 180 steps at this rate).
    assert results["pearson"] > 0.5, results


def test_mnli_evaluates_matched_and_mismatched(tmp_path, shared_data_dir,
                                               tiny_checkpoint):
    header = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\t"
              "sentence2_binary_parse\tsentence1_parse\tsentence2_parse\t"
              "sentence1\tsentence2\tlabel1\tgold_label")
    pairs = glue_data.read_examples(
        glue_data.split_path(shared_data_dir / "glue", "mrpc", "train"), "mrpc")
    labels = ("entailment", "neutral", "contradiction")
    target = tmp_path / "data" / "MNLI"
    target.mkdir(parents=True)
    for split, rows in (("train", pairs[:40]), ("dev_matched", pairs[40:60]),
                        ("dev_mismatched", pairs[60:70])):
        lines = [header] + [
            f"{i}\t0\t0\tgenre\t(\t(\t(\t(\t{e.text_a}\t{e.text_b}\t"
            f"{labels[i % 3]}\t{labels[i % 3]}" for i, e in enumerate(rows)]
        (target / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    model_dir = tmp_path / "model"
    run_task(GlueTask, ["--task=mnli", "--do_train", "--do_eval",
                        *_common(tiny_checkpoint, tmp_path / "data",
                                 model_dir)])
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["dev_matched"]["num_examples"] == 20
    assert results["dev_mismatched"]["num_examples"] == 10


FRESH_PROCESS = SHOW_ALL + """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401
assert "tfbert" not in sys.modules
pairs = json.loads(sys.argv[2])
loaded = tf.saved_model.load(sys.argv[1])
out = loaded.signatures["serving_default"](
    sentence1=tf.constant([a for a, b in pairs]),
    sentence2=tf.constant([b for a, b in pairs]))
assert "tfbert" not in sys.modules, "loading the SavedModel imported tfbert"
print(json.dumps({"probabilities": out["probabilities"].numpy().tolist(),
                  "label": [x.decode() for x in out["label"].numpy()],
                  "cli": show_all(sys.argv[1])}))
"""


@pytest.fixture(scope="module")
def two_worker_run(tmp_path_factory, shared_data_dir, tiny_checkpoint):
    """(data dir, model dir, export dir, each worker's (returncode, stdout,
    stderr)) of one MRPC run of `tfbert-glue` by two local workers (train,
    evaluate, export): the worker test checks the run, the pair-export test
    serves its export (one run for both instead of a run each)."""
    from tests.training.test_distribution import multi_worker_envs

    base = tmp_path_factory.mktemp("two_workers")
    # 30 dev examples: the last eval batch is partial.
    data = _subset(shared_data_dir, "mrpc", base / "data", n_train=64,
                   n_dev=30)
    model_dir, export_dir = base / "model", base / "export"
    workers = [subprocess.Popen(
        [sys.executable, "-m", "tasks.glue", "--task=mrpc", "--do_train",
         "--do_eval", "--distribution_strategy=multi_worker_mirrored",
         f"--export_dir={export_dir}",
         *_common(tiny_checkpoint, data, model_dir)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True) for env in multi_worker_envs(2)]
    finished = []
    for worker in workers:
        stdout, stderr = worker.communicate(timeout=600)
        finished.append((worker.returncode, stdout, stderr))
    return data, model_dir, export_dir, finished


def test_pair_export_serves_in_fresh_process(two_worker_run, tiny_checkpoint,
                                             run_fresh_python):
    """The export of the two-worker MRPC run (the chief exports the final
    weights, which are also the best: one epoch, one evaluation)."""
    import tensorflow as tf

    from tfbert.export import unservable_ops
    from tfbert.tasks import glue as glue_task
    from tfbert.text import BertPreprocessor

    data, model_dir, export_dir, workers = two_worker_run
    for returncode, stdout, stderr in workers:
        assert returncode == 0, stdout[-2000:] + stderr[-4000:]
    version = export_dir / "1"
    assert unservable_ops(str(version)) == []

    task = glue_data.get_task("mrpc")
    pairs = [(e.text_a, e.text_b) for e in glue_data.read_examples(
        data / "MRPC" / "dev.tsv", task)[:6]]
    model = glue_task.build_model(task, str(tiny_checkpoint))
    tf.train.Checkpoint(model=model).restore(tf.train.latest_checkpoint(
        str(model_dir / "checkpoints"))).expect_partial()
    preprocessor = BertPreprocessor.from_pretrained(
        str(tiny_checkpoint), seq_length=48, pad_to_seq_length=False)
    features = preprocessor((tf.constant([a for a, _ in pairs]),
                             tf.constant([b for _, b in pairs])))
    assert int(tf.reduce_sum(features["input_type_ids"])) > 0
    expected = tf.nn.softmax(model(features, training=False)).numpy()

    served = run_fresh_python(FRESH_PROCESS, version, json.dumps(pairs))
    np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5)
    # GLUE's "0"/"1" are served as MRPC's class names.
    assert served["label"] == [("not_equivalent", "equivalent")[i]
                               for i in expected.argmax(-1)]

    cli = served["cli"]
    assert cli["returncode"] == 0, cli["stderr"][-2000:]
    for name in ("serving_default", "serve_token_ids", "sentence1",
                 "sentence2", "probabilities", "input_word_ids",
                 "signature_def['classify']", "['classes']", "['scores']",
                 "Method name is: tensorflow/serving/classify"):
        assert name in cli["stdout"]


def test_resume_after_sigkill_matches_uninterrupted_run(
        tmp_path, shared_data_dir, tiny_checkpoint):
    data = _subset(shared_data_dir, "sst2", tmp_path / "data", n_train=480,
                   n_dev=32)
    args = ["--task=sst2", "--do_train", "--do_eval", "--checkpoint_steps=5",
            "--num_train_epochs=2"]
    reference = tmp_path / "reference"
    run_glue(args + _common(tiny_checkpoint, data, reference))

    killed = tmp_path / "killed"
    process = subprocess.Popen(
        [sys.executable, "-m", "tasks.glue", *args,
         *_common(tiny_checkpoint, data, killed)],
        cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = killed / "checkpoints" / "checkpoint"
    deadline = time.time() + 300
    while not state.exists() and time.time() < deadline:
        assert process.poll() is None, "training ended before a checkpoint"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (killed / "eval_results.json").exists(), "killed too late"

    resumed = run_glue(args + _common(tiny_checkpoint, data, killed))
    assert "Resuming from" in resumed.stdout
    done = int(resumed.stdout.split("Resuming from")[1].split(":")[1].split()[0])
    assert 0 < done < 120
    expected = json.loads((reference / "eval_results.json").read_text())
    actual = json.loads((killed / "eval_results.json").read_text())
    assert actual["dev"]["accuracy"] == pytest.approx(expected["dev"]["accuracy"])
    best_expected = json.loads((reference / "best_metrics.json").read_text())
    best_actual = json.loads((killed / "best_metrics.json").read_text())
    assert best_actual == pytest.approx(best_expected)
    # The same trajectory: the final state is identical.
    reader = {name: tf.train.load_checkpoint(tf.train.latest_checkpoint(
        str(directory / "checkpoints"))) for name, directory in
        (("reference", reference), ("killed", killed))}
    # Every saved tensor: weights, optimizer moments, dropout RNG state.
    names = [n for n, _ in tf.train.list_variables(tf.train.latest_checkpoint(
        str(reference / "checkpoints")))
        if n not in ("_CHECKPOINTABLE_OBJECT_GRAPH",
                     "save_counter/.ATTRIBUTES/VARIABLE_VALUE")]
    assert len(names) > 100
    for name in names:
        np.testing.assert_array_equal(reader["killed"].get_tensor(name),
                                      reader["reference"].get_tensor(name))


def test_two_local_workers_train_and_evaluate(two_worker_run):
    _, model_dir, export_dir, workers = two_worker_run
    for returncode, stdout, stderr in workers:
        assert returncode == 0, stdout[-2000:] + stderr[-4000:]
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["dev"]["num_examples"] == 30
    # The evaluation inside `fit` predicts under the strategy, each worker on
    # part of every batch; the final one runs locally on the same weights.
    best = json.loads((model_dir / "best_metrics.json").read_text())
    assert best == pytest.approx(results["dev"])
    worker_best = model_dir / "worker_tmp" / "1" / "best_metrics.json"
    assert json.loads(worker_best.read_text()) == best
    # Only the chief exports.
    assert sorted(os.listdir(export_dir)) == ["1"]

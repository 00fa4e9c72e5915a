"""The task programs on the other encoder families' checkpoints (tiny HF
models with trained tokenizers, `tests/zoo_checkpoints.py`)."""

import json

import numpy as np
import pytest
import tensorflow as tf

from tests.tasks.conftest import run_task
from tfbert.tasks import runner
from tfbert.tasks.glue import GlueTask
from tfbert.tasks.ner import NerTask
from tfbert.tasks.squad import SquadTask

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("family", ["distilbert", "roberta", "electra",
                                    "albert"])
def test_glue_trains_evaluates_and_exports(family, zoo_checkpoints, tmp_path,
                                           shared_data_dir):
    from tests.tasks.conftest import write_glue_subset
    from tfbert.text import Preprocessor

    checkpoint = zoo_checkpoints[family]
    data = write_glue_subset(shared_data_dir, "mrpc", tmp_path / "data",
                             n_train=32, n_dev=16)
    export_dir = tmp_path / "export"
    task, prepared = run_task(GlueTask, [
        "--task=mrpc", f"--data_dir={data}", f"--init_checkpoint={checkpoint}",
        f"--model_dir={tmp_path / 'model'}", f"--export_dir={export_dir}",
        "--do_train", "--do_eval", "--max_seq_length=48",
        "--train_batch_size=8", "--num_train_epochs=1",
        "--learning_rate=1e-3"])
    results = json.loads((tmp_path / "model" / "eval_results.json").read_text())
    assert results["dev"]["num_examples"] == 16
    # The family's own packing, and the served model equals the trained one.
    assert isinstance(task.preprocessor, type(Preprocessor.from_pretrained(
        checkpoint)))
    pairs = (["A man is eating.", "He left early."],
             ["Someone eats.", "She stayed late."])
    expected = tf.nn.softmax(prepared.model(task.preprocessor(
        tuple(tf.constant(p) for p in pairs)), training=False)).numpy()
    served = tf.saved_model.load(str(export_dir / "1")).signatures[
        "serving_default"](sentence1=tf.constant(pairs[0]),
                           sentence2=tf.constant(pairs[1]))
    np.testing.assert_allclose(served["probabilities"].numpy(), expected,
                               atol=1e-5)


def test_squad_and_ner_on_distilbert(zoo_checkpoints, tmp_path,
                                     shared_data_dir):
    checkpoint = zoo_checkpoints["distilbert"]
    squad = shared_data_dir / "squad_v1.1" / "dev-v1.1.partA.json"
    run_task(SquadTask, [
        f"--train_file={squad}", f"--init_checkpoint={checkpoint}",
        f"--model_dir={tmp_path / 'squad'}", "--do_train",
        "--max_train_examples=16", "--max_seq_length=96", "--doc_stride=32",
        "--max_query_length=24", "--train_batch_size=8",
        "--num_train_epochs=1"])
    lines = (shared_data_dir / "conll2003" / "train.txt").read_text(
        encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "train.txt").write_text("".join(lines[:120]), encoding="utf-8")
    _, prepared = run_task(NerTask, [
        f"--train_file={tmp_path / 'train.txt'}",
        f"--eval_file={tmp_path / 'train.txt'}",
        f"--init_checkpoint={checkpoint}", f"--model_dir={tmp_path / 'ner'}",
        "--do_train", "--do_eval", "--max_seq_length=32",
        "--train_batch_size=8", "--num_train_epochs=1"])
    assert "pooled_output" not in prepared.model.encoder.output
    assert (tmp_path / "ner" / "eval_results.json").exists()


def test_squad_refuses_a_bpe_checkpoint(zoo_checkpoints, tmp_path,
                                        shared_data_dir, capsys):
    from tests.tasks.conftest import parse_task_flags

    squad = shared_data_dir / "squad_v1.1" / "dev-v1.1.partA.json"
    task = parse_task_flags(SquadTask, [
        f"--train_file={squad}",
        f"--init_checkpoint={zoo_checkpoints['roberta']}",
        f"--model_dir={tmp_path / 'm'}", "--do_train"])
    assert runner.run(task) == 2
    assert "WordPiece" in capsys.readouterr().err

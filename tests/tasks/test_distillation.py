"""GLUE distillation end to end with the tiny encoder: a fine-tuned teacher,
a student made of its layers learns from it, resumes exactly, exports."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests.tasks.conftest import run_task, write_glue_subset
from tfbert.tasks.glue import GlueTask

pytestmark = pytest.mark.slow


def _common(data_dir, model_dir, *extra):
    return ["--task=sst2", f"--data_dir={data_dir}", f"--model_dir={model_dir}",
            "--max_seq_length=32", "--train_batch_size=8",
            "--eval_batch_size=16", "--seed=3", *extra]


@pytest.fixture(scope="module")
def teacher_dir(shared_data_dir, tiny_checkpoint, tmp_path_factory):
    """A finished tiny SST-2 run (best weights kept on its dev data)."""
    root = tmp_path_factory.mktemp("distill")
    data = write_glue_subset(shared_data_dir, "sst2", root / "data")
    model_dir = root / "teacher"
    run_task(GlueTask, _common(data, model_dir, "--do_train",
                               f"--init_checkpoint={tiny_checkpoint}",
                               "--num_train_epochs=8", "--learning_rate=3e-3"))
    assert (model_dir / "best.weights.h5").exists()
    return data, model_dir


def _train_losses(model_dir):
    losses = {}
    for path in tf.io.gfile.glob(str(model_dir / "logs" / "train" / "*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == "epoch_loss":
                    losses[event.step] = float(tf.make_ndarray(value.tensor))
    return [losses[step] for step in sorted(losses)]


def _checkpointed(model_dir):
    """The values in the last checkpoint: weights (as the optimizer's
    `_trainable_variables`), optimizer state, progress, RNG state."""
    checkpoint = tf.train.latest_checkpoint(str(model_dir / "checkpoints"))
    return {name: tf.train.load_variable(checkpoint, name)
            for name, _ in tf.train.list_variables(checkpoint)
            if name != "_CHECKPOINTABLE_OBJECT_GRAPH"}


# Without and with the intermediate-layer terms (the teacher then runs in
# every step, outside the checkpoint).
@pytest.mark.parametrize("layer_terms", [
    [], ["--distill_hidden_weight=1", "--distill_attention_weight=0.5"]])
def test_student_learns_from_teacher_resumes_and_exports(tmp_path, capsys,
                                                         teacher_dir,
                                                         layer_terms):
    data, teacher = teacher_dir
    student = tmp_path / "student"
    args = _common(data, student, "--do_train", f"--teacher_model_dir={teacher}",
                   "--student_num_layers=1", "--distill_alpha=0.5",
                   "--distill_temperature=2", "--learning_rate=1e-2",
                   "--num_train_epochs=6", "--checkpoint_steps=6",
                   *layer_terms)
    capsys.readouterr()
    _, prepared = run_task(GlueTask,
                           args + [f"--export_dir={tmp_path / 'export'}"])
    said = ("student layer 0 learns teacher layer 1 (hidden states x1, "
            "attention x0.5)")
    assert (said in capsys.readouterr().out) == bool(layer_terms)
    losses = _train_losses(student)
    # The layer terms (which tests/training/test_layer_transfer.py shows
    # the student learning) are part of the loss, and fall more slowly.
    assert len(losses) >= 6 and losses[-1] < (
        0.95 if layer_terms else 0.9) * losses[0], losses
    assert (tmp_path / "export" / "1" / "saved_model.pb").exists()
    # The student's checkpoint holds the 1-block student's weights only
    # (not the teacher's, with the layer terms too).
    finished = _checkpointed(student)
    weights = [name for name in finished
               if name.startswith("optimizer/_trainable_variables/")]
    assert len(weights) == len(prepared.model.trainable_weights) == 25

    # A run killed before its last checkpoint, restarted: the same weights.
    resumed = tmp_path / "resumed"
    shutil.copytree(student, resumed)
    checkpoints = str(resumed / "checkpoints")
    earlier = tf.train.get_checkpoint_state(
        checkpoints).all_model_checkpoint_paths[0]
    tf.compat.v1.train.update_checkpoint_state(
        checkpoints, str(resumed / "checkpoints" / earlier.split("/")[-1]))
    (resumed / "best_metrics.json").unlink()
    capsys.readouterr()
    run_task(GlueTask, args[:2] + [f"--model_dir={resumed}"] + args[3:])
    assert "Resuming from" in capsys.readouterr().out
    resumed_values = _checkpointed(resumed)
    assert resumed_values.keys() == finished.keys()
    for name, value in resumed_values.items():
        np.testing.assert_array_equal(value, finished[name], name)
    assert json.loads((student / "best_metrics.json").read_text())


def test_squad_student_learns_from_start_and_end_logits(
        tmp_path, shared_data_dir, tiny_checkpoint):
    from tests.tasks.test_squad import V1, _slice
    from tfbert.tasks.squad import SquadTask

    train = _slice(shared_data_dir / V1, tmp_path / "train.json", slice(0, 3))
    common = [f"--train_file={train}", "--max_seq_length=96",
              "--doc_stride=32", "--max_query_length=24",
              "--train_batch_size=8", "--seed=3", "--do_train"]
    # No eval file: the teacher is read from its last checkpoint.
    teacher = tmp_path / "teacher"
    run_task(SquadTask, common + [f"--model_dir={teacher}",
                                  f"--init_checkpoint={tiny_checkpoint}",
                                  "--num_train_epochs=4",
                                  "--learning_rate=3e-3"])
    student = tmp_path / "student"
    run_task(SquadTask, common + [
        f"--model_dir={student}", f"--teacher_model_dir={teacher}",
        "--student_num_layers=1", "--num_train_epochs=6",
        "--learning_rate=1e-2", "--checkpoint_steps=4"])
    losses = _train_losses(student)
    assert len(losses) >= 4 and losses[-1] < 0.9 * losses[0], losses


@pytest.fixture(scope="module")
def ner_teacher(shared_data_dir, tiny_checkpoint, tmp_path_factory):
    """A finished tiny CRF tagger run on real CoNLL-2003 sentences."""
    from tfbert.tasks.ner import NerTask

    root = tmp_path_factory.mktemp("ner_distill")
    lines = (shared_data_dir / "conll2003" / "train.txt").read_text(
        encoding="utf-8").splitlines(keepends=True)
    (root / "train.txt").write_text("".join(lines[:150]), encoding="utf-8")
    common = [f"--train_file={root / 'train.txt'}", "--max_seq_length=32",
              "--train_batch_size=8", "--seed=3", "--use_crf", "--do_train"]
    run_task(NerTask, common + [f"--model_dir={root / 'teacher'}",
                                f"--init_checkpoint={tiny_checkpoint}",
                                "--num_train_epochs=4",
                                "--learning_rate=3e-3"])
    # Later sentences as plain text, one per line.
    sentences, words = [], []
    for line in lines[150:260]:
        if line.strip() and not line.startswith("-DOCSTART-"):
            words.append(line.split()[0])
        elif words:
            sentences.append(" ".join(words))
            words = []
    (root / "unlabelled.txt").write_text("\n".join(sentences) + "\n",
                                         encoding="utf-8")
    return root, common


def test_ner_crf_student_learns_from_the_teachers_emissions(tmp_path, capsys,
                                                            ner_teacher):
    from tfbert.tasks.ner import NerTask

    root, common = ner_teacher
    student = tmp_path / "student"
    capsys.readouterr()
    task, prepared = run_task(NerTask, common + [
        f"--model_dir={student}", f"--teacher_model_dir={root / 'teacher'}",
        "--student_num_layers=1", "--num_train_epochs=5",
        "--learning_rate=1e-2", "--distill_temperature=2",
        f"--distill_file={root / 'unlabelled.txt'}"])
    losses = _train_losses(student)
    assert len(losses) == 5 and losses[-1] < 0.9 * losses[0], losses
    assert prepared.model.use_crf
    assert prepared.model.encoder.config.num_layers == 1
    # The teacher tagged the labelled windows and the unlabelled ones.
    windows = (len(task._features(task.train_sentences))
               + len(task._unlabelled_features()))
    assert len(task._unlabelled_features()) > 0
    assert (f"teacher logits of {windows} training examples"
            in capsys.readouterr().out)


def test_multi_label_student_learns_with_unlabelled_distill_file(
        tmp_path, capsys, shared_data_dir, tiny_checkpoint):
    """tfbert-classify distils (multi-label: its labels are rows, not ids;
    single-label is GLUE's path); --distill_file's lines join the training
    examples, labelled by the teacher only."""
    import csv

    from tfbert.data import glue as glue_data
    from tfbert.tasks.classify import ClassifyTask

    data = write_glue_subset(shared_data_dir, "sst2", tmp_path / "glue",
                             n_train=48, n_dev=0)
    rows = glue_data.read_examples(data / "SST-2" / "train.tsv", "sst2")
    with open(tmp_path / "train.csv", "w", encoding="utf-8",
              newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["text", "label"])
        for row in rows[:32]:
            # A second class on two rows of three.
            extra = ",x" if len(row.text_a) % 3 else ""
            writer.writerow([row.text_a, row.label + extra])
    unlabelled = tmp_path / "unlabelled.txt"
    unlabelled.write_text("\n".join(row.text_a for row in rows[32:]) + "\n\n",
                          encoding="utf-8")
    common = [f"--train_file={tmp_path / 'train.csv'}", "--max_seq_length=32",
              "--train_batch_size=8", "--seed=3", "--do_train",
              "--multi_label"]
    run_task(ClassifyTask, common + [
        f"--model_dir={tmp_path / 'teacher'}", "--num_train_epochs=4",
        f"--init_checkpoint={tiny_checkpoint}", "--learning_rate=3e-3"])
    capsys.readouterr()
    student = tmp_path / "student"
    run_task(ClassifyTask, common + [
        f"--model_dir={student}", f"--teacher_model_dir={tmp_path / 'teacher'}",
        "--student_num_layers=1", "--num_train_epochs=5",
        "--learning_rate=1e-2", f"--distill_file={unlabelled}"])
    assert "teacher logits of 48 training examples" in capsys.readouterr().out
    losses = _train_losses(student)
    assert len(losses) == 5 and losses[-1] < 0.9 * losses[0], losses
    recorded = json.loads((student / "run_fingerprint.json").read_text())
    assert str(unlabelled) in recorded["data"]

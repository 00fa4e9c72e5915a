"""The bad-input suite: every user mistake ends the run before training with
one line naming the flag or file, exit status 2, and nothing left behind.

Most cases run the runner in this process (`runner.run`, which is what the
command line calls); `test_command_line_*` check the real programs too.
"""

import json
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_ROOT
from tests.tasks.conftest import parse_task_flags, write_glue_subset
from tfbert.tasks import runner
from tfbert.tasks.glue import GlueTask
from tfbert.tasks.ner import NerTask
from tfbert.tasks.pretraining import PretrainingTask
from tfbert.tasks.squad import SquadTask


def _refused(capsys, task_class, argv, *expected):
    """Runs `argv`; asserts exit status 2 and one stderr line holding every
    `expected` text; returns that line."""
    status = runner.run(parse_task_flags(task_class, argv))
    err = capsys.readouterr().err.strip()
    assert status == 2, err
    assert len(err.splitlines()) == 1, err
    for text in expected:
        assert str(text) in err, err
    return err


@pytest.fixture
def glue(tmp_path, tiny_checkpoint, sst2_dir):
    """Arguments of a valid tiny GLUE run into tmp_path/model."""
    def args(*extra, data_dir=sst2_dir):
        return ["--task=sst2", f"--data_dir={data_dir}",
                f"--init_checkpoint={tiny_checkpoint}",
                f"--model_dir={tmp_path / 'model'}", "--do_train",
                "--max_seq_length=32", "--num_train_epochs=1", *extra]
    return args


def _nothing_trained(tmp_path):
    model_dir = tmp_path / "model"
    return not (model_dir / "checkpoints").exists() and not (
        model_dir.exists() and (model_dir / ".lock").exists())


@pytest.mark.parametrize("flag, expected", [
    ("--num_train_epochs=0", "--num_train_epochs"),
    ("--num_train_epochs=-1", "--num_train_epochs"),
    ("--max_train_examples=-3", "--max_train_examples"),
    ("--learning_rate=0", "--learning_rate"),
    ("--learning_rate=-1e-5", "--learning_rate"),
    ("--train_batch_size=0", "--train_batch_size"),
    ("--eval_batch_size=-8", "--eval_batch_size"),
    ("--max_seq_length=2", "--max_seq_length=2"),
    ("--max_seq_length=600", "exceeds the 128 positions"),
    ("--warmup_proportion=1.5", "--warmup_proportion"),
    ("--gradient_accumulation_steps=0", "--gradient_accumulation_steps"),
    ("--checkpoint_steps=0", "--checkpoint_steps"),
    ("--layerwise_lr_decay=0", "--layerwise_lr_decay"),
    ("--label_names=a,b,c", "--label_names has 3 names"),
    ("--do_lower_case", "--do_lower_case"),
    ("--vocab_file=/nonexistent/vocab.txt", "/nonexistent/vocab.txt"),
])
def test_bad_flag_values(capsys, tmp_path, glue, flag, expected):
    _refused(capsys, GlueTask, glue(flag), expected)
    assert _nothing_trained(tmp_path)


def test_nothing_to_do(capsys, glue):
    args = [a for a in glue() if a != "--do_train"]
    _refused(capsys, GlueTask, args, "nothing to do")


def test_missing_model_dir(capsys, glue):
    args = [a for a in glue() if not a.startswith("--model_dir")]
    _refused(capsys, GlueTask, args, "--model_dir is required")


def test_eval_without_a_trained_model(capsys, tmp_path, glue):
    args = [a for a in glue() if a != "--do_train"] + ["--do_eval"]
    _refused(capsys, GlueTask, args, "has no trained model")


def test_predict_without_test_file_fails_before_training(
        capsys, tmp_path, glue, shared_data_dir):
    data = write_glue_subset(shared_data_dir, "sst2", tmp_path / "data")
    _refused(capsys, GlueTask, glue("--do_predict", data_dir=data),
             str(data / "SST-2" / "test.tsv"))
    assert _nothing_trained(tmp_path)


def test_header_only_dev_file(capsys, tmp_path, glue, shared_data_dir):
    data = write_glue_subset(shared_data_dir, "sst2", tmp_path / "data")
    (data / "SST-2" / "dev.tsv").write_text("sentence\tlabel\n")
    _refused(capsys, GlueTask, glue("--do_eval", data_dir=data),
             str(data / "SST-2" / "dev.tsv"), "no examples")


def test_directory_instead_of_a_file(capsys, tmp_path, glue, shared_data_dir):
    data = write_glue_subset(shared_data_dir, "sst2", tmp_path / "data")
    (data / "SST-2" / "train.tsv").unlink()
    (data / "SST-2" / "train.tsv").mkdir()
    _refused(capsys, GlueTask, glue(data_dir=data),
             str(data / "SST-2" / "train.tsv"))


def test_checkpoint_without_vocabulary_names_the_flag(capsys, glue):
    _refused(capsys, GlueTask, glue("--init_checkpoint=bert-tiny-cased"),
             "--vocab_file")


def test_read_only_model_dir(capsys, tmp_path, glue):
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    (tmp_path / "model").mkdir(mode=0o555)
    _refused(capsys, GlueTask, glue(), "not writable")


def test_model_dir_under_a_file(capsys, tmp_path, glue):
    (tmp_path / "file").write_text("")
    _refused(capsys, GlueTask, glue(f"--model_dir={tmp_path / 'file' / 'm'}"),
             str(tmp_path / "file"))


def test_model_dir_in_use(capsys, tmp_path, glue):
    from tfbert.training import ModelDirLock

    model_dir = tmp_path / "model"
    with ModelDirLock(str(model_dir)):
        _refused(capsys, GlueTask, glue(), "in use", str(os.getpid()))


@pytest.mark.slow
def test_rerun_with_other_flags_names_what_changed(capsys, tmp_path, glue):
    from tests.tasks.conftest import run_task

    run_task(GlueTask, glue("--train_batch_size=16"))
    _refused(capsys, GlueTask, glue("--train_batch_size=8"),
             "--train_batch_size", "--overwrite_model_dir")


def test_squad_flag_combinations(capsys, tmp_path, tiny_checkpoint,
                                 shared_data_dir):
    v1 = shared_data_dir / "squad_v1.1" / "dev-v1.1.partA.json"
    base = [f"--init_checkpoint={tiny_checkpoint}",
            f"--model_dir={tmp_path / 'model'}", "--max_seq_length=64",
            "--max_query_length=16", "--doc_stride=32"]
    _refused(capsys, SquadTask, base + ["--do_train"], "--train_file")
    _refused(capsys, SquadTask, base + ["--do_eval"], "--eval_file")
    for flag in ("--doc_stride=0", "--doc_stride=-4", "--doc_stride=100",
                 "--n_best_size=0", "--max_answer_length=0"):
        _refused(capsys, SquadTask,
                 base + ["--do_train", f"--train_file={v1}", flag],
                 flag.split("=")[0])
    _refused(capsys, SquadTask, base + ["--do_train", f"--train_file={v1}",
                                        "--max_query_length=62"],
             "--max_seq_length=64")
    assert _nothing_trained(tmp_path)


def test_squad_v2_data_needs_version_2(capsys, tmp_path, tiny_checkpoint,
                                       shared_data_dir):
    v2 = (shared_data_dir / "squad_v2.0"
          / "dev-v2.0.Computational_complexity_theory.json")
    _refused(capsys, SquadTask,
             [f"--init_checkpoint={tiny_checkpoint}",
              f"--model_dir={tmp_path / 'model'}", "--do_train",
              f"--train_file={v2}"], "--version=2.0")


def test_ner_needs_its_files(capsys, tmp_path, tiny_checkpoint):
    base = [f"--init_checkpoint={tiny_checkpoint}",
            f"--model_dir={tmp_path / 'model'}"]
    _refused(capsys, NerTask, base + ["--do_train"], "--train_file")
    only_docstart = tmp_path / "docstart.txt"
    only_docstart.write_text("-DOCSTART- -X- -X- O\n\n")
    _refused(capsys, NerTask, base + ["--do_train",
                                      f"--train_file={only_docstart}"],
             str(only_docstart))
    _refused(capsys, NerTask, base + ["--do_eval", "--labels=O,B-PER,I-PER"],
             "--eval_file")
    _refused(capsys, NerTask, base + ["--do_train", "--window_stride=0",
                                      f"--train_file={only_docstart}"],
             "--window_stride")


def test_pretraining_refuses_data_of_another_vocabulary(
        capsys, tmp_path, tiny_checkpoint):
    from tfbert.data import pretraining
    from tfbert.text import BertTokenizer

    small = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"])
    data = tmp_path / "data.tfrecord"
    pretraining.write_instances([], [str(data)], 32, 5)
    pretraining.write_vocabulary_records([str(data)], small)
    _refused(capsys, PretrainingTask,
             [f"--init_checkpoint={tiny_checkpoint}",
              f"--model_dir={tmp_path / 'model'}", "--do_train",
              f"--input_file={data}", "--max_seq_length=32"],
             str(data), "another vocabulary")


def test_pretraining_needs_exactly_one_source(capsys, tmp_path,
                                              tiny_checkpoint):
    _refused(capsys, PretrainingTask,
             [f"--init_checkpoint={tiny_checkpoint}",
              f"--model_dir={tmp_path / 'model'}", "--do_train"],
             "--input_file", "--corpus_file")


@pytest.mark.slow
def test_command_line_errors_are_one_line_without_traceback(
        tmp_path, tiny_checkpoint, sst2_dir):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    for module, args, expected in [
            ("tasks.glue", ["--task=sst2", f"--data_dir={sst2_dir}",
                            f"--model_dir={tmp_path / 'm'}", "--do_train",
                            f"--init_checkpoint={tiny_checkpoint}",
                            "--learning_rate=-1"], "--learning_rate"),
            ("tasks.squad", ["--do_train", "--doc_stride=0",
                             f"--model_dir={tmp_path / 'm'}"],
             "--doc_stride")]:
        start = time.time()
        result = subprocess.run([sys.executable, "-m", module, *args],
                                cwd=REPO_ROOT, env=env, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 2, result.stderr[-2000:]
        assert "Traceback" not in result.stderr
        program = module.split(".")[-1]
        lines = [line for line in result.stderr.splitlines()
                 if line.startswith(f"{program}: error:")]
        assert len(lines) == 1 and expected in lines[0], result.stderr
        assert time.time() - start < 60


def test_pretraining_refuses_another_objective_and_a_lone_discriminator(
        capsys, tmp_path, zoo_checkpoints):
    from tfbert.data import pretraining
    from tfbert.text import Preprocessor

    albert = zoo_checkpoints["albert"]
    data = tmp_path / "data.tfrecord"
    pretraining.write_instances([], [str(data)], 32, 5)
    pretraining.write_vocabulary_records(
        [str(data)], Preprocessor.from_pretrained(albert).tokenizer,
        "next_sentence")
    _refused(capsys, PretrainingTask,
             [f"--init_checkpoint={albert}",
              f"--model_dir={tmp_path / 'model'}", "--do_train",
              f"--input_file={data}", "--max_seq_length=32"],
             str(data), "sentence objective next_sentence",
             "the model's is sentence_order")
    # The zoo's ELECTRA checkpoint is an ElectraForPreTraining.
    _refused(capsys, PretrainingTask,
             [f"--init_checkpoint={zoo_checkpoints['electra']}",
              f"--model_dir={tmp_path / 'electra'}", "--do_train",
              f"--input_file={data}", "--max_seq_length=32"],
             "--init_checkpoint", "ELECTRA discriminator",
             "pass --generator_checkpoint")
    _refused(capsys, PretrainingTask,
             [f"--init_checkpoint={albert}",
              f"--generator_checkpoint={zoo_checkpoints['electra']}",
              f"--model_dir={tmp_path / 'albert'}", "--do_train",
              f"--input_file={data}", "--max_seq_length=32"],
             "--generator_checkpoint is read only with an ELECTRA")
    assert not (tmp_path / "model" / "checkpoints").exists()


@pytest.fixture(scope="module")
def teacher_dirs(tmp_path_factory, tiny_checkpoint):
    """`make(**flags, num_classes=2)`: a teacher model directory as a
    finished SST-2 run leaves it (untrained weights suffice here)."""
    from tfbert.data import glue as glue_data
    from tfbert.tasks.glue import build_model
    from tfbert.training.best_model import save_inference_weights

    root = tmp_path_factory.mktemp("teachers")
    weights = {}
    for num_classes, task in ((2, "sst2"), (3, "mnli")):
        path = root / f"{num_classes}.weights.h5"
        save_inference_weights(build_model(glue_data.get_task(task),
                                           str(tiny_checkpoint)), path)
        weights[num_classes] = path.read_bytes()

    def make(num_classes=2, **overrides):
        directory = root / f"teacher{len(list(root.iterdir()))}"
        directory.mkdir()
        flags = {"--task": "sst2", "--init_checkpoint": str(tiny_checkpoint),
                 "--max_seq_length": 32, "--classifier_dropout": 0.1,
                 **overrides}
        (directory / "run_fingerprint.json").write_text(json.dumps(flags))
        (directory / "best.weights.h5").write_bytes(weights[num_classes])
        return directory
    return make


@pytest.mark.parametrize("flags, expected", [
    (["--distill_alpha=1.5"], "--distill_alpha must be in [0, 1]"),
    (["--distill_alpha=-0.1"], "--distill_alpha must be in [0, 1]"),
    (["--distill_temperature=0"], "--distill_temperature must be positive"),
    (["--distill_temperature=-2"], "--distill_temperature must be positive"),
    (["--student_num_layers=0"], "--student_num_layers must be positive"),
    (["--student_num_layers=3"], "a student needs 1 to 2 layers"),
])
def test_distillation_flag_values(capsys, tmp_path, glue, teacher_dirs,
                                  flags, expected):
    _refused(capsys, GlueTask,
             glue(f"--teacher_model_dir={teacher_dirs()}", *flags), expected)
    assert _nothing_trained(tmp_path)


@pytest.mark.parametrize("teacher, expected", [
    ({"--task": "mrpc"}, "--task=mrpc, this run has --task=sst2"),
    ({"--max_seq_length": 64},
     "--max_seq_length=64, this run has --max_seq_length=32"),
    ({"num_classes": 3}, "another label set"),
])
def test_teacher_of_another_run(capsys, tmp_path, glue, teacher_dirs, teacher,
                                expected):
    _refused(capsys, GlueTask, glue(
        f"--teacher_model_dir={teacher_dirs(**teacher)}"), expected)
    assert _nothing_trained(tmp_path)


def test_teacher_of_another_vocabulary(capsys, tmp_path, glue, teacher_dirs):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                "a", "b"]) + "\n")
    teacher = teacher_dirs(**{"--vocab_file": str(vocab)})
    _refused(capsys, GlueTask, glue(f"--teacher_model_dir={teacher}"),
             "has another vocabulary")
    assert _nothing_trained(tmp_path)


def test_teacher_flags_need_a_teacher(capsys, tmp_path, glue):
    _refused(capsys, GlueTask, glue("--distill_temperature=3"),
             "--distill_temperature is read only with --teacher_model_dir")
    _refused(capsys, GlueTask, glue(f"--teacher_model_dir={tmp_path}"),
             "not a trained run")


def test_squad_refuses_a_teacher_of_another_task(capsys, tmp_path,
                                                 tiny_checkpoint,
                                                 shared_data_dir,
                                                 teacher_dirs):
    v1 = shared_data_dir / "squad_v1.1" / "dev-v1.1.partA.json"
    base = [f"--init_checkpoint={tiny_checkpoint}",
            f"--model_dir={tmp_path / 'model'}", "--max_seq_length=32",
            "--max_query_length=8", "--doc_stride=16", "--do_train",
            f"--train_file={v1}"]
    # An SST-2 run, and one that passes for SQuAD 1.1 but holds a
    # classifier's weights.
    _refused(capsys, SquadTask,
             base + [f"--teacher_model_dir={teacher_dirs()}"],
             "--version=None, this run has --version=1.1")
    _refused(capsys, SquadTask, base + [
        f"--teacher_model_dir={teacher_dirs(**{'--version': '1.1'})}"],
        "another label set")
    _refused(capsys, SquadTask, base + [
        f"--teacher_model_dir={teacher_dirs(**{'--version': '1.1'})}",
        "--distill_temperature=0"], "--distill_temperature")
    assert _nothing_trained(tmp_path)

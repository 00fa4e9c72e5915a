"""The bad-input suite: every user mistake ends the run before training with
one line naming the flag or file, exit status 2, and nothing left behind.

Most cases run the runner in this process (`runner.run`, which is what the
command line calls); `test_command_line_*` check the real programs too.
"""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_ROOT
from tests.tasks.conftest import parse_task_flags, write_glue_subset
from tfbert.tasks import runner
from tfbert.tasks.glue import GlueTask
from tfbert.tasks.multiple_choice import MultipleChoiceTask
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
    ("--max_eval_examples=-1", "--max_eval_examples"),
    ("--max_predict_examples=-1", "--max_predict_examples"),
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


def test_preset_without_weights_warns(capsys, tmp_path, sst2_dir):
    # A check-only run: the model is built, then --max_seq_length refused.
    args = ["--task=sst2", f"--data_dir={sst2_dir}",
            "--init_checkpoint=bert-base-uncased",
            f"--model_dir={tmp_path / 'model'}", "--do_train",
            "--max_seq_length=600"]
    status = runner.run(parse_task_flags(GlueTask, args))
    warning, error = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert re.fullmatch(r"\S+: warning: preset 'bert-base-uncased' has no "
                        r"pretrained weights here: .*randomly initialised.*"
                        r"local checkpoint directory .*", warning), warning
    assert "error: --max_seq_length=600 exceeds" in error
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
             "--doc_stride"),
            ("tasks.extract_features",
             [f"--input_file={tmp_path / 'missing.txt'}",
              f"--output_file={tmp_path / 'out.jsonl'}"], "missing.txt")]:
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


@pytest.mark.parametrize("args, expected", [
    (["--input_file={missing}"], "missing.txt: no such file"),
    (["--input_file={texts}", "--layers=-1,x"], "--layers: 'x' is not"),
    (["--input_file={texts}", "--layers=-1,-7"],
     "--layers: layer index -7 is outside [-2, 1]"),
    (["--input_file={texts}", "--layers=1,-1"], "name a layer twice"),
    (["--input_file={texts}", "--output_file={tmp}/out.npy"],
     "needs --pooling"),
    (["--input_file={texts}", "--pooling=mean"], "output is a .npy"),
    (["--input_file={texts}", "--layer_combination=sum"],
     "--layer_combination is read only with --pooling"),
    (["--input_file={texts}", "--batch_size=0"], "--batch_size"),
    (["--input_file={texts}", "--max_seq_length=600"],
     "exceeds the 128 positions"),
    (["--input_file={jsonl}", "--text_column=sentence"],
     "input.jsonl:2: no column 'sentence'"),
    (["--input_file={texts}", "--output_file={tmp}/no/out.jsonl"],
     "not a writable directory"),
])
def test_extract_features_refuses(capsys, tmp_path, tiny_checkpoint, args,
                                  expected):
    from absl import flags

    from tfbert.tasks import extract_features

    (tmp_path / "input.txt").write_text("A text.\nAnother ||| pair.\n")
    (tmp_path / "input.jsonl").write_text(
        '{"sentence": "A text."}\n{"text": "No sentence."}\n')
    paths = dict(missing=tmp_path / "missing.txt",
                 texts=tmp_path / "input.txt", jsonl=tmp_path / "input.jsonl",
                 tmp=tmp_path)
    argv = [f"--init_checkpoint={tiny_checkpoint}",
            f"--output_file={tmp_path / 'out.jsonl'}"]
    argv += [arg.format(**paths) for arg in args]
    flag_values = flags.FlagValues()
    runner.define(flag_values, extract_features._FLAGS)
    flag_values(["test", *argv])
    with pytest.raises((ValueError, OSError)) as error:
        extract_features.extract(
            extract_features.config_from_flags(flag_values), verbose=0)
    runner.report_error(error.value)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err
    assert not (tmp_path / "out.jsonl").exists()


def test_multiple_choice_refuses(capsys, tmp_path, tiny_checkpoint):
    good = {"context": "Q?", "choices": ["a", "b", "c", "d"], "label": 3}
    rows = {"train.jsonl": [good, dict(good, choices=["a", "b", "c"])],
            "dev.jsonl": [good, good, dict(good, label=4)]}
    for name, values in rows.items():
        (tmp_path / name).write_text(
            "".join(json.dumps(row) + "\n" for row in values))
    (tmp_path / "ok.jsonl").write_text(json.dumps(good) + "\n")

    def args(*extra):
        return [f"--init_checkpoint={tiny_checkpoint}",
                f"--model_dir={tmp_path / 'model'}", "--do_train",
                "--max_seq_length=32", *extra]
    _refused(capsys, MultipleChoiceTask,
             args(f"--train_file={tmp_path / 'train.jsonl'}"),
             f"{tmp_path / 'train.jsonl'}:2: 3 choices, expected 4")
    _refused(capsys, MultipleChoiceTask,
             args(f"--train_file={tmp_path / 'ok.jsonl'}",
                  f"--dev_file={tmp_path / 'dev.jsonl'}"),
             f"{tmp_path / 'dev.jsonl'}:3: label 4 is not a choice index")
    _refused(capsys, MultipleChoiceTask,
             args(f"--train_file={tmp_path / 'ok.jsonl'}", "--do_eval"),
             "--do_eval needs --dev_file")
    _refused(capsys, MultipleChoiceTask,
             args(f"--train_file={tmp_path / 'ok.jsonl'}", "--num_choices=1"),
             "--num_choices must be >= 2")
    _refused(capsys, MultipleChoiceTask, args(), "--do_train needs "
             "--train_file")
    assert _nothing_trained(tmp_path)

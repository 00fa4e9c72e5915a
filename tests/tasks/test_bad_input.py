"""The bad-input suite: every user mistake ends the run before training with
one line naming the flag or file, exit status 2, and nothing left behind.

Most cases run the runner in this process (`runner.run`, which is what the
command line calls); `test_command_line_*` check the real programs too.
"""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_ROOT
from tests.tasks.conftest import (parse_task_flags, run_program,
                                  write_glue_subset)
from tfbert.tasks import runner
from tfbert.tasks.classify import ClassifyTask
from tfbert.tasks.glue import GlueTask
from tfbert.tasks.multiple_choice import MultipleChoiceTask
from tfbert.tasks.ner import NerTask
from tfbert.tasks.pretraining import PretrainingTask
from tfbert.tasks.squad import SquadTask
from tfbert_cli import program, task_flags


def _refused(capsys, task_class, argv, *expected):
    """Runs `argv`; asserts exit status 2 and one stderr line holding every
    `expected` text; returns that line."""
    status = run_program(task_class, argv)
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
    # Non-finite and absurd values: refused naming the flag and its bound.
    ("--learning_rate=inf", "--learning_rate must be in (0, 1], got inf"),
    ("--learning_rate=nan", "--learning_rate must be in (0, 1], got nan"),
    ("--learning_rate=1e6", "--learning_rate must be in (0, 1]"),
    ("--num_train_epochs=1e12", "--num_train_epochs must be in (0, 100000]"),
    ("--num_train_epochs=inf", "--num_train_epochs must be in (0, 100000]"),
    ("--num_train_epochs=nan", "--num_train_epochs"),
    ("--warmup_proportion=nan", "--warmup_proportion must be in [0, 1]"),
    ("--weight_decay=inf", "--weight_decay must be in [0, 1]"),
    ("--weight_decay=-0.01", "--weight_decay must be in [0, 1]"),
    ("--adam_epsilon=inf", "--adam_epsilon must be in (0, 1]"),
    ("--layerwise_lr_decay=nan", "--layerwise_lr_decay must be in (0, 1]"),
    ("--label_names=a,b,c", "--label_names has 3 names"),
    ("--do_lower_case", "--do_lower_case"),
    ("--vocab_file=/nonexistent/vocab.txt", "/nonexistent/vocab.txt"),
])
def test_bad_flag_values(capsys, tmp_path, glue, flag, expected):
    _refused(capsys, GlueTask, glue(flag), expected)
    assert _nothing_trained(tmp_path)
    # Not even an empty model dir is left (some checks come after it is
    # made, e.g. the checkpoint's positions).
    assert not (tmp_path / "model").exists()


def test_refused_run_keeps_a_model_dir_it_did_not_create(capsys, tmp_path,
                                                         glue):
    (tmp_path / "model").mkdir()
    _refused(capsys, GlueTask, glue("--max_seq_length=600"), "600")
    assert os.listdir(tmp_path / "model") == []


@pytest.mark.parametrize("flag", ["model_dir", "export_dir"])
def test_output_locations_that_are_files(capsys, tmp_path, glue, flag):
    file = tmp_path / "file"
    file.write_text("")
    _refused(capsys, GlueTask, glue(f"--{flag}={file}"), f"--{flag}",
             "is a file")
    _refused(capsys, GlueTask, glue(f"--{flag}={file / 'below' / 'it'}"),
             f"--{flag}", str(file), "is a file")
    assert not (tmp_path / "model").exists()
    assert file.read_text() == ""


@pytest.mark.parametrize("flag", ["model_dir", "export_dir"])
def test_output_locations_on_a_read_only_file_system(capsys, tmp_path, glue,
                                                     monkeypatch, flag):
    """A read-only mount refuses even root: injected for paths under
    `read_only`, as the kernel would answer (EROFS)."""
    import errno
    import tempfile

    read_only = tmp_path / "mnt"
    read_only.mkdir()
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and str(dir).startswith(str(read_only)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    _refused(capsys, GlueTask, glue(f"--{flag}={read_only / 'out'}"),
             f"--{flag}", "not writable", "Read-only file system")
    assert _nothing_trained(tmp_path)
    assert os.listdir(read_only) == []


def test_malformed_config_json_is_named_without_a_vocabulary_hint(
        capsys, tmp_path, glue):
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text('{"model_type": "bert",\n')
    err = _refused(capsys, GlueTask,
                   glue(f"--init_checkpoint={checkpoint}"),
                   f"{checkpoint / 'config.json'}:2", "invalid JSON")
    assert "--vocab_file" not in err


@pytest.mark.parametrize("argv", [
    ["--num_train_epochs=abc"], ["--no_such_flag=1"], ["--do_train=maybe"]])
def test_flag_parsing_errors_exit_2_in_one_line(capsys, argv):
    from absl import flags

    flag_values = flags.FlagValues()
    task_flags.define_flags(GlueTask.program, flag_values)
    with pytest.raises(SystemExit) as info:
        program._parse_flags(["glue", *argv], flag_values)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ": error: " in err, err
    assert argv[0].split("=")[0].lstrip("-").removeprefix("no_") in err


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
    status = run_program(GlueTask, args)
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
    # A hang fails at subprocess.run's timeout, which is generous: the
    # suite's other worker shares the cores.
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
              f"--output_file={tmp_path / 'out.jsonl'}"], "missing.txt"),
            ("tasks.squad_choices",
             [f"--squad_file={tmp_path / 'missing.json'}",
              f"--output_dir={tmp_path / 'choices'}"], "missing.json"),
            # absl's own flag parsing (it would exit 1).
            ("tasks.glue", ["--num_train_epochs=abc"], "--num_train_epochs"),
            ("tasks.classify", ["--do_train", f"--model_dir={tmp_path / 'm'}",
                                f"--train_file={tmp_path / 'train.xlsx'}"],
             "unknown file type")]:
        result = subprocess.run([sys.executable, "-m", module, *args],
                                cwd=REPO_ROOT, env=env, capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 2, result.stderr[-2000:]
        assert "Traceback" not in result.stderr
        program = module.split(".")[-1]
        lines = [line for line in result.stderr.splitlines()
                 if line.startswith(f"{program}: error:")]
        assert len(lines) == 1 and expected in lines[0], result.stderr


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
    from tfbert_cli import extract_features as extract_features_program

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
    program.define(flag_values, extract_features_program._FLAGS)
    flag_values(["test", *argv])
    with pytest.raises((ValueError, OSError)) as error:
        extract_features.extract(extract_features.extraction_config(
            program.parsed_config(extract_features_program._FLAGS,
                                  flag_values)), verbose=0)
    # As the program reports it: parameters named as its flags.
    program.report_error(error.value, parameters=flag_values)
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
@pytest.mark.parametrize("args, expected", [
    (["--squad_file={tmp}/missing.json"], r"missing\.json: No such file"),
    (["--squad_file={tmp}"], "is a directory, expected a SQuAD JSON file"),
    (["--squad_file={tmp}/broken.json"], r"broken\.json:2: invalid JSON"),
    (["--squad_file={tmp}/other.json"], r"other\.json: no 'data' field"),
    (["--squad_file={tmp}/list.json"], r"list\.json: not a SQuAD file"),
    (["--squad_file={squad}", "--num_choices=1"], "--num_choices must be"),
    (["--squad_file={squad}", "--num_choices=60"],
     "--num_choices=60: no answerable question"),
    (["--squad_file={squad}", "--dev_articles=0"],
     r"--dev_articles must be in \[1, 24\)"),
    (["--squad_file={squad}", "--output_dir={tmp}/a_file"],
     "--output_dir=.*a_file is a file"),
])
def test_squad_choices_refuses(capsys, tmp_path, shared_data_dir, args,
                               expected):
    from absl import flags

    from tfbert.tasks import squad_choices
    from tfbert_cli import program
    from tfbert_cli import squad_choices as squad_choices_program

    (tmp_path / "broken.json").write_text('{"data": [\n')
    (tmp_path / "other.json").write_text('{"version": "1.1"}\n')
    (tmp_path / "list.json").write_text('{"data": [[1]]}\n')
    (tmp_path / "a_file").write_text("")
    paths = dict(tmp=tmp_path,
                 squad=shared_data_dir / "squad_v1.1" / "dev-v1.1.partA.json")
    flag_values = flags.FlagValues()
    program.define(flag_values, squad_choices_program._FLAGS)
    flag_values(["test", f"--output_dir={tmp_path / 'out'}",
                 *(arg.format(**paths) for arg in args)])
    with pytest.raises((ValueError, OSError)) as error:
        squad_choices.run(program.parsed_config(squad_choices_program._FLAGS,
                                                flag_values))
    # As the program reports it: parameters named as its flags.
    runner.report_error(error.value, parameters=flag_values)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(expected, err), err
    assert not (tmp_path / "out").exists()


# Faults once the run has started: one line, exit status 1 (130 for Ctrl-C),
# nothing half-written left, the training state intact.

@pytest.fixture(scope="module")
def trained_glue(tmp_path_factory, tiny_checkpoint, sst2_dir):
    """Arguments of a tiny GLUE run into a model dir trained once (one
    epoch, checkpoints every 2 steps), for runs that export or resume it."""
    from tests.tasks.conftest import run_task

    model_dir = tmp_path_factory.mktemp("trained") / "model"
    args = ["--task=sst2", f"--data_dir={sst2_dir}",
            f"--init_checkpoint={tiny_checkpoint}", f"--model_dir={model_dir}",
            "--max_seq_length=32", "--num_train_epochs=1",
            "--train_batch_size=16"]
    run_task(GlueTask, [*args, "--do_train"])
    return args, model_dir


def _state(model_dir):
    return {name: os.path.getsize(os.path.join(root, name))
            for root, _, names in os.walk(model_dir) for name in names}


@contextlib.contextmanager
def _small_tmpfs(path, size):
    """A tmpfs of `size` mounted at `path` (tests may run as root); skips
    the test where mounting is not possible."""
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}",
                              "tmpfs", str(path)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        # Lazily: a failed run may leave a file open there (its TensorBoard
        # writer) until the process exits.
        subprocess.run(["umount", "--lazy", str(path)], check=True)


def _failed(capsys, status, task_class, argv, *expected):
    got = run_program(task_class, argv)
    out, err = capsys.readouterr()
    err = err.strip()
    assert got == status, out + err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for text in expected:
        assert str(text) in err, err
    return err


@pytest.mark.slow
def test_export_to_a_full_disk(capsys, tmp_path, trained_glue):
    args, model_dir = trained_glue
    before = _state(model_dir)
    with _small_tmpfs(tmp_path / "disk", "256k") as disk:
        export_dir = disk / "export"
        _failed(capsys, 1, GlueTask, [*args, f"--export_dir={export_dir}"],
                f"cannot write {export_dir}: the disk is full", "MB free")
        assert os.listdir(export_dir) == []  # No staging dir left.
    assert _state(model_dir) == before


@pytest.mark.slow
def test_export_refuses_non_finite_weights(capsys, tmp_path, trained_glue,
                                           monkeypatch):
    import numpy as np

    import tfbert.training

    args, model_dir = trained_glue
    restore = tfbert.training.restore_trained_weights

    def restore_diverged(model, directory):
        restore(model, directory)
        weight = model.weights[3]
        weight.assign(np.full(weight.shape, np.nan, weight.dtype))

    # Without --do_eval the run has no dev data: it exports the last weights.
    monkeypatch.setattr(tfbert.training, "restore_trained_weights",
                        restore_diverged)
    export_dir = tmp_path / "export"
    _failed(capsys, 1, GlueTask, [*args, f"--export_dir={export_dir}"],
            f"cannot export to {export_dir}", "is not finite")
    assert not export_dir.exists()


@pytest.mark.slow
def test_checkpoint_on_a_full_disk_keeps_the_previous_one(
        capsys, tmp_path, tiny_checkpoint, sst2_train_dir, trained_glue):
    """The disk holds one checkpoint (the trained fixture's size) and not a
    second: one line naming the checkpoint dir and its free space, no
    `ckpt-2_temp` left, `ckpt-1` still the latest."""
    import tensorflow as tf

    _, trained = trained_glue
    one = sum(size for name, size in _state(trained / "checkpoints").items()
              if name.startswith("ckpt-1."))
    with _small_tmpfs(tmp_path / "disk", str(int(1.5 * one))) as disk:
        model_dir = disk / "model"
        args = ["--task=sst2", f"--data_dir={sst2_train_dir}",
                f"--init_checkpoint={tiny_checkpoint}",
                f"--model_dir={model_dir}", "--max_seq_length=32",
                "--num_train_epochs=1", "--train_batch_size=16",
                "--checkpoint_steps=1", "--do_train"]
        _failed(capsys, 1, GlueTask, args,
                f"cannot write {model_dir / 'checkpoints'}: the disk is full",
                "MB free")
        names = os.listdir(model_dir / "checkpoints")
        assert not [name for name in names if "_temp" in name], names
        latest = tf.train.latest_checkpoint(str(model_dir / "checkpoints"))
        assert latest == str(model_dir / "checkpoints" / "ckpt-1")
        tf.train.load_checkpoint(latest)  # Complete and readable.
        assert not (model_dir / ".lock").exists()


@contextlib.contextmanager
def _sigint_not_ignored():
    """Programs started in the block get SIGINT's default action, as from a
    terminal: a suite started in the background (`make test &`) ignores
    SIGINT, its programs inherit that, and Python keeps it ignored."""
    previous = signal.getsignal(signal.SIGINT)
    if previous == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.slow
def test_ctrl_c_says_what_is_saved_and_that_rerunning_resumes(
        tmp_path, tiny_checkpoint, sst2_train_dir):
    model_dir = tmp_path / "model"
    args = ["--task=sst2", f"--data_dir={sst2_train_dir}",
            f"--init_checkpoint={tiny_checkpoint}", f"--model_dir={model_dir}",
            "--max_seq_length=32", "--num_train_epochs=500",
            "--train_batch_size=16", "--checkpoint_steps=2", "--do_train"]
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="2")
    with _sigint_not_ignored():
        process = subprocess.Popen(
            [sys.executable, "-m", "tasks.glue", *args], cwd=REPO_ROOT,
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    state = model_dir / "checkpoints" / "checkpoint"
    deadline = time.monotonic() + 120
    while not state.exists():
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no checkpoint within 120 s"
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130, err[-3000:]
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("glue: ")]
    assert len(lines) == 1, err[-3000:]
    assert re.match(r"glue: interrupted at step \d+ of \d+: .*/ckpt-\d+ "
                    r"holds step \d+; rerunning the same command resumes "
                    "from there$", lines[0]), lines[0]
    saved = lines[0].split("ckpt-")[1].split()[0]
    assert (model_dir / "checkpoints" / f"ckpt-{saved}.index").exists()
    assert not (model_dir / ".lock").exists()
@pytest.fixture
def sentence(tmp_path, tiny_checkpoint):
    """Arguments of a valid tiny tfbert-sentence run on a 4-row TSV, and a
    writer of other training files."""
    def write(name, text):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    rows = "a\tb\tscore\nA cat.\tA kitten.\t4.5\nRain.\tSun.\t0.5\n" \
        "Dogs run.\tA dog runs.\t4\nTea.\tCoffee.\t2\n"
    train = write("train.tsv", rows)

    def args(*extra, train_file=train):
        return [f"--train_file={train_file}", "--text_a_column=a",
                "--text_b_column=b", f"--init_checkpoint={tiny_checkpoint}",
                f"--model_dir={tmp_path / 'model'}", "--do_train",
                "--max_seq_length=16", *extra]
    args.write = write
    return args


@pytest.mark.parametrize("flags, expected", [
    (["--text_b_column=nope"], ["train.tsv:2", "no column 'nope'"]),
    (["--label_column=score", "--loss=cosine"],
     ["train.tsv:2", "4.5, outside the scale [0, 1]", "--score_scale"]),
    (["--train_batch_size=1"], ["--train_batch_size >= 2"]),
    (["--loss=cosent"], ["--loss=cosent needs --label_column"]),
    (["--loss=triplet"], ["--loss=triplet needs --text_negative_column"]),
    (["--loss=contrastive", "--label_column=score", "--score_scale=5"],
     ["needs 0/1 labels in column 'score'"]),
    (["--score_scale=0"], ["--score_scale must be positive"]),
    (["--do_eval"], ["--do_eval needs --eval_file"]),
])
def test_sentence_bad_flags(capsys, tmp_path, sentence, flags, expected):
    from tfbert.tasks.sentence import SentenceTask

    _refused(capsys, SentenceTask, sentence(*flags), *expected)
    assert _nothing_trained(tmp_path)


@pytest.mark.parametrize("name, text, expected", [
    ("empty.tsv", "a\tb\nA cat.\t \n", ["empty.tsv:2", "column 'b' is empty"]),
    ("header.csv", "a,b\n", ["header.csv has no examples"]),
    ("bad.jsonl", '{"a": "x", "b": "y"}\n[1]\n',
     ["bad.jsonl:2", "expected a JSON object"]),
    ("pairs.txt", "a\tb\n", ["pairs.txt: unknown file type"]),
    ("same.tsv", "a\tb\nA cat.\tx\nA cat.\ty\n",
     ["--loss=mnrl needs at least 2 distinct 'a' texts"]),
])
def test_sentence_bad_files(capsys, tmp_path, sentence, name, text,
                            expected):
    from tfbert.tasks.sentence import SentenceTask

    path = sentence.write(name, text)
    _refused(capsys, SentenceTask, sentence(train_file=path), *expected)
def _table(path, text):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def classify(tmp_path, tiny_checkpoint):
    """Arguments of a tiny classify run on a valid train.csv / dev.csv in
    tmp_path (each replaced by the test's bad file)."""
    train = _table(tmp_path / "train.csv",
                   'text,label\n"good, fine film",pos\ndull film,neg\n')
    dev = _table(tmp_path / "dev.csv", "text,label\nfine,pos\n")

    def args(*extra, train_file=train, eval_file=dev):
        return [f"--train_file={train_file}", f"--eval_file={eval_file}",
                f"--init_checkpoint={tiny_checkpoint}",
                f"--model_dir={tmp_path / 'model'}", "--do_train",
                "--do_eval", "--max_seq_length=32", *extra]
    return args


@pytest.mark.parametrize("name, text, extra, expected", [
    ("train.csv", "review,label\ngood,pos\nbad,neg\n", [],
     ":2: no column 'text' (the file has 'label', 'review')"),
    ("train.csv", "text,label\ngood,pos\n  ,neg\n", [],
     ":3: field 'text' is empty"),
    ("train.csv", "text,label\ngood,pos\nbad,pos\n", [],
     "field 'label' has one class only ('pos')"),
    ("dev.csv", "text,label\ngood,pos\nbad,meh\n", [],
     ":3: field 'label': label 'meh' was not seen in training"),
    ("train.csv", "text,label\ngood,4.5\nbad,n/a\n", ["--regression"],
     ":3: field 'label': 'n/a' is not a number"),
    ("train.jsonl", '{"text": "good", "label": "pos"}\n["bad", "neg"]\n', [],
     ":2: expected a JSON object, found an array"),
    ("train.xlsx", "text,label\ngood,pos\n", [],
     "unknown file type '.xlsx'; expected one of .csv, .jsonl, .tsv"),
    ("dev.csv", "text,label\ngood,pos\n", ["--multi_label", "--regression"],
     "--regression and --multi_label exclude each other"),
    ("dev.csv", "text,label\ngood,pos\n", ["--do_predict"],
     "--do_predict needs --predict_file"),
    ("dev.csv", "text,label\ngood,pos\n",
     ["--multi_label", "--class_weights=balanced"],
     "--class_weights is read only for single-label classification"),
    ("dev.csv", "text,label\ngood,pos\n", ["--doc_stride=-4"],
     "--doc_stride must be >= 0"),
    ("dev.csv", "text,label\ngood,pos\n",
     ["--doc_stride=64", "--text_b_column=other"],
     "--doc_stride is read only without --text_b_column"),
    ("dev.csv", "text,label\ngood,pos\n", ["--window_pooling=max"],
     "--window_pooling is read only with --doc_stride"),
    ("dev.csv", "text,label\ngood,pos\n",
     ["--export_xla", "--export_precision=bfloat16",
      "--export_constant_kernels"],
     "--export_xla is read only without --export_constant_kernels"),
])
def test_classify_bad_files(capsys, tmp_path, classify, name, text, extra,
                            expected):
    path = _table(tmp_path / name, text)
    which = "train_file" if name.startswith("train") else "eval_file"
    _refused(capsys, ClassifyTask, classify(*extra, **{which: path}),
             expected, *([str(path)] if expected.startswith(":")
                         or "file type" in expected else []))
    assert _nothing_trained(tmp_path)


def test_classify_multi_label_rows_without_labels_are_counted(
        capsys, tmp_path, classify):
    train = _table(tmp_path / "train.jsonl",
                   '{"text": "a", "label": ["x", "y"]}\n'
                   '{"text": "b", "label": []}\n{"text": "c", "label": "y"}\n')
    dev = _table(tmp_path / "dev.csv", "text,label\nd,x\n")
    task = parse_task_flags(ClassifyTask, classify(
        "--multi_label", train_file=train, eval_file=dev))
    task.check()
    assert task.problem.labels == ("x", "y")
    assert f"{train}: 1 of 3 rows have no label" in capsys.readouterr().out


@pytest.mark.parametrize("name, text, extra, expected", [
    ("train.txt", "EU NNP B-NP B-ORG\n", ["--tag_column=4"],
     ":1: no tag column 4"),
    ("train.txt", "EU NNP B-NP B-ORG\n", ["--tag_column=0"], "--tag_column"),
    ("train.txt", "EU NNP B-NP B-ORG\n\nof IN B-PP I-ORG\n",
     ["--tag_scheme=iob2"], ":3: tag 'I-ORG' I-ORG must continue"),
    ("train.txt", "EU NNP B-NP B-ORG\n", ["--tag_scheme=bioes"],
     ":1: tag 'B-ORG' the sentence ends inside an entity"),
    ("train.txt", "EU NNP B-NP B-ORG\n", ["--tag_column=1"],
     ":1: tag 'NNP' is not O or B-/I-"),
    ("train.jsonl", '{"tokens": ["EU"], "tags": ["B-ORG"]}\n'
     '{"tokens": ["EU", "rejects"], "tags": ["B-ORG"]}\n', [],
     ":2: 2 tokens but 1 tags"),
    ("train.txt", "EU NNP B-NP B-ORG\n", ["--tag_scheme=bio"],
     "--tag_scheme must be one of iob1, iob2, bioes, plain"),
])
def test_ner_bad_tags(capsys, tmp_path, tiny_checkpoint, name, text, extra,
                      expected):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    _refused(capsys, NerTask,
             [f"--init_checkpoint={tiny_checkpoint}",
              f"--model_dir={tmp_path / 'model'}", "--do_train",
              f"--train_file={path}", *extra],
             expected, *([str(path)] if expected.startswith(":") else []))
# In the order tfbert-ner gives the tags of the training file below.
_NER_LABELS = ("O", "B-MISC", "I-MISC", "B-ORG", "I-ORG")


@pytest.fixture(scope="module")
def teacher_dirs(tmp_path_factory, tiny_checkpoint):
    """`make(**flags, num_classes=2)`: a teacher model directory as a
    finished SST-2 run leaves it (untrained weights suffice here)."""
    from tfbert.data import glue as glue_data
    from tfbert.tasks.glue import build_model
    from tfbert.training.best_model import save_inference_weights

    from tfbert.models import BertTokenClassifier

    root = tmp_path_factory.mktemp("teachers")
    weights = {}
    for num_classes, task in ((2, "sst2"), (3, "mnli")):
        path = root / f"{num_classes}.weights.h5"
        save_inference_weights(build_model(glue_data.get_task(task),
                                           str(tiny_checkpoint)), path)
        weights[num_classes] = path.read_bytes()
    path = root / "tagger.weights.h5"
    save_inference_weights(BertTokenClassifier.from_pretrained(
        str(tiny_checkpoint), len(_NER_LABELS)), path)
    weights["tagger"] = path.read_bytes()

    def make(num_classes=2, files=(), **overrides):
        """`num_classes`: 2, 3 or "tagger" (`_NER_LABELS`); `files`:
        `(name, text)` written into the directory."""
        directory = root / f"teacher{len(list(root.iterdir()))}"
        directory.mkdir()
        flags = {"--task": "sst2", "--init_checkpoint": str(tiny_checkpoint),
                 "--max_seq_length": 32, "--classifier_dropout": 0.1,
                 **overrides}
        (directory / "run_fingerprint.json").write_text(json.dumps(flags))
        (directory / "best.weights.h5").write_bytes(weights[num_classes])
        for name, text in files:
            (directory / name).write_text(text)
        return directory
    return make


@pytest.mark.parametrize("flags, expected", [
    (["--distill_alpha=1.5"], "--distill_alpha must be in [0, 1]"),
    (["--distill_alpha=-0.1"], "--distill_alpha must be in [0, 1]"),
    (["--distill_temperature=0"], "--distill_temperature must be positive"),
    (["--distill_temperature=-2"], "--distill_temperature must be positive"),
    (["--student_num_layers=0"], "--student_num_layers must be positive"),
    (["--student_num_layers=3"], "a student needs 1 to 2 layers"),
    (["--distill_hidden_weight=-1"], "--distill_hidden_weight must be >= 0"),
    (["--distill_attention_weight=-0.5"],
     "--distill_attention_weight must be >= 0"),
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


def test_attention_transfer_refuses_a_student_of_other_heads(
        capsys, tmp_path, glue, teacher_dirs, minilm_dir):
    """The teacher has the tiny checkpoint's 2 heads; a student of 4 heads
    (same vocabulary and width) cannot learn its attention distributions,
    but can learn its hidden states."""
    import keras

    from tfbert import BertConfig, BertEncoder, BertTokenizer

    keras.utils.set_random_seed(0)
    tokenizer = BertTokenizer(str(minilm_dir / "vocab.txt"))
    four_heads = tmp_path / "four_heads"
    BertEncoder(BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_layers=1,
        num_heads=4, intermediate_size=64, max_position_embeddings=128)
    ).save_pretrained(four_heads, tokenizer=tokenizer)
    teacher = f"--teacher_model_dir={teacher_dirs()}"
    student = f"--init_checkpoint={four_heads}"
    _refused(capsys, GlueTask, glue(teacher, student,
                                    "--distill_attention_weight=1"),
             "attention transfer needs the teacher's 2 heads; the student "
             "has 4")
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
    _refused(capsys, SquadTask, base + [
        f"--teacher_model_dir={teacher_dirs(**{'--version': '1.1'})}",
        f"--distill_file={v1}"], "--distill_file is read only by")
    assert _nothing_trained(tmp_path)


def _ner_teacher(teacher_dirs, labels=_NER_LABELS, **overrides):
    """A tagger teacher of `labels` (IOB2, softmax) as tfbert-ner leaves
    it."""
    flags = {"--task": None, "--tag_scheme": "iob2", "--use_crf": False,
             **overrides}
    return teacher_dirs("tagger", files=[("labels.txt",
                                          "\n".join(labels) + "\n")],
                        **flags)


@pytest.mark.parametrize("teacher, extra, expected", [
    (None, [], "--tag_scheme=None, this run has --tag_scheme=iob2"),
    ({"--use_crf": True}, [], "--use_crf=True, this run has --use_crf=False"),
    ({"labels": ("O", "B-ORG", "I-ORG")}, [],
     "tags with O, B-ORG, I-ORG; this run with O, B-MISC"),
    ({"labels": ("O", "B-ORG", "I-ORG", "B-MISC", "I-MISC")}, [],
     "tags with O, B-ORG, I-ORG, B-MISC, I-MISC; this run with O, B-MISC"),
    ({"--max_seq_length": 64}, [],
     "--max_seq_length=64, this run has --max_seq_length=32"),
    ({}, ["--student_num_layers=3"], "a student needs 1 to 2 layers"),
    ({}, ["--distill_temperature=0"], "--distill_temperature must be positive"),
    ({}, ["--distill_file=x.txt"], "--distill_file=x.txt: No such file"),
])
def test_ner_refuses_a_teacher_that_does_not_fit(
        capsys, tmp_path, tiny_checkpoint, teacher_dirs, teacher, extra,
        expected):
    train = tmp_path / "train.txt"
    train.write_text("EU B-ORG\nrejects O\nGerman B-MISC\n")
    directory = (teacher_dirs() if teacher is None
                 else _ner_teacher(teacher_dirs, **teacher))
    _refused(capsys, NerTask, [
        f"--init_checkpoint={tiny_checkpoint}",
        f"--model_dir={tmp_path / 'model'}", "--do_train",
        f"--train_file={train}", "--max_seq_length=32",
        f"--labels={','.join(_NER_LABELS)}",
        f"--teacher_model_dir={directory}", *extra], expected)
    assert _nothing_trained(tmp_path)


def _classify_teacher(teacher_dirs, classes="neg\npos\n", **overrides):
    flags = {"--task": None, "--regression": False, "--multi_label": False,
             "--text_b_column": None, **overrides}
    return teacher_dirs(files=[("labels.txt", classes)], **flags)


@pytest.mark.parametrize("teacher, extra, expected", [
    (None, [], "--regression=None, this run has --regression=False"),
    ({"classes": "bad\ngood\n"}, [],
     "has the classes bad, good; this run has neg, pos"),
    ({"--multi_label": True}, [],
     "--multi_label=True, this run has --multi_label=False"),
    ({}, ["--doc_stride=8"], "--doc_stride is not read with"),
    ({}, ["--class_weights=balanced"], "--class_weights is not read with"),
    ({}, ["--student_num_layers=3"], "a student needs 1 to 2 layers"),
    ({}, ["--distill_temperature=-1"], "--distill_temperature must be"),
])
def test_classify_refuses_a_teacher_that_does_not_fit(
        capsys, tmp_path, classify, teacher_dirs, teacher, extra, expected):
    directory = (teacher_dirs() if teacher is None
                 else _classify_teacher(teacher_dirs, **teacher))
    _refused(capsys, ClassifyTask, classify(
        f"--teacher_model_dir={directory}", *extra), expected)
    assert _nothing_trained(tmp_path)


@pytest.mark.parametrize("text, pair, expected", [
    ("good ||| film\n\nno separator here\n", True,
     ":3: a pair task reads `text ||| text` lines"),
    ("a ||| b ||| c\n", True, ":1: a pair task reads"),
    ("a ||| \n", True, ":1: a pair task reads"),
    ("\n\n", False, "has no text"),
    (b"good \xff film\n", False, ":1: invalid UTF-8"),
])
def test_distill_file_lines(capsys, tmp_path, classify, teacher_dirs, text,
                            pair, expected):
    path = tmp_path / "unlabelled.txt"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    # The pair: the text column twice (any two columns do).
    extra = ["--text_b_column=text"] if pair else []
    directory = _classify_teacher(
        teacher_dirs, **({"--text_b_column": "text"} if pair else {}))
    _refused(capsys, ClassifyTask, classify(
        f"--teacher_model_dir={directory}", f"--distill_file={path}", *extra),
        str(path), expected)
    assert _nothing_trained(tmp_path)


def test_distill_file_missing(capsys, tmp_path, glue, teacher_dirs):
    _refused(capsys, GlueTask, glue(f"--teacher_model_dir={teacher_dirs()}",
                                    f"--distill_file={tmp_path / 'no.txt'}"),
             "--distill_file=", "No such file")

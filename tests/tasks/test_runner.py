"""Every shared flag of the runner changes what a run does.

Each case runs the whole GLUE lifecycle in this process on 48 real SST-2
sentences with a tiny encoder and compares one observable with a baseline
run of the same arguments without the flag. Cases about training use a data
directory without dev data (`sst2_train_dir`), so they do not also evaluate
after every epoch; cases about evaluation, prediction and the best model use
`sst2_dir`.
"""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests.tasks.conftest import (assert_runs_without_autotuning,
                                  parse_task_flags, run_task)
from tfbert.tasks import runner
from tfbert.tasks.glue import GlueTask

pytestmark = pytest.mark.slow


def _args(tiny_checkpoint, data_dir, model_dir, *extra):
    return ["--task=sst2", f"--data_dir={data_dir}",
            f"--init_checkpoint={tiny_checkpoint}", f"--model_dir={model_dir}",
            "--do_train", "--max_seq_length=32", "--train_batch_size=8",
            "--learning_rate=1e-3", "--num_train_epochs=1", "--seed=3",
            *extra]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, tiny_checkpoint, sst2_train_dir):
    model_dir = tmp_path_factory.mktemp("baseline")
    task, prepared = run_task(GlueTask, _args(tiny_checkpoint, sst2_train_dir,
                                              model_dir))
    return {"weights": prepared.model.get_weights(), "task": task,
            "prepared": prepared, "model_dir": model_dir}


def _run(tmp_path, tiny_checkpoint, data_dir, *extra):
    return run_task(GlueTask, _args(tiny_checkpoint, data_dir,
                                    tmp_path / "model", *extra))


def _export_baseline(tiny_checkpoint, sst2_train_dir, baseline, *extra):
    """Exports the baseline's trained model (a run without --do_train on its
    --model_dir, which restores and writes nothing there)."""
    return run_task(GlueTask, [
        a for a in _args(tiny_checkpoint, sst2_train_dir,
                         baseline["model_dir"]) if a != "--do_train"]
        + list(extra))


def _differs(weights, other):
    return any(not np.array_equal(a, b) for a, b in zip(weights, other))


def test_runs_are_reproducible(tmp_path, tiny_checkpoint, sst2_train_dir,
                               baseline):
    _, prepared = _run(tmp_path, tiny_checkpoint, sst2_train_dir)
    for a, b in zip(prepared.model.get_weights(), baseline["weights"]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("flag", [
    "--learning_rate=3e-3", "--warmup_proportion=0.5", "--weight_decay=0.5",
    "--adam_epsilon=0.1", "--gradient_accumulation_steps=2", "--seed=4",
    "--max_seq_length=8", "--mixed_precision=bfloat16",
    "--classifier_dropout=0.5"])
def test_training_flags_change_the_trained_weights(
        tmp_path, tiny_checkpoint, sst2_train_dir, baseline, flag):
    _, prepared = _run(tmp_path, tiny_checkpoint, sst2_train_dir, flag)
    assert _differs(prepared.model.get_weights(), baseline["weights"])


def _updates(prepared):
    return int(prepared.model.optimizer.iterations)


@pytest.mark.parametrize("flag, relation", [
    ("--num_train_epochs=2", lambda n, base: n == 2 * base),
    ("--num_train_epochs=0.5", lambda n, base: n == -(-base // 2)),
    ("--train_batch_size=16", lambda n, base: n < base),
    ("--max_train_examples=16", lambda n, base: n < base)])
def test_flags_that_set_the_number_of_steps(tmp_path, tiny_checkpoint,
                                            sst2_train_dir, baseline, flag,
                                            relation):
    task, prepared = _run(tmp_path, tiny_checkpoint, sst2_train_dir, flag)
    assert relation(_updates(prepared), _updates(baseline["prepared"]))
    if flag.startswith("--max_train_examples"):
        assert len(task.train_examples) == 16


def test_layerwise_lr_decay_moves_lower_layers_less(
        tmp_path, tiny_checkpoint, sst2_train_dir, baseline):
    from tfbert.models import BertEncoder

    initial = BertEncoder.from_pretrained(str(tiny_checkpoint))
    start = initial.embeddings.word_embeddings.numpy()

    def moved(model):
        return np.abs(model.encoder.embeddings.word_embeddings.numpy()
                      - start).sum()
    _, prepared = _run(tmp_path, tiny_checkpoint, sst2_train_dir,
                       "--layerwise_lr_decay=0.1")
    assert moved(prepared.model) < 0.1 * moved(baseline["prepared"].model)


def test_pad_to_max_length_eval_batch_size_and_no_autotuning(
        tmp_path, tiny_checkpoint, sst2_dir):
    # One run for three flags' effects on the datasets it builds.
    task, _ = _run(tmp_path, tiny_checkpoint, sst2_dir, "--pad_to_max_length",
                   "--do_eval", "--eval_batch_size=5")
    dataset, _ = task.train_dataset()
    eval_dataset = task.eval_sets[0][2]
    widths = {int(x["input_word_ids"].shape[1]) for x, _ in dataset}
    eval_widths = {int(x["input_word_ids"].shape[1]) for x, _ in eval_dataset}
    assert widths == eval_widths == {32}
    sizes = [int(x["input_word_ids"].shape[0]) for x, _ in eval_dataset]
    assert sizes == [5, 5, 5, 5, 4]
    assert_runs_without_autotuning(dataset)
    assert_runs_without_autotuning(eval_dataset)


def test_batches_pad_to_their_longest_by_default(baseline):
    dataset, _ = baseline["task"].train_dataset()
    widths = {int(x["input_word_ids"].shape[1]) for x, _ in dataset}
    assert max(widths) <= 32 and len(widths) > 1


def test_max_eval_and_predict_examples(tmp_path, tiny_checkpoint, sst2_dir):
    # What the files hold: 24 dev and 24 test rows.
    args = ["--task=sst2", f"--data_dir={sst2_dir}",
            f"--model_dir={tmp_path}", "--do_eval", "--do_predict"]
    whole = parse_task_flags(GlueTask, args)
    whole.check()
    task = parse_task_flags(GlueTask, [*args, "--max_eval_examples=5",
                                       "--max_predict_examples=7"])
    task.check()
    (_, dev), = task.eval_examples
    (_, test), = task.test_examples
    assert dev == whole.eval_examples[0][1][:5]
    assert test == whole.test_examples[0][1][:7]


def test_checkpoint_steps(tmp_path, tiny_checkpoint, sst2_train_dir, baseline):
    _, prepared = _run(tmp_path, tiny_checkpoint, sst2_train_dir,
                       "--checkpoint_steps=2")
    batches = _updates(prepared)
    assert batches == _updates(baseline["prepared"])
    latest = tf.train.latest_checkpoint(str(tmp_path / "model" / "checkpoints"))
    # One checkpoint per 2 batches, the last one after the final batch.
    assert latest.endswith(f"ckpt-{-(-batches // 2)}")


def test_distribution_strategy(tmp_path, tiny_checkpoint, sst2_train_dir):
    _, prepared = _run(tmp_path, tiny_checkpoint, sst2_train_dir,
                       "--distribution_strategy=mirrored")
    assert isinstance(prepared.strategy, tf.distribute.MirroredStrategy)


def test_num_gpus_is_read(tmp_path, tiny_checkpoint, sst2_train_dir):
    # No GPU here: asking for one fails before training.
    with pytest.raises(ValueError, match="num_gpus=1"):
        _run(tmp_path, tiny_checkpoint, sst2_train_dir, "--num_gpus=1")


def test_tpu_needs_the_tpu_strategy(tmp_path, tiny_checkpoint, sst2_train_dir):
    with pytest.raises(runner.UserError, match="`tpu`"):
        _run(tmp_path, tiny_checkpoint, sst2_train_dir,
             "--tpu=grpc://10.0.0.2:8470")


@pytest.mark.parametrize("flag, attribute, value", [
    ("--jit_compile", "jit_compile", True),
    ("--steps_per_execution=3", "steps_per_execution", 3)])
def test_compile_flags(tmp_path, tiny_checkpoint, sst2_train_dir, baseline,
                       flag, attribute, value):
    # XLA compiles once per batch shape: fixed shapes, one compilation.
    fixed = ("--pad_to_max_length",) if flag == "--jit_compile" else ()
    _, prepared = _run(tmp_path, tiny_checkpoint, sst2_train_dir, flag,
                       *fixed)
    assert getattr(prepared.model, attribute) == value
    assert getattr(baseline["prepared"].model, attribute) != value
    # The same training: XLA reorders float sums, and Adam turns tiny
    # gradient differences into up to one learning rate (1e-3) per step.
    for a, b in zip(prepared.model.get_weights(), baseline["weights"]):
        np.testing.assert_allclose(a, b, atol=1e-2)


def test_init_checkpoint(tmp_path, sst2_train_dir, tiny_checkpoint,
                         minilm_dir):
    from tfbert import BertConfig, BertEncoder, BertTokenizer

    other = tmp_path / "other"
    BertEncoder(BertConfig(vocab_size=30522, hidden_size=16, num_layers=1,
                           num_heads=2, intermediate_size=32,
                           max_position_embeddings=64)).save_pretrained(
        other, tokenizer=BertTokenizer.from_pretrained(minilm_dir))
    _, prepared = run_task(GlueTask, _args(other, sst2_train_dir,
                                           tmp_path / "m"))
    assert prepared.model.encoder.config.hidden_size == 16


def test_vocab_file_and_do_lower_case(tmp_path, sst2_train_dir, minilm_dir):
    from tfbert import BertConfig, BertEncoder

    bare = tmp_path / "no_vocab"
    BertEncoder(BertConfig(vocab_size=30522, hidden_size=16, num_layers=1,
                           num_heads=2, intermediate_size=32,
                           max_position_embeddings=64)).save_pretrained(bare)
    with pytest.raises(runner.UserError, match="`vocab_file`"):
        run_task(GlueTask, _args(bare, sst2_train_dir, tmp_path / "a"))
    vocab = minilm_dir / "vocab.txt"
    task, _ = run_task(GlueTask, _args(bare, sst2_train_dir, tmp_path / "b",
                                       f"--vocab_file={vocab}",
                                       "--nodo_lower_case"))
    assert task.preprocessor.tokenizer.lowercase is False
    task, _ = run_task(GlueTask, _args(bare, sst2_train_dir, tmp_path / "c",
                                       f"--vocab_file={vocab}"))
    assert task.preprocessor.tokenizer.lowercase is True


def test_do_flags_and_model_dir(tmp_path, tiny_checkpoint, sst2_dir):
    model_dir = tmp_path / "model"
    _run(tmp_path, tiny_checkpoint, sst2_dir)
    assert (model_dir / "checkpoints" / "checkpoint").exists()
    assert not (model_dir / "eval_results.json").exists()
    assert not (model_dir / "predictions").exists()
    # Without --do_train: restores the trained model and only evaluates.
    run_task(GlueTask, [a for a in _args(tiny_checkpoint, sst2_dir, model_dir)
                        if a != "--do_train"] + ["--do_eval"])
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["dev"]["num_examples"] == 24
    run_task(GlueTask, [a for a in _args(tiny_checkpoint, sst2_dir, model_dir)
                        if a != "--do_train"] + ["--do_predict"])
    rows = (model_dir / "predictions" / "SST-2.tsv").read_text().splitlines()
    assert len(rows) == 25


def test_export_dir_token_ids_only_and_request_bounds(
        tmp_path, tiny_checkpoint, sst2_train_dir, baseline):
    export_dir = tmp_path / "export"
    _export_baseline(tiny_checkpoint, sst2_train_dir, baseline,
                     f"--export_dir={export_dir}", "--export_max_text_chars=6",
                     "--export_max_batch_chars=10", "--export_max_windows=3")
    loaded = tf.saved_model.load(str(export_dir / "1"))
    assert {"serving_default", "serve_token_ids"} <= set(loaded.signatures)
    serve = loaded.signatures["serving_default"]
    serve(sentence=tf.constant(["Good!!", "Bad."]))
    for texts, bound in [(["Good!!!"], "6 characters per text"),
                         (["Good!!", "Bad!!"], "10 characters per request"),
                         (["a", "b", "c", "d"], "3 windows per request")]:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=f"bound of {bound}"):
            serve(sentence=tf.constant(texts))
    _export_baseline(tiny_checkpoint, sst2_train_dir, baseline,
                     f"--export_dir={export_dir}", "--export_token_ids_only")
    assert set(tf.saved_model.load(str(export_dir / "2")).signatures) == {
        "serve_token_ids"}


def test_export_precision(tmp_path, tiny_checkpoint, sst2_train_dir,
                          baseline):
    export_dir = tmp_path / "export"
    _export_baseline(tiny_checkpoint, sst2_train_dir, baseline,
                     f"--export_dir={export_dir}", "--export_precision=bfloat16")
    loaded = tf.saved_model.load(str(export_dir / "1"))
    serve = loaded.signatures["serving_default"]
    kernels = [v for v in serve.variables if v.name.endswith("kernel:0")]
    # Every kernel but the logits layer's.
    assert [v.dtype for v in kernels].count(tf.float32) == 1
    assert [v.dtype for v in kernels].count(tf.bfloat16) > 1
    outputs = serve(sentence=tf.constant(["Good.", "Bad."]))
    assert outputs["probabilities"].dtype == tf.float32
    # The same weights with the kernels as graph constants: no kernel is a
    # variable, the biases still are.
    _export_baseline(tiny_checkpoint, sst2_train_dir, baseline,
                     f"--export_dir={export_dir}", "--export_precision=bfloat16",
                     "--export_constant_kernels")
    loaded = tf.saved_model.load(str(export_dir / "2"))
    serve = loaded.signatures["serving_default"]
    assert not [v for v in serve.variables if v.name.endswith("kernel:0")]
    assert [v for v in serve.variables if v.name.endswith("bias:0")]
    constant = serve(sentence=tf.constant(["Good.", "Bad."]))
    np.testing.assert_allclose(constant["probabilities"],
                               outputs["probabilities"], atol=1e-2)


def test_export_feed_forward_shards(tmp_path, tiny_checkpoint,
                                    sst2_train_dir, baseline):
    """By default the feed-forward kernels are exported as 2 column shards
    instead of whole; --export_feed_forward_shards=1 keeps them whole. Both
    answer alike."""
    export_dir = tmp_path / "export"
    _export_baseline(tiny_checkpoint, sst2_train_dir, baseline,
                     f"--export_dir={export_dir}")
    _export_baseline(tiny_checkpoint, sst2_train_dir, baseline,
                     f"--export_dir={export_dir}",
                     "--export_feed_forward_shards=1")
    answers = {}
    for version, shards in (("1", 2), ("2", 0)):
        loaded = tf.saved_model.load(str(export_dir / version))
        serve = loaded.signatures["serving_default"]
        names = [v.name for v in serve.variables]
        assert len([n for n in names if "/intermediate/kernel_shard_" in n]
                   ) == shards * 2  # the tiny checkpoint has 2 blocks
        assert len([n for n in names if "/output/kernel_shard_" in n]
                   ) == shards * 2
        answers[version] = serve(sentence=tf.constant(["Good.", "Bad."]))[
            "probabilities"]
    np.testing.assert_allclose(answers["1"], answers["2"], atol=1e-6)


def test_export_xla(tmp_path, tiny_checkpoint, sst2_train_dir, baseline):
    """--export_xla exports the encoder as an XLA-compiled function, which
    answers as the default export does."""
    from tests.export.conftest import compiled_functions

    export_dir = tmp_path / "export"
    _export_baseline(tiny_checkpoint, sst2_train_dir, baseline,
                     f"--export_dir={export_dir}")
    _export_baseline(tiny_checkpoint, sst2_train_dir, baseline,
                     f"--export_dir={export_dir}", "--export_xla")
    answers = {}
    for version, compiled in (("1", False), ("2", True)):
        assert bool(compiled_functions(export_dir / version)) == compiled
        serve = tf.saved_model.load(str(export_dir / version)).signatures[
            "serving_default"]
        answers[version] = serve(sentence=tf.constant(["Good.", "Bad."]))[
            "probabilities"]
    np.testing.assert_allclose(answers["1"], answers["2"], atol=1e-5)


@pytest.mark.parametrize("flags, message", [
    (["--export_feed_forward_shards=0"], "must be >= 1"),
    (["--export_precision=bfloat16", "--export_constant_kernels",
      "--export_feed_forward_shards=2"], "without --export_constant_kernels"),
])
def test_bad_feed_forward_shards_fail_before_training(
        tmp_path, tiny_checkpoint, sst2_train_dir, flags, message):
    with pytest.raises(runner.UserError, match=message):
        _run(tmp_path, tiny_checkpoint, sst2_train_dir,
             f"--export_dir={tmp_path / 'export'}", *flags)
    assert not (tmp_path / "export").exists()
    assert not (tmp_path / "model").exists()


@pytest.mark.parametrize("flag", ["export_max_text_chars",
                                  "export_max_batch_chars",
                                  "export_max_windows"])
def test_request_bounds_below_one_fail_before_training(
        tmp_path, tiny_checkpoint, sst2_train_dir, flag):
    with pytest.raises(runner.UserError,
                       match=f"`{flag}` must be >= 1, got 0"):
        _run(tmp_path, tiny_checkpoint, sst2_train_dir,
             f"--export_dir={tmp_path / 'export'}", f"--{flag}=0")
    assert not (tmp_path / "export").exists()
    assert not (tmp_path / "model").exists()


def test_more_feed_forward_shards_than_columns_fail_before_training(
        tmp_path, tiny_checkpoint, sst2_train_dir):
    """The intermediate size comes from the checkpoint: checked once the
    model is built, before training (the tiny checkpoint's is 64)."""
    with pytest.raises(runner.UserError,
                       match="`export_feed_forward_shards`=65 exceeds the "
                             "intermediate size 64"):
        _run(tmp_path, tiny_checkpoint, sst2_train_dir,
             f"--export_dir={tmp_path / 'export'}",
             "--export_feed_forward_shards=65")
    assert not (tmp_path / "export").exists()
    assert not list((tmp_path / "model").glob("**/checkpoint*"))


def test_constant_kernels_need_bfloat16(tmp_path, tiny_checkpoint,
                                        sst2_train_dir):
    with pytest.raises(runner.UserError, match="`export_constant_kernels`"):
        _run(tmp_path, tiny_checkpoint, sst2_train_dir,
             f"--export_dir={tmp_path / 'export'}",
             "--export_constant_kernels")
    assert not (tmp_path / "export").exists()


def test_export_best_uses_the_best_dev_weights(tmp_path, tiny_checkpoint,
                                               sst2_dir):
    from tfbert.models import BertClassifier, BertEncoder

    def weights_of(path):
        model = BertClassifier(BertEncoder.from_pretrained(
            str(tiny_checkpoint)), 2)
        model.load_weights(path) if path.endswith(".h5") else (
            tf.train.Checkpoint(model=model).restore(path).expect_partial())
        return model.get_weights()

    common = ("--num_train_epochs=3", "--do_eval", "--learning_rate=5e-3")
    model_dir = tmp_path / "model"
    _, best = _run(tmp_path, tiny_checkpoint, sst2_dir, *common)
    best_file = str(model_dir / "best.weights.h5")
    for a, b in zip(best.model.get_weights(), weights_of(best_file)):
        np.testing.assert_array_equal(a, b)
    results = json.loads((model_dir / "eval_results.json").read_text())["dev"]
    best_metrics = json.loads((model_dir / "best_metrics.json").read_text())
    assert results["accuracy"] == best_metrics["accuracy"]

    _, last = run_task(GlueTask, _args(tiny_checkpoint, sst2_dir,
                                       tmp_path / "last", *common,
                                       "--noexport_best"))
    latest = tf.train.latest_checkpoint(str(tmp_path / "last" / "checkpoints"))
    for a, b in zip(last.model.get_weights(), weights_of(latest)):
        np.testing.assert_array_equal(a, b)


def test_overwrite_model_dir(tmp_path, tiny_checkpoint, sst2_train_dir,
                             baseline, capsys):
    # A model dir a run of the same arguments trained: the baseline's.
    shutil.copytree(baseline["model_dir"], tmp_path / "model")
    with pytest.raises(ValueError, match="`learning_rate`"):
        _run(tmp_path, tiny_checkpoint, sst2_train_dir, "--learning_rate=2e-3")
    _, prepared = _run(tmp_path, tiny_checkpoint, sst2_train_dir,
                       "--learning_rate=2e-3", "--overwrite_model_dir")
    assert "Resuming" not in capsys.readouterr().out


def test_every_shared_flag_is_covered():
    """The shared flags this module exercises: a new shared flag needs a
    case here."""
    covered = {
        "init_checkpoint", "vocab_file", "do_lower_case", "model_dir",
        "overwrite_model_dir", "export_dir", "export_best", "do_train",
        "do_eval", "do_predict", "export_token_ids_only", "export_precision",
        "export_constant_kernels", "export_feed_forward_shards",
        "export_max_text_chars", "export_max_batch_chars",
        "export_max_windows", "export_xla", "max_seq_length",
        "pad_to_max_length", "train_batch_size", "eval_batch_size",
        "learning_rate", "num_train_epochs", "warmup_proportion",
        "weight_decay", "adam_epsilon", "gradient_accumulation_steps",
        "layerwise_lr_decay", "checkpoint_steps", "mixed_precision",
        "distribution_strategy", "tpu", "num_gpus", "jit_compile",
        "steps_per_execution", "seed", "max_train_examples",
        "max_eval_examples", "max_predict_examples", "classifier_dropout"}
    own = {spec[1] for spec in GlueTask.program.flags}
    assert GlueTask.program.flag_names - own == covered

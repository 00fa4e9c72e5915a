"""The task programs on the other encoder families' checkpoints (tiny HF
models with trained tokenizers, `tests/zoo_checkpoints.py`).

Each task runs on one family of each packing layout: WordPiece without
token types (distilbert), byte-level BPE (roberta) and SentencePiece
(albert). ELECTRA packs and tokenizes exactly as BERT, which every other
task test runs on; its encoder and heads are compared with HF's in
tests/models."""

import contextlib
import io
import json
import sys
import unittest.mock

import numpy as np
import pytest
import tensorflow as tf

from tests.tasks.conftest import assert_runs_without_autotuning, run_task
from tfbert.data.conll import read_conll
from tfbert.data.squad import read_squad_examples
from tfbert.tasks.glue import GlueTask
from tfbert.tasks.ner import NerTask
from tfbert.tasks.squad import SquadTask
from tfbert.text import Preprocessor

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("family", ["distilbert", "roberta", "albert"])
def test_glue_trains_evaluates_and_exports(family, zoo_checkpoints, tmp_path,
                                           shared_data_dir):
    from tests.tasks.conftest import write_glue_subset

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


def _squad_slice(source, target, paragraphs):
    """The first article of a real SQuAD file, cut to `paragraphs`."""
    data = json.loads(source.read_text(encoding="utf-8"))
    article = dict(data["data"][0],
                   paragraphs=data["data"][0]["paragraphs"][paragraphs])
    target.write_text(json.dumps({"version": data["version"],
                                  "data": [article]}), encoding="utf-8")
    return target


def _serve(run_fresh_python, fresh, code, *args):
    """What `code` prints (JSON) when run with `args` as its command line:
    in a new process that imports only TensorFlow and TensorFlow Text (as
    TF Serving links them) where `fresh`, else in this one. One family's
    export of each task is loaded fresh: the one whose tokenizer keeps its
    own lookup resources in the SavedModel (byte-level BPE for SQuAD,
    SentencePiece for tagging); the others only need the same answers."""
    if fresh:
        return run_fresh_python(code, *args)
    printed = io.StringIO()
    with unittest.mock.patch.object(sys, "argv", ["-c", *map(str, args)]), \
            contextlib.redirect_stdout(printed):
        exec(compile(code, "<serve>", "exec"), {})
    return json.loads(printed.getvalue().strip().splitlines()[-1])


SERVE_SQUAD = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
inputs = json.loads(open(sys.argv[2]).read())
out = tf.saved_model.load(sys.argv[1]).signatures["serving_default"](
    question=tf.constant(inputs["question"]),
    context=tf.constant(inputs["context"]))
print(json.dumps({k: v.numpy().tolist() for k, v in out.items()},
                 default=lambda b: b.decode("utf-8")))
"""


@pytest.mark.parametrize("family,version", [
    ("distilbert", "1.1"), ("roberta", "2.0"), ("albert", "2.0")])
def test_squad_trains_predicts_and_exports(family, version, zoo_checkpoints,
                                           tmp_path, shared_data_dir,
                                           run_fresh_python):
    source = shared_data_dir / (
        "squad_v1.1/dev-v1.1.partA.json" if version == "1.1" else
        "squad_v2.0/dev-v2.0.Computational_complexity_theory.json")
    train = _squad_slice(source, tmp_path / "train.json", slice(0, 2))
    dev = _squad_slice(source, tmp_path / "dev.json", slice(2, 3))
    model_dir, export_dir = tmp_path / "model", tmp_path / "export"
    task, _ = run_task(SquadTask, [
        f"--version={version}", f"--train_file={train}",
        f"--predict_file={dev}", f"--init_checkpoint={zoo_checkpoints[family]}",
        f"--model_dir={model_dir}", f"--export_dir={export_dir}",
        "--do_train", "--do_predict", "--max_train_examples=8",
        "--max_seq_length=96", "--doc_stride=32", "--max_query_length=24",
        "--train_batch_size=8", "--num_train_epochs=1",
        "--learning_rate=1e-3",
        # The whole dev article goes to the export in one request.
        "--export_max_windows=1024"])
    assert task.layout == Preprocessor.from_pretrained(
        zoo_checkpoints[family]).layout
    assert_runs_without_autotuning(task.train_dataset()[0])
    predictions = json.loads((model_dir / "predictions.json").read_text())
    examples = read_squad_examples(dev)
    assert set(predictions) == {e.qas_id for e in examples}

    # The export answers the raw questions as the Python predictions do.
    (tmp_path / "inputs.json").write_text(json.dumps(
        {"question": [e.question for e in examples],
         "context": [e.context for e in examples]}))
    served = _serve(run_fresh_python, family == "roberta", SERVE_SQUAD,
                    export_dir / "1", tmp_path / "inputs.json")
    assert served["answer_text"] == [predictions[e.qas_id] for e in examples]
    assert ("no_answer_probability" in served) == (version == "2.0")
    for example, start, end, text in zip(
            examples, served["start_char"], served["end_char"],
            served["answer_text"]):
        assert example.context[start:end] == text if text else start == -1


SERVE_NER = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
out = tf.saved_model.load(sys.argv[1]).signatures["serving_default"](
    text=tf.constant(json.loads(sys.argv[2])))
print(json.dumps({k: v.numpy().tolist() for k, v in out.items()},
                 default=lambda b: b.decode("utf-8")))
"""


@pytest.mark.parametrize("family", ["distilbert", "roberta", "albert"])
def test_ner_trains_predicts_and_exports(family, zoo_checkpoints, tmp_path,
                                         shared_data_dir, run_fresh_python):
    lines = (shared_data_dir / "conll2003" / "train.txt").read_text(
        encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "train.txt").write_text("".join(lines[:60]),
                                        encoding="utf-8")
    # One long sentence per line of text, cut into several windows.
    predict = read_conll(tmp_path / "train.txt")[1:6]
    (tmp_path / "predict.txt").write_text("".join(
        "".join(f"{word}\n" for word in s.words) + "\n" for s in predict),
        encoding="utf-8")
    model_dir, export_dir = tmp_path / "model", tmp_path / "export"
    task, prepared = run_task(NerTask, [
        f"--train_file={tmp_path / 'train.txt'}",
        f"--predict_file={tmp_path / 'predict.txt'}",
        f"--init_checkpoint={zoo_checkpoints[family]}",
        f"--model_dir={model_dir}", f"--export_dir={export_dir}",
        "--do_train", "--do_predict", "--max_seq_length=12",
        "--train_batch_size=8", "--num_train_epochs=1",
        "--learning_rate=1e-3"])
    assert "pooled_output" not in prepared.model.encoder.output
    assert_runs_without_autotuning(task.train_dataset()[0])
    written = [[line.split(" ") for line in block.splitlines()]
               for block in (model_dir / "test_predictions.txt").read_text(
                   encoding="utf-8").strip("\n").split("\n\n")]
    assert [[w for w, _ in s] for s in written] == [s.words for s in predict]

    # The export tags the raw text's words as tasks.ner tags these words:
    # texts whose words the tokenizer's pre-tokenizer splits the same way.
    words = task.preprocessor.tokenizer.split_words_with_offsets(
        [" ".join(s.words) for s in predict])[0].to_list()
    same = [i for i, s in enumerate(predict)
            if [w.decode() for w in words[i]] == s.words]
    assert same
    served = _serve(run_fresh_python, family == "albert", SERVE_NER,
                    export_dir / "1", json.dumps(
                        [" ".join(predict[i].words) for i in same]))
    for row, i in enumerate(same):
        assert served["word_texts"][row][:len(predict[i].words)] == (
            predict[i].words)
        assert served["word_labels"][row][:len(predict[i].words)] == [
            tag for _, tag in written[i]]


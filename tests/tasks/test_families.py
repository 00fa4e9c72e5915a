"""The task programs on the other encoder families' checkpoints (tiny HF
models with trained tokenizers, `tests/zoo_checkpoints.py`)."""

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tests.tasks.conftest import run_task
from tfbert.data.conll import read_conll
from tfbert.data.squad import read_squad_examples
from tfbert.tasks.glue import GlueTask
from tfbert.tasks.ner import NerTask
from tfbert.tasks.squad import SquadTask
from tfbert.text import Preprocessor

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("family", ["distilbert", "roberta", "electra",
                                    "albert"])
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
    ("distilbert", "1.1"), ("roberta", "2.0"), ("electra", "2.0"),
    ("albert", "1.1")])
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
        "--learning_rate=1e-3"])
    assert task.layout == Preprocessor.from_pretrained(
        zoo_checkpoints[family]).layout
    predictions = json.loads((model_dir / "predictions.json").read_text())
    examples = read_squad_examples(dev)
    assert set(predictions) == {e.qas_id for e in examples}

    # The export answers the raw questions as the Python predictions do.
    (tmp_path / "inputs.json").write_text(json.dumps(
        {"question": [e.question for e in examples],
         "context": [e.context for e in examples]}))
    served = run_fresh_python(SERVE_SQUAD, export_dir / "1",
                              tmp_path / "inputs.json")
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


@pytest.mark.parametrize("family", ["distilbert", "roberta", "electra",
                                    "albert"])
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
    served = run_fresh_python(SERVE_NER, export_dir / "1", json.dumps(
        [" ".join(predict[i].words) for i in same]))
    for row, i in enumerate(same):
        assert served["word_texts"][row][:len(predict[i].words)] == (
            predict[i].words)
        assert served["word_labels"][row][:len(predict[i].words)] == [
            tag for _, tag in written[i]]


def _hf_masked_lm_outputs(hf_model, batch, sentence_output):
    """HF logits at the batch's masked positions (and the sentence head's)."""
    import torch

    with torch.no_grad():
        output = hf_model(
            input_ids=torch.tensor(batch["input_word_ids"].numpy()).long(),
            attention_mask=torch.tensor(batch["input_mask"].numpy()).long(),
            token_type_ids=torch.tensor(batch["input_type_ids"].numpy()).long())
    logits = getattr(output, "prediction_logits", None)
    logits = output.logits if logits is None else logits
    positions = batch["masked_lm_positions"].numpy()[..., None]
    return (np.take_along_axis(logits.numpy(), positions, 1),
            getattr(output, sentence_output).numpy() if sentence_output
            else None)


@pytest.mark.parametrize("family,data", [("roberta", "corpus"),
                                         ("albert", "static")])
def test_pretraining_trains_and_exports_the_family_model(
        family, data, zoo_checkpoints, tmp_path, shared_data_dir):
    """Continued pretraining of a family checkpoint with its own objective
    (RoBERTa: masked-LM only, dynamic masking; ALBERT: masked-LM +
    sentence order, static records), exported as the family's HF
    pretraining model with its tokenizer: `transformers` loads both and
    computes what the trained model computes."""
    import subprocess
    import sys

    import transformers

    from tfbert.data import pretraining
    from tfbert.data.wikipedia import convert_wikiextractor
    from tfbert.tasks.pretraining import PretrainingTask

    checkpoint = zoo_checkpoints[family]
    corpus = tmp_path / "corpus.txt"
    convert_wikiextractor(str(shared_data_dir / "wikipedia/enwiki-"
                          "wikiextractor/AA/wiki_02"), corpus)
    documents = pretraining.read_corpus(str(corpus))[:24]
    corpus.write_text("\n\n".join("\n".join(d[:20]) for d in documents)
                      + "\n", encoding="utf-8")
    common = ["--max_seq_length=64", "--max_predictions_per_seq=10"]
    if data == "static":
        subprocess.run(
            [sys.executable, "-m", "tasks.create_pretraining_data",
             f"--input_file={corpus}", f"--output_file={tmp_path / 'data'}",
             f"--init_checkpoint={checkpoint}", "--dupe_factor=2",
             "--do_whole_word_mask", *common], check=True,
            capture_output=True, cwd=Path(__file__).parents[2])
        record = json.loads((tmp_path / ".data.vocab.json").read_text())
        assert record["sentence_objective"] == "sentence_order"
        source = [f"--input_file={tmp_path / 'data'}"]
    else:
        source = [f"--corpus_file={corpus}"]
    model_dir, export_dir = tmp_path / "model", tmp_path / "export"
    task, prepared = run_task(PretrainingTask, [
        f"--init_checkpoint={checkpoint}", *source, "--do_train", "--do_eval",
        f"--eval_corpus_file={corpus}", f"--model_dir={model_dir}",
        f"--export_dir={export_dir}", "--num_train_steps=4",
        "--train_batch_size=8", "--eval_batch_size=8", *common])
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert 0 <= results["masked_lm_accuracy"] <= 1
    assert ("next_sentence_accuracy" in results) == (family == "albert")

    hf_class, sentence_output = {
        "roberta": (transformers.RobertaForMaskedLM, None),
        "albert": (transformers.AlbertForPreTraining, "sop_logits")}[family]
    hf_model, info = hf_class.from_pretrained(export_dir,
                                              output_loading_info=True)
    assert not info["missing_keys"], info
    batch = next(iter(task.eval_dataset))[0]
    ours = prepared.model(batch, training=False)
    mlm, sentence = _hf_masked_lm_outputs(hf_model.eval(), batch,
                                          sentence_output)
    np.testing.assert_allclose(np.asarray(ours["masked_lm_logits"]), mlm,
                               atol=1e-4)
    if sentence is not None:
        np.testing.assert_allclose(
            np.asarray(ours["next_sentence_logits"]), sentence, atol=1e-4)
    # The exported tokenizer files tokenize as the checkpoint's.
    text = [" ".join(documents[0][:3])]
    original = transformers.AutoTokenizer.from_pretrained(checkpoint)
    exported = transformers.AutoTokenizer.from_pretrained(export_dir)
    assert exported(text)["input_ids"] == original(text)["input_ids"]


def test_electra_replaced_token_detection_trains_and_exports(
        zoo_checkpoints, tmp_path, shared_data_dir):
    """An ELECTRA discriminator (`ElectraForPreTraining`) with a generator
    started from a config alone: trained by replaced-token detection,
    evaluated, and exported as the two HF models, which `transformers`
    loads; the exported discriminator computes what the trained one does."""
    import transformers

    from tfbert.data.wikipedia import convert_wikiextractor
    from tfbert.tasks.pretraining import PretrainingTask

    checkpoint = zoo_checkpoints["electra"]
    corpus = tmp_path / "corpus.txt"
    convert_wikiextractor(str(shared_data_dir / "wikipedia/enwiki-"
                          "wikiextractor/AA/wiki_03"), corpus)
    text = corpus.read_text(encoding="utf-8").split("\n\n")[:16]
    corpus.write_text("\n\n".join(text) + "\n", encoding="utf-8")
    generator = tmp_path / "generator"  # a config: the generator starts random
    vocab_size = json.loads((checkpoint / "config.json").read_text())[
        "vocab_size"]
    transformers.ElectraConfig(
        vocab_size=vocab_size, embedding_size=16, hidden_size=16,
        num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=130).save_pretrained(generator)
    model_dir, export_dir = tmp_path / "model", tmp_path / "export"
    task, prepared = run_task(PretrainingTask, [
        f"--init_checkpoint={checkpoint}", f"--generator_checkpoint={generator}",
        f"--corpus_file={corpus}", f"--eval_corpus_file={corpus}",
        "--do_train", "--do_eval", f"--model_dir={model_dir}",
        f"--export_dir={export_dir}", "--num_train_steps=3",
        "--train_batch_size=8", "--eval_batch_size=8", "--max_seq_length=64",
        "--max_predictions_per_seq=10"])
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert {"replaced_token_loss", "replaced_token_accuracy",
            "masked_lm_loss", "masked_lm_accuracy"} <= set(results)
    assert abs(results["loss"] - results["masked_lm_loss"]
               - 50 * results["replaced_token_loss"]) < 1e-2 * results["loss"]

    discriminator, info = transformers.ElectraForPreTraining.from_pretrained(
        export_dir / "discriminator", output_loading_info=True)
    assert not info["missing_keys"], info
    _, info = transformers.ElectraForMaskedLM.from_pretrained(
        export_dir / "generator", output_loading_info=True)
    assert not info["missing_keys"], info
    import torch

    batch = next(iter(task.eval_dataset))
    ours = prepared.model.discriminator(
        {name: batch[name] for name in ("input_word_ids", "input_mask",
                                        "input_type_ids")})
    with torch.no_grad():
        theirs = discriminator.eval()(
            input_ids=torch.tensor(batch["input_word_ids"].numpy()).long(),
            attention_mask=torch.tensor(batch["input_mask"].numpy()).long(),
            token_type_ids=torch.tensor(
                batch["input_type_ids"].numpy()).long()).logits.numpy()
    real = batch["input_mask"].numpy() == 1
    np.testing.assert_allclose(np.asarray(ours)[real], theirs[real],
                               atol=1e-4)

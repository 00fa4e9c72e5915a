"""Pretraining: tied decoder, a real learning check, and both scripts end to end."""

import collections
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfbert.config import BertConfig
from tfbert.data import pretraining
from tfbert.data.wikipedia import convert_wikiextractor
from tfbert.models import BertEncoder, BertPretrainer
from tfbert.text import BertTokenizer
from tfbert.text.vocab_builder import build_vocabulary_file
from tfbert.training import TrainingConfig, train

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def corpus(shared_data_dir, tmp_path_factory):
    """Real Wikipedia text: training documents, held-out documents, a vocab."""
    directory = tmp_path_factory.mktemp("pretraining")
    full = directory / "full.txt"
    convert_wikiextractor(
        str(shared_data_dir / "wikipedia/enwiki-wikiextractor/AA/wiki_01"), full)
    documents = pretraining.read_corpus(str(full))
    documents = [d[:30] for d in documents[:36]]
    train_docs, eval_docs = documents[:-8], documents[-8:]
    for name, docs in (("train.txt", train_docs), ("eval.txt", eval_docs)):
        (directory / name).write_text(
            "\n\n".join("\n".join(d) for d in docs) + "\n", encoding="utf-8")
    build_vocabulary_file([directory / "train.txt"], directory / "vocab.txt", 800)
    return directory


def tiny_config(vocab_size):
    return BertConfig(vocab_size=vocab_size, hidden_size=64, num_layers=2,
                      num_heads=2, intermediate_size=128)


def test_decoder_is_tied_to_the_word_embeddings():
    model = BertPretrainer(BertEncoder(tiny_config(97)))
    table_shaped = [v for v in model.weights if tuple(v.shape) == (97, 64)]
    assert len(table_shaped) == 1
    assert table_shaped[0] is model.encoder.embeddings.word_embeddings
    inputs = {"input_word_ids": tf.constant([[2, 10, 11, 3]]),
              "input_mask": tf.ones([1, 4], tf.int32),
              "input_type_ids": tf.zeros([1, 4], tf.int32),
              "masked_lm_positions": tf.constant([[1, 2]])}
    before = model(inputs)["masked_lm_logits"].numpy()
    # Changing the embedding of one id changes the logit of that id at the
    # output too (through the decoder), beyond the input side.
    table = model.encoder.embeddings.word_embeddings
    new = table.numpy()
    new[50] *= 10.0
    table.assign(new)
    after = model(inputs)["masked_lm_logits"].numpy()
    changed = np.abs(after - before).max(axis=(0, 1))
    assert changed[50] > 100 * np.delete(changed, 50).max()


@pytest.mark.slow
def test_tiny_model_learns_above_unigram_baseline(corpus):
    from tfbert.tasks.pretraining import loss_and_metrics

    keras.utils.set_random_seed(1)
    tokenizer = BertTokenizer(str(corpus / "vocab.txt"))
    masking = pretraining.MaskingConfig(max_predictions_per_seq=10)

    def documents(name):
        return pretraining.tokenize_documents(
            pretraining.read_corpus(str(corpus / name)), tokenizer)

    train_set = pretraining.dynamic_pretraining_dataset(
        documents("train.txt"), tokenizer, 32, max_seq_length=64,
        masking=masking, seed=1).map(pretraining.model_inputs)
    eval_batches = list(pretraining.dynamic_pretraining_dataset(
        documents("eval.txt"), tokenizer, 32, max_seq_length=64,
        masking=masking, seed=2))
    model = BertPretrainer(BertEncoder(tiny_config(tokenizer.vocab_size)))
    loss, metrics = loss_and_metrics(tokenizer.pad_id)
    train(model, train_set.take(40), steps_per_epoch=40,
          config=TrainingConfig(model_dir=str(corpus / "model"),
                                num_train_epochs=10, learning_rate=2e-3,
                                verbose=0),
          loss=loss, metrics=metrics)

    # Baseline: always predict the most frequent masked token of the
    # training data; measured on the held-out documents.
    train_labels = collections.Counter()
    for batch in pretraining.dynamic_pretraining_dataset(
            documents("train.txt"), tokenizer, 32, max_seq_length=64,
            masking=masking, seed=3):
        weights = batch["masked_lm_weights"].numpy() > 0
        train_labels.update(batch["masked_lm_ids"].numpy()[weights].tolist())
    most_frequent = train_labels.most_common(1)[0][0]
    hits = baseline_hits = total = 0
    for batch in eval_batches:
        x, _, _ = pretraining.model_inputs(batch)
        predicted = model(x)["masked_lm_logits"].numpy().argmax(-1)
        weights = batch["masked_lm_weights"].numpy() > 0
        labels = batch["masked_lm_ids"].numpy()
        hits += (predicted == labels)[weights].sum()
        baseline_hits += (labels == most_frequent)[weights].sum()
        total += weights.sum()
    accuracy, baseline = hits / total, baseline_hits / total
    print(f"MLM accuracy {accuracy:.3f}, unigram baseline {baseline:.3f} "
          f"({total} held-out predictions)")
    assert total > 500
    assert accuracy > baseline + 0.05 and accuracy > 1.5 * baseline


def _run(module, *args):
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    result = subprocess.run(
        [sys.executable, "-m", module, *args], cwd=REPO_ROOT, env=env,
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout + result.stderr


@pytest.mark.slow
def test_scripts_end_to_end(corpus, tmp_path):
    vocab = str(corpus / "vocab.txt")
    config = tmp_path / "config.json"
    tiny_config(len(open(vocab).read().split())).to_json_file(config, "hf")
    common = ["--max_seq_length=64", "--max_predictions_per_seq=10"]
    output = _run("tasks.create_pretraining_data",
                  f"--input_file={corpus / 'train.txt'}",
                  f"--output_file={tmp_path / 'train.tfrecord'}",
                  "--num_output_shards=2", f"--vocab_file={vocab}",
                  "--dupe_factor=1", "--do_whole_word_mask", *common)
    assert "instances/s" in output
    export = tmp_path / "export"
    _run("tasks.pretraining", f"--input_file={tmp_path / 'train.tfrecord-*'}",
         f"--vocab_file={vocab}", f"--bert_config_file={config}",
         f"--model_dir={tmp_path / 'model'}", "--do_train", "--do_eval",
         f"--eval_corpus_file={corpus / 'eval.txt'}",
         "--num_train_steps=6", "--train_batch_size=8", "--eval_batch_size=8",
         f"--export_dir={export}", *common)
    results = json.loads((tmp_path / "model" / "eval_results.json").read_text())
    assert {"masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
            "next_sentence_loss"} <= set(results)
    assert 0 <= results["masked_lm_accuracy"] <= 1

    # The export is a checkpoint the fine-tuning tasks start from, and
    # continued pretraining (dynamic masking) starts from it, heads included.
    encoder = BertEncoder.from_pretrained(str(export))
    assert encoder.config.vocab_size == tiny_config(800).vocab_size
    assert BertTokenizer.from_pretrained(str(export)).vocabulary == (
        BertTokenizer(vocab).vocabulary)
    output = _run("tasks.pretraining", f"--init_checkpoint={export}",
                  f"--corpus_file={corpus / 'train.txt'}",
                  f"--model_dir={tmp_path / 'continued'}", "--do_train",
                  "--num_train_steps=3", "--train_batch_size=8", *common)
    assert "head: it starts randomly initialised" not in output

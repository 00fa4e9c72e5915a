"""Pretraining: tied decoder, a real learning check, both scripts end to
end, and the other families' objectives through the task program (tiny HF
checkpoints, `tests/zoo_checkpoints.py`)."""

import collections
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.tasks.conftest import assert_runs_without_autotuning, run_task
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
    _assert_fills_masks_as_hf(export, corpus / "eval.txt")
    output = _run("tasks.pretraining", f"--init_checkpoint={export}",
                  f"--corpus_file={corpus / 'train.txt'}",
                  f"--model_dir={tmp_path / 'continued'}", "--do_train",
                  "--num_train_steps=3", "--train_batch_size=8", *common)
    assert "head: it starts randomly initialised" not in output


def _assert_fills_masks_as_hf(export, text_file):
    """`MaskFiller` on a `tfbert-pretrain` export predicts, for held-out
    sentences with masked words, the tokens and probabilities of HF's
    fill-mask pipeline on the same files."""
    from tests.test_fill_mask import TOP_K, _hf_fill_mask
    from tfbert.fill_mask import MaskFiller

    sentences = [line.split() for line in text_file.read_text(
        encoding="utf-8").splitlines() if len(line.split()) > 6][:5]
    texts = [" ".join(words[:2] + ["[MASK]"] + words[3:5] + ["[MASK]"]
                      + words[6:]) for words in sentences]
    got = MaskFiller.from_pretrained(str(export)).fill_mask(texts,
                                                            top_k=TOP_K)
    expected = _hf_fill_mask(export, texts)
    assert [len(masks) for masks in got] == [2] * len(texts)
    for ours, theirs in zip(got, expected, strict=True):
        for mask, hf_mask in zip(ours, theirs, strict=True):
            assert [r["token_id"] for r in mask] == [i for i, _ in hf_mask]
            np.testing.assert_allclose([r["probability"] for r in mask],
                                       [p for _, p in hf_mask], atol=1e-5)


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


@pytest.mark.slow
@pytest.mark.parametrize("family,data", [("roberta", "corpus"),
                                         ("albert", "static")])
def test_pretraining_trains_and_exports_the_family_model(
        family, data, zoo_checkpoints, tmp_path, shared_data_dir):
    """Continued pretraining of a family checkpoint with its own objective
    (RoBERTa: masked-LM only, dynamic masking; ALBERT: masked-LM +
    sentence order, static records), exported as the family's HF
    pretraining model with its tokenizer: `transformers` loads both and
    computes what the trained model computes."""
    import transformers

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
        _run("tasks.create_pretraining_data", f"--input_file={corpus}",
             f"--output_file={tmp_path / 'data'}",
             f"--init_checkpoint={checkpoint}", "--dupe_factor=2",
             "--do_whole_word_mask", *common)
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
    assert_runs_without_autotuning(task.eval_dataset)
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


@pytest.mark.slow
def test_electra_replaced_token_detection_trains_and_exports(
        zoo_checkpoints, tmp_path, shared_data_dir):
    """An ELECTRA discriminator (`ElectraForPreTraining`) with a generator
    started from a config alone: trained by replaced-token detection,
    evaluated, and exported as the two HF models, which `transformers`
    loads; the exported discriminator computes what the trained one does."""
    import torch
    import transformers

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

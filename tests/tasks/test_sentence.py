"""`tfbert-sentence` end to end on real STS-B rows with a tiny encoder:
train, evaluate (STS; retrieval), export; the export's embeddings equal
`encode()`."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
from scipy import stats

from tests.export.conftest import replay_warmup
from tests.tasks.conftest import run_task
from tfbert.data.glue import read_examples
from tfbert.tasks.sentence import SentenceTask


@pytest.fixture(scope="module")
def stsb_files(shared_data_dir, tmp_path_factory):
    """The first 48 train and 24 dev rows of the real STS-B (TSV), and the
    same dev pairs as JSONL without scores."""
    source = shared_data_dir / "glue" / "STS-B"
    out = tmp_path_factory.mktemp("stsb")
    for split, rows in (("train", 48), ("dev", 24)):
        lines = (source / f"{split}.tsv").read_text(
            encoding="utf-8").splitlines()
        (out / f"{split}.tsv").write_text("\n".join(lines[:rows + 1]) + "\n",
                                          encoding="utf-8")
    dev = read_examples(out / "dev.tsv", "stsb")
    (out / "dev.jsonl").write_text("".join(
        json.dumps({"sentence1": e.text_a, "sentence2": e.text_b}) + "\n"
        for e in dev), encoding="utf-8")
    return out


@pytest.mark.slow
def test_cosine_loss_trains_evaluates_and_exports(stsb_files, tiny_checkpoint,
                                                  tmp_path):
    task, prepared = run_task(SentenceTask, [
        f"--train_file={stsb_files / 'train.tsv'}",
        f"--eval_file={stsb_files / 'dev.tsv'}",
        "--text_a_column=sentence1", "--text_b_column=sentence2",
        "--label_column=score", "--score_scale=5", "--loss=cosine",
        f"--init_checkpoint={tiny_checkpoint}",
        f"--model_dir={tmp_path / 'model'}",
        f"--export_dir={tmp_path / 'export'}", "--do_train", "--do_eval",
        "--max_seq_length=32", "--num_train_epochs=1",
        "--train_batch_size=16", "--normalize"])
    model = prepared.model
    results = json.loads((tmp_path / "model" / "eval_results.json")
                         .read_text())
    assert results["evaluator"] == "sts" and results["num_examples"] == 24
    dev = read_examples(stsb_files / "dev.tsv", "stsb")
    a = model.encode([e.text_a for e in dev])
    b = model.encode([e.text_b for e in dev])
    cosines = np.sum(a * b, axis=1)
    gold = [float(e.label) for e in dev]
    assert results["spearman_cosine"] == pytest.approx(
        stats.spearmanr(gold, cosines)[0], abs=1e-6)

    export = tmp_path / "export" / "1"
    loaded = tf.saved_model.load(str(export))
    served = loaded.signatures["serving_default"](
        text=tf.constant([e.text_a for e in dev]))["embedding"].numpy()
    np.testing.assert_allclose(served, a, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(served, axis=1), 1.0,
                               atol=1e-5)
    assert sorted(replay_warmup(str(export), loaded.signatures)) == [
        "serve_token_ids", "serving_default"]


@pytest.mark.slow
def test_mnrl_on_jsonl_pairs_evaluates_retrieval(stsb_files, tiny_checkpoint,
                                                 tmp_path):
    run_task(SentenceTask, [
        f"--train_file={stsb_files / 'dev.jsonl'}",
        f"--eval_file={stsb_files / 'dev.jsonl'}",
        "--text_a_column=sentence1", "--text_b_column=sentence2",
        f"--init_checkpoint={tiny_checkpoint}",
        f"--model_dir={tmp_path / 'model'}", "--do_train", "--do_eval",
        "--max_seq_length=32", "--num_train_epochs=1",
        "--train_batch_size=8", "--pooling=cls"])
    results = json.loads((tmp_path / "model" / "eval_results.json")
                         .read_text())
    assert results["evaluator"] == "retrieval"
    assert set(results) >= {"recall@1", "recall@5", "recall@10", "mrr@10",
                            "ndcg@10", "map@100"}
    assert 0 < results["mrr@10"] <= 1

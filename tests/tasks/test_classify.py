"""`tfbert-classify` on a user's files, with the tiny encoder: the same GLUE
rows written as CSV/JSONL with other column names train exactly the model
`tfbert-glue` trains; metrics, saved labels, thresholds, predictions and
exports checked against scikit-learn and a re-computation."""

import csv
import json
import re

import numpy as np
import pytest
import tensorflow as tf
from sklearn import metrics as sk

from tests.tasks.conftest import (parse_task_flags, run_task,
                                  write_glue_subset)
from tfbert.data import glue as glue_data
from tfbert.tasks import glue as glue_task
from tfbert.tasks.classify import ClassifyTask
from tfbert.tasks.glue import GlueTask


def _common(tiny_checkpoint, model_dir, *extra):
    return [f"--init_checkpoint={tiny_checkpoint}", f"--model_dir={model_dir}",
            "--max_seq_length=48", "--train_batch_size=8",
            "--eval_batch_size=16", "--learning_rate=1e-3",
            "--num_train_epochs=1", "--seed=3", "--do_train", "--do_eval",
            *extra]


def _as_csv(examples, path, header, with_b):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\r\n")
        writer.writerow(header)
        for i, e in enumerate(examples):
            writer.writerow([f"row{i}", e.text_a, *([e.text_b] * with_b),
                             e.label])
    return path


def _dev_logits(prepared, task):
    return glue_task.predict_logits(prepared.model, task.eval_set
                                    if hasattr(task, "eval_set")
                                    else task.eval_sets[0][2])


def _serve(version, **texts):
    """The export's `serving_default` answer, as numpy / str lists."""
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

    out = tf.saved_model.load(str(version)).signatures["serving_default"](
        **{name: tf.constant(values) for name, values in texts.items()})
    return {name: [x.decode() for x in value.numpy()]
            if value.dtype == tf.string else value.numpy()
            for name, value in out.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sst2", "mrpc"])
def test_csv_trains_exactly_what_glue_trains(tmp_path, shared_data_dir,
                                             tiny_checkpoint, name, capsys):
    spec = glue_data.get_task(name)
    data = write_glue_subset(shared_data_dir, name, tmp_path / "glue",
                             n_train=32, n_dev=16)
    glue, glue_prepared = run_task(GlueTask, [
        f"--task={name}", f"--data_dir={data}",
        *_common(tiny_checkpoint, tmp_path / "glue_model")])
    header = ["id", "first", *(["second"] * spec.is_pair), "gold"]
    dev_examples = glue_data.read_examples(
        glue_data.split_path(data, spec, "dev"), spec)
    train = _as_csv(glue_data.read_examples(
        glue_data.split_path(data, spec, "train"), spec),
        tmp_path / "train.csv", header, spec.is_pair)
    dev = _as_csv(dev_examples, tmp_path / "dev.csv", header, spec.is_pair)
    model_dir, export_dir = tmp_path / "model", tmp_path / "export"
    mine, mine_prepared = run_task(ClassifyTask, [
        f"--train_file={train}", f"--eval_file={dev}",
        "--text_a_column=first", "--label_column=gold",
        *(["--text_b_column=second"] * spec.is_pair),
        "--do_predict", f"--predict_file={dev}",
        *([f"--export_dir={export_dir}"] * (name == "sst2")),
        *_common(tiny_checkpoint, model_dir)])
    if name == "mrpc":  # Most MRPC pairs are longer than 48 tokens.
        assert re.search(f"{re.escape(str(train))}: [1-9][0-9]* of 32 rows "
                         "are longer than max_seq_length=48 tokens",
                         capsys.readouterr().out)
    logits = _dev_logits(mine_prepared, mine)
    np.testing.assert_array_equal(logits, _dev_logits(glue_prepared, glue))
    theirs = json.loads((tmp_path / "glue_model" / "eval_results.json")
                        .read_text())["dev"]
    ours = json.loads((model_dir / "eval_results.json").read_text())["eval"]
    assert ours["accuracy"] == theirs["accuracy"]
    if name == "mrpc":
        assert ours["per_class"]["1"]["f1"] == pytest.approx(theirs["f1"])
    truth = [int(e.label) for e in dev_examples]
    predicted = logits.argmax(-1)
    assert ours["num_examples"] == 16
    for average in ("macro", "micro"):
        assert ours[f"{average}_f1"] == pytest.approx(sk.f1_score(
            truth, predicted, average=average, labels=[0, 1],
            zero_division=0))
    assert ours["confusion_matrix"] == sk.confusion_matrix(
        truth, predicted, labels=[0, 1]).tolist()
    assert (model_dir / "labels.txt").read_text() == "0\n1\n"
    lines = (model_dir / "predictions" / "dev.tsv").read_text().splitlines()
    assert lines == ["id\tprediction"] + [f"row{i}\t{p}"
                                          for i, p in enumerate(predicted)]
    if name == "sst2":
        version = export_dir / "1"
        assert (version / "assets" / "labels.txt").read_text() == "0\n1\n"
        served = _serve(version, sentence=[e.text_a for e in dev_examples])
        np.testing.assert_allclose(served["probabilities"],
                                   tf.nn.softmax(logits).numpy(), atol=1e-5)
        assert served["label"] == [str(p) for p in predicted]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _sst2_rows(shared_data_dir, n):
    return glue_data.read_examples(glue_data.split_path(
        shared_data_dir / "glue", "sst2", "train"), "sst2")[:n]


@pytest.mark.slow
def test_multi_label_thresholds_predictions_and_export(
        tmp_path, shared_data_dir, tiny_checkpoint, capsys):
    from tfbert_cli import query

    examples = _sst2_rows(shared_data_dir, 48)
    # Two overlapping labels (some rows have neither): sentiment, and
    # whether the review is long.
    rows = [{"text": e.text_a,
             "topics": "|".join(name for name, on in (
                 ("long", len(e.text_a.split()) > 8),
                 ("positive", e.label == "1")) if on)}
            for e in examples]
    train = tmp_path / "train.csv"
    with open(train, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, ["text", "topics"])
        writer.writeheader()
        writer.writerows(rows[:32])
    dev = _write_jsonl(tmp_path / "dev.jsonl", [
        {"text": r["text"], "topics": r["topics"].split("|")
         if r["topics"] else []} for r in rows[32:]])
    export_dir = tmp_path / "export"
    task, prepared = run_task(ClassifyTask, [
        f"--train_file={train}", f"--eval_file={dev}", "--multi_label",
        "--label_column=topics", "--label_separator=|", "--do_predict",
        f"--predict_file={dev}", f"--export_dir={export_dir}",
        *_common(tiny_checkpoint, tmp_path / "model")])
    model_dir = tmp_path / "model"
    results = json.loads((model_dir / "eval_results.json").read_text())["eval"]
    probabilities = tf.sigmoid(_dev_logits(prepared, task)).numpy()
    truth = np.array([[name in r["topics"].split("|")
                       for name in ("long", "positive")] for r in rows[32:]])
    for key, decided in (
            ("at 0.5", probabilities >= 0.5),
            ("tuned", probabilities >= np.array(
                [results["tuned"]["thresholds"][n]
                 for n in ("long", "positive")], np.float32))):
        got = results if key == "at 0.5" else results["tuned"]
        assert got["micro_f1"] == pytest.approx(sk.f1_score(
            truth, decided, average="micro", zero_division=0)), key
        assert got["subset_accuracy"] == pytest.approx(
            sk.accuracy_score(truth, decided)), key
    thresholds = json.loads((model_dir / "thresholds.json").read_text())
    assert thresholds == results["tuned"]["thresholds"]
    version = export_dir / "1"
    assert (version / "assets" / "labels.txt").read_text() == (
        "long\npositive\n")
    served = _serve(version, sentence=[r["text"] for r in rows[32:]])
    np.testing.assert_allclose(served["probabilities"], probabilities,
                               atol=1e-5)
    expected = probabilities >= np.array([thresholds["long"],
                                          thresholds["positive"]], np.float32)
    assert served["predicted"].tolist() == expected.tolist()
    # tfbert-query answers this kind too.
    capsys.readouterr()
    query.main([str(export_dir), rows[32]["text"]])
    answer = json.loads(capsys.readouterr().out)
    assert answer["inputs"] == {"sentence": rows[32]["text"]}
    answer = answer["outputs"]
    assert answer["predicted"] == expected[0].tolist()
    np.testing.assert_allclose(answer["probabilities"], probabilities[0],
                               atol=1e-5)
    lines = (model_dir / "predictions" / "dev.tsv").read_text().splitlines()
    assert lines[1:] == [
        f"{line}\t" + "|".join(n for n, on in zip(("long", "positive"), row)
                               if on)
        for line, row in zip(range(1, 17), expected)]


@pytest.mark.slow
def test_regression_reports_pearson_and_spearman(tmp_path, shared_data_dir,
                                                 tiny_checkpoint):
    from scipy import stats

    pairs = glue_data.read_examples(glue_data.split_path(
        shared_data_dir / "glue", "stsb", "train"), "stsb")[:48]
    path = _as_csv(pairs, tmp_path / "all.csv", ["id", "a", "b", "y"], True)
    lines = path.read_text(encoding="utf-8").splitlines()
    (tmp_path / "train.csv").write_text("\n".join(lines[:33]) + "\n")
    (tmp_path / "dev.csv").write_text("\n".join(lines[:1] + lines[33:]) + "\n")
    task, prepared = run_task(ClassifyTask, [
        f"--train_file={tmp_path / 'train.csv'}",
        f"--eval_file={tmp_path / 'dev.csv'}", "--regression",
        "--text_a_column=a", "--text_b_column=b", "--label_column=y",
        *_common(tiny_checkpoint, tmp_path / "model")])
    results = json.loads((tmp_path / "model" / "eval_results.json")
                         .read_text())["eval"]
    scores = _dev_logits(prepared, task)[:, 0]
    truth = [float(e.label) for e in pairs[32:]]
    assert results["pearson"] == pytest.approx(
        stats.pearsonr(truth, scores)[0], abs=1e-6)
    assert results["spearman"] == pytest.approx(
        stats.spearmanr(truth, scores)[0], abs=1e-6)
    assert not (tmp_path / "model" / "labels.txt").exists()


def test_balanced_class_weights_weigh_the_loss(tmp_path):
    from sklearn.utils.class_weight import compute_class_weight

    labels = ["b"] * 6 + ["a"] * 3 + ["c"]
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "".join(
        f"text {i},{label}\n" for i, label in enumerate(labels)))
    task = parse_task_flags(ClassifyTask, [
        f"--train_file={train}", f"--model_dir={tmp_path}", "--do_train",
        "--class_weights=balanced"])
    task.check()
    loss = task.compile_args()["loss"]
    ids = np.array([("a", "b", "c").index(label) for label in labels])
    expected_weights = compute_class_weight("balanced", classes=np.arange(3),
                                            y=ids)
    np.testing.assert_allclose(loss.class_weights, expected_weights,
                               rtol=1e-6)
    logits = np.random.default_rng(0).normal(size=(10, 3)).astype(np.float32)
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = np.mean(-log_softmax[np.arange(10), ids]
                       * expected_weights[ids])
    assert float(loss(ids, logits)) == pytest.approx(expected, rel=1e-5)


@pytest.mark.slow
def test_long_documents_are_classified_from_all_their_windows(
        tmp_path, shared_data_dir, tiny_checkpoint, capsys):
    from tfbert.data.squad import doc_windows
    from tfbert.text import BertPreprocessor

    reviews = _sst2_rows(shared_data_dir, 160)
    # Four reviews per document; its label is the last one's, often past
    # the first 32-token window.
    docs = [{"text": " ".join(e.text_a for e in reviews[i:i + 4]),
             "label": reviews[i + 3].label} for i in range(0, 160, 4)]
    train = _write_jsonl(tmp_path / "train.jsonl", docs[:24])
    dev = _write_jsonl(tmp_path / "dev.jsonl", docs[24:])
    export_dir = tmp_path / "export"
    task, prepared = run_task(ClassifyTask, [
        f"--train_file={train}", f"--eval_file={dev}", "--doc_stride=16",
        "--window_pooling=max", f"--export_dir={export_dir}",
        *_common(tiny_checkpoint, tmp_path / "model"),
        "--max_seq_length=32"])
    assert re.search(f"{re.escape(str(dev))}: [1-9][0-9]* of 16 rows are "
                     "longer than max_seq_length=32 tokens and are read in "
                     "windows", capsys.readouterr().out)
    # Windows cut in Python (SQuAD's plan), pooled in numpy.
    preprocessor = BertPreprocessor.from_pretrained(
        str(tiny_checkpoint), seq_length=32, pad_to_seq_length=False)
    windows, owners = [], []
    for i, doc in enumerate(docs[24:]):
        tokens = preprocessor.tokenizer.tokenize(
            tf.constant([doc["text"]])).to_list()[0]
        for start, length in doc_windows(len(tokens), 30, 16):
            windows.append(tokens[start:start + length])
            owners.append(i)
    assert sum(owners.count(i) > 1 for i in range(16)) >= 8, owners
    logits = prepared.model(preprocessor.pack(
        [tf.ragged.constant(windows, tf.int32)]), training=False).numpy()
    pooled = np.array([logits[np.array(owners) == i].max(0)
                       for i in range(16)])
    truth = [int(doc["label"]) for doc in docs[24:]]
    results = json.loads((tmp_path / "model" / "eval_results.json")
                         .read_text())["eval"]
    assert results["accuracy"] == pytest.approx(sk.accuracy_score(
        truth, pooled.argmax(-1)))
    served = _serve(export_dir / "1",
                    sentence=[doc["text"] for doc in docs[24:]])
    np.testing.assert_allclose(served["probabilities"],
                               tf.nn.softmax(pooled).numpy(), atol=1e-5)

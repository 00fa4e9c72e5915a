"""`tfbert-multiple-choice` end to end on the multiple-choice set built from
the real SQuAD file: training, accuracy, predictions and the export."""

import csv
import json

import numpy as np
import pytest
import tensorflow as tf

from tests.tasks.conftest import run_task
from tfbert.data.multiple_choice import pack_choices, read_examples
from tfbert.data.squad_choices import squad_choice_examples
from tfbert.tasks.multiple_choice import MultipleChoiceTask

SERVE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
inputs = json.loads(open(sys.argv[2]).read())
out = tf.saved_model.load(sys.argv[1]).signatures["serving_default"](
    context=tf.constant(inputs["context"]),
    choices=tf.constant(inputs["choices"]))
print(json.dumps({k: v.numpy().tolist() for k, v in out.items()}))
"""


@pytest.fixture(scope="module")
def squad_choice_files(shared_data_dir, tmp_path_factory):
    """24 train (JSONL) and 12 dev (SWAG CSV) examples from different
    articles, and 6 unlabeled test examples (JSONL)."""
    examples = squad_choice_examples(
        shared_data_dir / "squad_v1.1" / "dev-v1.1.partA.json")
    titles = list(dict.fromkeys(title for title, _ in examples))
    by_title = {t: [e for title, e in examples if title == t] for t in titles}
    directory = tmp_path_factory.mktemp("multiple_choice")
    with open(directory / "train.jsonl", "w") as f:
        for example in by_title[titles[0]][:24]:
            f.write(json.dumps(example) + "\n")
    with open(directory / "dev.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["sent1", "sent2", "ending0", "ending1", "ending2",
                         "ending3", "label"])
        for example in by_title[titles[1]][:12]:
            writer.writerow([example["context"], "", *example["choices"],
                             example["label"]])
    with open(directory / "test.jsonl", "w") as f:
        for example in by_title[titles[2]][:6]:
            f.write(json.dumps({"context": example["context"],
                                "choices": example["choices"]}) + "\n")
    return directory


@pytest.mark.slow
def test_trains_evaluates_predicts_and_exports(
        squad_choice_files, tiny_checkpoint, tmp_path, run_fresh_python):
    from tests.export.conftest import replay_warmup
    from tfbert.export import check_serving_ops

    data = squad_choice_files
    model_dir, export_dir = tmp_path / "model", tmp_path / "export"
    task, prepared = run_task(MultipleChoiceTask, [
        f"--train_file={data / 'train.jsonl'}",
        f"--dev_file={data / 'dev.csv'}", f"--test_file={data / 'test.jsonl'}",
        f"--init_checkpoint={tiny_checkpoint}", f"--model_dir={model_dir}",
        f"--export_dir={export_dir}", "--do_train", "--do_eval",
        "--do_predict", "--max_seq_length=96", "--train_batch_size=8",
        "--num_train_epochs=1", "--learning_rate=1e-3"])
    model = prepared.model

    def probabilities(examples):
        features = pack_choices(task.preprocessor,
                                tf.constant([e.context for e in examples]),
                                tf.constant([list(e.choices)
                                             for e in examples]))
        return tf.nn.softmax(model(features, training=False)).numpy()

    dev = read_examples(data / "dev.csv")
    expected = np.mean(probabilities(dev).argmax(-1)
                       == [e.label for e in dev])
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["dev"]["num_examples"] == 12
    assert results["dev"]["accuracy"] == pytest.approx(expected)

    test = read_examples(data / "test.jsonl", labeled=False)
    lines = (model_dir / "predictions.jsonl").read_text().splitlines()
    predictions = [json.loads(line) for line in lines]
    assert [p["guid"] for p in predictions] == [e.guid for e in test]
    np.testing.assert_allclose([p["probabilities"] for p in predictions],
                               probabilities(test), atol=1e-5)
    assert [p["choice"] for p in predictions] == list(
        probabilities(test).argmax(-1))

    # The export, in a process with only tensorflow and tensorflow_text.
    (tmp_path / "inputs.json").write_text(json.dumps(
        {"context": [e.context for e in test],
         "choices": [list(e.choices) for e in test]}))
    path = export_dir / "1"
    served = run_fresh_python(SERVE, path, tmp_path / "inputs.json")
    np.testing.assert_allclose(served["probabilities"], probabilities(test),
                               atol=1e-5)
    assert served["choice"] == [p["choice"] for p in predictions]
    check_serving_ops(str(path))
    loaded = tf.saved_model.load(str(path))
    assert sorted(replay_warmup(str(path), loaded.signatures, {
        "serve_token_ids": task.config.num_choices})) == [
        "serve_token_ids", "serving_default"]
    features = pack_choices(task.preprocessor, tf.constant([test[0].context]),
                            tf.constant([list(test[0].choices)]))
    length = task.preprocessor.seq_length
    ids = {name: tf.reshape(tf.pad(value, [[0, 0], [0, 0], [
        0, length - value.shape[-1]]]), [-1, length])
        for name, value in features.items()}
    by_ids = loaded.signatures["serve_token_ids"](**ids)
    np.testing.assert_allclose(by_ids["probabilities"].numpy()[0],
                               probabilities(test[:1])[0], atol=1e-5)

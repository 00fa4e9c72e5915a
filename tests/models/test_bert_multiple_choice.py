"""`MultipleChoiceClassifier` against HF `*ForMultipleChoice` on the same
random weights, for every family: logits, loss, and the export path's logits."""

import keras
import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from tests.models.test_encoder_families import FAMILIES, _inputs, _randomize
from tfbert.inference import task_outputs
from tfbert.models import MultipleChoiceClassifier, Encoder

HF_CLASSES = {
    "bert": transformers.BertForMultipleChoice,
    "distilbert": transformers.DistilBertForMultipleChoice,
    "electra": transformers.ElectraForMultipleChoice,
    "roberta": transformers.RobertaForMultipleChoice,
    "albert": transformers.AlbertForMultipleChoice,
}
# HF's weights of what tfbert puts on the first token when the encoder has
# no pooler: DistilBERT's `pre_classifier`, ELECTRA's summary projection.
HF_POOLERS = {"distilbert": "pre_classifier",
              "electra": "sequence_summary.summary"}


def _choices(pad_id, with_segments):
    """Two examples of three packed pairs each: [2, 3, seq]."""
    rows = _inputs(pad_id, with_segments)
    return {name: np.stack([value, value[[2, 0, 1]]])
            for name, value in rows.items()}


@pytest.mark.parametrize("family", sorted(HF_CLASSES))
def test_logits_and_loss_match_hf(family, tmp_path):
    _, hf_config, _, with_segments = FAMILIES[family]
    hf_model = _randomize(HF_CLASSES[family](hf_config))
    hf_model.save_pretrained(tmp_path, safe_serialization=True)
    # Not strict: BERT's reader counts the classifier's weights as unused;
    # an encoder weight left unloaded would show in the logits below.
    model = MultipleChoiceClassifier(
        Encoder.from_pretrained(tmp_path, strict=False))
    assert (model.pooler is None) == (family not in HF_POOLERS)
    state = {k: v.numpy() for k, v in hf_model.state_dict().items()}
    model.head.dense.kernel.assign(state["classifier.weight"].T)
    model.head.dense.bias.assign(state["classifier.bias"])
    if family in HF_POOLERS:
        model.pooler.dense.kernel.assign(
            state[f"{HF_POOLERS[family]}.weight"].T)
        model.pooler.dense.bias.assign(state[f"{HF_POOLERS[family]}.bias"])

    inputs = _choices(hf_config.pad_token_id or 0, with_segments)
    labels = np.array([2, 0])
    kwargs = dict(input_ids=torch.tensor(inputs["input_word_ids"]).long(),
                  attention_mask=torch.tensor(inputs["input_mask"]).long(),
                  labels=torch.tensor(labels))
    if with_segments:
        kwargs["token_type_ids"] = torch.tensor(
            inputs["input_type_ids"]).long()
    with torch.no_grad():
        expected = hf_model(**kwargs)
    logits = np.asarray(model(inputs, training=False))
    assert logits.shape == (2, 3)
    assert np.abs(logits).max() > 0.1
    np.testing.assert_allclose(logits, expected.logits.numpy(), atol=1e-4)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
        labels, logits)
    assert abs(float(loss) - expected.loss.item()) < 1e-4
    np.testing.assert_allclose(
        tf.function(lambda x: task_outputs(model, x))(inputs).numpy(), logits,
        atol=1e-5)


def test_keras_config_round_trip(tiny_checkpoint):
    model = MultipleChoiceClassifier.from_pretrained(tiny_checkpoint,
                                                     dropout=0.2)
    copy = MultipleChoiceClassifier.from_config(model.get_config())
    assert copy.dropout == 0.2
    assert [w.shape for w in copy.weights] == [w.shape for w in model.weights]

"""Training signal parity: `BertSpanLabeler`'s loss and gradients equal HF
`BertForQuestionAnswering`'s on the real MiniLM weights (dropout off, the same
head weights, an unpadded batch with two segments). Built without the
pooler it never reads, every trainable variable gets a gradient."""

import keras
import numpy as np
import tensorflow as tf
import torch
from transformers import BertForQuestionAnswering

from tfbert import BertSpanLabeler


def test_loss_and_gradients_match_hf(minilm_dir):
    hf = BertForQuestionAnswering.from_pretrained(
        str(minilm_dir), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    hf.train()
    model = BertSpanLabeler.from_pretrained(
        str(minilm_dir), hidden_dropout=0.0, attention_dropout=0.0)
    model.head.dense.kernel.assign(hf.qa_outputs.weight.detach().numpy().T)
    model.head.dense.bias.assign(hf.qa_outputs.bias.detach().numpy())

    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 30000, (4, 40)).astype("int32")
    ids[:, 0] = 101
    types = np.zeros_like(ids)
    types[:, 15:] = 1
    starts, ends = np.array([16, 20, 5, 25]), np.array([18, 22, 7, 28])

    output = hf(input_ids=torch.tensor(ids).long(),
                attention_mask=torch.ones(ids.shape, dtype=torch.long),
                token_type_ids=torch.tensor(types).long(),
                start_positions=torch.tensor(starts),
                end_positions=torch.tensor(ends))
    output.loss.backward()

    cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    features = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
                "input_type_ids": types}
    with tf.GradientTape() as tape:
        logits = model(features, training=True)
        loss = 0.5 * (cross_entropy(starts, logits["start_logits"])
                      + cross_entropy(ends, logits["end_logits"]))
    gradients = dict(zip((v.path for v in model.trainable_variables),
                         tape.gradient(loss, model.trainable_variables)))

    assert not [path for path in gradients if "pooler" in path]
    assert not [path for path, gradient in gradients.items()
                if gradient is None]
    assert abs(float(loss) - output.loss.item()) < 1e-5
    layer = hf.bert.encoder.layer
    pairs = {
        "embeddings/word_embeddings": (hf.bert.embeddings.word_embeddings.weight, False),
        "transformer_block_0/attention/query/kernel": (layer[0].attention.self.query.weight, True),
        "transformer_block_3/intermediate/kernel": (layer[3].intermediate.dense.weight, True),
        "transformer_block_5/output/kernel": (layer[5].output.dense.weight, True),
        "span_labeling_head/logits/kernel": (hf.qa_outputs.weight, True),
    }
    for suffix, (parameter, transposed) in pairs.items():
        [path] = [p for p in gradients if p.endswith(suffix)]
        ours = tf.convert_to_tensor(gradients[path]).numpy()
        theirs = parameter.grad.numpy()
        theirs = theirs.T if transposed else theirs
        scale = np.abs(theirs).max()
        assert np.abs(ours - theirs).max() <= 1e-4 * scale, path

"""Exports a small random BERT with TF Model Garden's own TF Hub exporter.

    TF_USE_LEGACY_KERAS=1 python tests/hub/model_garden_producer.py VOCAB OUT

Writes OUT/encoder (no MLM), OUT/encoder_mlm and OUT/preprocess with
`official.nlp.tools.export_tfhub_lib`, the code that produced the published
TF Hub BERT models. Runs under tf_keras (Keras 2), so only in a subprocess.
Weights are drawn far from the initializer's scale so that parity checks
see every variable.
"""

import os
import sys

import numpy as np
import tensorflow as tf
from official.legacy.bert import configs
from official.modeling import tf_utils
from official.nlp.modeling import models
from official.nlp.tools import export_tfhub_lib


def main(vocab_path, out_dir):
    with open(vocab_path, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    bert_config = configs.BertConfig(
        vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, hidden_act="gelu",
        max_position_embeddings=64, type_vocab_size=2)
    encoder = export_tfhub_lib.get_bert_encoder(bert_config)
    pretrainer = models.BertPretrainerV2(
        encoder_network=encoder,
        mlm_activation=tf_utils.get_activation(bert_config.hidden_act))
    # Build the masked-LM head's variables.
    pretrainer({"input_word_ids": tf.zeros([1, 4], tf.int32),
                "input_mask": tf.ones([1, 4], tf.int32),
                "input_type_ids": tf.zeros([1, 4], tf.int32),
                "masked_lm_positions": tf.zeros([1, 1], tf.int32)})
    rng = np.random.default_rng(0)
    for variable in pretrainer.variables:
        noise = rng.normal(0.0, 0.2, variable.shape).astype(np.float32)
        if variable.name.split("/")[-1].startswith("gamma"):
            noise += 1.0
        variable.assign(noise)
    checkpoint_dir = os.path.join(out_dir, "checkpoint")
    prefix = tf.train.Checkpoint(**pretrainer.checkpoint_items).save(
        os.path.join(checkpoint_dir, "ckpt"))
    for name, with_mlm in (("encoder", False), ("encoder_mlm", True)):
        export_tfhub_lib.export_model(
            os.path.join(out_dir, name), bert_config=bert_config,
            model_checkpoint_path=prefix, with_mlm=with_mlm,
            vocab_file=vocab_path, do_lower_case=True)
    export_tfhub_lib.export_preprocessing(
        os.path.join(out_dir, "preprocess"), vocab_file=vocab_path,
        do_lower_case=True, tokenize_with_offsets=False,
        default_seq_length=64)


if __name__ == "__main__":
    main(*sys.argv[1:])

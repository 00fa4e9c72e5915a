"""Writing a `BertEncoder` as a reusable TF Hub BERT encoder SavedModel.

The SavedModel follows the convention of TF Hub's BERT encoders (as written by
TF Model Garden's `export_tfhub`), so `hub.load` and
`hub.KerasLayer(path, trainable=True)` can use and fine-tune it:

  * the root is callable, `outputs = obj(inputs, training=False)`, traced for
    both `training` values: `inputs` is a dict of int32 [batch, seq] tensors
    `input_word_ids`, `input_mask`, `input_type_ids`; `outputs` is a dict
    with `pooled_output` float32 [batch, H], `sequence_output` float32
    [batch, seq, H], `encoder_outputs` (a list of num_layers float32
    [batch, seq, H]) and `default` (= `pooled_output`). With
    `training=False` the encoder runs on the real tokens only
    (`tfbert.inference.EncoderInference`): padding positions hold zeros;
  * `obj.variables`, `obj.trainable_variables`, `obj.regularization_losses`
    are saved lists, which is what `hub.KerasLayer` fine-tunes;
  * `obj.vocab_file` (an asset) and `obj.do_lower_case` (a bool variable)
    describe the tokenizer; a SentencePiece tokenizer (ALBERT) is
    `obj.sp_model_file` instead, as in TF Hub's ALBERT encoders, and a
    byte-level BPE one `obj.vocab_file` (vocab.json) and `obj.merges_file`;
  * optionally `obj.mlm`, callable the same way with the extra input
    `masked_lm_positions` int32 [batch, num_predictions], returning the
    encoder outputs plus `mlm_logits` float32 [batch, num_predictions, vocab]
    (the decoder is the word-embedding table itself).

tfbert also stores its config as the asset `tfbert_config.json`, so that
`from_pretrained` restores details no weight shape tells (the activation,
the LayerNorm epsilon).
"""

import os
import tempfile

import tensorflow as tf

from tfbert.checkpoints.tf_hub import CONFIG_ATTRIBUTE
from tfbert.hub.reusable import reusable_object
from tfbert.hub.saving import save_atomically
from tfbert.inference import EncoderInference
from tfbert.models.bert_encoder import INPUT_NAMES
from tfbert.utils.atomic import check_writable

CONFIG_ASSET = "tfbert_config.json"
# Per tokenizer class: (root attribute, file its save_pretrained writes).
_TOKENIZER_ASSETS = {
    "BertTokenizer": (("vocab_file", "vocab.txt"),),
    "SentencePieceTokenizer": (("sp_model_file", "spiece.model"),),
    "ByteBpeTokenizer": (("vocab_file", "vocab.json"),
                         ("merges_file", "merges.txt")),
}


def _input_spec(*names):
    return {name: tf.TensorSpec([None, None], tf.int32, name=name)
            for name in names}


def _encoder_outputs(encoder, inputs, training):
    inputs = {name: inputs[name] for name in INPUT_NAMES}
    # Inference skips padding (`EncoderInference`); training
    # runs the Keras model, whose gradients fine-tuning needs.
    outputs = (encoder(inputs, training=True) if training
               else EncoderInference(encoder)(inputs, all_blocks=True))
    # float32 whatever the encoder computes in (the pooler of a bfloat16
    # encoder answers in bfloat16).
    pooled = tf.cast(outputs["pooled_output"], tf.float32)
    return {
        "sequence_output": tf.cast(outputs["sequence_output"], tf.float32),
        "pooled_output": pooled,
        "encoder_outputs": [tf.cast(x, tf.float32)
                            for x in outputs["encoder_outputs"]],
        "default": pooled,
    }


def export_encoder(encoder, tokenizer, export_dir, pretrainer=None):
    """Saves `encoder` as a TF Hub BERT encoder SavedModel in `export_dir`.

    Args:
      encoder: a `BertEncoder` of any family, with a pooler.
      tokenizer: the tokenizer of the encoder; its files become the assets
        above and its `lowercase` (False if it has none) the
        `do_lower_case` attribute.
      export_dir: the SavedModel directory to write (must not exist or be
        empty).
      pretrainer: a `BertPretrainer` around `encoder`; when given, its
        masked-LM head is exported as the `mlm` sub-object.

    Returns:
      The absolute path of `export_dir`.
    """
    if pretrainer is not None and pretrainer.encoder is not encoder:
        raise ValueError("pretrainer must wrap the exported encoder")
    if tokenizer.vocab_size != encoder.config.vocab_size:
        raise ValueError(
            f"the tokenizer has {tokenizer.vocab_size} tokens but the encoder "
            f"vocab_size={encoder.config.vocab_size}")
    check_writable(os.fspath(export_dir))

    root = reusable_object(
        lambda inputs, training: _encoder_outputs(encoder, inputs, training),
        _input_spec(*INPUT_NAMES), encoder.variables)
    if pretrainer is not None:
        head = pretrainer.masked_lm_head

        def mlm_call(inputs, training):
            outputs = _encoder_outputs(encoder, inputs, training)
            outputs["mlm_logits"] = head(
                outputs["sequence_output"], inputs["masked_lm_positions"],
                encoder.embeddings.word_embeddings)
            return outputs

        root.mlm = reusable_object(
            mlm_call, _input_spec(*INPUT_NAMES, "masked_lm_positions"),
            encoder.variables + head.variables)
    root.do_lower_case = tf.Variable(getattr(tokenizer, "lowercase", False),
                                     trainable=False, name="do_lower_case")
    with tempfile.TemporaryDirectory() as assets:
        tokenizer.save_pretrained(assets)
        encoder.config.to_json_file(os.path.join(assets, CONFIG_ASSET))
        for attribute, name in _TOKENIZER_ASSETS[type(tokenizer).__name__]:
            setattr(root, attribute, tf.saved_model.Asset(
                os.path.join(assets, name)))
        setattr(root, CONFIG_ATTRIBUTE, tf.saved_model.Asset(
            os.path.join(assets, CONFIG_ASSET)))
        return save_atomically(root, export_dir)

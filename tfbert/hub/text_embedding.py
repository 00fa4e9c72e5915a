"""Writing a `SentenceEncoder` as a TF Hub text-embedding SavedModel.

The interface is that of TF Hub's TF2 text embeddings (e.g. `nnlm-en-dim128`,
`universal-sentence-encoder`): raw strings in, one vector per string out, so
`hub.KerasLayer(path)` over a tf.string [batch] input is the embedding
model, and `hub.KerasLayer(path, trainable=True)` fine-tunes it:

  * the root is callable, `embeddings = obj(texts, training=False)`, traced
    for both `training` values: `texts` tf.string [batch] -> float32
    [batch, D] (unit norm when the model normalises). Tokenization,
    encoder, pooling, projection and normalisation are all inside. With
    `training=False` it computes what `SentenceEncoder.encode` does
    (`tfbert.inference.task_outputs`: the encoder on real tokens only);
    with `training=True` the Keras forward with dropout, whose gradients
    reach every encoder variable;
  * `obj.variables`, `obj.trainable_variables`, `obj.regularization_losses`
    are saved lists (`tfbert.hub.reusable`).

Like every raw-text graph of tfbert, it loads in a process that has imported
`tensorflow_text`, and passes `tfbert.export.check_serving_ops`.
"""

import os

import tensorflow as tf

from tfbert.hub.reusable import reusable_object
from tfbert.hub.saving import save_atomically
from tfbert.inference import task_outputs
from tfbert.utils.atomic import check_writable


def export_text_embedding(model, export_dir):
    """Saves `model` as a TF Hub text-embedding SavedModel in `export_dir`.

    Args:
      model: a `SentenceEncoder` (any family, pooling, projection).
      export_dir: the SavedModel directory to write (must not exist or be
        empty).

    Returns:
      The absolute path of `export_dir`.
    """
    check_writable(os.fspath(export_dir))

    def embed(texts, training):
        if training:
            embeddings = model(texts, training=True)
        else:
            embeddings = task_outputs(model, model.preprocessor(texts))
        return tf.cast(embeddings, tf.float32)

    root = reusable_object(embed, tf.TensorSpec([None], tf.string),
                           model.variables)
    # The tokenizer's lookup tables (byte-level BPE, SentencePiece) are
    # resources the traced functions capture.
    root.tokenizer = model.preprocessor.tokenizer
    return save_atomically(root, export_dir, check_ops=True)

"""`TokenClassifier` (formerly `BertTokenClassifier`): per-token tags
(NER), softmax or CRF."""

import keras
import tensorflow as tf

from tfbert.layers import TokenClassificationHead
from tfbert.layers.crf import CRF, compact, iob2_constraints
from tfbert.models.checkpoint_entry import checkpoints
from tfbert.models.encoder_task_model import EncoderTaskModel, loadable_as


@keras.saving.register_keras_serializable(package="tfbert")
def token_classification_loss(labels, logits):
    """Mean softmax cross-entropy over the positions whose label is >= 0.

    Args:
      labels: int [batch, seq]; negative ids (such as
        `tfbert.data.ner_alignment.IGNORE_LABEL`) are skipped.
      logits: float32 [batch, seq, num_labels].

    Returns:
      float32 scalar.
    """
    labels = tf.cast(labels, tf.int32)
    keep = labels >= 0
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
        tf.where(keep, labels, 0), tf.cast(logits, tf.float32))
    keep = tf.cast(keep, tf.float32)
    return tf.reduce_sum(losses * keep) / tf.maximum(tf.reduce_sum(keep), 1.0)


@keras.saving.register_keras_serializable(package="tfbert")
class TokenClassifier(EncoderTaskModel, keras.Model):
    """An encoder with a `TokenClassificationHead` on its sequence output,
    optionally followed by a linear-chain `CRF`.

    Inputs: the encoder's input dict. Output: float32 logits
    [batch, seq, num_labels] (with `use_crf`, the CRF's emission scores).

    With `use_crf`, the model computes its own loss (`compute_loss`): the
    CRF negative log-likelihood of the tags at the labelled positions
    (labels >= 0, i.e. each word's first piece), which are gathered into one
    word-level sequence per row; compile it with `loss=None`. Decode with
    `decode`.

    Args:
      encoder: a `BertEncoder`.
      num_labels: number of tags.
      dropout: dropout rate before the output layer.
      use_crf: add a CRF over the word-level tag sequence.
      labels: optional tag names (id order); with `use_crf` and IOB2 names
        the CRF forbids invalid moves (O -> I-X, B-X -> I-Y, start -> I-X).

    Example:
    ```python
    model = BertTokenClassifier(encoder, 9, use_crf=True, labels=labels)
    model.compile(optimizer="adam", loss=None)
    model.fit(features, label_ids)  # [batch, seq]; negative = skip
    tags = model.decode(model(features), label_ids >= 0)
    ```
    """

    def __init__(self, encoder, num_labels, dropout=0.1, use_crf=False,
                 labels=None, **kwargs):
        if labels is not None and len(labels) != num_labels:
            raise ValueError(f"{len(labels)} labels given for num_labels="
                             f"{num_labels}")
        self.encoder = encoder
        self.num_labels = num_labels
        self.dropout = dropout
        self.use_crf = use_crf
        self.labels = list(labels) if labels is not None else None
        self.head = TokenClassificationHead(
            num_labels, dropout=dropout,
            initializer_range=encoder.config.initializer_range,
            name="token_classification_head")
        self.crf = None
        if use_crf:
            allowed, allowed_start = (iob2_constraints(labels) if labels
                                      else (None, None))
            self.crf = CRF(num_labels, allowed, allowed_start, name="crf")
        inputs = encoder.input
        super().__init__(inputs=inputs,
                         outputs=self.head_outputs(encoder(inputs), inputs),
                         **kwargs)

    def head_outputs(self, encoder_outputs, inputs, training=None):
        """float32 logits [batch, seq, num_labels] (with `use_crf`, the
        CRF's emission scores) from the encoder's `sequence_output`;
        `inputs` are not read."""
        logits = self.head(encoder_outputs["sequence_output"],
                           training=training)
        return logits if self.crf is None else self.crf(logits)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                     training=True):
        # A CRF model compiled with a loss (distillation's, which calls
        # `crf_negative_log_likelihood` itself) is trained on that loss.
        if not self.use_crf or self.loss is not None:
            return super().compute_loss(x, y, y_pred, sample_weight,
                                        training=training)
        loss = self.crf_negative_log_likelihood(y, y_pred)
        return loss + tf.add_n(self.losses) if self.losses else loss

    def crf_negative_log_likelihood(self, labels, emissions):
        """The CRF loss: mean over the rows with labelled positions (labels
        int [batch, seq] >= 0) of the negative log-likelihood of their tags,
        gathered into one word-level sequence per row (a row without any,
        e.g. a sentence only a teacher tagged, adds nothing). Emissions:
        float32 [batch, seq, num_labels]. Returns a float32 scalar."""
        labels = tf.cast(labels, tf.int32)
        word_emissions, lengths = compact(emissions, labels >= 0)
        tags, _ = compact(labels, labels >= 0)
        rows = tf.reduce_sum(tf.cast(lengths > 0, tf.float32))
        return -tf.reduce_sum(self.crf.log_likelihood(
            word_emissions, tags, lengths)) / tf.maximum(rows, 1.0)

    def decode(self, logits, word_mask):
        """Tag ids at the word positions.

        Args:
          logits: float32 [batch, seq, num_labels], the model's output.
          word_mask: bool [batch, seq], True at each word's first piece.

        Returns:
          int32 [batch, seq]: the tag id at word positions, -1 elsewhere.
          Softmax: the argmax per position. CRF: the Viterbi path over the
          word positions of each row.
        """
        word_mask = tf.convert_to_tensor(word_mask, tf.bool)
        if not self.use_crf:
            tags = tf.argmax(logits, axis=-1, output_type=tf.int32)
            return tf.where(word_mask, tags, -1)
        emissions, lengths = compact(logits, word_mask)
        word_tags = self.crf.decode(emissions, lengths)
        # Row r's k-th word position receives word_tags[r, k].
        slot = tf.cumsum(tf.cast(word_mask, tf.int32), axis=1) - 1
        tags = tf.gather(word_tags, tf.maximum(slot, 0), batch_dims=1)
        return tf.where(word_mask, tags, -1)

    @classmethod
    def from_pretrained(cls, name_or_path, num_labels, dropout=0.1,
                        use_crf=False, labels=None, **config_overrides):
        """A token classifier on the encoder of any family's checkpoint
        (see `tfbert.Encoder.from_pretrained`), built without a pooler; the
        head is newly initialised."""
        config_overrides.setdefault("use_pooler", False)
        return cls(checkpoints().load_encoder(name_or_path, **config_overrides),
                   num_labels, dropout=dropout, use_crf=use_crf, labels=labels)

    from_preset = from_pretrained  # keras-hub's name

    def task_config(self):
        return {"num_labels": self.num_labels, "dropout": self.dropout,
                "use_crf": self.use_crf, "labels": self.labels}


BertTokenClassifier = loadable_as(TokenClassifier, "BertTokenClassifier")

"""`TextClassifier` (formerly `BertTextClassifier`): raw strings in, class
logits (or a score) out, for every family."""

import keras
import numpy as np
import tensorflow as tf

from tfbert import families
from tfbert.data.batching import prefetch_for_keras
from tfbert.models.bert_classifier import SequenceClassifier
from tfbert.models.encoder_task_model import EncoderTaskModel, loadable_as
from tfbert.models.raw_text_model import RawTextModel, texts_tensor
from tfbert.text.packing_layout import LAYOUTS
from tfbert.text.preprocessor import Preprocessor

DEFAULT_BATCH_SIZE = 32
PAIR_INPUTS = ("text_a", "text_b")


@keras.saving.register_keras_serializable(package="tfbert")
class TextClassifier(RawTextModel, EncoderTaskModel, keras.Model):
    """A family's preprocessor and a `SequenceClassifier` in one Keras model
    whose inputs are raw strings: `fit`, `evaluate` and `predict` take lists
    of str, and `save("x.keras")` stores the vocabulary with the weights.

    Inputs: tf.string [batch] (one text per example) or, with `is_pair`, a
    dict `text_a`, `text_b` of tf.string [batch] (`fit`, `evaluate` and
    `predict` also take a tuple of two lists). Output: float32 logits
    [batch, num_classes]; with `num_classes=1` a regression score
    [batch, 1].

    Tokenization runs in the model graph (string ops cannot be XLA-compiled,
    so `compile` defaults to `jit_compile=False`). `compile()` without
    arguments picks BERT's fine-tuning recipe: `tfbert.training` AdamW
    (learning rate 2e-5, weight decay 0.01, global-norm clip 1.0) with 10%
    warmup and linear decay over the first `fit` call, and the loss and
    metric that suit `num_classes`.

    Args:
      preprocessor: the encoder family's preprocessor (a `BertPreprocessor`
        or a `Preprocessor`: tokenizer, layout and `seq_length`).
      classifier: a `SequenceClassifier`.
      is_pair: examples are text pairs.

    Example:
    ```python
    model = tfbert.TextClassifier.from_pretrained(
        "minilm-l6-h384-uncased", num_classes=2, seq_length=64)
    model.compile()
    model.fit(["a fine film", "a dull film"], [1, 0], epochs=3)
    model.predict(["fine"])  # float32 logits [1, 2]
    model.classify("fine")     # {"label": ..., "score": ..., "probabilities": ...}
    tfbert.export.export_for_serving(model, "saved_models/films")  # ./1
    ```
    """

    nested_objects = ("preprocessor", "classifier")

    def __init__(self, preprocessor, classifier, is_pair=False, **kwargs):
        self.preprocessor = preprocessor
        self.classifier = classifier
        self.is_pair = bool(is_pair)
        if self.is_pair:
            inputs = {name: keras.Input(shape=(), dtype="string", name=name)
                      for name in PAIR_INPUTS}
            segments = tuple(inputs[name] for name in PAIR_INPUTS)
        else:
            inputs = keras.Input(shape=(), dtype="string", name="text")
            segments = (inputs,)
        logits = classifier(preprocessor(segments))
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self._auto_optimizer = None

    @property
    def num_classes(self):
        return self.classifier.num_classes

    @property
    def label_names(self):
        """The class names (`SequenceClassifier.class_names`); None for
        regression."""
        return self.classifier.class_names()

    @classmethod
    def from_pretrained(cls, name_or_path, num_classes, seq_length=128,
                        is_pair=False, dropout=0.1,
                        truncation="longest_first", label_names=None,
                        **config_overrides):
        """A classifier on a pretrained encoder of any family and that
        family's tokenizer and packing.

        Args:
          name_or_path: a preset name (see `tfbert.presets`) or a checkpoint
            directory with its tokenizer files (any layout
            `tfbert.Encoder.from_pretrained` reads).
          num_classes: number of classes, or 1 for regression.
          seq_length: tokens per example, special tokens included; at most
            the checkpoint's `max_position_embeddings`.
          is_pair: examples are text pairs.
          dropout: dropout rate before the output layer.
          truncation: how pairs are cut (see `Preprocessor`).
          label_names: class names in id order (`classify` and the serving
            export's `label`); by default the class ids as strings.
          **config_overrides: encoder config fields to replace.
        """
        classifier = SequenceClassifier.from_pretrained(
            name_or_path, num_classes, dropout=dropout,
            label_names=label_names, name="classifier", **config_overrides)
        encoder = classifier.encoder
        limit = (encoder.config.max_position_embeddings
                 - encoder.config.position_offset)
        layout = LAYOUTS[families.of_encoder_class(type(encoder)).layout]
        # Room for one token of each segment besides the special tokens.
        segments = 2 if is_pair else 1
        minimum = layout.num_special_tokens(segments) + segments
        if not minimum <= seq_length <= limit:
            raise ValueError(
                f"seq_length must be in [{minimum}, {limit}] for "
                f"{name_or_path} (max_position_embeddings={limit}), got "
                f"{seq_length}")
        preprocessor = Preprocessor.from_pretrained(
            name_or_path, seq_length=seq_length, truncation=truncation,
            name="preprocessor")
        return cls(preprocessor, classifier, is_pair=is_pair)

    from_preset = from_pretrained  # keras-hub's name

    def _default_loss_and_metrics(self, loss, metrics):
        """"auto" loss: sparse softmax cross-entropy on the logits (labels
        int class ids), or mean squared error for regression; "auto"
        metrics: accuracy (classification), none (regression)."""
        regression = self.num_classes == 1
        if loss == "auto":
            loss = (keras.losses.MeanSquaredError() if regression else
                    keras.losses.SparseCategoricalCrossentropy(
                        from_logits=True))
        if metrics == "auto":
            metrics = [] if regression else [
                keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        return loss, metrics

    def classify(self, texts, batch_size=None):
        """Label names and probabilities for raw text, pipeline-style.

        Args:
          texts: a str or a list of str; for a pair model, a tuple of two
            str or a tuple of two lists of str.

        Returns:
          For each example a dict: `label` (the likeliest class name),
          `score` (its probability) and `probabilities` (class name ->
          probability); for regression just `score`. One example given
          alone gives one dict, otherwise a list.
        """
        single = (isinstance(texts, tuple) and len(texts) == 2
                  and all(isinstance(t, str) for t in texts)
                  if self.is_pair else isinstance(texts, str))
        if single:
            texts = tuple([t] for t in texts) if self.is_pair else [texts]
        logits = np.asarray(self.predict(texts, batch_size=batch_size,
                                         verbose=0), np.float64)
        if self.num_classes == 1:
            results = [{"score": float(row[0])} for row in logits]
        else:
            exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
            probabilities = exp / exp.sum(axis=-1, keepdims=True)
            names = self.label_names
            results = [{"label": names[int(np.argmax(row))],
                        "score": float(row.max()),
                        "probabilities": dict(zip(names, map(float, row)))}
                       for row in probabilities]
        return results[0] if single else results

    def _dataset(self, x, y, batch_size, shuffle=False):
        """Batches `(x, y)` into a `tf.data.Dataset` (Keras' own array
        handling does not take strings); a dataset passes through."""
        if isinstance(x, tf.data.Dataset):
            return x
        if self.is_pair:
            if not (isinstance(x, (tuple, list)) and len(x) == 2):
                raise ValueError("a pair classifier takes x=(texts_a, texts_b)")
            x = dict(zip(PAIR_INPUTS, map(texts_tensor, x)))
            count = int(x["text_a"].shape[0])
            if int(x["text_b"].shape[0]) != count:
                raise ValueError(f"x has {count} first and "
                                 f"{x['text_b'].shape[0]} second texts")
        else:
            x = texts_tensor(x)
            count = int(x.shape[0])
        if y is not None:
            y = np.asarray(y)
            if len(y) != count:
                raise ValueError(f"{count} texts but {len(y)} labels")
            y = y.astype("float32" if self.num_classes == 1 else "int32")
        dataset = tf.data.Dataset.from_tensor_slices(
            x if y is None else (x, y))
        if shuffle:
            dataset = dataset.shuffle(count, reshuffle_each_iteration=True)
        return prefetch_for_keras(
            dataset.batch(batch_size or DEFAULT_BATCH_SIZE))

    def task_config(self):
        return {"is_pair": self.is_pair}


BertTextClassifier = loadable_as(TextClassifier, "BertTextClassifier")

"""`SequenceClassifier` (formerly `BertClassifier`): sequence
classification and regression for every family."""

import keras

from tfbert import families
from tfbert.layers import ClassificationHead, Pooler
from tfbert.models.checkpoint_entry import checkpoints
from tfbert.models.encoder_task_model import EncoderTaskModel, loadable_as


@keras.saving.register_keras_serializable(package="tfbert")
class SequenceClassifier(EncoderTaskModel, keras.Model):
    """An encoder with a `ClassificationHead` on its pooled output.

    What is pooled follows HF's sequence classifier of the encoder's family:
    BERT and ALBERT read `pooled_output`; DistilBERT, ELECTRA and RoBERTa put
    a new dense layer of their own on the first token
    (`encoder.classification_activation`), so their encoder needs no pooler
    (`from_pretrained` builds none).

    Inputs: the encoder's input dict. Output: float32 logits
    [batch, num_classes]; with `num_classes=1` a regression score [batch, 1].

    Args:
      encoder: a `BertEncoder` of any family.
      num_classes: number of classes, or 1 for regression.
      dropout: dropout rate before the output layer.
      label_names: class names in id order (stored in the config; the
        serving export's `label` output), or None: class ids as strings.
    """

    def __init__(self, encoder, num_classes, dropout=0.1, label_names=None,
                 **kwargs):
        if label_names is not None and (
                num_classes == 1 or len(label_names) != num_classes):
            raise ValueError(f"{len(label_names)} label names given for "
                             f"num_classes={num_classes}")
        self.encoder = encoder
        self.num_classes = num_classes
        self.dropout = dropout
        self.label_names = (None if label_names is None
                            else [str(name) for name in label_names])
        self.head = ClassificationHead(
            num_classes, dropout=dropout,
            initializer_range=encoder.config.initializer_range,
            name="classification_head")
        activation = encoder.classification_activation
        if activation is not None:
            self.pooler = Pooler(encoder.config.initializer_range, activation,
                                 name="classification_pooler")
        inputs = encoder.input
        logits = self.head_outputs(encoder(inputs), inputs)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

    first_token_head = True

    def head_outputs(self, encoder_outputs, inputs, training=None):
        """float32 logits [batch, num_classes] from the encoder's outputs
        (`pooled_output`, or the classification pooler on
        `sequence_output`'s first position); `inputs` are not read."""
        if self.encoder.classification_activation is None:
            features = encoder_outputs["pooled_output"]
        else:
            features = self.pooler(encoder_outputs["sequence_output"])
        return self.head(features, training=training)

    def class_names(self):
        """`label_names`, or the class ids as strings; None for
        regression."""
        if self.num_classes == 1:
            return None
        return self.label_names or [str(i) for i in range(self.num_classes)]

    @classmethod
    def from_pretrained(cls, name_or_path, num_classes, dropout=0.1,
                        label_names=None, name=None, **config_overrides):
        """A classifier (Keras name `name`) on the encoder of any family's
        checkpoint (see `tfbert.Encoder.from_pretrained`); the head is newly
        initialised."""
        checkpoint = checkpoints().read_checkpoint(name_or_path)
        family = families.get(checkpoint.model_type)
        if family.encoder_class.classification_activation is not None:
            config_overrides.setdefault("use_pooler", False)
        return cls(checkpoints().build_encoder(checkpoint, **config_overrides),
                   num_classes, dropout=dropout, label_names=label_names,
                   name=name)

    from_preset = from_pretrained  # keras-hub's name

    def task_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout,
                "label_names": self.label_names}


BertClassifier = loadable_as(SequenceClassifier, "BertClassifier")

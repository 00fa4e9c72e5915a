"""`ElectraPretrainer`: ELECTRA's replaced-token detection (Clark et al.,
2020), a generator and a discriminator trained together."""

import keras
from keras import ops

from tfbert.models.checkpoint_entry import checkpoints
from tfbert.models.electra_encoder import ElectraDiscriminator
from tfbert.models.encoder_task_model import EncoderTaskModel

# Inputs of the discriminator's encoder.
_ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


@keras.saving.register_keras_serializable(package="tfbert")
class ElectraPretrainer(EncoderTaskModel, keras.Model):
    """A masked-LM generator proposes tokens at the masked positions; the
    discriminator predicts, at every real token of the resulting text,
    whether it was replaced, i.e. differs from the original.

    The generator's tokens are sampled from its softmax and carry no
    gradient; the loss (`compute_loss`, so `compile` needs no `loss`) is the
    generator's masked-LM cross-entropy (mean over real predictions) plus
    `discriminator_weight` x the discriminator's binary cross-entropy (mean
    over real tokens), as in the paper. The two models keep their own
    embeddings (the paper ties them; HF's checkpoints are separate).

    Inputs: the encoder's input dict (the masked text) plus
    `masked_lm_positions` int32, `masked_lm_ids` int32 (the original ids
    there) and `masked_lm_weights` float32 (1 for a real prediction), each
    [batch, num_predictions].

    Outputs: a dict with `masked_lm_logits` float32 [batch, P, vocab] (the
    generator's), `replaced_token_logits` float32 [batch, seq] (the
    discriminator's), `replaced_input_ids` int32 [batch, seq] (the text the
    discriminator read) and `replaced_token_labels` float32 [batch, seq] (1
    where that text differs from the original).

    Args:
      generator: a `BertPretrainer` on an `ElectraEncoder` (masked-LM).
      discriminator: an `ElectraDiscriminator`.
      discriminator_weight: the weight of the discriminator's loss (50).
      seed: seed of the sampling.
    """

    nested_objects = ("generator", "discriminator")

    def __init__(self, generator, discriminator, discriminator_weight=50.0,
                 seed=None, **kwargs):
        super().__init__(**kwargs)
        self.generator = generator
        self.discriminator = discriminator
        self.discriminator_weight = float(discriminator_weight)
        self.sampling_seed = keras.random.SeedGenerator(seed)
        self.trackers = {name: keras.metrics.Mean(name=name) for name in (
            "masked_lm_loss", "masked_lm_accuracy", "replaced_token_loss",
            "replaced_token_accuracy")}
        self.built = True

    @property
    def encoder(self):
        """The discriminator's encoder: the model pretraining is for."""
        return self.discriminator.encoder

    def call(self, inputs, training=None):
        logits = self.generator(inputs, training=training)["masked_lm_logits"]
        batch, predictions = ops.shape(logits)[0], ops.shape(logits)[1]
        sampled = keras.random.categorical(
            ops.reshape(ops.stop_gradient(logits), (-1, logits.shape[-1])), 1,
            seed=self.sampling_seed, dtype="int32")
        sampled = ops.reshape(sampled, (batch, predictions))
        ids = ops.cast(inputs["input_word_ids"], "int32")
        # [batch, P, seq]: which position each real prediction is at.
        at = ops.one_hot(ops.cast(inputs["masked_lm_positions"], "int32"),
                         ops.shape(ids)[1], dtype="int32") * ops.cast(
            inputs["masked_lm_weights"] > 0, "int32")[..., None]
        predicted = ops.max(at, axis=1) > 0

        def scatter(values):
            return ops.sum(at * ops.cast(values, "int32")[..., None], axis=1)

        original = ops.where(predicted, scatter(inputs["masked_lm_ids"]), ids)
        replaced = ops.where(predicted, scatter(sampled), ids)
        labels = ops.cast(ops.not_equal(replaced, original), "float32") * (
            ops.cast(inputs["input_mask"], "float32"))
        discriminator_inputs = {name: inputs[name] for name in _ENCODER_INPUTS}
        discriminator_inputs["input_word_ids"] = replaced
        return {
            "masked_lm_logits": logits,
            "replaced_token_logits": self.discriminator(
                discriminator_inputs, training=training),
            "replaced_input_ids": replaced,
            "replaced_token_labels": labels,
        }

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                     training=True):
        weights = ops.cast(x["masked_lm_weights"], "float32")
        mlm_logits = y_pred["masked_lm_logits"]
        targets = ops.cast(x["masked_lm_ids"], "int32")
        total = ops.maximum(ops.sum(weights), 1.0)
        masked_lm_loss = ops.sum(ops.sparse_categorical_crossentropy(
            targets, mlm_logits, from_logits=True) * weights) / total
        masked_lm_hits = ops.cast(ops.equal(
            ops.argmax(mlm_logits, axis=-1), targets), "float32")

        mask = ops.cast(x["input_mask"], "float32")
        logits = y_pred["replaced_token_logits"]
        labels = y_pred["replaced_token_labels"]
        token_losses = ops.binary_crossentropy(labels, logits,
                                               from_logits=True)
        tokens = ops.maximum(ops.sum(mask), 1.0)
        replaced_token_loss = ops.sum(token_losses * mask) / tokens
        replaced_hits = ops.cast(ops.equal(
            ops.cast(logits > 0, "float32"), labels), "float32")

        self.trackers["masked_lm_loss"].update_state(masked_lm_loss)
        self.trackers["masked_lm_accuracy"].update_state(
            ops.sum(masked_lm_hits * weights) / total)
        self.trackers["replaced_token_loss"].update_state(replaced_token_loss)
        self.trackers["replaced_token_accuracy"].update_state(
            ops.sum(replaced_hits * mask) / tokens)
        return (masked_lm_loss
                + self.discriminator_weight * replaced_token_loss)

    @property
    def metrics(self):
        return [*super().metrics, *self.trackers.values()]

    def task_config(self):
        return {"discriminator_weight": self.discriminator_weight}

    @classmethod
    def from_pretrained(cls, discriminator_directory, generator_directory,
                        **kwargs):
        """The discriminator of an `ElectraForPreTraining` directory and the
        generator of an `ElectraForMaskedLM` one (either may hold only a
        config: then that model starts random, which is logged)."""
        generator = checkpoints().load_pretrainer(generator_directory)
        return cls(generator, ElectraDiscriminator.from_pretrained(
            discriminator_directory, strict=False), **kwargs)

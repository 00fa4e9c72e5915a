"""Masked-LM pretraining with the family's sentence objective, from
scratch or continued: the task of `tfbert-pretrain`.

The command line (flags, the checks on their values, --help) is
`tfbert_cli.pretraining`.
"""

import dataclasses
import glob
import os
import warnings

import keras

from tfbert import families
from tfbert.checkpoints import load_pretrainer, read_checkpoint, save_pretrainer
from tfbert.checkpoints.variable_map import HEAD_PREFIX
from tfbert.config import BertConfig
from tfbert.data import pretraining
from tfbert.data.batching import prefetch_for_keras
from tfbert.metrics.masked_lm import MaskedLMAccuracy
from tfbert.models import BertEncoder, BertPretrainer
from tfbert.models.electra_encoder import ElectraEncoder
from tfbert.models.electra_pretrainer import ElectraPretrainer
from tfbert.tasks import runner
from tfbert.utils.json_file import read_json
from tfbert_cli import pretraining as pretraining_program


def loss_and_metrics(pad_id, sentence_head=True):
    """Weighted masked-LM loss (mean over real predictions) + the sentence
    head's loss (with `sentence_head`), and the accuracy of each, for
    `Model.compile`."""
    loss = {
        "masked_lm_logits": keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"),
    }
    metrics = {
        "masked_lm_logits": [MaskedLMAccuracy(ignore_id=pad_id,
                                              name="accuracy")],
    }
    if sentence_head:
        loss["next_sentence_logits"] = (
            keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        metrics["next_sentence_logits"] = [
            keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
    return loss, metrics


# Keras names per-output losses and metrics `<output>_<name>`; a model with
# one output gets them unprefixed, and its loss is the masked-LM loss.
_RESULT_NAMES = {
    "masked_lm_logits_loss": "masked_lm_loss",
    "masked_lm_logits_accuracy": "masked_lm_accuracy",
    "next_sentence_logits_loss": "next_sentence_loss",
    "next_sentence_logits_accuracy": "next_sentence_accuracy",
}


def evaluate(model, dataset):
    """`loss`, `masked_lm_loss`, `masked_lm_accuracy` and, for a model with a
    sentence head, `next_sentence_loss` and `next_sentence_accuracy`, for
    an `ElectraPretrainer` `replaced_token_loss` and
    `replaced_token_accuracy` (its masked-LM ones are the generator's),
    over `dataset` (a dict of floats)."""
    results = model.evaluate(dataset, verbose=0, return_dict=True)
    if isinstance(model, BertPretrainer) and model.next_sentence_head is None:
        results = {"loss": results["loss"],
                   "masked_lm_logits_loss": results["loss"],
                   "masked_lm_logits_accuracy": results["accuracy"]}
    return {_RESULT_NAMES.get(name, name): float(value)
            for name, value in results.items()}


# What a PretrainingTask is made from: a frozen dataclass, a field per
# flag of `tfbert_cli.pretraining` with the flag's default.
PretrainingConfig = pretraining_program.PROGRAM.config_class


class PretrainingTask(runner.Task):
    """Masked-LM (+ sentence objective) pretraining of a `BertPretrainer`."""

    name = "pretrain"
    program = pretraining_program.PROGRAM
    training_parameters = ("input_file", "corpus_file", "num_train_steps",
                           "max_predictions_per_seq", "masked_lm_prob",
                           "short_seq_prob", "do_whole_word_mask",
                           "bert_config_file", "generator_checkpoint")

    def _sources(self, static_flag, corpus_flag, needed):
        f = self.config
        static, corpus = getattr(f, static_flag), getattr(f, corpus_flag)
        if not needed:
            return None
        # Exactly one of the two (tfbert_cli.pretraining checks it).
        pattern = static or corpus
        files = sorted(path for p in pattern.split(",") for path in glob.glob(p))
        if not files:
            raise runner.UserError(
                f"`{static_flag if static else corpus_flag}`={pattern}: no "
                "file matches")
        return ("static" if static else "corpus"), pattern, files

    def check(self):
        f = self.config
        self.train_source = self._sources("input_file", "corpus_file",
                                          f.do_train)
        self.eval_source = self._sources(
            "eval_input_file", "eval_corpus_file",
            f.do_eval or (f.do_train and bool(f.eval_input_file
                                              or f.eval_corpus_file)))
        self.replaced_token_detection = False
        if f.bert_config_file:
            self.bert_config = BertConfig.from_json_file(f.bert_config_file)
            self.objective = BertEncoder.sentence_objective
        else:
            encoder = families.family_of(f.init_checkpoint).encoder_class
            self.objective = encoder.sentence_objective
            if encoder is ElectraEncoder:
                self._check_electra()
        if f.generator_checkpoint and not self.replaced_token_detection:
            raise runner.UserError(
                "`generator_checkpoint` is read only with an ELECTRA "
                "`init_checkpoint`")

    def _check_electra(self):
        """Replaced-token detection for an ELECTRA discriminator, which
        needs its generator."""
        f = self.config
        config_path = os.path.join(f.init_checkpoint, "config.json")
        discriminator = os.path.isfile(config_path) and (
            "ElectraForPreTraining"
            in read_json(config_path).get("architectures", ()))
        if discriminator and not f.generator_checkpoint:
            raise runner.UserError(
                f"`init_checkpoint`={f.init_checkpoint} is an ELECTRA "
                "discriminator: replaced-token detection needs the generator "
                "too, pass `generator_checkpoint`")
        if f.generator_checkpoint:
            if (families.family_of(f.generator_checkpoint).encoder_class
                    is not ElectraEncoder):
                raise runner.UserError(
                    f"`generator_checkpoint`={f.generator_checkpoint} is not "
                    "an ELECTRA checkpoint directory")
            self.replaced_token_detection = True

    def training_files(self):
        return self.train_source[2]

    def build_inputs(self, preprocessor):
        tokenizer = self.tokenizer = preprocessor.tokenizer
        self.layout = preprocessor.layout
        for source in (self.train_source, self.eval_source):
            if source and source[0] == "static":
                pretraining.check_data_vocabulary(source[2], tokenizer,
                                                  self.objective)
        self.eval_dataset = (self._dataset(self.eval_source,
                                           self.config.eval_batch_size,
                                           training=False)[0]
                             if self.eval_source else None)

    def _dataset(self, source, batch_size, *, training):
        """`(dataset of (x, y, sample_weight), batches per epoch)`."""
        f = self.config
        kind, pattern, _ = source
        if kind == "static":
            dataset = pretraining.pretraining_dataset(
                pattern, batch_size, max_seq_length=f.max_seq_length,
                max_predictions_per_seq=f.max_predictions_per_seq,
                shuffle=training, seed=f.seed)
        else:
            documents = pretraining.tokenize_documents(
                pretraining.read_corpus(pattern.split(",")), self.tokenizer)
            dataset = pretraining.dynamic_pretraining_dataset(
                documents, self.tokenizer, batch_size,
                max_seq_length=f.max_seq_length,
                short_seq_prob=f.short_seq_prob,
                masking=pretraining.MaskingConfig(
                    max_predictions_per_seq=f.max_predictions_per_seq,
                    masked_lm_prob=f.masked_lm_prob,
                    whole_word_mask=f.do_whole_word_mask),
                seed=f.seed, objective=self.objective, layout=self.layout)
            if not training:
                # Fixed masks: the same held-out batches for every evaluation.
                dataset = dataset.cache()
        steps = sum(1 for _ in dataset)
        if steps == 0:
            raise runner.UserError(
                f"{pattern}: the data gives no full batch of {batch_size}; "
                "lower the batch size")
        if self.replaced_token_detection:
            dataset = dataset.map(pretraining.replaced_token_inputs)
        else:
            sentence_labels = self.objective is not None
            dataset = dataset.map(lambda features: pretraining.model_inputs(
                features, sentence_labels))
        return prefetch_for_keras(dataset), steps

    def build_model(self, init_checkpoint):
        vocab_size = self.tokenizer.vocab_size
        if self.config.bert_config_file:
            config = self.bert_config
            if config.vocab_size != vocab_size:
                raise runner.UserError(
                    f"`bert_config_file`={self.config.bert_config_file}: "
                    f"vocab_size={config.vocab_size} but the vocabulary has "
                    f"{vocab_size} tokens")
            print(f"pretraining from scratch: {config}")
            return BertPretrainer(BertEncoder(config))
        if families.model_type_of(init_checkpoint) != "bert":
            return self._family_model(init_checkpoint, vocab_size)
        checkpoint = read_checkpoint(init_checkpoint)
        if not checkpoint.weights:
            print(f"{init_checkpoint} has no weights: pretraining from "
                  "scratch")
            return load_pretrainer(init_checkpoint, vocab_size=vocab_size)
        if checkpoint.config.vocab_size != vocab_size:
            raise runner.UserError(
                f"`init_checkpoint`={init_checkpoint} has vocab_size="
                f"{checkpoint.config.vocab_size} but the vocabulary has "
                f"{vocab_size} tokens (a new vocabulary means pretraining "
                "from scratch: `bert_config_file`)")
        heads = {name.split("/")[1] for name in checkpoint.weights
                 if name.startswith(HEAD_PREFIX)}
        for head, name in (("predictions", "masked-LM"),
                           ("seq_relationship", "next-sentence")):
            if head not in heads:
                warnings.warn(f"{init_checkpoint} has no {name} head: it "
                              "starts randomly initialised")
        return load_pretrainer(init_checkpoint)

    def _family_model(self, init_checkpoint, vocab_size):
        if self.replaced_token_detection:
            model = ElectraPretrainer.from_pretrained(
                init_checkpoint, self.config.generator_checkpoint,
                seed=self.config.seed)
            encoders = ((init_checkpoint, model.encoder),
                        (self.config.generator_checkpoint,
                         model.generator.encoder))
        else:
            model = load_pretrainer(init_checkpoint)
            encoders = ((init_checkpoint, model.encoder),)
        for flag_value, encoder in encoders:
            if encoder.config.vocab_size != vocab_size:
                raise runner.UserError(
                    f"{flag_value} has vocab_size="
                    f"{encoder.config.vocab_size} but the tokenizer of "
                    f"`init_checkpoint` has {vocab_size} tokens")
        return model

    def train_dataset(self):
        f = self.config
        dataset, steps = self._dataset(self.train_source, f.train_batch_size,
                                       training=True)
        if f.num_train_steps:
            # The runner trains num_train_epochs * steps batches (of the
            # config it reads after this call).
            self.config = dataclasses.replace(
                f, num_train_epochs=f.num_train_steps / steps,
                checkpoint_steps=(min(steps, f.num_train_steps)
                                  if f.checkpoint_steps is None
                                  else f.checkpoint_steps))
        return dataset, steps

    def compile_args(self):
        if self.replaced_token_detection:
            return {"loss": None}  # ElectraPretrainer.compute_loss
        loss, metrics = loss_and_metrics(self.tokenizer.pad_id,
                                         self.objective is not None)
        return {"loss": loss, "metrics": metrics}

    @property
    def main_metric(self):
        # Neither of ELECTRA's two accuracies says which weights are best.
        if self.eval_dataset is None or self.replaced_token_detection:
            return None
        return "masked_lm_accuracy"

    def evaluate(self, model):
        if model.optimizer is None:
            model.compile(**self.compile_args())
        results = evaluate(model, self.eval_dataset)
        return results, results

    def export(self, model, export_dir, config):
        if self.replaced_token_detection:
            model.discriminator.save_pretrained(
                os.path.join(export_dir, "discriminator"), self.tokenizer)
            save_pretrainer(model.generator,
                            os.path.join(export_dir, "generator"),
                            self.tokenizer)
            return export_dir
        save_pretrainer(model, export_dir, self.tokenizer)
        return export_dir


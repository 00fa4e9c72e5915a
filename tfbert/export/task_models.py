"""The TF Serving export of a model built in Python, in one call.

`export_for_serving(model, export_dir)` writes what the task programs write
for the same kind of model (raw-text `serving_default`, `serve_token_ids`,
the vocabulary, warmup requests; inference weights only). The serving module
of each model kind is chosen in `serving_module_of`, so the task programs and
Python callers build the same one.
"""

from tfbert.export.classifier_serving import ClassifierServingModule
from tfbert.export.feature_serving import FeatureServingModule
from tfbert.export.fill_mask_serving import FillMaskServingModule
from tfbert.export.ner_serving import NerServingModule
from tfbert.export.saved_model import export_saved_model, export_task_model
from tfbert.export.squad_serving import SquadServingModule
from tfbert.feature_extractor import FeatureExtractor
from tfbert.fill_mask import MaskFiller
from tfbert.models import (SequenceClassifier, SpanLabeler, TextClassifier,
                           TokenClassifier)

PAIR_INPUTS = ("sentence1", "sentence2")


def serving_module_of(model, **options):
    """The `ServingModule` that exports `model`.

    Args:
      model: a `TextClassifier` (its own preprocessor; `sentence`, or
        `sentence1` and `sentence2` for a pair model, in; `label` and
        `probabilities` out, `score` for regression); a
        `SequenceClassifier` (options: `preprocessor`, the one it was
        trained with, and `text_inputs`, ("sentence",) by default); a
        `SpanLabeler` (options: `tokenizer` and `SquadServingModule`'s); a
        `TokenClassifier` built with `labels` (options: `tokenizer`,
        `max_seq_length` and `NerServingModule`'s); a `FeatureExtractor`;
        or a `MaskFiller` (option: `top_k`).
      **options: as listed for the model's kind.

    Raises:
      TypeError: a model of another kind.
      ValueError: a token classifier without tag names.
    """
    if isinstance(model, TextClassifier):
        return ClassifierServingModule(
            model.classifier, model.preprocessor, model.label_names,
            PAIR_INPUTS if model.is_pair else ("sentence",), **options)
    if isinstance(model, SequenceClassifier):
        preprocessor = options.pop("preprocessor")
        text_inputs = options.pop("text_inputs", ("sentence",))
        return ClassifierServingModule(model, preprocessor,
                                       model.class_names(), text_inputs,
                                       **options)
    if isinstance(model, SpanLabeler):
        return SquadServingModule(model, options.pop("tokenizer"), **options)
    if isinstance(model, TokenClassifier):
        if model.labels is None:
            raise ValueError("a TokenClassifier built without labels has no "
                             "tag names to export")
        return NerServingModule(model, options.pop("tokenizer"), model.labels,
                                options.pop("max_seq_length"), **options)
    if isinstance(model, FeatureExtractor):
        return FeatureServingModule(model, **options)
    if isinstance(model, MaskFiller):
        return FillMaskServingModule(model, **options)
    raise TypeError(f"no serving export for a {type(model).__name__}")


def export_for_serving(model, export_dir, *, precision="float32",
                       token_ids_only=False, constant_kernels=False,
                       feed_forward_shards=None, limits=None, xla=False,
                       **options):
    """Writes the TF Serving SavedModel of `model` as
    `export_dir/<version>/`; returns that version directory.

    Args:
      model: a model `serving_module_of` takes.
      export_dir: the model's base directory, e.g. `saved_models/sst2`.
      precision, token_ids_only, constant_kernels, feed_forward_shards,
        limits, xla: as the programs' --export_precision,
        --export_token_ids_only, --export_constant_kernels,
        --export_feed_forward_shards, --export_max_* and --export_xla flags
        (`export_saved_model`); a feature extractor or mask filler exports
        in float32 only.
      **options: the `serving_module_of` options of the model's kind (e.g.
        the tokenizer of a model that holds none).
    """
    if isinstance(model, (FeatureExtractor, MaskFiller)):
        if precision != "float32":
            raise ValueError(f"a {type(model).__name__} exports in float32 "
                             f"only, got precision={precision!r}")
        return export_saved_model(
            serving_module_of(model, **options), export_dir,
            token_ids_only=token_ids_only, constant_kernels=constant_kernels,
            feed_forward_shards=feed_forward_shards, limits=limits, xla=xla)
    return export_task_model(
        model, export_dir, lambda model: serving_module_of(model, **options),
        precision=precision, token_ids_only=token_ids_only,
        constant_kernels=constant_kernels,
        feed_forward_shards=feed_forward_shards, limits=limits, xla=xla)

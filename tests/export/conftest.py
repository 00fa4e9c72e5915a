"""Tiny trained-looking models of every export kind, built directly."""

import os

import keras
import pytest

from tfbert.config import BertConfig
from tfbert.export import export_saved_model
from tfbert.export.classifier_serving import ClassifierServingModule
from tfbert.export.ner_serving import NerServingModule
from tfbert.export.squad_serving import SquadServingModule
from tfbert.models import (BertClassifier, BertEncoder, BertSpanLabeler,
                           BertTokenClassifier)
from tfbert.text import BertPreprocessor, BertTokenizer

NER_LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
SEQ_LENGTH = 16


@pytest.fixture(scope="session")
def tokenizer(minilm_dir):
    """The real uncased vocabulary (30,522 tokens)."""
    return BertTokenizer(str(minilm_dir / "vocab.txt"))


def tiny_encoder(tokenizer, seed=0):
    keras.utils.set_random_seed(seed)
    return BertEncoder(BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=16, num_layers=1,
        num_heads=2, intermediate_size=32, max_position_embeddings=64))


def compiled(model):
    """`model` as a training run leaves it: compiled, with AdamW slots."""
    model.compile(optimizer=keras.optimizers.AdamW(1e-3))
    model.optimizer.build(model.trainable_variables)
    return model


def tiny_models(tokenizer):
    """kind -> a compiled tiny model of that export kind."""
    return {
        "classifier": compiled(BertClassifier(tiny_encoder(tokenizer), 2)),
        "regressor": compiled(BertClassifier(tiny_encoder(tokenizer), 1)),
        "squad": compiled(BertSpanLabeler(tiny_encoder(tokenizer))),
        "ner": compiled(BertTokenClassifier(tiny_encoder(tokenizer),
                                            len(NER_LABELS),
                                            labels=NER_LABELS)),
    }


def serving_module(kind, model, tokenizer):
    """The export module of `kind` around `model`."""
    if kind in ("classifier", "regressor"):
        preprocessor = BertPreprocessor(tokenizer, seq_length=SEQ_LENGTH)
        if kind == "classifier":
            return ClassifierServingModule(
                model, preprocessor, ["negative", "positive"],
                ("sentence1", "sentence2"))
        return ClassifierServingModule(model, preprocessor, None,
                                       ("sentence",))
    if kind == "squad":
        return SquadServingModule(model, tokenizer, max_seq_length=32,
                                  doc_stride=8, max_query_length=8,
                                  max_answer_length=5)
    return NerServingModule(model, tokenizer, NER_LABELS,
                            max_seq_length=SEQ_LENGTH)


@pytest.fixture(scope="session")
def serving_modules(tokenizer):
    """kind -> export module around a compiled tiny model."""
    return {kind: serving_module(kind, model, tokenizer)
            for kind, model in tiny_models(tokenizer).items()}


@pytest.fixture(scope="session")
def exports(serving_modules, tmp_path_factory):
    """kind -> version directory of its full export."""
    base = tmp_path_factory.mktemp("exports")
    return {kind: export_saved_model(module, str(base / kind))
            for kind, module in serving_modules.items()}


def replay_warmup(path, signatures, rows_per_example=None):
    """Runs each request of the export's TF Serving warmup file through
    `signatures` (of the loaded export); returns the signature names the
    requests named, checking each answer has a row per example of the
    request and the model name is the export directory's.
    `rows_per_example`: signature name -> input rows per example where that
    is not 1 (a multiple-choice model's token ids: one row per choice)."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    model_name = os.path.basename(os.path.dirname(os.path.normpath(path)))
    replayed = []
    warmup = os.path.join(path, "assets.extra", "tf_serving_warmup_requests")
    for record in tf.data.TFRecordDataset(warmup).as_numpy_iterator():
        request = prediction_log_pb2.PredictionLog.FromString(
            record).predict_log.request
        assert request.model_spec.name == model_name
        inputs = {name: tf.constant(tf.make_ndarray(proto))
                  for name, proto in request.inputs.items()}
        signature = request.model_spec.signature_name
        outputs = signatures[signature](**inputs)
        rows = next(iter(inputs.values())).shape[0] // (
            rows_per_example or {}).get(signature, 1)
        assert rows >= 1
        assert all(value.shape[0] == rows for value in outputs.values())
        replayed.append(signature)
    return replayed


def compiled_functions(path):
    """Names of the functions of the SavedModel at `path` marked for XLA
    compilation."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel()
    with open(f"{path}/saved_model.pb", "rb") as f:
        saved_model.ParseFromString(f.read())
    library = saved_model.meta_graphs[0].graph_def.library
    return {function.signature.name for function in library.function
            if function.attr["_XlaMustCompile"].b}

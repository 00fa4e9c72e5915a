"""Every encoder family against HF `transformers` on the same random weights:
an HF model built from a small config is saved with `save_pretrained` and
loaded with `tfbert.Encoder.from_pretrained`. Outputs, saving, presets, and
the training signal of a span labeler on each family."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from tfbert import BertClassifier, BertSpanLabeler, BertTokenClassifier
from tfbert import families
from tfbert.inference import EncoderInference, task_outputs
from tfbert.checkpoints import hf
from tfbert.checkpoints.variable_map import encoder_variables

from tfbert.presets import get_preset
from tfbert.models import (
    AlbertEncoder, BertEncoder, DistilBertEncoder, ElectraDiscriminator,
    ElectraEncoder, Encoder, RobertaEncoder)

VOCAB, HIDDEN, LAYERS, HEADS, INTERMEDIATE, POSITIONS = 60, 16, 3, 2, 32, 24
BATCH, SEQ = 3, 12
BERT_STYLE = dict(vocab_size=VOCAB, hidden_size=HIDDEN,
                  num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                  intermediate_size=INTERMEDIATE,
                  max_position_embeddings=POSITIONS)

# family -> (HF model class, HF config, tfbert class, uses segment ids)
FAMILIES = {
    "bert": (transformers.BertModel, transformers.BertConfig(
        **BERT_STYLE, type_vocab_size=2), BertEncoder, True),
    "distilbert": (transformers.DistilBertModel, transformers.DistilBertConfig(
        vocab_size=VOCAB, dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS,
        hidden_dim=INTERMEDIATE, max_position_embeddings=POSITIONS),
        DistilBertEncoder, False),
    "electra": (transformers.ElectraModel, transformers.ElectraConfig(
        **BERT_STYLE, embedding_size=8, type_vocab_size=2), ElectraEncoder,
        True),
    "roberta": (transformers.RobertaModel, transformers.RobertaConfig(
        **dict(BERT_STYLE, max_position_embeddings=POSITIONS + 2),
        type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1),
        RobertaEncoder, False),
    "albert": (transformers.AlbertModel, transformers.AlbertConfig(
        **BERT_STYLE, embedding_size=8, type_vocab_size=2,
        hidden_act="gelu_new"), AlbertEncoder, True),
}


def _randomize(model, seed=0):
    """HF initializes LayerNorm to (1, 0) and biases to 0, which would hide
    a swapped gamma/beta or a lost bias: draw every parameter instead."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            if "LayerNorm.weight" in name or "layer_norm.weight" in name:
                parameter.copy_(1.0 + 0.2 * noise)
            else:
                parameter.copy_(0.2 * noise)
    return model.eval()


def _inputs(pad_id, with_segments):
    """Pairs with padding: segment 1 after position 5; rows end at 12, 7, 10.
    Real ids avoid the pad id (RoBERTa numbers positions by counting them)."""
    rng = np.random.default_rng(1)
    mask = np.ones((BATCH, SEQ), np.int32)
    mask[1, 7:] = 0
    mask[2, 10:] = 0
    ids = rng.integers(3, VOCAB, (BATCH, SEQ)).astype(np.int32)
    ids = np.where(mask == 1, ids, pad_id)
    types = np.zeros_like(ids)
    if with_segments:
        types[:, 5:] = 1
    return {"input_word_ids": ids, "input_mask": mask,
            "input_type_ids": types * mask}


def _hf_outputs(model, inputs, with_segments):
    kwargs = dict(input_ids=torch.tensor(inputs["input_word_ids"]),
                  attention_mask=torch.tensor(inputs["input_mask"]),
                  output_hidden_states=True)
    if with_segments:
        kwargs["token_type_ids"] = torch.tensor(inputs["input_type_ids"],
                                                dtype=torch.long)
    with torch.no_grad():
        return model(**kwargs)


def _save(family, tmp_path, model_class=None, seed=0):
    hf_class, hf_config, _, _ = FAMILIES[family]
    model = _randomize((model_class or hf_class)(hf_config), seed)
    model.save_pretrained(tmp_path, safe_serialization=True)
    return model


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_sequence_output_matches_hf(family, tmp_path):
    _, hf_config, tfbert_class, with_segments = FAMILIES[family]
    model = _save(family, tmp_path)
    encoder = Encoder.from_pretrained(tmp_path)
    assert type(encoder) is tfbert_class
    inputs = _inputs(hf_config.pad_token_id or 0, with_segments)
    expected = _hf_outputs(model, inputs, with_segments)
    outputs = encoder(inputs)
    real = inputs["input_mask"].astype(bool)
    np.testing.assert_allclose(
        np.asarray(outputs["sequence_output"])[real],
        expected.last_hidden_state.numpy()[real], atol=1e-4)
    assert len(outputs["encoder_outputs"]) == LAYERS
    for ours, theirs in zip(outputs["encoder_outputs"],
                            expected.hidden_states[1:]):
        np.testing.assert_allclose(np.asarray(ours)[real],
                                   theirs.numpy()[real], atol=1e-4)
    if getattr(expected, "pooler_output", None) is not None:
        np.testing.assert_allclose(np.asarray(outputs["pooled_output"]),
                                   expected.pooler_output.numpy(), atol=1e-4)
    else:
        assert "pooled_output" not in outputs


def _task_models(checkpoint, inputs, seed):
    """(model, read) for a classifier, a span labeler and a token
    classifier on the encoder at `checkpoint`, their new heads (and pooler)
    drawn from N(0, 0.5) (not ~0) with `seed`; `read` turns a model's
    outputs into one array of the values its users read (a token
    classifier's at the real positions of `inputs`)."""
    real = inputs["input_mask"].astype(bool)
    rng = np.random.default_rng(seed)
    for model, read in [
            (BertClassifier.from_pretrained(checkpoint, 3), lambda x: x),
            (BertSpanLabeler.from_pretrained(checkpoint),
             lambda x: np.stack([x["start_logits"], x["end_logits"]])),
            (BertTokenClassifier(Encoder.from_pretrained(checkpoint), 5),
             lambda x: x[real])]:
        for variable in model.weights:
            if not variable.path.startswith(model.encoder.name):
                variable.assign(rng.normal(0, 0.5, variable.shape))
        yield model, read


@pytest.mark.parametrize("padding_columns", [0, 5])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_task_models_inference_logits_equal_the_full_forward(
        family, padding_columns, tmp_path):
    """Exports compute logits with `tfbert.inference.task_outputs`:
    trailing padding
    columns cut off, the encoder's position-wise layers on real tokens
    only, and a classifier's last block for [CLS] only. The same logits as
    the whole model (whose encoder matches HF above) at every position the
    model's users read, also for inputs padded past the longest row (as
    `serve_token_ids` clients send them). The same for the encoder's
    `EncoderInference(..., all_blocks=True)` (the TF Hub export's), zeros
    at padding."""
    _, hf_config, _, with_segments = FAMILIES[family]
    _save(family, tmp_path)
    pad_id = hf_config.pad_token_id or 0
    inputs = _inputs(pad_id, with_segments)
    inputs = {name: np.pad(value, [[0, 0], [0, padding_columns]],
                           constant_values=pad_id if name == "input_word_ids"
                           else 0)
              for name, value in inputs.items()}
    real = inputs["input_mask"].astype(bool)
    for model, read in _task_models(tmp_path, inputs, seed=2):
        expected = read(tf.nest.map_structure(
            np.asarray, model(inputs, training=False)))
        assert np.abs(expected[expected > -1e8]).max() > 0.1
        np.testing.assert_allclose(
            read(tf.nest.map_structure(
                np.asarray,
                tf.function(lambda x: task_outputs(model, x))(inputs))),
            expected, rtol=1e-5, atol=1e-5, err_msg=type(model).__name__)
    encoder = Encoder.from_pretrained(tmp_path)
    expected = tf.nest.map_structure(np.asarray, encoder(inputs))
    got = tf.nest.map_structure(np.asarray, tf.function(
        lambda x: EncoderInference(encoder)(x, all_blocks=True))(inputs))
    assert sorted(got) == sorted(expected)
    if "pooled_output" in got:
        np.testing.assert_allclose(got["pooled_output"],
                                   expected["pooled_output"], atol=1e-5)
    for ours, theirs in zip(
            [got["sequence_output"], *got["encoder_outputs"]],
            [expected["sequence_output"], *expected["encoder_outputs"]],
            strict=True):
        np.testing.assert_allclose(ours[real], theirs[real], atol=1e-5)
        assert not ours[~real].any()

@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_predict_runs_the_inference_path(family, tmp_path, monkeypatch):
    """A token-id task model's `predict` computes its outputs with
    `tfbert.inference.task_outputs` (the exports' forms), equal to its
    Keras forward; compiled with XLA it runs the Keras forward."""
    import tfbert.inference

    calls = []

    def spied(model, inputs, **kwargs):
        calls.append(type(model).__name__)
        return task_outputs(model, inputs, **kwargs)

    monkeypatch.setattr(tfbert.inference, "task_outputs", spied)
    _, hf_config, _, with_segments = FAMILIES[family]
    _save(family, tmp_path)
    inputs = _inputs(hf_config.pad_token_id or 0, with_segments)
    for model, read in _task_models(tmp_path, inputs, seed=3):
        expected = read(tf.nest.map_structure(
            np.asarray, model(inputs, training=False)))
        name = type(model).__name__
        del calls[:]
        np.testing.assert_allclose(
            read(model.predict(inputs, batch_size=2, verbose=0)), expected,
            rtol=1e-5, atol=1e-5, err_msg=name)
        assert calls and set(calls) == {name}
        del calls[:]
        model.compile(jit_compile=True)
        np.testing.assert_allclose(
            read(tf.nest.map_structure(np.asarray,
                                       model.predict_on_batch(inputs))),
            expected, rtol=1e-5, atol=1e-5, err_msg=name)
        assert calls == []



@pytest.mark.parametrize("family",
                         ["albert", "distilbert", "electra", "roberta"])
@pytest.mark.slow
def test_save_pretrained_is_the_family_hf_layout(family, tmp_path):
    hf_class, hf_config, tfbert_class, with_segments = FAMILIES[family]
    model = _save(family, tmp_path / "hf")
    Encoder.from_pretrained(tmp_path / "hf").save_pretrained(
        tmp_path / "tfbert")
    assert type(Encoder.from_pretrained(tmp_path / "tfbert")) is tfbert_class
    # Any weight transformers did not find in our file would be random.
    reloaded = hf_class.from_pretrained(tmp_path / "tfbert").eval()
    inputs = _inputs(hf_config.pad_token_id or 0, with_segments)
    expected = _hf_outputs(model, inputs, with_segments)
    got = _hf_outputs(reloaded, inputs, with_segments)
    real = inputs["input_mask"].astype(bool)
    np.testing.assert_allclose(got.last_hidden_state.numpy()[real],
                               expected.last_hidden_state.numpy()[real],
                               atol=1e-6)
    if getattr(expected, "pooler_output", None) is not None:
        np.testing.assert_allclose(got.pooler_output.numpy(),
                                   expected.pooler_output.numpy(), atol=1e-6)


def test_families_without_segments_ignore_input_type_ids(tmp_path):
    _save("distilbert", tmp_path)
    encoder = Encoder.from_pretrained(tmp_path)
    inputs = _inputs(0, False)
    other = dict(inputs, input_type_ids=np.ones_like(inputs["input_type_ids"]))
    np.testing.assert_array_equal(
        np.asarray(encoder(inputs)["sequence_output"]),
        np.asarray(encoder(other)["sequence_output"]))


def test_task_model_checkpoints_load_the_encoder(tmp_path):
    """ELECTRA's pretraining model keeps its encoder under `electra.` and
    its discriminator head beside it; RoBERTa's classifier has no pooler, so
    neither has the encoder."""
    electra = _save("electra", tmp_path / "electra",
                    transformers.ElectraForPreTraining)
    _save("electra", tmp_path / "electra_bare")  # no discriminator head
    encoder = Encoder.from_pretrained(tmp_path / "electra")
    inputs = _inputs(0, True)
    expected = _hf_outputs(electra.electra, inputs, True)
    real = inputs["input_mask"].astype(bool)
    np.testing.assert_allclose(
        np.asarray(encoder(inputs)["sequence_output"])[real],
        expected.last_hidden_state.numpy()[real], atol=1e-4)

    discriminator = ElectraDiscriminator.from_pretrained(tmp_path / "electra")
    with torch.no_grad():
        expected = electra(
            input_ids=torch.tensor(inputs["input_word_ids"]),
            attention_mask=torch.tensor(inputs["input_mask"]),
            token_type_ids=torch.tensor(inputs["input_type_ids"],
                                        dtype=torch.long)).logits
    np.testing.assert_allclose(np.asarray(discriminator(inputs))[real],
                               expected.numpy()[real], atol=1e-4)
    with pytest.raises(ValueError, match="discriminator_predictions.dense."
                                         "weight"):
        ElectraDiscriminator.from_pretrained(tmp_path / "electra_bare")

    _save("roberta", tmp_path / "roberta",
          transformers.RobertaForSequenceClassification)
    encoder = Encoder.from_pretrained(tmp_path / "roberta")
    assert encoder.pooler is None
    assert "pooled_output" not in encoder(_inputs(1, False))


def test_registry_errors_and_bert(tmp_path, tiny_checkpoint):
    assert type(Encoder.from_pretrained(tiny_checkpoint)) is BertEncoder
    assert set(Encoder.families()) == set(FAMILIES)
    with pytest.raises(ValueError, match="holds a BertEncoder, not a "
                                         "RobertaEncoder"):
        RobertaEncoder.from_pretrained(tiny_checkpoint)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(ValueError, match=r"config\.json: model_type 'gpt2' is "
                                         "not a known encoder family"):
        Encoder.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "albert", "num_hidden_groups": 2}))
    with pytest.raises(ValueError, match="num_hidden_groups=2 is not "
                                         "supported"):
        Encoder.from_pretrained(tmp_path)


# Published config.json files of the family presets' shapes (the HF hub's
# distilbert-base-uncased, roberta-base, electra-*-discriminator,
# albert-base-v2), less keys the encoder does not read.
PUBLISHED_CONFIGS = {
    "distilbert-base-uncased": dict(
        model_type="distilbert", activation="gelu", attention_dropout=0.1,
        dim=768, dropout=0.1, hidden_dim=3072, initializer_range=0.02,
        max_position_embeddings=512, n_heads=12, n_layers=6, pad_token_id=0,
        sinusoidal_pos_embds=False, vocab_size=30522),
    "roberta-base": dict(
        model_type="roberta", attention_probs_dropout_prob=0.1,
        hidden_act="gelu", hidden_dropout_prob=0.1, hidden_size=768,
        initializer_range=0.02, intermediate_size=3072, layer_norm_eps=1e-05,
        max_position_embeddings=514, num_attention_heads=12,
        num_hidden_layers=12, pad_token_id=1, type_vocab_size=1,
        vocab_size=50265),
    "electra-small-discriminator": dict(
        model_type="electra", attention_probs_dropout_prob=0.1,
        embedding_size=128, hidden_act="gelu", hidden_dropout_prob=0.1,
        hidden_size=256, initializer_range=0.02, intermediate_size=1024,
        layer_norm_eps=1e-12, max_position_embeddings=512,
        num_attention_heads=4, num_hidden_layers=12, pad_token_id=0,
        type_vocab_size=2, vocab_size=30522),
    "electra-base-discriminator": dict(
        model_type="electra", attention_probs_dropout_prob=0.1,
        embedding_size=768, hidden_act="gelu", hidden_dropout_prob=0.1,
        hidden_size=768, initializer_range=0.02, intermediate_size=3072,
        layer_norm_eps=1e-12, max_position_embeddings=512,
        num_attention_heads=12, num_hidden_layers=12, pad_token_id=0,
        type_vocab_size=2, vocab_size=30522),
    "albert-base-v2": dict(
        model_type="albert", attention_probs_dropout_prob=0,
        embedding_size=128, hidden_act="gelu_new", hidden_dropout_prob=0,
        hidden_size=768, initializer_range=0.02, inner_group_num=1,
        intermediate_size=3072, layer_norm_eps=1e-12,
        max_position_embeddings=512, num_attention_heads=12,
        num_hidden_groups=1, num_hidden_layers=12, pad_token_id=0,
        type_vocab_size=2, vocab_size=30000),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED_CONFIGS))
def test_family_presets_match_the_published_configs(name):
    values = PUBLISHED_CONFIGS[name]
    preset = get_preset(name)
    assert preset.model_type == values["model_type"]
    family = families.get(preset.model_type)
    expected = family.config_from_hf(values)
    if family.model_type in ("roberta", "albert"):  # their base models pool
        assert expected.use_pooler
    assert preset.config == expected
    encoder = Encoder.from_pretrained(name, num_layers=1)
    assert type(encoder) is family.encoder_class
    assert encoder.config.hidden_size == values.get("hidden_size",
                                                    values.get("dim"))


def test_bert_encoder_without_pooler(tiny_checkpoint):
    full = BertEncoder.from_pretrained(tiny_checkpoint)
    lean = BertEncoder.from_pretrained(tiny_checkpoint, use_pooler=False)
    assert lean.pooler is None
    assert not [v.path for v in lean.weights if "pooler" in v.path]
    inputs = _inputs(0, True)
    np.testing.assert_array_equal(
        np.asarray(lean(inputs)["sequence_output"]),
        np.asarray(full(inputs)["sequence_output"]))
    assert set(lean(inputs)) == {"sequence_output", "encoder_outputs"}


QA_CLASSES = {
    "distilbert": transformers.DistilBertForQuestionAnswering,
    "electra": transformers.ElectraForQuestionAnswering,
    "roberta": transformers.RobertaForQuestionAnswering,
    "albert": transformers.AlbertForQuestionAnswering,
}


@pytest.mark.parametrize("family", sorted(QA_CLASSES))
def test_span_labeler_loss_and_gradients_match_hf(family, tmp_path):
    """`BertSpanLabeler` on each family's encoder has the loss and the
    gradient of every weight of HF's `*ForQuestionAnswering` (dropout off,
    the same head weights, an unpadded batch)."""
    _, hf_config, _, with_segments = FAMILIES[family]
    hf_model = _randomize(QA_CLASSES[family](hf_config))
    hf_model.save_pretrained(tmp_path)
    hf_model.train()
    for module in hf_model.modules():  # dropout off, as in the tfbert model
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    model = BertSpanLabeler.from_pretrained(
        tmp_path, hidden_dropout=0.0, attention_dropout=0.0)
    model.head.dense.kernel.assign(
        hf_model.qa_outputs.weight.detach().numpy().T)
    model.head.dense.bias.assign(hf_model.qa_outputs.bias.detach().numpy())

    rng = np.random.default_rng(0)
    ids = rng.integers(3, VOCAB, (4, SEQ)).astype("int32")
    types = np.zeros_like(ids)
    if with_segments:
        types[:, 6:] = 1
    starts, ends = np.array([6, 8, 1, 9]), np.array([7, 10, 3, 11])
    kwargs = {"token_type_ids": torch.tensor(types).long()} if with_segments \
        else {}
    output = hf_model(input_ids=torch.tensor(ids).long(),
                      attention_mask=torch.ones(ids.shape, dtype=torch.long),
                      start_positions=torch.tensor(starts),
                      end_positions=torch.tensor(ends), **kwargs)
    output.loss.backward()

    cross_entropy = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True)
    features = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
                "input_type_ids": types}
    with tf.GradientTape() as tape:
        logits = model(features, training=True)
        loss = 0.5 * (cross_entropy(starts, logits["start_logits"])
                      + cross_entropy(ends, logits["end_logits"]))
    variables = model.trainable_variables
    ours = {v.path: tf.convert_to_tensor(g).numpy() for v, g in
            zip(variables, tape.gradient(loss, variables))}
    assert abs(float(loss) - output.loss.item()) < 1e-5

    # HF's gradients, named like the checkpoint and converted as loading
    # converts the weights.
    family_spec = families.get(family)
    prefix = family_spec.hf_prefix
    theirs = hf.canonical_weights({
        family_spec.bert_name(name.removeprefix(prefix)):
            parameter.grad.numpy()
        for name, parameter in hf_model.named_parameters()
        if name.startswith(prefix)})
    compared = 0
    for name, (variable, transposed) in encoder_variables(
            model.encoder).items():
        expected = theirs[name].T if transposed else theirs[name]
        # Relative to the largest entry; 1e-7 absolute for the attention
        # key biases, whose gradient is 0 up to rounding.
        tolerance = 1e-4 * np.abs(expected).max() + 1e-7
        assert np.abs(ours[variable.path] - expected).max() <= tolerance, (
            name)
        compared += 1
    assert compared == len(theirs)
    np.testing.assert_allclose(
        ours[model.head.dense.kernel.path],
        hf_model.qa_outputs.weight.grad.numpy().T, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("family", ["albert", "distilbert", "electra",
                                    "roberta"])
def test_keras_file_round_trip(family, tmp_path):
    hf_class, hf_config, tfbert_class, with_segments = FAMILIES[family]
    _save(family, tmp_path / "hf")
    encoder = Encoder.from_pretrained(tmp_path / "hf")
    encoder.save(tmp_path / "encoder.keras")
    restored = keras.saving.load_model(tmp_path / "encoder.keras")
    assert type(restored) is tfbert_class
    assert restored.config == encoder.config
    inputs = _inputs(hf_config.pad_token_id or 0, with_segments)
    np.testing.assert_array_equal(
        np.asarray(restored(inputs)["sequence_output"]),
        np.asarray(encoder(inputs)["sequence_output"]))


def test_input_errors_name_the_family(tmp_path):
    _save("distilbert", tmp_path)
    encoder = Encoder.from_pretrained(tmp_path)
    inputs = dict(_inputs(0, False))
    inputs["input_mask"] = inputs["input_mask"].astype("float32")
    with pytest.raises(ValueError, match="DistilBertEncoder input "
                                         "'input_mask' must be an integer"):
        encoder(inputs)


# Each family's HF pretraining model: masked-LM, with BERT's next-sentence
# and ALBERT's sentence-order head.
PRETRAINING_CLASSES = {
    "bert": transformers.BertForPreTraining,
    "distilbert": transformers.DistilBertForMaskedLM,
    "electra": transformers.ElectraForMaskedLM,
    "roberta": transformers.RobertaForMaskedLM,
    "albert": transformers.AlbertForPreTraining,
}
MASKED_POSITIONS = np.array([[1, 3, 5], [0, 2, 6], [4, 8, 9]], np.int32)


def _hf_pretraining_outputs(model, inputs, with_segments, labels=None):
    """`(masked-LM logits at MASKED_POSITIONS, sentence logits or None,
    loss or None)` of an HF pretraining model."""
    kwargs = dict(input_ids=torch.tensor(inputs["input_word_ids"]).long(),
                  attention_mask=torch.tensor(inputs["input_mask"]).long())
    if with_segments:
        kwargs["token_type_ids"] = torch.tensor(inputs["input_type_ids"]).long()
    if labels is not None:
        mlm_labels, sentence_labels = labels
        kwargs["labels"] = torch.tensor(mlm_labels).long()
        if sentence_labels is not None:
            name = ("sentence_order_label" if "Albert" in type(model).__name__
                    else "next_sentence_label")
            kwargs[name] = torch.tensor(sentence_labels).long()
    with torch.no_grad():
        output = model(**kwargs)
    logits = getattr(output, "prediction_logits", None)
    if logits is None:
        logits = output.logits
    sentence = getattr(output, "seq_relationship_logits",
                       getattr(output, "sop_logits", None))
    return (np.take_along_axis(logits.numpy(), MASKED_POSITIONS[..., None], 1),
            None if sentence is None else sentence.numpy(), output.loss)


@pytest.mark.parametrize("family", sorted(PRETRAINING_CLASSES))
def test_pretrainer_logits_and_loss_match_hf(family, tmp_path):
    """`load_pretrainer` on each family's HF pretraining checkpoint (every
    head weight loaded, strictly): the masked-LM logits, the sentence
    head's where the family has one, and the pretraining task's loss equal
    HF's."""
    from tfbert.checkpoints import load_pretrainer
    from tfbert.tasks.pretraining import loss_and_metrics

    _, hf_config, tfbert_class, with_segments = FAMILIES[family]
    hf_model = _randomize(PRETRAINING_CLASSES[family](hf_config))
    hf_model.save_pretrained(tmp_path)
    model = load_pretrainer(tmp_path, strict=True)
    assert type(model.encoder) is tfbert_class
    inputs = _inputs(hf_config.pad_token_id or 0, with_segments)
    outputs = model({**inputs, "masked_lm_positions": MASKED_POSITIONS})
    has_sentence_head = tfbert_class.sentence_objective is not None
    assert ("next_sentence_logits" in outputs) == has_sentence_head

    labels = np.random.default_rng(3).integers(3, VOCAB, MASKED_POSITIONS.shape)
    hf_labels = np.full(inputs["input_word_ids"].shape, -100)
    np.put_along_axis(hf_labels, MASKED_POSITIONS, labels, 1)
    sentence_labels = np.array([0, 1, 1]) if has_sentence_head else None
    mlm, sentence, hf_loss = _hf_pretraining_outputs(
        hf_model, inputs, with_segments, (hf_labels, sentence_labels))
    np.testing.assert_allclose(np.asarray(outputs["masked_lm_logits"]), mlm,
                               atol=1e-4)
    losses, _ = loss_and_metrics(0, has_sentence_head)
    loss = losses["masked_lm_logits"](labels, outputs["masked_lm_logits"])
    if has_sentence_head:
        np.testing.assert_allclose(
            np.asarray(outputs["next_sentence_logits"]), sentence, atol=1e-4)
        loss += losses["next_sentence_logits"](
            sentence_labels, outputs["next_sentence_logits"])
    assert abs(float(loss) - hf_loss.item()) < 1e-4


@pytest.mark.parametrize("family", ["albert", "distilbert", "electra",
                                    "roberta"])
def test_save_pretrainer_is_the_family_hf_pretraining_model(family,
                                                            tmp_path):
    """What `save_pretrainer` writes, `transformers` loads as the family's
    pretraining model with no weight missing or left over, and it computes
    what the model it came from computes."""
    from tfbert.checkpoints import load_pretrainer, save_pretrainer

    _, hf_config, _, with_segments = FAMILIES[family]
    hf_class = PRETRAINING_CLASSES[family]
    hf_model = _randomize(hf_class(hf_config))
    hf_model.save_pretrained(tmp_path / "hf")
    save_pretrainer(load_pretrainer(tmp_path / "hf"), tmp_path / "tfbert")
    config = json.loads((tmp_path / "tfbert" / "config.json").read_text())
    assert config["architectures"] == [hf_class.__name__]
    reloaded, info = hf_class.from_pretrained(tmp_path / "tfbert",
                                              output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    inputs = _inputs(hf_config.pad_token_id or 0, with_segments)
    expected = _hf_pretraining_outputs(hf_model, inputs, with_segments)
    got = _hf_pretraining_outputs(reloaded.eval(), inputs, with_segments)
    np.testing.assert_allclose(got[0], expected[0], atol=1e-6)
    if expected[1] is not None:
        np.testing.assert_allclose(got[1], expected[1], atol=1e-6)


def test_a_sentence_head_without_its_weights_starts_random_and_is_logged(
        tmp_path, caplog):
    """A bare `AlbertModel` checkpoint has the pooler but no pretraining
    heads; a bare `ElectraModel` has neither, and its family no sentence
    head: the pretrainer still builds, and says which heads start random."""
    from tfbert.checkpoints import load_pretrainer

    _save("albert", tmp_path / "albert")
    with caplog.at_level("WARNING"):
        model = load_pretrainer(tmp_path / "albert")
    assert model.next_sentence_head is not None
    warned = " ".join(record.getMessage() for record in caplog.records)
    assert "no masked-LM head" in warned and "no sentence-order head" in warned
    with pytest.raises(ValueError, match="model variables with no value"):
        load_pretrainer(tmp_path / "albert", strict=True)

    _save("electra", tmp_path / "electra", transformers.ElectraModel)
    model = load_pretrainer(tmp_path / "electra")
    assert model.next_sentence_head is None


def test_a_config_without_weights_pretrains_from_scratch(tmp_path, caplog):
    """A family directory with `config.json` and no weights file: the
    pretrainer of that config, randomly initialised, which is logged."""
    from tfbert.checkpoints import load_pretrainer
    from tfbert.models.albert_encoder import config_from_hf

    _, hf_config, _, _ = FAMILIES["albert"]
    hf_config.save_pretrained(tmp_path)
    with caplog.at_level("WARNING"):
        model = load_pretrainer(tmp_path)
    assert "has no weights" in caplog.text
    assert type(model.encoder) is AlbertEncoder
    assert model.encoder.config == config_from_hf(
        json.loads((tmp_path / "config.json").read_text()))
    assert model.next_sentence_head is not None
    inputs = _inputs(0, True)
    outputs = model({**inputs, "masked_lm_positions": MASKED_POSITIONS})
    assert outputs["masked_lm_logits"].shape == (*MASKED_POSITIONS.shape,
                                                 VOCAB)


def test_electra_pretrainer_losses_match_hf(tmp_path):
    """Replaced-token detection: the discriminator reads the text with the
    generator's samples at the real masked positions (nowhere else), its
    labels mark where that text differs from the original, and the losses
    equal HF's `ElectraForMaskedLM` (generator) and `ElectraForPreTraining`
    (discriminator) on the same text; the total weighs the latter 50x.
    What the discriminator saves, HF loads with the same logits."""
    from tfbert.models import ElectraPretrainer

    _, hf_config, _, _ = FAMILIES["electra"]
    discriminator = _randomize(transformers.ElectraForPreTraining(hf_config))
    discriminator.save_pretrained(tmp_path / "discriminator")
    generator = _randomize(transformers.ElectraForMaskedLM(
        transformers.ElectraConfig(**dict(BERT_STYLE, hidden_size=8,
                                          intermediate_size=16),
                                   embedding_size=8)), seed=1)
    generator.save_pretrained(tmp_path / "generator")
    model = ElectraPretrainer.from_pretrained(
        tmp_path / "discriminator", tmp_path / "generator", seed=3)

    inputs = _inputs(0, True)
    weights = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 0]], np.float32)
    originals = np.random.default_rng(5).integers(3, VOCAB,
                                                  MASKED_POSITIONS.shape)
    x = {**inputs, "masked_lm_positions": MASKED_POSITIONS,
         "masked_lm_ids": originals.astype(np.int32),
         "masked_lm_weights": weights}
    outputs = model(x)
    loss = float(model.compute_loss(x, None, outputs))
    replaced = np.asarray(outputs["replaced_input_ids"])
    original_text = inputs["input_word_ids"].copy()
    predicted = np.zeros_like(replaced, bool)
    for row, column in zip(*np.nonzero(weights)):
        position = MASKED_POSITIONS[row, column]
        original_text[row, position] = originals[row, column]
        predicted[row, position] = True
    np.testing.assert_array_equal(replaced[~predicted],
                                  inputs["input_word_ids"][~predicted])
    np.testing.assert_array_equal(
        np.asarray(outputs["replaced_token_labels"]),
        (replaced != original_text) & (inputs["input_mask"] == 1))

    hf_labels = np.full(replaced.shape, -100)
    hf_labels[predicted] = original_text[predicted]
    common = dict(attention_mask=torch.tensor(inputs["input_mask"]).long(),
                  token_type_ids=torch.tensor(inputs["input_type_ids"]).long())
    with torch.no_grad():
        generator_loss = generator(
            input_ids=torch.tensor(inputs["input_word_ids"]).long(),
            labels=torch.tensor(hf_labels), **common).loss.item()
        discriminator_output = discriminator(
            input_ids=torch.tensor(replaced).long(), labels=torch.tensor(
                np.asarray(outputs["replaced_token_labels"])).long(),
            **common)
    results = {name: float(tracker.result())
               for name, tracker in model.trackers.items()}
    assert abs(results["masked_lm_loss"] - generator_loss) < 1e-4
    assert abs(results["replaced_token_loss"]
               - discriminator_output.loss.item()) < 1e-4
    assert abs(loss - (generator_loss
                       + 50 * discriminator_output.loss.item())) < 1e-3

    model.save(tmp_path / "model.keras")
    restored = keras.saving.load_model(tmp_path / "model.keras")
    encoder_inputs = {name: inputs[name] for name in inputs}
    np.testing.assert_array_equal(
        np.asarray(restored.discriminator(encoder_inputs)),
        np.asarray(model.discriminator(encoder_inputs)))
    np.testing.assert_array_equal(
        np.asarray(restored.generator(x)["masked_lm_logits"]),
        np.asarray(outputs["masked_lm_logits"]))

    model.discriminator.save_pretrained(tmp_path / "saved")
    reloaded, info = transformers.ElectraForPreTraining.from_pretrained(
        tmp_path / "saved", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    with torch.no_grad():
        logits = reloaded.eval()(input_ids=torch.tensor(replaced).long(),
                                 **common).logits.numpy()
    real = inputs["input_mask"] == 1
    np.testing.assert_allclose(
        np.asarray(outputs["replaced_token_logits"])[real], logits[real],
        atol=1e-4)

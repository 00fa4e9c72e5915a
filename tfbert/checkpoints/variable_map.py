"""Canonical names for BERT variables.

Every checkpoint format is read into, and written from, one flat dict keyed by
the variable names of Google's original TF1 BERT checkpoints
(`bert/encoder/layer_0/attention/self/query/kernel`, ...), holding numpy
arrays in that checkpoint's layout: dense kernels are [in, out]; the
next-sentence weights are [2, H].
"""

import numpy as np

# Head weights that a pretraining checkpoint carries beside the encoder.
HEAD_PREFIX = "cls/"
# The pooler's weights, which an encoder built without one does not load.
POOLER_PREFIX = "bert/pooler/"


def encoder_variables(encoder):
    """Maps canonical names to `(variable, transposed)` for a `BertEncoder`
    (of any family: without a segment table or pooler those names are
    absent; the embedding projection is `bert/embeddings_project`, as in
    ELECTRA's checkpoints; shared blocks are `layer_0` only).

    `transposed` is True where the canonical layout is the transpose of the
    Keras variable.
    """
    emb = encoder.embeddings
    names = {
        "bert/embeddings/word_embeddings": emb.word_embeddings,
        "bert/embeddings/position_embeddings": emb.position_embeddings,
        "bert/embeddings/LayerNorm/gamma": emb.layer_norm.gamma,
        "bert/embeddings/LayerNorm/beta": emb.layer_norm.beta,
    }
    if emb.token_type_embeddings is not None:
        names["bert/embeddings/token_type_embeddings"] = (
            emb.token_type_embeddings)
    pooler = encoder.pooler
    dense_layers = {
        "pooler/dense": pooler.dense if pooler is not None else None,
        "embeddings_project": encoder.embedding_projection}
    for name, dense in dense_layers.items():
        if dense is not None:
            names[f"bert/{name}/kernel"] = dense.kernel
            names[f"bert/{name}/bias"] = dense.bias
    for i, block in enumerate(encoder.transformer_blocks):
        prefix = f"bert/encoder/layer_{i}/"
        dense_layers = {
            "attention/self/query": block.attention.query,
            "attention/self/key": block.attention.key,
            "attention/self/value": block.attention.value,
            "attention/output/dense": block.attention.output_dense,
            "intermediate/dense": block.intermediate_dense,
            "output/dense": block.output_dense,
        }
        for name, dense in dense_layers.items():
            names[prefix + name + "/kernel"] = dense.kernel
            names[prefix + name + "/bias"] = dense.bias
        for name, norm in (("attention/output/LayerNorm", block.attention_layer_norm),
                           ("output/LayerNorm", block.output_layer_norm)):
            names[prefix + name + "/gamma"] = norm.gamma
            names[prefix + name + "/beta"] = norm.beta
    return {name: (variable, False) for name, variable in names.items()}


def pretrainer_variables(pretrainer):
    """Like `encoder_variables`, plus the masked-LM head and (where the
    model has one) the next-sentence / sentence-order head of a
    `MaskedLMPretrainer`."""
    mlm = pretrainer.masked_lm_head
    names = encoder_variables(pretrainer.encoder)
    names.update({
        "cls/predictions/transform/dense/kernel": (mlm.transform.kernel, False),
        "cls/predictions/transform/dense/bias": (mlm.transform.bias, False),
        "cls/predictions/transform/LayerNorm/gamma": (mlm.layer_norm.gamma, False),
        "cls/predictions/transform/LayerNorm/beta": (mlm.layer_norm.beta, False),
        "cls/predictions/output_bias": (mlm.output_bias, False),
    })
    sentence = pretrainer.next_sentence_head
    if sentence is not None:
        names.update({
            "cls/seq_relationship/output_weights": (sentence.dense.kernel, True),
            "cls/seq_relationship/output_bias": (sentence.dense.bias, False),
        })
    return names


def read_variables(variables):
    """Returns the canonical numpy dict of a `*_variables` mapping."""
    values = {}
    for name, (variable, transposed) in variables.items():
        value = np.asarray(variable.numpy())
        values[name] = value.T if transposed else value
    return values


def assign_variables(variables, weights, source, strict=True):
    """Assigns canonical `weights` to the model `variables`.

    Raises ValueError naming `source` and the offending variables when a
    shape differs, and (with `strict`) when a model variable has no value or
    a checkpoint value has no variable. Head weights (`cls/...`) a checkpoint
    carries beside the encoder are never an error when only an encoder is
    being loaded.
    """
    loads_heads = any(name.startswith(HEAD_PREFIX) for name in variables)
    missing = sorted(set(variables) - set(weights))
    unused = sorted(name for name in set(weights) - set(variables)
                    if loads_heads or not name.startswith(HEAD_PREFIX))
    if strict and (missing or unused):
        lines = [f"checkpoint {source} does not match the model:"]
        if missing:
            lines.append("  model variables with no value in the checkpoint: "
                         + ", ".join(missing))
        if unused:
            lines.append("  checkpoint variables the model does not have: "
                         + ", ".join(unused))
        lines.append("  (pass strict=False to load what matches)")
        raise ValueError("\n".join(lines))
    mismatched = []
    for name, (variable, transposed) in variables.items():
        if name not in weights:
            continue
        value = np.asarray(weights[name])
        if transposed:
            value = value.T
        if tuple(value.shape) != tuple(variable.shape):
            mismatched.append(f"{name}: checkpoint {tuple(value.shape)}, "
                              f"model {tuple(variable.shape)}")
            continue
        variable.assign(value.astype(variable.dtype))
    if mismatched:
        raise ValueError(f"checkpoint {source} has variables of the wrong shape "
                         "(does the config match the weights?):\n  "
                         + "\n  ".join(mismatched))

"""Extracts frozen encoder features: the feature-based use of BERT.

The command line (flags, the checks on their values, --help) is
`tfbert_cli.extract_features`.
"""

import json
import os

import numpy as np

from tfbert.tasks import runner
from tfbert_cli import extract_features as extract_features_program
from tfbert_cli import specs

# What to extract: a field per flag of `tfbert_cli.extract_features`, its
# default the flag's (`layers` as integers or integer strings; `input_file`
# and `output_file` are required).
ExtractionConfig = extract_features_program.CONFIG_CLASS


def extraction_config(values):
    """The `ExtractionConfig` of `values` (any object with its fields as
    attributes, e.g. the parsed flags)."""
    return specs.config_of(ExtractionConfig, values)


def layer_indices(layers):
    """The ints of `layers` (ints, or integer strings as the flag gives
    them); UserError naming `layers` for another value."""
    indices = []
    for value in layers or []:
        try:
            indices.append(int(value))
        except (TypeError, ValueError):
            raise runner.UserError(f"`layers`: {value!r} is not an integer "
                                   "layer index") from None
    return tuple(indices)


def check(config):
    """The checks that need no model; returns the input's texts. Raises
    UserError naming the parameter, or ValueError/OSError naming
    file:line."""
    from tfbert.data.texts import read_texts

    def require(condition, message):
        if not condition:
            raise runner.UserError(message)

    for name in ("input_file", "output_file"):
        require(getattr(config, name), f"`{name}` is required")
    require(layer_indices(config.layers), "`layers` is empty")
    require(config.batch_size > 0,
            f"`batch_size` must be positive, got {config.batch_size}")
    require(config.max_seq_length >= 3, f"`max_seq_length`="
            f"{config.max_seq_length} is too short (at least 3)")
    npy = config.output_file.endswith(".npy")
    if config.pooling:
        require(npy, f"`output_file`={config.output_file}: with `pooling` the "
                "output is a .npy file")
    else:
        require(not npy, f"`output_file`={config.output_file}: a .npy output "
                "needs `pooling`=mean|cls (without it the output is JSONL)")
        require(config.layer_combination is None,
                "`layer_combination` is read only with `pooling`")
    directory = os.path.dirname(os.path.abspath(config.output_file))
    require(os.path.isdir(directory) and os.access(directory, os.W_OK),
            f"`output_file`={config.output_file}: {directory} is not a "
            "writable directory")
    return read_texts(config.input_file, config.text_column,
                      config.text_pair_column)


def build_extractor(config):
    """The `FeatureExtractor` of `config`; UserError for a checkpoint or
    layers that do not fit."""
    from tfbert.feature_extractor import FeatureExtractor, check_layers
    from tfbert.models import Encoder
    from tfbert.text import Preprocessor

    try:
        encoder = Encoder.from_pretrained(config.init_checkpoint)
        preprocessor = Preprocessor.from_pretrained(
            config.init_checkpoint, seq_length=config.max_seq_length,
            pad_to_seq_length=False)
    except (ValueError, OSError) as error:
        raise runner.UserError(
            f"`init_checkpoint`={config.init_checkpoint}: {error}") from error
    positions = encoder.config.max_position_embeddings
    if config.max_seq_length > positions:
        raise runner.UserError(
            f"`max_seq_length`={config.max_seq_length} exceeds the "
            f"{positions} positions of `init_checkpoint`="
            f"{config.init_checkpoint}")
    layers = layer_indices(config.layers)
    try:
        layers = check_layers(layers, encoder.config.num_layers)
    except ValueError as error:
        raise runner.UserError(f"`layers`: {error}") from None
    return FeatureExtractor(
        encoder, preprocessor, layers=layers,
        pooling=config.pooling or "mean",
        layer_combination=config.layer_combination or "concat")


def write_jsonl(extractor, texts, path, batch_size, verbose=1):
    """Writes Google BERT's per-token JSONL of `texts` to `path`
    (atomically), a batch at a time."""
    import keras

    from tfbert.utils.atomic import atomic_write

    progress = keras.utils.Progbar(len(texts), verbose=verbose,
                                   unit_name="text")
    with atomic_write(path) as f:
        for start in range(0, len(texts), batch_size):
            chunk = texts[start:start + batch_size]
            results = extractor.token_features(chunk, batch_size=batch_size,
                                               verbose=0)
            for offset, (tokens, values) in enumerate(results):
                f.write(json.dumps({
                    "linex_index": start + offset,
                    "features": [{"token": token, "layers": [
                        {"index": index,
                         "values": [round(float(x), 6) for x in row]}
                        for index, row in zip(extractor.layers, per_layer)]}
                        for token, per_layer in zip(tokens, values)]}) + "\n")
            progress.update(start + len(chunk))


def write_npy(extractor, texts, path, batch_size, verbose=1):
    """Writes the pooled features of `texts` as a float32 `.npy` to `path`,
    filled a batch at a time through a memory map of a temporary file that
    replaces `path` once complete."""
    path = os.fspath(path)
    temporary = os.path.join(os.path.dirname(os.path.abspath(path)),
                             f".{os.path.basename(path)}.tmp-{os.getpid()}")
    try:
        out = np.lib.format.open_memmap(
            temporary, mode="w+", dtype=np.float32,
            shape=(len(texts), extractor.feature_size))
        extractor.pooled_features(texts, batch_size=batch_size,
                                  verbose=verbose, out=out)
        out.flush()
        del out
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def extract(config, verbose=1):
    """Runs the extraction `config` describes; returns the number of texts
    written. User mistakes are found before the model is loaded (except
    those about the checkpoint itself)."""
    texts = check(config)
    extractor = build_extractor(config)
    write = write_npy if config.pooling else write_jsonl
    write(extractor, texts, config.output_file, config.batch_size, verbose)
    return len(texts)


def run(values):
    """`extract` as `values` (see `extraction_config`) say; returns 0."""
    config = extraction_config(values)
    count = extract(config)
    print(f"wrote features of {count} texts to {config.output_file}")
    return 0


"""Query any tfbert SavedModel export with raw text, from the command line.

The inputs are read from the signature itself, so this works for every
export kind (classifier, regressor, SQuAD, NER) and for any signature:

    tfbert-query saved_models/sst2 --sentence "A fine film." --sentence "Dull."
    tfbert-query saved_models/sst2 "A fine film." "Dull."  (one text input)
    tfbert-query saved_models/mrpc --sentence1 "He left." --sentence2 "He went."
    tfbert-query saved_models/squad --question "Who?" --context "Ann did."
    tfbert-query saved_models/ner --text "John lives in Paris."

Repeat an input to send a batch. PATH may be the model's base directory (the
highest version is used) or a version directory. Each example's outputs are
printed as one JSON line, strings decoded and padding ("" entries after
`num_words` / `num_entities`) dropped. Only TensorFlow and tensorflow-text
are used to run the model, as in TF Serving.
"""

import argparse
import json
import os
import sys

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

# Output prefix -> the output counting its valid slots.
_COUNTED = {"word_": "num_words", "entity_": "num_entities"}


def latest_version(path):
    """`path/<largest integer>` if `path` holds versions, else `path`."""
    versions = [int(v) for v in os.listdir(path) if v.isdigit()]
    return os.path.join(path, str(max(versions))) if versions else path


def _plain(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def example_outputs(outputs, index):
    """Example `index`'s outputs as plain Python values (padding dropped)."""
    example = {name: _plain(np.asarray(value[index]).tolist())
               for name, value in outputs.items()}
    for prefix, count in _COUNTED.items():
        if count in example:
            for name in example:
                if name.startswith(prefix):
                    example[name] = example[name][:example[count]]
    return example


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="tfbert-query", description=__doc__.split("\n\n")[0],
        allow_abbrev=False,
        epilog="The inputs of the chosen signature become options.")
    parser.add_argument("path", help="export base or version directory")
    parser.add_argument("texts", nargs="*",
                        help="texts for a signature with one text input")
    parser.add_argument("--signature", default="serving_default")
    known, _ = parser.parse_known_args(argv)
    path = latest_version(known.path)
    signature = tf.saved_model.load(path).signatures.get(known.signature)
    if signature is None:
        parser.error(f"{path} has no signature {known.signature!r}")
    _, specs = signature.structured_input_signature
    for name, spec in specs.items():
        if spec.dtype != tf.string:
            parser.error(f"input {name} of {known.signature!r} is "
                         f"{spec.dtype.name}; this tool sends text only")
        parser.add_argument(f"--{name}", action="append", default=[],
                            help=f"text for input {name} (repeatable)")
    args = parser.parse_args(argv)
    texts = {name: getattr(args, name) for name in specs}
    if args.texts:
        if len(specs) != 1:
            parser.error(f"{known.signature!r} has inputs {sorted(specs)}: "
                         "give each as an option")
        texts[next(iter(specs))] += args.texts
    for name, values in texts.items():
        if not values:
            parser.error(f"give --{name} (the signature's inputs are "
                         f"{', '.join('--' + n for n in sorted(specs))})")
    inputs = {name: tf.constant(values) for name, values in texts.items()}
    outputs = signature(**inputs)
    print(f"model: {path}", file=sys.stderr)
    for index in range(len(next(iter(inputs.values())))):
        print(json.dumps(example_outputs(outputs, index), ensure_ascii=False))


if __name__ == "__main__":
    main()

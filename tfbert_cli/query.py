"""Query any tfbert SavedModel export with raw text, from the command line.

The inputs are read from the signature itself, so this works for every
export kind (classifier, regressor, SQuAD, NER) and for any signature:

    tfbert-query saved_models/sst2 --sentence "A fine film." --sentence "Dull."
    tfbert-query saved_models/sst2 "A fine film." "Dull."  (one text input)
    tfbert-query saved_models/mrpc --sentence1 "He left." --sentence2 "He went."
    tfbert-query saved_models/squad --question "Who?" --context "Ann did."
    tfbert-query saved_models/ner --text "John lives in Paris."

Repeat an input to send a batch (every input the same number of times).
PATH may be the model's base directory (the highest version is used) or a
version directory. Each example is printed as one JSON line,

    {"index": 0, "inputs": {"sentence": "A fine film."},
     "outputs": {"label": "positive", "probabilities": [0.1, 0.9]}}

with inputs and outputs in name order, strings decoded, padding ("" entries
after `num_words` / `num_entities`) dropped, and every non-finite number
(NaN, infinity: a diverged model's) written as `null`, so each line is
valid JSON; stderr then names the outputs that held one. A user mistake (a
path that is not an export, inputs given different numbers of times, an
argument that is not valid UTF-8, a request the model refuses) is one line
`tfbert-query: error: ...` with exit status 2. Only TensorFlow and
tensorflow-text are used to run the model, as in TF Serving.
"""

import argparse
import json
import math
import os
import sys

import numpy as np


# Output prefix -> the output counting its valid slots.
_COUNTED = {"word_": "num_words", "entity_": "num_entities"}


class OneLineErrorParser(argparse.ArgumentParser):
    """Every error one line, `PROG: error: MESSAGE`, exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def latest_version(path):
    """`path/<largest integer>` if `path` holds versions, else `path`."""
    versions = [int(v) for v in os.listdir(path) if v.isdigit()]
    return os.path.join(path, str(max(versions))) if versions else path


def export_path(path):
    """The SavedModel directory that `path` (base or version directory)
    names; raises ValueError saying why there is none."""
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file or directory")
    if not os.path.isdir(path):
        raise ValueError(f"{path} is a file, not an export directory")
    version = latest_version(path)
    if os.path.isfile(os.path.join(version, "saved_model.pb")):
        return version
    # Exports are staged in hidden directories (which TF Serving ignores)
    # and renamed to their version number when complete. This script runs
    # with only TensorFlow and tensorflow-text imported, so it tells them
    # by that, not by tfbert's staging prefix.
    staging = sorted(name for name in os.listdir(path) if name.startswith(".")
                     and os.path.isdir(os.path.join(path, name)))
    if staging:
        raise ValueError(
            f"{path} holds no finished version, only {staging[0]} (an "
            "export still being written, or interrupted)")
    raise ValueError(f"{version} is not a SavedModel (no saved_model.pb) "
                     "and holds no version directory")


def _plain(value, non_finite):
    """`value` (from `ndarray.tolist()`) as JSON-ready Python values;
    non-finite floats become None and set `non_finite[0]`."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [_plain(v, non_finite) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        non_finite[0] = True
        return None
    return value


def example_outputs(outputs, index, non_finite=None):
    """Example `index`'s outputs as plain Python values, in name order
    (padding dropped, non-finite numbers None). The names of outputs that
    held a non-finite number are added to the set `non_finite`."""
    example = {}
    for name in sorted(outputs):
        found = [False]
        example[name] = _plain(np.asarray(outputs[name][index]).tolist(),
                               found)
        if found[0] and non_finite is not None:
            non_finite.add(name)
    for prefix, count in _COUNTED.items():
        if count in example:
            for name in example:
                if name.startswith(prefix):
                    example[name] = example[name][:example[count]]
    return example


def _utf8_error(text):
    """None if the argument `text` is valid UTF-8, else its bytes, escaped
    (the OS hands Python undecodable bytes as surrogate escapes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", errors="backslashreplace")
    return None


def _checked_texts(parser, texts):
    """Refuses (exit 2) arguments that are not UTF-8 and inputs given
    different numbers of times."""
    for name, values in texts.items():
        for position, value in enumerate(values, 1):
            escaped = _utf8_error(value)
            if escaped is not None:
                parser.error(f"--{name} value {position} ({escaped!r}) is "
                             "not valid UTF-8")
    counts = {name: len(values) for name, values in texts.items()}
    if len(set(counts.values())) > 1:
        parser.error("each input is one text per example, but "
                     + ", ".join(f"--{name} was given {count} time"
                                 + ("s" * (count != 1))
                                 for name, count in counts.items()))


def main(argv=None):
    parser = OneLineErrorParser(
        prog="tfbert-query", description=__doc__.split("\n\n")[0],
        allow_abbrev=False,
        epilog="The inputs of the chosen signature become options.")
    parser.add_argument("path", help="export base or version directory")
    parser.add_argument("texts", nargs="*",
                        help="texts for a signature with one text input")
    parser.add_argument("--signature", default="serving_default")
    known, _ = parser.parse_known_args(argv)
    try:
        path = export_path(known.path)
    except ValueError as error:
        parser.error(str(error))
    # TensorFlow starts only once the arguments it needs are known to be
    # good (--help and a wrong path are answered without it).
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

    # One request per process: Grappler's rewrite of the signature's graph
    # on its first call costs more than it saves on one small batch
    # (benchmarks/RESULTS.md, "Program start-up").
    tf.config.optimizer.set_experimental_options(
        {"disable_meta_optimizer": True})
    try:
        loaded = tf.saved_model.load(path)
    except (ValueError, OSError, tf.errors.OpError) as error:
        parser.error(str(error).strip().splitlines()[0])
    signature = loaded.signatures.get(known.signature)
    if signature is None:
        parser.error(f"{path} has no signature {known.signature!r} (it has "
                     f"{', '.join(sorted(loaded.signatures))})")
    _, specs = signature.structured_input_signature
    names = sorted(specs)
    for name in names:
        if specs[name].dtype != tf.string:
            parser.error(f"input {name} of {known.signature!r} is "
                         f"{specs[name].dtype.name}; this tool sends text "
                         "only")
        parser.add_argument(f"--{name}", action="append", default=[],
                            help=f"text for input {name} (repeatable)")
    args = parser.parse_args(argv)
    texts = {name: getattr(args, name) for name in names}
    if args.texts:
        if len(names) != 1:
            parser.error(f"{known.signature!r} has inputs {names}: "
                         "give each as an option")
        texts[names[0]] += args.texts
    for name, values in texts.items():
        if not values:
            parser.error(f"give --{name} (the signature's inputs are "
                         f"{', '.join('--' + n for n in names)})")
    _checked_texts(parser, texts)
    try:
        outputs = signature(**{name: tf.constant(values)
                               for name, values in texts.items()})
    except tf.errors.InvalidArgumentError as error:
        refusal = [line for line in error.message.splitlines()
                   if "assertion failed" in line]
        parser.error("the model refused the request: "
                     + (refusal[0].strip() if refusal
                        else error.message.strip().splitlines()[0]))
    print(f"model: {path}", file=sys.stderr)
    non_finite = set()
    for index in range(len(texts[names[0]])):
        line = {"index": index,
                "inputs": {name: texts[name][index] for name in names},
                "outputs": example_outputs(outputs, index, non_finite)}
        print(json.dumps(line, ensure_ascii=False, allow_nan=False))
    if non_finite:
        print(f"warning: {', '.join(sorted(non_finite))} held non-finite "
              "numbers, written as null (is the model diverged?)",
              file=sys.stderr)


if __name__ == "__main__":
    main()

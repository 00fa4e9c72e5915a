"""Query an exported classifier SavedModel with raw text, importing only
TensorFlow and tensorflow-text (what TF Serving links), not tfbert or Keras.

    python tasks/query_saved_model.py saved_models/NAME "a sentence" ...
    python tasks/query_saved_model.py saved_models/NAME --pair "s1" "s2" ...

NAME may be the base directory (the highest version is used) or a version
directory.
"""

import os
import sys

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)


def latest_version(path):
    versions = [int(v) for v in os.listdir(path) if v.isdigit()]
    return os.path.join(path, str(max(versions))) if versions else path


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    path = latest_version(argv[1])
    texts = argv[2:]
    serve = tf.saved_model.load(path).signatures["serving_default"]
    if texts[0] == "--pair":
        firsts, seconds = texts[1::2], texts[2::2]
        outputs = serve(sentence1=tf.constant(firsts),
                        sentence2=tf.constant(seconds))
        texts = [f"{a} ||| {b}" for a, b in zip(firsts, seconds)]
    else:
        outputs = serve(sentence=tf.constant(texts))
    print(f"model: {path}")
    for i, text in enumerate(texts):
        if "score" in outputs:
            print(f"  {float(outputs['score'][i]):6.3f}  {text}")
        else:
            label = outputs["label"][i].numpy().decode()
            probability = float(tf.reduce_max(outputs["probabilities"][i]))
            print(f"  {label:>10s} ({probability:.3f})  {text}")


if __name__ == "__main__":
    main(sys.argv)

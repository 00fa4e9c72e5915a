"""What one request at the export's bounds costs a server (NER and SQuAD).

    PYTHONPATH=. python -m benchmarks.serving_bounds [--kinds=ner,squad] \
      [--max_text_chars=10000 --max_batch_chars=100000 --max_windows=64]

Exports a NER and a SQuAD model on the real MiniLM encoder
(`minilm-l6-h384-uncased`; untrained heads: cost does not depend on the
weights) with the given `RequestLimits`, then sends each request in a fresh
process that imports only TensorFlow and tensorflow-text and loads the
export into a TF1 `Session`, as TF Serving's loader does:

  * one text (SQuAD: context) of `max_text_chars` characters, cut from real
    text (CoNLL-2003 training sentences, SQuAD dev contexts);
  * the largest batch of such texts the bounds accept (found by a probe
    process that tries smaller batches until one is answered);
  * one text of 200,000 characters, which the bounds refuse.

Per request it prints the wall time of the first and second call, and the
process's private memory (RssAnon: tensors and allocator caches; its peak
sampled every 2 ms) and resident memory (RSS; peak: VmHWM, which also
counts TensorFlow's shared libraries), after loading and one warm-up
request, and at their peak.
"""

import json
import os
import sys
import tempfile

from absl import app, flags

from benchmarks.common import run_sampling_private_memory

FLAGS = flags.FLAGS

flags.DEFINE_list("kinds", ["ner", "squad"], "Export kinds to measure.")
flags.DEFINE_integer("max_text_chars", None,
                     "RequestLimits.max_text_chars (default: its default).")
flags.DEFINE_integer("max_batch_chars", None,
                     "RequestLimits.max_batch_chars (default: its default).")
flags.DEFINE_integer("max_windows", None,
                     "RequestLimits.max_windows (default: its default).")
flags.DEFINE_string("data_dir", "../shared/data",
                    "Holds conll2003/train.txt and squad_v1.1/.")
flags.DEFINE_integer("refused_chars", 200_000,
                     "Length of the text that must be refused.")

PRESET = "minilm-l6-h384-uncased"
NER_LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC",
              "B-MISC", "I-MISC"]
# The task runners' defaults.
NER_SEQ_LENGTH = 128
SQUAD = {"max_seq_length": 384, "doc_stride": 128, "max_query_length": 64,
         "max_answer_length": 30}

# argv: export path, JSON file of requests ({input: [texts]}, a list),
# calls per request, "probe" (stop at the first answered request) or "time".
_WORKER = """
import json, sys, time
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

def status_mb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024

path, requests_file, calls, mode = sys.argv[1:]
with open(requests_file) as f:
    requests = json.load(f)
graph = tf.Graph()
session = tf.compat.v1.Session(graph=graph)
with graph.as_default():
    meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
signature = meta_graph.signature_def["serving_default"]
outputs = {name: info.name for name, info in signature.outputs.items()}

def run(request):
    return session.run(outputs, {signature.inputs[name].name: texts
                                 for name, texts in request.items()})

run({name: ["A short warm-up text."] for name in signature.inputs})
loaded = status_mb("VmRSS"), status_mb("RssAnon")
for index, request in enumerate(requests):
    times, answer = [], None
    for _ in range(int(calls)):
        start = time.perf_counter()
        try:
            run(request)
            answer = "answered"
        except tf.errors.InvalidArgumentError as error:
            answer = "refused: " + [line for line in error.message.splitlines()
                                    if "assertion failed" in line][0].strip()
        times.append(time.perf_counter() - start)
    if mode == "time" or answer == "answered":
        print(json.dumps({"index": index, "answer": answer, "times_s": times,
                          "loaded_rss_mb": loaded[0],
                          "loaded_private_mb": loaded[1],
                          "peak_rss_mb": status_mb("VmHWM")}))
        break
"""


def _export(kind, limits, export_dir):
    from tfbert.export import export_saved_model
    from tfbert.models import (BertEncoder, BertSpanLabeler,
                               BertTokenClassifier)
    from tfbert.text import BertTokenizer

    tokenizer = BertTokenizer.from_pretrained(PRESET)
    encoder = BertEncoder.from_pretrained(PRESET)
    if kind == "ner":
        from tfbert.export.ner_serving import NerServingModule

        module = NerServingModule(
            BertTokenClassifier(encoder, len(NER_LABELS), labels=NER_LABELS),
            tokenizer, NER_LABELS, max_seq_length=NER_SEQ_LENGTH)
    else:
        from tfbert.export.squad_serving import SquadServingModule

        module = SquadServingModule(BertSpanLabeler(encoder), tokenizer,
                                    **SQUAD)
    return export_saved_model(module, export_dir, limits=limits)


def _real_text(kind, chars):
    """`chars` characters of real text, and (SQuAD) a real question."""
    parts, question = [], None
    if kind == "ner":
        with open(os.path.join(FLAGS.data_dir, "conll2003", "train.txt"),
                  encoding="utf-8") as f:
            words = []
            for line in f:
                if not line.strip() or line.startswith("-DOCSTART-"):
                    if words:
                        parts.append(" ".join(words))
                    words = []
                else:
                    words.append(line.split()[0])
    else:
        with open(os.path.join(FLAGS.data_dir, "squad_v1.1",
                               "dev-v1.1.partA.json"), encoding="utf-8") as f:
            data = json.load(f)["data"]
        for article in data:
            for paragraph in article["paragraphs"]:
                parts.append(paragraph["context"])
                question = question or paragraph["qas"][0]["question"]
    text = ""
    while len(text) < chars:
        text += " ".join(parts) + " "
    return text[:chars], question


def _request(kind, text, question, batch):
    if kind == "ner":
        return {"text": [text] * batch}
    return {"question": [question] * batch, "context": [text] * batch}


def _run_worker(path, requests, calls, mode):
    with tempfile.NamedTemporaryFile("w", suffix=".json",
                                     delete=False) as f:
        json.dump(requests, f)
    try:
        code, out, err, private = run_sampling_private_memory(
            [sys.executable, "-c", _WORKER, path, f.name, str(calls), mode],
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    finally:
        os.unlink(f.name)
    if code != 0:
        raise SystemExit(f"worker failed:\n{err[-3000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_private_mb"] = private
    return result


def main(argv):
    del argv
    from tfbert.export import RequestLimits

    limits = RequestLimits(**{
        name: getattr(FLAGS, name)
        for name in ("max_text_chars", "max_batch_chars", "max_windows")
        if getattr(FLAGS, name) is not None})
    print(f"limits: {limits}")
    base = tempfile.mkdtemp(prefix="serving_bounds_")
    for kind in FLAGS.kinds:
        path = _export(kind, limits, os.path.join(base, kind))
        text, question = _real_text(kind, limits.max_text_chars)
        most = limits.max_batch_chars // limits.max_text_chars
        probe = _run_worker(
            path, [_request(kind, text, question, batch)
                   for batch in range(most, 0, -1)], 1, "probe")
        largest = most - probe["index"]
        refused, _ = _real_text(kind, FLAGS.refused_chars)
        cases = {
            f"1 text of {limits.max_text_chars} chars":
                _request(kind, text, question, 1),
            f"{largest} texts of {limits.max_text_chars} chars (largest "
            "accepted)": _request(kind, text, question, largest),
            f"1 text of {FLAGS.refused_chars} chars":
                _request(kind, refused, question, 1),
        }
        for name, request in cases.items():
            result = _run_worker(path, [request], 2, "time")
            print(f"{kind:5s} | {name:45s} | {result['answer'][:60]:60s} | "
                  f"first {result['times_s'][0]:.2f} s, second "
                  f"{result['times_s'][1]:.2f} s | private MB: loaded "
                  f"{result['loaded_private_mb']:.0f}, peak "
                  f"{result['peak_private_mb']:.0f} | RSS MB: loaded "
                  f"{result['loaded_rss_mb']:.0f}, peak "
                  f"{result['peak_rss_mb']:.0f}", flush=True)


if __name__ == "__main__":
    app.run(main)

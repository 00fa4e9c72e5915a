"""GLUE: task definitions and TSV readers for the standard
`DATA_DIR/<TASK>/{train,dev,test}.tsv` layout.

Each task's quirks are handled here: CoLA has no header, MRPC's header starts
with a byte-order mark, MNLI has matched and mismatched dev/test files, AX is
predicted with the MNLI model. Quoting is off (texts contain `"`). A row with
the wrong number of fields, an empty text or an unknown label is an error
naming the file, line and field; so is a file without examples. Nothing is
skipped silently.
"""

import dataclasses
import os

from tfbert.data.table import utf8_lines


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """How to read one GLUE task.

    Attributes:
      name: lower-case task name used on the command line (`sst2`).
      directory: folder name under DATA_DIR (`SST-2`).
      text_a, text_b: header names of the text columns (text_b None for
        single-sentence tasks). For header-less CoLA, column indices.
      label: header name (or index) of the label column.
      labels: label strings in class-id order; None for regression.
      metrics: metric names reported on dev (see `tfbert.metrics.glue`).
      dev_splits: dev file stems (MNLI has two).
      test_splits: (file stem, submission file name) pairs.
      has_header: whether the train/dev files have a header line.
      num_fields: fields per row of a header-less file (the header gives
        the count otherwise).
      test_text_a, test_text_b: text columns of the test files.
      label_names: readable class names in class-id order (what an exported
        model answers), where GLUE's labels are "0"/"1"; None = `labels`.
    """

    name: str
    directory: str
    text_a: str | int
    text_b: str | int | None
    label: str | int
    labels: tuple | None
    metrics: tuple
    dev_splits: tuple = ("dev",)
    test_splits: tuple = ()
    has_header: bool = True
    num_fields: int | None = None
    test_text_a: str | None = None
    test_text_b: str | None = None
    label_names: tuple | None = None

    @property
    def is_regression(self):
        return self.labels is None

    @property
    def is_pair(self):
        return self.text_b is not None

    @property
    def num_classes(self):
        return 1 if self.is_regression else len(self.labels)

    @property
    def main_metric(self):
        return self.metrics[0]


_NLI3 = ("contradiction", "entailment", "neutral")
_NLI2 = ("entailment", "not_entailment")

TASKS = {task.name: task for task in [
    GlueTask("cola", "CoLA", 3, None, 1, ("0", "1"), ("matthews_corr", "accuracy"),
             test_splits=(("test", "CoLA.tsv"),), has_header=False,
             num_fields=4, test_text_a="sentence",
             label_names=("unacceptable", "acceptable")),
    GlueTask("sst2", "SST-2", "sentence", None, "label", ("0", "1"), ("accuracy",),
             test_splits=(("test", "SST-2.tsv"),), test_text_a="sentence",
             label_names=("negative", "positive")),
    GlueTask("mrpc", "MRPC", "#1 String", "#2 String", "Quality", ("0", "1"),
             ("f1", "accuracy"), test_splits=(("test", "MRPC.tsv"),),
             test_text_a="#1 String", test_text_b="#2 String",
             label_names=("not_equivalent", "equivalent")),
    GlueTask("stsb", "STS-B", "sentence1", "sentence2", "score", None,
             ("pearson", "spearman"), test_splits=(("test", "STS-B.tsv"),),
             test_text_a="sentence1", test_text_b="sentence2"),
    GlueTask("qqp", "QQP", "question1", "question2", "is_duplicate", ("0", "1"),
             ("f1", "accuracy"), test_splits=(("test", "QQP.tsv"),),
             test_text_a="question1", test_text_b="question2",
             label_names=("not_duplicate", "duplicate")),
    GlueTask("mnli", "MNLI", "sentence1", "sentence2", "gold_label", _NLI3,
             ("accuracy",), dev_splits=("dev_matched", "dev_mismatched"),
             test_splits=(("test_matched", "MNLI-m.tsv"),
                          ("test_mismatched", "MNLI-mm.tsv")),
             test_text_a="sentence1", test_text_b="sentence2"),
    GlueTask("qnli", "QNLI", "question", "sentence", "label", _NLI2, ("accuracy",),
             test_splits=(("test", "QNLI.tsv"),), test_text_a="question",
             test_text_b="sentence"),
    GlueTask("rte", "RTE", "sentence1", "sentence2", "label", _NLI2, ("accuracy",),
             test_splits=(("test", "RTE.tsv"),), test_text_a="sentence1",
             test_text_b="sentence2"),
    GlueTask("wnli", "WNLI", "sentence1", "sentence2", "label", ("0", "1"),
             ("accuracy",), test_splits=(("test", "WNLI.tsv"),),
             test_text_a="sentence1", test_text_b="sentence2",
             label_names=("not_entailment", "entailment")),
]}

# The demo sentiment data bundled with tfbert, in the GLUE layout
# (`DEMO_DATA_DIR/SST-2/{train,dev}.tsv`; see its README).
DEMO_DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "demo")

# The diagnostic set, predicted with the MNLI model.
AX_PATHS = (os.path.join("AX", "test.tsv"),
            os.path.join("diagnostic", "diagnostic.tsv"))


@dataclasses.dataclass(frozen=True)
class Example:
    """One GLUE example.

    Attributes:
      guid: "<file>:<line>" (train/dev) or the test file's index.
      text_a, text_b: the texts (text_b None for single-sentence tasks).
      label: the label string (a float string for STS-B); None on test.
    """

    guid: str
    text_a: str
    text_b: str | None
    label: str | None


def get_task(name):
    """Returns the `GlueTask` called `name` (case-insensitive; `sst-2` and
    `sts-b` spellings accepted)."""
    key = name.lower().replace("-", "")
    if key not in TASKS:
        raise ValueError(f"unknown GLUE task {name!r}; one of {sorted(TASKS)}")
    return TASKS[key]


def _read_rows(path):
    """Yields (line number, fields) of a TSV file, quoting off."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"GLUE file not found: {path}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory, expected a GLUE "
                                ".tsv file")
    for number, line in utf8_lines(path):
        line = line.rstrip("\r\n")
        if line.strip():
            yield number, line.split("\t")


def _column(header, name, path):
    if isinstance(name, int):
        return name
    if name not in header:
        raise ValueError(f"{path}:1: header has no column {name!r} "
                         f"(found: {header})")
    return header.index(name)


def read_examples(path, task, labeled=True):
    """Reads a GLUE TSV file into `Example`s.

    Args:
      path: the .tsv file.
      task: a `GlueTask` or its name.
      labeled: False for test files (no label column; guid = index column).

    Raises:
      ValueError naming file:line (and field) for a wrong field count,
      empty text, unknown label or non-numeric STS-B score, and naming the
      file when it has no examples (empty or header only).
    """
    task = get_task(task) if isinstance(task, str) else task
    rows = _read_rows(path)
    header = None
    has_header = task.has_header or not labeled
    if has_header:
        try:
            _, header = next(rows)
        except StopIteration:
            raise ValueError(f"{path} has no examples (the file is "
                             "empty)") from None
    if labeled:
        columns = (task.text_a, task.text_b, task.label)
    else:
        columns = (task.test_text_a, task.test_text_b, None)
    text_a, text_b, label = (
        None if c is None else _column(header, c, path) if header else c
        for c in columns)
    index = None
    if not labeled:  # QQP's test files call the index column "id".
        index = _column(header, "index" if "index" in header else "id", path)
    width = len(header) if header else task.num_fields
    examples = []
    for number, fields in rows:
        where = f"{path}:{number}"
        if len(fields) != width:
            raise ValueError(f"{where}: expected {width} tab-separated fields, "
                             f"found {len(fields)}")
        texts = []
        for column in (text_a, text_b):
            if column is None:
                texts.append(None)
                continue
            value = fields[column]
            if not value.strip():
                name = header[column] if header else f"column {column + 1}"
                raise ValueError(f"{where}: field {name!r} is empty")
            texts.append(value)
        value = None
        if labeled:
            value = fields[label].strip()
            name = header[label] if header else f"column {label + 1}"
            if task.is_regression:
                try:
                    float(value)
                except ValueError:
                    raise ValueError(f"{where}: field {name!r}: {value!r} is "
                                     "not a number") from None
            elif value not in task.labels:
                raise ValueError(f"{where}: field {name!r}: unknown label "
                                 f"{value!r}; expected one of {task.labels}")
        guid = fields[index] if index is not None else where
        examples.append(Example(guid, texts[0], texts[1], value))
    if not examples:
        raise ValueError(f"{path} has no examples"
                         + (" (only a header line)" if header else ""))
    return examples


def split_path(data_dir, task, split):
    """`DATA_DIR/<TASK>/<split>.tsv`."""
    task = get_task(task) if isinstance(task, str) else task
    return os.path.join(data_dir, task.directory, f"{split}.tsv")


def find_ax_file(data_dir):
    """Returns the AX diagnostic file under `data_dir`, or None."""
    for relative in AX_PATHS:
        path = os.path.join(data_dir, relative)
        if os.path.exists(path):
            return path
    return None

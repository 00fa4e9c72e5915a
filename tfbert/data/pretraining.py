"""Masked-LM pretraining data with each family's sentence objective,
static and dynamic.

The corpus format is Google BERT's: UTF-8 text, one sentence per line, a
blank line between documents (`read_corpus`).

Instances (`create_segment_pairs`) follow `create_pretraining_data.py` of
the original BERT: a document's sentences are gathered into a chunk until it
reaches a target length (`max_seq_length - 3` tokens, or with probability
`short_seq_prob` a random shorter length in [2, max_seq_length - 3]); a random
prefix of the chunk is segment A; segment B is, with probability 0.5, the
text from a random sentence of a DIFFERENT document (label 1), otherwise the
rest of the chunk (label 0); the unused sentences of a random pair are put
back. Two deliberate departures from the original, which make the labels
really 50/50: a one-sentence chunk that draws "actual next" takes the
following sentence as B (the original forces a random B there, which gives
57% random pairs on the Wikipedia sample with short_seq_prob=0.1), or is
dropped at the end of a document; and the random document is drawn among the
others (the original retries 10 times and may keep the same document). The pair is
trimmed to fit, one token at a time from the longer segment, from its front
or back at random, and packed in the family's layout (`PackingLayout`):
BERT's `[CLS] A [SEP] B [SEP]` with segment ids 0 for `[CLS] A [SEP]` and 1
for `B [SEP]`, RoBERTa's `<s> A </s></s> B </s>` with segment ids 0.

That is the "next_sentence" objective (BERT). The others
(`SENTENCE_OBJECTIVES`): "sentence_order" (ALBERT) splits a chunk the same
way, B always A's continuation, and swaps A and B with probability 0.5
(label 1); None (masked-LM only: DistilBERT, RoBERTa, ELECTRA) packs the
whole chunk as one segment (label 0), like RoBERTa's DOC-SENTENCES inputs.

Masking selects `min(max_predictions_per_seq, max(1, round(len * p)))`
tokens (`len` counts the special tokens, as the original does) among all
tokens but those the layout packs ([CLS]/[SEP], <s>/</s>): candidates
(single tokens, or with `whole_word_mask` whole words: a piece plus the
following pieces that continue its word, `##...` in WordPiece, pieces
without the word-start marker in BPE and SentencePiece) are visited in
random order and taken while they fit. Each selected token becomes the
mask token with probability 0.8, a random token with 0.1 (drawn uniformly
from the vocabulary without the special and bracketed tokens such as
[unused0] or <pad>; the original also draws those) and stays unchanged
with 0.1.

Two pipelines give identical features:
  * static (`create_instances` + `write_instances`, then
    `pretraining_dataset`): instances and masks are drawn once, `dupe_factor`
    times, and stored as tf.Examples with the original feature names;
  * dynamic (`dynamic_pretraining_dataset`): segment pairs are drawn again
    every epoch in the input pipeline and masking runs inside tf.data as TF
    ops, so every epoch sees new pairs and new masks.

Both yield batches of a dict with
  input_ids            int32   [batch, max_seq_length]
  input_mask           int32   [batch, max_seq_length]
  segment_ids          int32   [batch, max_seq_length]
  masked_lm_positions  int32   [batch, max_predictions_per_seq]
  masked_lm_ids        int32   [batch, max_predictions_per_seq]
  masked_lm_weights    float32 [batch, max_predictions_per_seq]
  next_sentence_labels int32   [batch]  (0 = A then its actual next text;
                                        1 = random B, or swapped)
padded with 0, except `masked_lm_ids`, whose unused slots hold the [PAD]
id (0 in every BERT vocabulary, so the files match the original's; [PAD] is
never a real target, which lets a metric skip those slots by label).
`model_inputs` turns a batch into the `(x, y, sample_weight)` triple a
`BertPretrainer` trains on.
"""

import dataclasses
import glob
import hashlib
import json
import os
import random

import keras
import numpy as np
import tensorflow as tf

from tfbert.text.packing_layout import BERT_LAYOUT

SENTENCE_OBJECTIVES = ("next_sentence", "sentence_order", None)
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids",
                 "masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
                 "next_sentence_labels")


# -- corpus -----------------------------------------------------------------

def read_corpus(patterns):
    """Reads BERT-format corpus files into documents.

    Args:
      patterns: a glob or list of globs; files are read in sorted order.

    Returns:
      list of documents, each a list of str sentences (non-empty).

    Raises:
      FileNotFoundError: a pattern matches no file.
      ValueError: a file is not UTF-8 (naming `file:line`).
    """
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    documents = []
    for pattern in patterns:
        paths = sorted(glob.glob(os.fspath(pattern)))
        if not paths:
            raise FileNotFoundError(f"no corpus file matches {pattern!r}")
        for path in paths:
            current = []
            with open(path, "rb") as f:
                for number, raw in enumerate(f, 1):
                    try:
                        line = raw.decode("utf-8").strip()
                    except UnicodeDecodeError as e:
                        raise ValueError(
                            f"{path}:{number}: invalid UTF-8 at byte {e.start}"
                            "; the corpus must be UTF-8 text") from None
                    if line:
                        current.append(line)
                    elif current:
                        documents.append(current)
                        current = []
            if current:
                documents.append(current)
    return documents


def tokenize_documents(documents, tokenizer, batch_size=8192, verbose=1):
    """WordPiece ids of every sentence.

    Args:
      documents: list of lists of str sentences.
      tokenizer: a tfbert tokenizer (WordPiece, BPE or SentencePiece).
      batch_size: sentences per tokenizer call.
      verbose: 0 silent, 1 a progress bar over the sentences.

    Returns:
      list of documents, each a list of sentences as lists of int ids.
      Sentences with no tokens, and documents left empty, are dropped.
    """
    flat = [sentence for document in documents for sentence in document]
    ids = []
    progress = keras.utils.Progbar(len(flat), verbose=verbose,
                                   unit_name="sentence")
    for start in range(0, len(flat), batch_size):
        ids.extend(tokenizer.tokenize(flat[start:start + batch_size]).to_list())
        progress.update(len(ids))
    result = []
    position = 0
    for document in documents:
        sentences = [s for s in ids[position:position + len(document)] if s]
        position += len(document)
        if sentences:
            result.append(sentences)
    return result


# -- segment pairs -------------------------------------------------------------

@dataclasses.dataclass
class SegmentPair:
    """One example before masking: `tokens_a`, `tokens_b` (lists of ids;
    `tokens_b` None for a single segment), `label` (1: B comes from another
    document, or A and B are swapped; else 0), and, for checks,
    `document_index` (A's document) and `b_document_index` (B's)."""

    tokens_a: list
    tokens_b: list
    label: int
    document_index: int
    b_document_index: int


def _truncate_pair(tokens_a, tokens_b, max_num_tokens, rng):
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def _truncate_segment(tokens, max_num_tokens, rng):
    while len(tokens) > max_num_tokens:
        if rng.random() < 0.5:
            del tokens[0]
        else:
            tokens.pop()


def _document_segments(document, document_index, max_num_tokens,
                       short_seq_prob, rng):
    """Single-segment examples: chunks of whole sentences."""
    target_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_length = rng.randint(2, max_num_tokens)
    segments = []
    chunk = []
    for index, sentence in enumerate(document):
        chunk.extend(sentence)
        if index == len(document) - 1 or len(chunk) >= target_length:
            _truncate_segment(chunk, max_num_tokens, rng)
            segments.append(SegmentPair(chunk, None, 0, document_index,
                                        document_index))
            chunk = []
    return segments


def _document_pairs(documents, document_index, max_num_tokens,
                    short_seq_prob, rng, objective):
    document = documents[document_index]
    target_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_length = rng.randint(2, max_num_tokens)
    pairs = []
    chunk = []
    chunk_length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target_length:
            is_random_next = (objective == "next_sentence"
                              and rng.random() < 0.5)
            if not is_random_next and len(chunk) == 1:
                if i == len(document) - 1:
                    break  # No next sentence to pair with.
                # Take the next sentence as B instead of forcing a random B.
                i += 1
                chunk.append(document[i])
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
            tokens_b = []
            if is_random_next:
                b_index = rng.randrange(len(documents) - 1)
                if b_index >= document_index:
                    b_index += 1
                other = documents[b_index]
                target_b_length = target_length - len(tokens_a)
                for sentence in other[rng.randrange(len(other)):]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target_b_length:
                        break
                i -= len(chunk) - a_end  # Put the unused sentences back.
            else:
                b_index = document_index
                tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
            _truncate_pair(tokens_a, tokens_b, max_num_tokens, rng)
            label = int(is_random_next)
            if objective == "sentence_order" and rng.random() < 0.5:
                tokens_a, tokens_b, label = tokens_b, tokens_a, 1
            pairs.append(SegmentPair(tokens_a, tokens_b, label,
                                     document_index, b_index))
            chunk = []
            chunk_length = 0
        i += 1
    return pairs


def create_segment_pairs(documents, max_seq_length, short_seq_prob, rng,
                         objective="next_sentence", layout=BERT_LAYOUT):
    """The examples of every document for a sentence objective (see the
    module docstring).

    Args:
      documents: tokenized documents (lists of lists of int ids).
      max_seq_length: packed length limit; the segments hold at most
        `max_seq_length` less the layout's special tokens.
      short_seq_prob: probability of a shorter target length per document.
      rng: a `random.Random`.
      objective: one of `SENTENCE_OBJECTIVES`.
      layout: the family's `PackingLayout`.

    Returns:
      list of `SegmentPair`, document order (not shuffled).
    """
    if objective not in SENTENCE_OBJECTIVES:
        raise ValueError(f"unknown sentence objective {objective!r}; one of "
                         f"{SENTENCE_OBJECTIVES}")
    if objective == "next_sentence" and len(documents) < 2:
        raise ValueError("next-sentence prediction needs at least 2 documents, "
                         f"got {len(documents)}")
    num_segments = 1 if objective is None else 2
    max_num_tokens = max_seq_length - layout.num_special_tokens(num_segments)
    if max_num_tokens < 2:
        raise ValueError(f"max_seq_length={max_seq_length} is too short for "
                         f"{num_segments} segment(s) and the special tokens")
    examples = []
    for index in range(len(documents)):
        if objective is None:
            examples.extend(_document_segments(
                documents[index], index, max_num_tokens, short_seq_prob, rng))
        else:
            examples.extend(_document_pairs(documents, index, max_num_tokens,
                                            short_seq_prob, rng, objective))
    return examples


def pack_pair(tokens_a, tokens_b, vocab):
    """`(packed ids, segment ids)` as two lists of int: segment A (and B,
    unless it is None) in the layout of `vocab` (a `VocabularyInfo`)."""
    tokens = [*vocab.start_ids, *tokens_a]
    if tokens_b is None:
        tokens += vocab.end_ids
        return tokens, [0] * len(tokens)
    tokens += vocab.middle_ids
    first = len(tokens)
    tokens += [*tokens_b, *vocab.end_ids]
    return tokens, [0] * first + [vocab.second_type_id] * (len(tokens) - first)


# -- masking ------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class MaskingConfig:
    """How tokens are selected and replaced (defaults: BERT's).

    Attributes:
      max_predictions_per_seq: cap on masked tokens per sequence.
      masked_lm_prob: fraction of tokens to predict.
      whole_word_mask: select whole words (a piece and the pieces that
        continue its word).
      mask_token_rate: selected tokens replaced by [MASK].
      random_token_rate: selected tokens replaced by a random token (the
        rest stay unchanged).
    """

    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    whole_word_mask: bool = False
    mask_token_rate: float = 0.8
    random_token_rate: float = 0.1


class VocabularyInfo:
    """What packing and masking need to know about a tokenizer.

    Args:
      tokenizer: a tfbert tokenizer.
      layout: the family's `PackingLayout`.

    Attributes:
      mask_id, pad_id: special ids.
      start_ids, middle_ids, end_ids: the layout's special ids (lists).
      second_type_id: segment id of segment B.
      is_special: bool numpy [vocab], a token the layout packs ([CLS],
        [SEP]; <s>, </s>), which is never selected.
      is_continuation: bool numpy [vocab], the token continues a word.
      random_ids: int32 numpy ids a random replacement is drawn from (all
        but special and bracketed tokens such as [unused0] or <pad>, and
        ids the vocabulary skips).
    """

    def __init__(self, tokenizer, layout=BERT_LAYOUT):
        tokens = tokenizer.vocabulary
        self.mask_id = tokenizer.mask_id
        self.pad_id = tokenizer.pad_id
        self.start_ids = layout.token_ids(tokenizer, "start")
        self.middle_ids = layout.token_ids(tokenizer, "middle")
        self.end_ids = layout.token_ids(tokenizer, "end")
        self.second_type_id = layout.second_type_id
        self.vocab_size = len(tokens)
        self.is_special = np.zeros(len(tokens), bool)
        self.is_special[self.start_ids + self.middle_ids + self.end_ids] = True
        self.is_continuation = np.array(
            [bool(t) and tokenizer.continues_word(t) for t in tokens])
        special_ids = tokenizer.special_ids
        self.random_ids = np.array(
            [i for i, t in enumerate(tokens)
             if t and i not in special_ids
             and not (t[0] + t[-1] in ("[]", "<>") and len(t) > 2)],
            np.int32)


def num_to_predict(length, config):
    """Tokens to select in a packed sequence of `length` tokens."""
    return min(config.max_predictions_per_seq,
               max(1, int(round(length * config.masked_lm_prob))))


def mask_tokens(tokens, config, vocab, rng):
    """Masks one packed sequence (static pipeline; Python `rng`).

    Args:
      tokens: list of int ids, packed (`pack_pair`).
      config: a `MaskingConfig`.
      vocab: a `VocabularyInfo`.
      rng: a `random.Random`.

    Returns:
      `(masked_tokens, positions, labels)`: the input with replacements, the
      selected positions in increasing order and their original ids.
    """
    candidates = []
    previous_was_candidate = False
    for i, token in enumerate(tokens):
        if vocab.is_special[token]:
            previous_was_candidate = False
            continue
        if (config.whole_word_mask and previous_was_candidate
                and vocab.is_continuation[token]):
            candidates[-1].append(i)
        else:
            candidates.append([i])
        previous_was_candidate = True
    rng.shuffle(candidates)
    limit = num_to_predict(len(tokens), config)
    output = list(tokens)
    selected = []
    for word in candidates:
        if len(selected) >= limit:
            break
        if len(selected) + len(word) > limit:
            continue
        for index in word:
            draw = rng.random()
            if draw < config.mask_token_rate:
                output[index] = vocab.mask_id
            elif draw >= config.mask_token_rate + config.random_token_rate:
                pass  # Kept unchanged.
            else:
                output[index] = int(vocab.random_ids[
                    rng.randrange(len(vocab.random_ids))])
            selected.append(index)
    selected.sort()
    return output, selected, [tokens[i] for i in selected]


# -- static pipeline ------------------------------------------------------------

@dataclasses.dataclass
class TrainingInstance:
    """A packed, masked example (lists of int, unpadded)."""

    tokens: list
    segment_ids: list
    masked_lm_positions: list
    masked_lm_labels: list
    sentence_label: int


def create_instances(documents, tokenizer, *, max_seq_length=128,
                     short_seq_prob=0.1, dupe_factor=5, masking=MaskingConfig(),
                     seed=12345, verbose=1, objective="next_sentence",
                     layout=BERT_LAYOUT):
    """Static pretraining instances of tokenized documents.

    Args:
      documents: tokenized documents (see `tokenize_documents`).
      tokenizer: the tokenizer that produced them.
      max_seq_length: packed length limit.
      short_seq_prob: see `create_segment_pairs`.
      dupe_factor: passes over the data, each with new pairs and masks.
      masking: a `MaskingConfig`.
      seed: seed of the Python RNG.
      verbose: 0 silent, 1 a progress bar over the `dupe_factor` passes.
      objective: the sentence objective (`SENTENCE_OBJECTIVES`).
      layout: the family's `PackingLayout`.

    Returns:
      list of `TrainingInstance`, shuffled.
    """
    rng = random.Random(seed)
    vocab = VocabularyInfo(tokenizer, layout)
    instances = []
    progress = keras.utils.Progbar(dupe_factor, verbose=verbose,
                                   unit_name="pass")
    for done in range(1, dupe_factor + 1):
        for pair in create_segment_pairs(documents, max_seq_length,
                                         short_seq_prob, rng, objective,
                                         layout):
            tokens, segment_ids = pack_pair(pair.tokens_a, pair.tokens_b,
                                            vocab)
            masked, positions, labels = mask_tokens(tokens, masking, vocab, rng)
            instances.append(TrainingInstance(masked, segment_ids, positions,
                                              labels, pair.label))
        progress.update(done, [("instances", len(instances))])
    rng.shuffle(instances)
    return instances


def _padded(values, length, value=0):
    return list(values) + [value] * (length - len(values))


def instance_to_example(instance, max_seq_length, max_predictions_per_seq,
                        pad_id=0):
    """A `tf.train.Example` with the original BERT feature names."""
    if len(instance.tokens) > max_seq_length:
        raise ValueError(f"instance has {len(instance.tokens)} tokens, more "
                         f"than max_seq_length={max_seq_length}")
    if len(instance.masked_lm_positions) > max_predictions_per_seq:
        raise ValueError(
            f"instance has {len(instance.masked_lm_positions)} predictions, "
            f"more than max_predictions_per_seq={max_predictions_per_seq}")

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    num_predictions = len(instance.masked_lm_positions)
    features = {
        "input_ids": ints(_padded(instance.tokens, max_seq_length)),
        "input_mask": ints(_padded([1] * len(instance.tokens), max_seq_length)),
        "segment_ids": ints(_padded(instance.segment_ids, max_seq_length)),
        "masked_lm_positions": ints(_padded(instance.masked_lm_positions,
                                            max_predictions_per_seq)),
        "masked_lm_ids": ints(_padded(instance.masked_lm_labels,
                                      max_predictions_per_seq, pad_id)),
        "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(
            value=_padded([1.0] * num_predictions, max_predictions_per_seq))),
        "next_sentence_labels": ints([instance.sentence_label]),
    }
    return tf.train.Example(features=tf.train.Features(feature=features))


def shard_paths(output_file, num_shards):
    """Output paths: a comma-separated list as given, or with
    `num_shards > 1`, `OUTPUT-00000-of-0000N` ..."""
    if "," in output_file:
        return [p for p in output_file.split(",") if p]
    if num_shards <= 1:
        return [output_file]
    return [f"{output_file}-{i:05d}-of-{num_shards:05d}"
            for i in range(num_shards)]


def write_instances(instances, output_files, max_seq_length,
                    max_predictions_per_seq, pad_id=0, verbose=1):
    """Writes instances round-robin into TFRecord shards (each shard is
    written to a temporary name and renamed when complete). `pad_id` fills
    unused `masked_lm_ids` slots; `verbose=1` shows a progress bar. Returns
    the number written per file."""
    counts = [0] * len(output_files)
    progress = keras.utils.Progbar(
        len(instances) if hasattr(instances, "__len__") else None,
        verbose=verbose, unit_name="instance")
    written = 0
    temporary = [f"{path}.tmp" for path in output_files]
    writers = [tf.io.TFRecordWriter(path) for path in temporary]
    try:
        for index, instance in enumerate(instances):
            shard = index % len(writers)
            writers[shard].write(instance_to_example(
                instance, max_seq_length, max_predictions_per_seq,
                pad_id).SerializeToString())
            counts[shard] += 1
            written = index + 1
            if written % 1000 == 0:
                progress.update(written)
        progress.update(written, finalize=True)
    finally:
        for writer in writers:
            writer.close()
    for source, target in zip(temporary, output_files):
        os.replace(source, target)
    return counts



def _vocabulary_record_path(data_file):
    # A dot file beside the shard: globs such as `data.tfrecord*` skip it.
    directory, name = os.path.split(data_file)
    return os.path.join(directory, f".{name}.vocab.json")


def vocabulary_fingerprint(tokenizer):
    """`{"vocab_size", "vocab_sha256"}` of a tokenizer's vocabulary."""
    text = "\n".join(tokenizer.vocabulary).encode("utf-8")
    return {"vocab_size": tokenizer.vocab_size,
            "vocab_sha256": hashlib.sha256(text).hexdigest()}


def write_vocabulary_records(output_files, tokenizer,
                             objective="next_sentence"):
    """Records beside each shard which vocabulary its token ids index and
    which sentence objective its labels are for."""
    for path in output_files:
        with open(_vocabulary_record_path(path), "w", encoding="utf-8") as f:
            json.dump({**vocabulary_fingerprint(tokenizer),
                       "sentence_objective": objective}, f)


def check_data_vocabulary(data_files, tokenizer, objective="next_sentence"):
    """Raises ValueError if a shard was written with another vocabulary than
    `tokenizer`'s, or for another sentence objective (shards without a
    record are not checked; records without an objective are BERT's)."""
    expected = vocabulary_fingerprint(tokenizer)
    for path in data_files:
        record = _vocabulary_record_path(path)
        if not os.path.exists(record):
            continue
        with open(record, encoding="utf-8") as f:
            found = json.load(f)
        found_objective = found.pop("sentence_objective", "next_sentence")
        if found != expected:
            raise ValueError(
                f"{path} was written with another vocabulary "
                f"({found['vocab_size']} tokens) than the model's "
                f"({expected['vocab_size']} tokens): pass the data's "
                "`vocab_file`, and pretrain from scratch for a new vocabulary")
        if found_objective != objective:
            raise ValueError(
                f"{path} was written for the sentence objective "
                f"{found_objective} but the model's is {objective}: write the "
                "data with this model's `init_checkpoint`")


def _feature_spec(max_seq_length, max_predictions_per_seq):
    seq = tf.io.FixedLenFeature([max_seq_length], tf.int64)
    pred = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
    return {
        "input_ids": seq, "input_mask": seq, "segment_ids": seq,
        "masked_lm_positions": pred, "masked_lm_ids": pred,
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq],
                                                   tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def pretraining_dataset(file_pattern, batch_size, *, max_seq_length=128,
                        max_predictions_per_seq=20, shuffle=False, seed=0,
                        drop_remainder=True):
    """Batches of static instances read from TFRecord files.

    Args:
      file_pattern: glob (or comma-separated globs) of TFRecord files.
      batch_size: examples per batch.
      max_seq_length, max_predictions_per_seq: what the files were written
        with (a mismatch is an error when the records are parsed).
      shuffle: shuffle files and examples (deterministic for `seed`).
      seed: shuffling seed.
      drop_remainder: drop the last partial batch (fixed shapes).

    Returns:
      one epoch of feature dicts (see the module docstring).
    """
    files = sorted(f for pattern in file_pattern.split(",")
                   for f in glob.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no TFRecord file matches {file_pattern!r}")
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if shuffle:
        dataset = dataset.shuffle(len(files), seed=seed)
    dataset = dataset.interleave(tf.data.TFRecordDataset,
                                 cycle_length=min(len(files), 4))
    if shuffle:
        dataset = dataset.shuffle(10000, seed=seed)
    spec = _feature_spec(max_seq_length, max_predictions_per_seq)

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        features = {name: tf.cast(value, tf.int32)
                    for name, value in parsed.items()
                    if name != "masked_lm_weights"}
        features["masked_lm_weights"] = parsed["masked_lm_weights"]
        features["next_sentence_labels"] = features["next_sentence_labels"][:, 0]
        return features

    return dataset.batch(batch_size, drop_remainder=drop_remainder).map(
        parse, num_parallel_calls=tf.data.AUTOTUNE)


# -- dynamic pipeline -------------------------------------------------------------

def mask_batch(input_ids, input_mask, config, vocab, seed):
    """Masks a batch in TF ops: the same selection and replacement rules as
    `mask_tokens`, with stateless randomness.

    Args:
      input_ids: int32 [batch, seq] packed ids, 0-padded.
      input_mask: int32 [batch, seq], 1 for real tokens.
      config: a `MaskingConfig`.
      vocab: a `VocabularyInfo`.
      seed: int32/int64 [2], the stateless seed.

    Returns:
      `(masked_ids, positions, labels, weights)`: int32 [batch, seq], int32
      [batch, P], int32 [batch, P], float32 [batch, P] with
      P = `config.max_predictions_per_seq`; unused slots have position 0,
      label [PAD] and weight 0.
    """
    seeds = tf.random.experimental.stateless_split(seed, 5)
    batch = tf.shape(input_ids)[0]
    seq = tf.shape(input_ids)[1]
    real = tf.cast(input_mask, tf.bool)
    candidate = real & ~tf.gather(tf.constant(vocab.is_special), input_ids)
    if config.whole_word_mask:
        continuation = tf.gather(tf.constant(vocab.is_continuation), input_ids)
        previous = tf.pad(candidate[:, :-1], [[0, 0], [1, 0]])
        starts = candidate & ~(continuation & previous)
    else:
        starts = candidate
    # Word index of every candidate token (its word's start, counted).
    word_id = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1
    word_id = tf.where(candidate, word_id, 0)
    rows = tf.range(batch)[:, None]
    flat_word = rows * seq + word_id
    word_size = tf.reshape(tf.math.unsorted_segment_sum(
        tf.cast(candidate, tf.int32), flat_word, batch * seq), [batch, seq])
    # Visit words in random order: sort the start positions by random keys.
    keys = tf.random.stateless_uniform([batch, seq], seeds[0])
    keys = tf.where(starts, keys, 2.0)
    order = tf.argsort(keys, axis=1, stable=True)
    order_is_start = tf.gather(starts, order, batch_dims=1)
    order_word = tf.gather(word_id, order, batch_dims=1)
    order_size = tf.where(order_is_start,
                          tf.gather(word_size, order_word, batch_dims=1), seq + 1)
    lengths = tf.reduce_sum(input_mask, axis=1)
    limit = tf.minimum(
        config.max_predictions_per_seq,
        tf.maximum(1, tf.cast(tf.round(tf.cast(lengths, tf.float32)
                                       * config.masked_lm_prob), tf.int32)))

    def visit(count, size):
        return count + tf.where(count + size <= limit, size, 0)

    counts = tf.scan(visit, tf.transpose(order_size),
                     initializer=tf.zeros([batch], tf.int32))
    previous_counts = tf.concat([tf.zeros([1, batch], tf.int32), counts[:-1]], 0)
    taken = tf.transpose(counts > previous_counts)  # [batch, seq] in visit order.
    word_taken = tf.scatter_nd(
        tf.stack([tf.broadcast_to(rows, [batch, seq]), order_word], -1),
        tf.cast(taken & order_is_start, tf.int32), [batch, seq]) > 0
    selected = candidate & tf.gather(word_taken, word_id, batch_dims=1)

    draw = tf.random.stateless_uniform([batch, seq], seeds[1])
    random_ids = tf.gather(tf.constant(vocab.random_ids), tf.random.stateless_uniform(
        [batch, seq], seeds[2], maxval=len(vocab.random_ids), dtype=tf.int32))
    keep_below = config.mask_token_rate + config.random_token_rate
    replacement = tf.where(
        draw < config.mask_token_rate, vocab.mask_id,
        tf.where(draw < keep_below, random_ids, input_ids))
    masked_ids = tf.where(selected, replacement, input_ids)

    num_predictions = config.max_predictions_per_seq
    position_key = tf.where(selected, tf.range(seq)[None, :], seq + tf.range(seq)[None, :])
    position_key = tf.sort(position_key, axis=1)
    position_key = tf.pad(position_key, [[0, 0], [0, tf.maximum(
        0, num_predictions - seq)]], constant_values=2 * seq)[:, :num_predictions]
    is_prediction = position_key < seq
    positions = tf.where(is_prediction, position_key, 0)
    labels = tf.where(is_prediction,
                      tf.gather(input_ids, positions, batch_dims=1),
                      vocab.pad_id)
    return (masked_ids, positions, labels,
            tf.cast(is_prediction, tf.float32))


def dynamic_pretraining_dataset(documents, tokenizer, batch_size, *,
                                max_seq_length=128, short_seq_prob=0.1,
                                masking=MaskingConfig(), seed=12345,
                                drop_remainder=True,
                                objective="next_sentence", layout=BERT_LAYOUT):
    """Batches drawn afresh every epoch from tokenized documents.

    Each iteration of the returned dataset (each epoch, when repeated) draws
    new segment pairs (Python RNG seeded by `seed` and the epoch number)
    and masks them with `mask_batch` inside tf.data (stateless seeds from
    `tf.data.Dataset.random`, re-drawn every epoch). Deterministic for a
    given `seed`.

    Args:
      documents: tokenized documents (see `tokenize_documents`).
      tokenizer: the tokenizer that produced them.
      batch_size: examples per batch.
      max_seq_length, short_seq_prob: see `create_segment_pairs`.
      masking: a `MaskingConfig`.
      seed: seed of pairing and masking.
      drop_remainder: drop the last partial batch.
      objective, layout: see `create_segment_pairs`.

    Returns:
      one epoch of feature dicts with the same names, shapes and dtypes as
      `pretraining_dataset`.
    """
    vocab = VocabularyInfo(tokenizer, layout)
    epoch = [0]

    def pairs():
        rng = random.Random(seed * 1000003 + epoch[0])
        epoch[0] += 1
        generated = create_segment_pairs(documents, max_seq_length,
                                         short_seq_prob, rng, objective,
                                         layout)
        rng.shuffle(generated)
        for pair in generated:
            tokens, segment_ids = pack_pair(pair.tokens_a, pair.tokens_b,
                                            vocab)
            yield tokens, segment_ids, pair.label

    dataset = tf.data.Dataset.from_generator(
        pairs, output_signature=(tf.TensorSpec([None], tf.int32),
                                 tf.TensorSpec([None], tf.int32),
                                 tf.TensorSpec([], tf.int32)))
    dataset = dataset.padded_batch(
        batch_size, padded_shapes=([max_seq_length], [max_seq_length], []),
        padding_values=(-1, 0, 0), drop_remainder=drop_remainder)
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)

    def mask(batch, random_value):
        input_ids, segment_ids, labels = batch
        input_mask = tf.cast(input_ids >= 0, tf.int32)
        input_ids = tf.maximum(input_ids, 0)
        masked, positions, masked_labels, weights = mask_batch(
            input_ids, input_mask, masking, vocab,
            tf.stack([random_value, tf.constant(seed, tf.int64)]))
        return {"input_ids": masked, "input_mask": input_mask,
                "segment_ids": segment_ids,
                "masked_lm_positions": positions,
                "masked_lm_ids": masked_labels,
                "masked_lm_weights": weights,
                "next_sentence_labels": labels}

    return tf.data.Dataset.zip((dataset, seeds)).map(
        mask, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def model_inputs(features, sentence_labels=True):
    """A feature batch as `(x, y, sample_weight)` for a `BertPretrainer`:
    x holds the encoder inputs and `masked_lm_positions`; y and
    sample_weight are keyed by the model's outputs (`masked_lm_weights`
    weighs the masked-LM loss; sentence examples weigh 1). Without
    `sentence_labels` (a model without a sentence head) y holds the
    masked-LM labels only."""
    x = {"input_word_ids": features["input_ids"],
         "input_mask": features["input_mask"],
         "input_type_ids": features["segment_ids"],
         "masked_lm_positions": features["masked_lm_positions"]}
    y = {"masked_lm_logits": features["masked_lm_ids"]}
    weights = {"masked_lm_logits": features["masked_lm_weights"]}
    if sentence_labels:
        y["next_sentence_logits"] = features["next_sentence_labels"]
        weights["next_sentence_logits"] = tf.ones_like(
            features["next_sentence_labels"], tf.float32)
    return x, y, weights


def replaced_token_inputs(features):
    """A feature batch as the inputs of an `ElectraPretrainer`, which
    derives its labels itself: the encoder inputs and the masked positions
    with their original ids and weights."""
    return {"input_word_ids": features["input_ids"],
            "input_mask": features["input_mask"],
            "input_type_ids": features["segment_ids"],
            **{name: features[name] for name in (
                "masked_lm_positions", "masked_lm_ids", "masked_lm_weights")}}

"""Masked-LM / next-sentence instance creation, static and dynamic."""

import json
import math

import numpy as np
import pytest
import tensorflow as tf

from tfbert.data import pretraining
from tfbert.data.wikipedia import article_sentences, read_wikiextractor
from tfbert.text import BertTokenizer

MAX_SEQ = 128


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer.from_pretrained("minilm-l6-h384-uncased")


@pytest.fixture(scope="module")
def documents(shared_data_dir, tokenizer):
    path = shared_data_dir / "wikipedia/enwiki-wikiextractor/AA/wiki_05"
    texts = [article_sentences(p) for _, p in read_wikiextractor(path)]
    texts = [t[:60] for t in texts if len(t) >= 2][:40]
    return pretraining.tokenize_documents(texts, tokenizer)


def _original_tokens(instance):
    tokens = list(instance.tokens)
    for position, label in zip(instance.masked_lm_positions,
                               instance.masked_lm_labels):
        tokens[position] = label
    return tokens


def _check_packing(tokens, segment_ids, cls_id, sep_id):
    assert tokens[0] == cls_id and tokens[-1] == sep_id
    seps = [i for i, t in enumerate(tokens) if t == sep_id]
    assert len(seps) == 2 and 1 < seps[0] < seps[1] - 1
    assert segment_ids == [0] * (seps[0] + 1) + [1] * (len(tokens) - seps[0] - 1)
    assert len(tokens) <= MAX_SEQ


def _masking_stats(originals, inputs, positions_list, mask_id, cls_sep_pad):
    selected = masked = unchanged = random = total = 0
    for original, inputs_, positions in zip(originals, inputs, positions_list):
        total += len(original)
        for p in positions:
            assert original[p] not in cls_sep_pad
            selected += 1
            if inputs_[p] == mask_id:
                masked += 1
            elif inputs_[p] == original[p]:
                unchanged += 1
            else:
                random += 1
    return selected, total, masked / selected, unchanged / selected, random / selected


def _within(fraction, p, n, sigmas=4):
    return abs(fraction - p) <= sigmas * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("whole_word", [False, True])
def test_static_masking_statistics(documents, tokenizer, whole_word):
    masking = pretraining.MaskingConfig(max_predictions_per_seq=MAX_SEQ,
                                        whole_word_mask=whole_word)
    instances = pretraining.create_instances(
        documents, tokenizer, max_seq_length=MAX_SEQ, dupe_factor=3,
        masking=masking, seed=1)
    assert len(instances) > 1000
    originals = [_original_tokens(i) for i in instances]
    special = {tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id}
    selected, total, masked, unchanged, random = _masking_stats(
        originals, [i.tokens for i in instances],
        [i.masked_lm_positions for i in instances], tokenizer.mask_id, special)
    # Per sequence round(0.15 * len) tokens, so the overall fraction is 0.15
    # up to rounding (whole words may leave it a little short).
    assert 0.14 <= selected / total <= 0.155
    assert _within(masked, 0.8, selected)
    assert _within(unchanged, 0.1, selected)
    assert _within(random, 0.1, selected)
    for instance, original in zip(instances, originals):
        _check_packing(original, instance.segment_ids, tokenizer.cls_id,
                       tokenizer.sep_id)
        assert instance.masked_lm_positions == sorted(instance.masked_lm_positions)
    if whole_word:
        _assert_whole_words(originals, [i.masked_lm_positions for i in instances],
                            _is_continuation(tokenizer),
                            (tokenizer.cls_id, tokenizer.sep_id))


def _is_continuation(tokenizer):
    """Per id: whether the token continues a word ("##...")."""
    return [t.startswith("##") for t in tokenizer.vocabulary]


def _assert_selection_size(original, positions, length, whole_word,
                           tokenizer, continuation):
    """Exactly round(0.15 * length) tokens; with whole words, at most that
    many, and no unselected word would still have fitted (words are taken
    while they fit)."""
    target = max(1, int(round(0.15 * length)))
    if not whole_word:
        assert len(positions) == target
        return
    assert len(positions) <= target
    special = (tokenizer.cls_id, tokenizer.sep_id)
    words = []
    for i in range(length):
        if original[i] in special:
            continue
        if continuation[original[i]] and original[i - 1] not in special and words:
            words[-1].append(i)
        else:
            words.append([i])
    chosen = set(positions)
    room = target - len(positions)
    for word in words:
        assert all(i in chosen for i in word) or not any(
            i in chosen for i in word)
        assert any(i in chosen for i in word) or len(word) > room


def _assert_whole_words(originals, positions_list, continuation, special):
    continuation = np.array(continuation)
    multi_piece_words_masked = 0
    for original, positions in zip(originals, positions_list):
        chosen = set(positions)
        for i in range(1, len(original)):
            if (continuation[original[i]] and original[i] not in special
                    and original[i - 1] not in special):
                assert (i in chosen) == (i - 1 in chosen), (original, positions)
                multi_piece_words_masked += i in chosen
    assert multi_piece_words_masked > 100


def test_prediction_cap_and_minimum(documents, tokenizer):
    masking = pretraining.MaskingConfig(max_predictions_per_seq=5)
    instances = pretraining.create_instances(
        documents, tokenizer, max_seq_length=MAX_SEQ, dupe_factor=1,
        masking=masking, short_seq_prob=0.5, seed=2)
    counts = [len(i.masked_lm_positions) for i in instances]
    assert max(counts) == 5 and min(counts) >= 1
    short = [i for i in instances if len(i.tokens) < 34]
    assert short, "short_seq_prob=0.5 should give short sequences"
    for instance in short:
        assert len(instance.masked_lm_positions) == max(
            1, int(round(0.15 * len(instance.tokens))))


def test_next_sentence_pairs(documents):
    import random as random_module

    pairs = pretraining.create_segment_pairs(
        documents, MAX_SEQ, short_seq_prob=0.1, rng=random_module.Random(3))
    pairs += pretraining.create_segment_pairs(
        documents, MAX_SEQ, short_seq_prob=0.1, rng=random_module.Random(4))
    random_fraction = np.mean([p.label for p in pairs])
    assert _within(random_fraction, 0.5, len(pairs)), random_fraction
    streams = [" ".join(map(str, (t for s in d for t in s))) for d in documents]

    def found_in(tokens):
        needle = " " + " ".join(map(str, tokens)) + " "
        return {i for i, s in enumerate(streams) if needle in f" {s} "}

    for pair in pairs[:400]:
        assert pair.tokens_a and pair.tokens_b
        assert len(pair.tokens_a) + len(pair.tokens_b) <= MAX_SEQ - 3
        a_docs, b_docs = found_in(pair.tokens_a), found_in(pair.tokens_b)
        assert pair.document_index in a_docs
        if pair.label:
            # B's text really is in another document.
            assert b_docs - {pair.document_index}
            assert pair.b_document_index != pair.document_index
        else:
            assert pair.document_index in b_docs
            stream = f" {streams[pair.document_index]} "
            a_at = stream.find(" " + " ".join(map(str, pair.tokens_a)) + " ")
            b_at = stream.find(" " + " ".join(map(str, pair.tokens_b)) + " ")
            assert a_at < b_at


def test_needs_two_documents(documents):
    import random as random_module

    with pytest.raises(ValueError, match="at least 2 documents"):
        pretraining.create_segment_pairs(documents[:1], MAX_SEQ, 0.1,
                                         random_module.Random(0))


def _dynamic_batches(documents, tokenizer, whole_word, n=30):
    dataset = pretraining.dynamic_pretraining_dataset(
        documents, tokenizer, 32, max_seq_length=MAX_SEQ,
        masking=pretraining.MaskingConfig(max_predictions_per_seq=MAX_SEQ,
                                          whole_word_mask=whole_word),
        seed=5)
    return dataset, [{k: v.numpy() for k, v in b.items()}
                     for b in dataset.take(n)]


@pytest.mark.parametrize("whole_word", [False, True])
def test_dynamic_masking_statistics(documents, tokenizer, whole_word):
    _, batches = _dynamic_batches(documents, tokenizer, whole_word)
    continuation = _is_continuation(tokenizer)
    originals, inputs, positions_list, nsp = [], [], [], []
    for b in batches:
        for row in range(len(b["input_ids"])):
            length = int(b["input_mask"][row].sum())
            assert b["input_mask"][row][:length].all()
            assert not b["input_ids"][row][length:].any()
            weights = b["masked_lm_weights"][row]
            count = int(weights.sum())
            assert weights[:count].all() and not weights[count:].any()
            positions = list(b["masked_lm_positions"][row][:count])
            assert positions == sorted(positions)
            original = list(b["input_ids"][row][:length])
            for p, label in zip(positions, b["masked_lm_ids"][row][:count]):
                original[p] = label
            assert (b["masked_lm_ids"][row][count:] == tokenizer.pad_id).all()
            _check_packing(original, list(b["segment_ids"][row][:length]),
                           tokenizer.cls_id, tokenizer.sep_id)
            _assert_selection_size(original, positions, length, whole_word,
                                   tokenizer, continuation)
            originals.append(original)
            inputs.append(list(b["input_ids"][row]))
            positions_list.append(positions)
            nsp.append(b["next_sentence_labels"][row])
    special = {tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id}
    selected, total, masked, unchanged, random = _masking_stats(
        originals, inputs, positions_list, tokenizer.mask_id, special)
    assert 0.14 <= selected / total <= 0.155
    assert _within(masked, 0.8, selected)
    assert _within(unchanged, 0.1, selected)
    assert _within(random, 0.1, selected)
    assert _within(np.mean(nsp), 0.5, len(nsp))
    if whole_word:
        _assert_whole_words(originals, positions_list, continuation,
                            (tokenizer.cls_id, tokenizer.sep_id))


def test_dynamic_masks_change_every_epoch(documents, tokenizer):
    dataset, _ = _dynamic_batches(documents, tokenizer, False, n=0)
    again, _ = _dynamic_batches(documents, tokenizer, False, n=0)
    first_epoch = [b["input_ids"].numpy() for b in dataset.take(3)]
    # The same seed gives the same data; the next epoch new pairs and masks.
    assert all(np.array_equal(a, b["input_ids"].numpy())
               for a, b in zip(first_epoch, again.take(3)))
    second_epoch = [b["input_ids"].numpy() for b in dataset.take(3)]
    assert not any(np.array_equal(a, b)
                   for a, b in zip(first_epoch, second_epoch))


def test_static_records_and_same_features_as_dynamic(documents, tokenizer,
                                                      tmp_path):
    masking = pretraining.MaskingConfig(max_predictions_per_seq=20,
                                        whole_word_mask=True)
    instances = pretraining.create_instances(
        documents[:10], tokenizer, max_seq_length=MAX_SEQ, dupe_factor=1,
        masking=masking, seed=7)
    paths = pretraining.shard_paths(str(tmp_path / "data"), 3)
    counts = pretraining.write_instances(instances, paths, MAX_SEQ, 20)
    assert sum(counts) == len(instances) and max(counts) - min(counts) <= 1

    record = next(iter(tf.data.TFRecordDataset(paths[0])))
    example = tf.train.Example.FromString(record.numpy())
    assert sorted(example.features.feature) == sorted(pretraining.FEATURE_NAMES)
    first = instances[0]
    feature = example.features.feature
    assert list(feature["input_ids"].int64_list.value) == (
        first.tokens + [0] * (MAX_SEQ - len(first.tokens)))
    assert list(feature["next_sentence_labels"].int64_list.value) == [
        first.sentence_label]
    assert list(feature["masked_lm_weights"].float_list.value)[
        :len(first.masked_lm_positions) + 1] == [1.0] * len(
            first.masked_lm_positions) + [0.0]

    static = pretraining.pretraining_dataset(
        str(tmp_path / "data-*"), 8, max_seq_length=MAX_SEQ,
        max_predictions_per_seq=20)
    dynamic = pretraining.dynamic_pretraining_dataset(
        documents, tokenizer, 8, max_seq_length=MAX_SEQ, masking=masking)
    assert static.element_spec == dynamic.element_spec
    assert sorted(static.element_spec) == sorted(pretraining.FEATURE_NAMES)
    batch = next(iter(static))
    assert batch["input_ids"].shape == (8, MAX_SEQ)
    assert batch["masked_lm_weights"].dtype == tf.float32
    assert sum(int(b["input_ids"].shape[0]) for b in static) == 8 * (
        len(instances) // 8)


# -- other families: packing layouts and sentence objectives -------------------

@pytest.fixture(scope="module")
def family_documents(shared_data_dir, zoo_checkpoints):
    """{family: (preprocessor, tokenized documents)} for RoBERTa (byte-level
    BPE) and ALBERT (SentencePiece), on the same Wikipedia articles."""
    from tfbert.text import Preprocessor

    path = shared_data_dir / "wikipedia/enwiki-wikiextractor/AA/wiki_05"
    texts = [article_sentences(p) for _, p in read_wikiextractor(path)]
    texts = [t[:40] for t in texts if len(t) >= 2][:30]
    result = {}
    for family in ("roberta", "albert"):
        preprocessor = Preprocessor.from_pretrained(zoo_checkpoints[family],
                                                    seq_length=MAX_SEQ)
        result[family] = preprocessor, pretraining.tokenize_documents(
            texts, preprocessor.tokenizer, verbose=0)
    return result


def _streams(documents):
    return [" " + " ".join(map(str, (t for s in d for t in s))) + " "
            for d in documents]


def _find(stream, tokens):
    return stream.find(" " + " ".join(map(str, tokens)) + " ")


def test_sentence_order_pairs(family_documents):
    """ALBERT's objective: A and B are consecutive text of one document,
    swapped (label 1) half of the time."""
    import random as random_module

    _, documents = family_documents["albert"]
    pairs = []
    for seed in (3, 4):
        pairs += pretraining.create_segment_pairs(
            documents, MAX_SEQ, 0.1, random_module.Random(seed),
            objective="sentence_order")
    assert _within(np.mean([p.label for p in pairs]), 0.5, len(pairs))
    streams = _streams(documents)
    for pair in pairs:
        assert pair.tokens_a and pair.tokens_b
        assert len(pair.tokens_a) + len(pair.tokens_b) <= MAX_SEQ - 3
        assert pair.b_document_index == pair.document_index
        stream = streams[pair.document_index]
        a_at, b_at = _find(stream, pair.tokens_a), _find(stream, pair.tokens_b)
        assert a_at >= 0 and b_at >= 0
        assert (a_at > b_at) == bool(pair.label)


def test_masked_lm_only_instances_are_one_segment_in_the_family_layout(
        family_documents):
    """No sentence objective (RoBERTa): one chunk of a document packed as
    `<s> text </s>`, type ids 0; no special token is ever selected or drawn
    as a random replacement."""
    from tfbert.text.packing_layout import ROBERTA_LAYOUT

    preprocessor, documents = family_documents["roberta"]
    tokenizer = preprocessor.tokenizer
    instances = pretraining.create_instances(
        documents, tokenizer, max_seq_length=MAX_SEQ, dupe_factor=2,
        masking=pretraining.MaskingConfig(max_predictions_per_seq=MAX_SEQ),
        seed=1, verbose=0, objective=None, layout=ROBERTA_LAYOUT)
    assert len(instances) > 200
    assert {i.sentence_label for i in instances} == {0}
    streams = _streams(documents)
    special = {tokenizer.bos_id, tokenizer.eos_id, tokenizer.pad_id,
               tokenizer.unk_id, tokenizer.mask_id}
    random_ids = 0
    for instance in instances:
        original = _original_tokens(instance)
        assert len(original) <= MAX_SEQ
        assert original[0] == tokenizer.bos_id
        assert original[-1] == tokenizer.eos_id
        assert not special & set(original[1:-1])
        assert instance.segment_ids == [0] * len(original)
        assert any(_find(s, original[1:-1]) >= 0 for s in streams)
        for position in instance.masked_lm_positions:
            assert original[position] not in special
            replaced = instance.tokens[position]
            if replaced not in (tokenizer.mask_id, original[position]):
                assert replaced not in special
                random_ids += 1
    assert random_ids > 100


def test_sentencepiece_whole_words_and_dynamic_sentence_order(
        family_documents):
    """Dynamic data for ALBERT: `[CLS] A [SEP] B [SEP]` with type ids 0/1,
    sentence-order labels half 1, and whole-word masks over SentencePiece
    words (a piece without "▁" continues the word before it)."""
    preprocessor, documents = family_documents["albert"]
    tokenizer = preprocessor.tokenizer
    dataset = pretraining.dynamic_pretraining_dataset(
        documents, tokenizer, 32, max_seq_length=MAX_SEQ,
        masking=pretraining.MaskingConfig(max_predictions_per_seq=MAX_SEQ,
                                          whole_word_mask=True),
        seed=5, objective="sentence_order", layout=preprocessor.layout)
    originals, positions_list, labels = [], [], []
    for batch in dataset.take(6):
        batch = {k: v.numpy() for k, v in batch.items()}
        for row in range(len(batch["input_ids"])):
            length = int(batch["input_mask"][row].sum())
            count = int(batch["masked_lm_weights"][row].sum())
            original = list(batch["input_ids"][row][:length])
            positions = list(batch["masked_lm_positions"][row][:count])
            for p, label in zip(positions, batch["masked_lm_ids"][row][:count]):
                original[p] = label
            _check_packing(original, list(batch["segment_ids"][row][:length]),
                           tokenizer.cls_id, tokenizer.sep_id)
            originals.append(original)
            positions_list.append(positions)
            labels.append(batch["next_sentence_labels"][row])
    assert _within(np.mean(labels), 0.5, len(labels))
    continuation = [not t.startswith("\u2581") for t in tokenizer.vocabulary]
    _assert_whole_words(originals, positions_list, continuation,
                        (tokenizer.cls_id, tokenizer.sep_id))


def test_static_records_name_their_sentence_objective(documents, tokenizer,
                                                      tmp_path):
    paths = [str(tmp_path / "data")]
    pretraining.write_vocabulary_records(paths, tokenizer, "sentence_order")
    pretraining.check_data_vocabulary(paths, tokenizer, "sentence_order")
    with pytest.raises(ValueError, match="data was written for the sentence "
                                         "objective sentence_order"):
        pretraining.check_data_vocabulary(paths, tokenizer, "next_sentence")
    # Records written before objectives were recorded are BERT's.
    record = tmp_path / ".data.vocab.json"
    record.write_text(json.dumps(pretraining.vocabulary_fingerprint(tokenizer)))
    pretraining.check_data_vocabulary(paths, tokenizer, "next_sentence")
    with pytest.raises(ValueError, match="sentence objective next_sentence"):
        pretraining.check_data_vocabulary(paths, tokenizer, None)

"""SQuAD reading and feature conversion: alignment, windows, labels, errors."""

import json

import numpy as np
import pytest

from tfbert.data import squad
from tfbert.text.bert_tokenizer import BertTokenizer

V1 = "squad_v1.1/dev-v1.1.partA.json"
V2 = "squad_v2.0/dev-v2.0.Computational_complexity_theory.json"


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer.from_pretrained("minilm-l6-h384-uncased")


@pytest.mark.parametrize("relative", [V1, V2])
def test_every_gold_answer_round_trips(shared_data_dir, tokenizer, relative):
    examples = squad.read_squad_examples(shared_data_dir / relative)
    contexts = squad._tokenize_contexts(tokenizer, [e.context for e in examples])
    total = exact = 0
    for example in examples:
        tokens = contexts[example.context]
        for text, start in example.answers:
            total += 1
            first, last = squad.answer_token_span(tokens, start,
                                                  start + len(text))
            recovered = example.context[tokens.start_char[first]:
                                        tokens.end_char[last]]
            if recovered == text:
                exact += 1
            else:
                # The only accepted difference: a gold answer that starts
                # or ends inside a word ("gold" for "golden") comes back
                # widened to the whole WordPiece, never narrowed or moved.
                assert text in recovered, (example.qas_id, text, recovered)
                assert len(recovered.split()) == len(text.split()), (
                    example.qas_id, text, recovered)
    rate = exact / total
    print(f"{relative}: exact recovery {exact}/{total} = {100 * rate:.2f}%")
    assert rate >= 0.995


def test_training_labels_point_at_answers_in_every_window(shared_data_dir,
                                                          tokenizer):
    examples = squad.read_squad_examples(shared_data_dir / V2)
    features = squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length=96, doc_stride=24,
        max_query_length=32, is_training=True)
    labelled = set()
    for f in range(len(features)):
        example = examples[features.example_index[f]]
        start, end = features.start_positions[f], features.end_positions[f]
        if start == 0:
            assert end == 0
            continue
        assert not example.is_impossible
        labelled.add(example.qas_id)
        text, _ = example.answers[0]
        recovered = example.context[features.token_start_char[f, start]:
                                    features.token_end_char[f, end]]
        assert text in recovered
    answerable = {e.qas_id for e in examples if not e.is_impossible}
    # Window = 96 - 3 - question tokens >= 61 tokens; every answer here is
    # shorter, so each answerable question is labelled somewhere.
    assert labelled == answerable


def _numbers_example(answer_words):
    context = " ".join(str(i) for i in range(100))
    text = " ".join(answer_words)
    return squad.SquadExample("q", "which?", context,
                              [(text, context.index(" " + text) + 1)])


def test_windows_overlap_labels_and_max_context(tokenizer):
    # 100 one-token numbers; question "which ?" is 2 tokens, so each window
    # holds 25 - 2 - 3 = 20 context tokens and starts every 8: 0, 8, ..., 80.
    features = squad.convert_examples_to_features(
        [_numbers_example(["42", "43"])], tokenizer, max_seq_length=25,
        doc_stride=8, max_query_length=10, is_training=True)
    assert len(features) == 11
    starts = list(range(0, 81, 8))
    offset = 4  # [CLS] which ? [SEP]
    for f, start in enumerate(starts):
        if start <= 42 and 43 < start + 20:   # windows 24, 32, 40
            expected = (42 - start + offset, 43 - start + offset)
        else:
            expected = (0, 0)
        assert (features.start_positions[f], features.end_positions[f]) == expected
    # Token 42 has min(left, right) context 1 in window 24, 9 in window 32
    # and 2 in window 40: window 32 (index 4) is its max-context window.
    for f, start in enumerate(starts):
        if start <= 42 < start + 20:
            assert features.token_is_max_context[f, 42 - start + offset] == (f == 4)
    # Every token is max-context in exactly one window.
    counts = np.zeros(100, int)
    for f, start in enumerate(starts):
        length = min(20, 100 - start)
        counts[start:start + length] += features.token_is_max_context[
            f, offset:offset + length]
    np.testing.assert_array_equal(counts, 1)


def test_answer_in_the_last_window(tokenizer):
    features = squad.convert_examples_to_features(
        [_numbers_example(["98", "99"])], tokenizer, max_seq_length=25,
        doc_stride=8, max_query_length=10, is_training=True)
    # Last window starts at 80 and holds tokens 80..99 (it is full).
    assert features.start_positions.tolist() == [0] * 10 + [4 + 18]
    assert features.end_positions.tolist() == [0] * 10 + [4 + 19]
    assert features.input_mask[-1].sum() == 25


def test_context_shorter_than_one_window(tokenizer):
    example = squad.SquadExample("q", "Where is Paris?",
                                 "Paris is in France.", [("France", 12)])
    features = squad.convert_examples_to_features(
        [example], tokenizer, max_seq_length=32, max_query_length=16,
        is_training=True)
    assert len(features) == 1
    ids = features.input_word_ids[0]
    # [CLS] where is paris ? [SEP] paris is in france . [SEP] + padding
    assert features.input_mask[0].tolist() == [1] * 12 + [0] * 20
    assert ids[0] == tokenizer.cls_id and ids[5] == ids[11] == tokenizer.sep_id
    assert features.input_type_ids[0].tolist() == [0] * 6 + [1] * 6 + [0] * 20
    assert (features.start_positions[0], features.end_positions[0]) == (9, 9)
    assert features.token_start_char[0, 6:11].tolist() == [0, 6, 9, 12, 18]
    assert features.token_end_char[0, 6:11].tolist() == [5, 8, 11, 18, 19]
    assert features.token_start_char[0, :6].tolist() == [-1] * 6
    assert features.token_is_max_context[0].tolist() == (
        [False] * 6 + [True] * 5 + [False] * 21)


def test_question_longer_than_max_query_length(tokenizer):
    question = " ".join(["why"] * 100)
    example = squad.SquadExample("q", question, "Because.", [("Because", 0)])
    features = squad.convert_examples_to_features(
        [example], tokenizer, max_seq_length=32, max_query_length=8,
        is_training=True)
    why = tokenizer.token_to_id("why")
    assert features.input_word_ids[0, :10].tolist() == (
        [tokenizer.cls_id] + [why] * 8 + [tokenizer.sep_id])
    assert (features.start_positions[0], features.end_positions[0]) == (10, 10)


def test_accents_cjk_and_whitespace_keep_character_offsets(tokenizer):
    context = "Le  café\tnaïve 東京, résumé!"
    example = squad.SquadExample("q", "what?", context, [])
    features = squad.convert_examples_to_features(
        [example], tokenizer, max_seq_length=64, max_query_length=16)
    spans = [(s, e) for s, e in zip(features.token_start_char[0],
                                    features.token_end_char[0]) if s >= 0]
    # Accents are stripped by the uncased model, but offsets still cut the
    # original characters; CJK ideographs are single tokens.
    assert spans == [(0, 2), (4, 8), (9, 14), (15, 16), (16, 17), (17, 18),
                     (19, 25), (25, 26)]
    assert [context[s:e] for s, e in spans] == [
        "Le", "café", "naïve", "東", "京", ",", "résumé", "!"]


def test_char_offsets_converts_utf8_byte_offsets():
    text = "aé東😀b"
    # bytes: a(1) é(2) 東(3) 😀(4) b(1)
    assert squad.char_offsets(text, [0, 1, 3, 6, 10, 11]).tolist() == [
        0, 1, 2, 3, 4, 5]


def _write(tmp_path, data, raw=None):
    path = tmp_path / "squad.json"
    path.write_text(raw if raw is not None else json.dumps(data))
    return path


def _dataset(qa):
    return {"version": "1.1", "data": [{"title": "t", "paragraphs": [
        {"context": "Paris is in France.", "qas": [qa]}]}]}


def test_reads_v2_unanswerable(shared_data_dir):
    examples = squad.read_squad_examples(shared_data_dir / V2)
    assert len(examples) == 418
    assert sum(e.is_impossible for e in examples) == 221
    assert all(not e.answers for e in examples if e.is_impossible)


def test_malformed_json_names_line(tmp_path):
    path = _write(tmp_path, None, raw='{"data": [\n  {"paragraphs": ]\n}')
    with pytest.raises(squad.SquadFormatError, match=r"squad.json:2:\d+: malformed JSON"):
        squad.read_squad_examples(path)


def test_answer_start_mismatch_names_question(tmp_path):
    path = _write(tmp_path, _dataset({"id": "q42", "question": "Where?",
                                      "answers": [{"text": "France",
                                                   "answer_start": 11}]}))
    with pytest.raises(squad.SquadFormatError,
                       match=r"question id 'q42' answers\[0\]: answer_start 11"):
        squad.read_squad_examples(path)


def test_missing_field_names_question(tmp_path):
    path = _write(tmp_path, _dataset({"id": "q7", "answers": []}))
    with pytest.raises(squad.SquadFormatError,
                       match=r"question id 'q7': missing field 'question'"):
        squad.read_squad_examples(path)
    path = _write(tmp_path, _dataset({"id": "q8", "question": "Where?",
                                      "answers": [{"text": "France"}]}))
    with pytest.raises(squad.SquadFormatError,
                       match=r"'q8' answers\[0\]: missing field 'answer_start'"):
        squad.read_squad_examples(path)


def test_doc_stride_must_advance(tokenizer):
    for stride in (0, -3):
        with pytest.raises(ValueError, match=f"doc_stride must be > 0, got {stride}"):
            squad.convert_examples_to_features(
                [_numbers_example(["42"])], tokenizer, max_seq_length=25,
                doc_stride=stride, max_query_length=10)
        with pytest.raises(ValueError, match="doc_stride must be > 0"):
            squad.doc_windows(100, 20, stride)
    with pytest.raises(ValueError, match="max_tokens=0"):
        squad.doc_windows(100, 0, 8)


@pytest.mark.parametrize("doc_stride", [1, 2, 50])
def test_smallest_windows_cover_the_context_and_progress(tokenizer, doc_stride):
    # max_seq_length 5 with a 1-token question: windows of one context token.
    example = squad.SquadExample("q", "which", " ".join(map(str, range(30))),
                                 [])
    features = squad.convert_examples_to_features(
        [example], tokenizer, max_seq_length=5, doc_stride=doc_stride,
        max_query_length=1)
    assert len(features) == 30
    assert features.token_start_char[:, 3].tolist() == [
        example.context.index(str(i)) if i else 0 for i in range(30)]
    assert squad.doc_windows(7, 3, doc_stride) == (
        {1: [(0, 3), (1, 3), (2, 3), (3, 3), (4, 3)],
         2: [(0, 3), (2, 3), (4, 3)],
         50: [(0, 3), (3, 3), (6, 1)]}[doc_stride])


def test_utf8_error_names_file_line_and_column(tmp_path):
    path = tmp_path / "squad.json"
    path.write_bytes(b'{"data": [\n  {"title": "caf\xe9"}]}')
    with pytest.raises(squad.SquadFormatError,
                       match=r"squad.json:2:17: invalid UTF-8 \(byte 27 "):
        squad.read_squad_examples(path)


def test_directory_and_empty_files_are_named(tmp_path):
    with pytest.raises(IsADirectoryError, match=f"{tmp_path}: is a directory"):
        squad.read_squad_examples(tmp_path)
    path = _write(tmp_path, {"version": "1.1", "data": []})
    with pytest.raises(squad.SquadFormatError,
                       match=r"squad.json has no examples"):
        squad.read_squad_examples(path)


def test_duplicate_question_ids_name_both_places(tmp_path):
    qa = {"id": "q1", "question": "Where?",
          "answers": [{"text": "France", "answer_start": 12}]}
    data = _dataset(qa)
    data["data"].append({"title": "u", "paragraphs": [
        {"context": "Lyon.", "qas": [{"id": "x", "question": "?",
                                      "answers": []}, qa]}]})
    path = _write(tmp_path, data)
    with pytest.raises(squad.SquadFormatError) as error:
        squad.read_squad_examples(path)
    assert str(error.value) == (
        f"{path}: article 1 paragraph 0 question 1: question id 'q1' is "
        "already used by article 0 paragraph 0 question 0; ids must be "
        "unique")


def hf_run_qa_labels(encoding, index, answer_start, answer_end):
    """HF run_qa's `prepare_train_features` labels of one feature: the
    context tokens around characters [answer_start, answer_end), or the
    first special token's position if the answer is not all inside."""
    ids, offsets = encoding["input_ids"][index], encoding["offset_mapping"][
        index]
    sequence_ids = encoding.sequence_ids(index)
    first = sequence_ids.index(1)
    last = len(ids) - 1 - sequence_ids[::-1].index(1)
    if not (offsets[first][0] <= answer_start
            and offsets[last][1] >= answer_end):
        return 0, 0
    while first < len(offsets) and offsets[first][0] <= answer_start:
        first += 1
    while offsets[last][1] >= answer_end:
        last -= 1
    return first - 1, last + 1


@pytest.mark.parametrize("family", ["roberta", "albert", "bert"])
def test_features_match_hf_run_qa(family, zoo_checkpoints, shared_data_dir):
    """Questions with a context that fits one window: the packed ids, type
    ids, context character spans and training labels equal what HF's
    tokenizer and run_qa give for the pair (question, context)."""
    from transformers import AutoTokenizer

    from tfbert.text import Preprocessor

    examples = [e for e in squad.read_squad_examples(shared_data_dir / V2)
                if len(e.context) < 500][::3]
    hf = AutoTokenizer.from_pretrained(zoo_checkpoints[family])
    encoding = hf([e.question.lstrip() for e in examples],
                  [e.context for e in examples],
                  return_offsets_mapping=True, return_token_type_ids=True)
    preprocessor = Preprocessor.from_pretrained(zoo_checkpoints[family])
    features = squad.convert_examples_to_features(
        examples, preprocessor.tokenizer, max_seq_length=512,
        max_query_length=128, is_training=True, layout=preprocessor.layout)
    assert len(features) == len(examples) > 40
    checked_answers = 0
    for index, example in enumerate(examples):
        ids = encoding["input_ids"][index]
        length = int(features.input_mask[index].sum())
        assert features.input_word_ids[index, :length].tolist() == ids
        assert features.input_type_ids[index, :length].tolist() == (
            encoding["token_type_ids"][index])
        in_context = [s == 1 for s in encoding.sequence_ids(index)]
        spans = list(zip(features.token_start_char[index, :length],
                         features.token_end_char[index, :length]))
        assert [span for span, inside in zip(spans, in_context)
                if inside] == [tuple(o) for o, inside in zip(
                    encoding["offset_mapping"][index], in_context) if inside]
        assert all(span == (-1, -1) for span, inside in zip(spans, in_context)
                   if not inside)
        label = (int(features.start_positions[index]),
                 int(features.end_positions[index]))
        if example.answers:
            text, start = example.answers[0]
            assert label == hf_run_qa_labels(encoding, index, start,
                                             start + len(text)), text
            checked_answers += 1
        else:
            assert label == (0, 0)
    assert checked_answers > 20

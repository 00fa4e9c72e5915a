"""Tests for tfbert.text.BertTokenizer against HF `tokenizers` (Rust).

The reference is the checkpoint's own `tokenizer.json` (BertNormalizer,
BertPreTokenizer, WordPiece) with special tokens, truncation and padding off.
"""

import csv
import itertools
import json
import unicodedata

import numpy as np
import pytest
import tensorflow as tf
from tokenizers import BertWordPieceTokenizer, Tokenizer, decoders

from tfbert.text import BertTokenizer, load_vocabulary

CHUNK = 4096


# -- references and data ------------------------------------------------------


@pytest.fixture(scope="module")
def ours(minilm_dir):
    return BertTokenizer.from_pretrained(minilm_dir)


@pytest.fixture(scope="module")
def hf(minilm_dir):
    tokenizer = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _hf_wordpiece(minilm_dir, lowercase, strip_accents):
    return BertWordPieceTokenizer(
        str(minilm_dir / "vocab.txt"), lowercase=lowercase,
        strip_accents=strip_accents, clean_text=True,
        handle_chinese_chars=True)


def _tsv_columns(path, columns, header, encoding="utf-8"):
    with open(path, encoding=encoding, newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [row[c] for row in rows[1 if header else 0:] for c in columns]


def _conll_sentences(path):
    sentences, words = [], []
    for line in open(path, encoding="utf-8"):
        parts = line.split()
        if not parts:
            if words:
                sentences.append(words)
            words = []
        elif parts[0] != "-DOCSTART-":
            words.append(parts[0])
    if words:
        sentences.append(words)
    return sentences


def _squad(path):
    with open(path, encoding="utf-8") as f:
        articles = json.load(f)["data"]
    contexts, questions = [], []
    for article in articles:
        for paragraph in article["paragraphs"]:
            contexts.append(paragraph["context"])
            questions += [qa["question"] for qa in paragraph["qas"]]
    return contexts, questions


def _corpora(data):
    glue = data / "glue"
    corpora = {}
    for split in ("train", "dev"):
        corpora[f"SST-2/{split}"] = _tsv_columns(
            glue / f"SST-2/{split}.tsv", [0], header=True)
        corpora[f"CoLA/{split}"] = _tsv_columns(
            glue / f"CoLA/{split}.tsv", [3], header=False)
        corpora[f"MRPC/{split}"] = _tsv_columns(
            glue / f"MRPC/{split}.tsv", [3, 4], header=True,
            encoding="utf-8-sig")
        corpora[f"STS-B/{split}"] = _tsv_columns(
            glue / f"STS-B/{split}.tsv", [7, 8], header=True)
    corpora["RTE/train"] = _tsv_columns(glue / "RTE/train.tsv", [1, 2],
                                        header=True)
    for split in ("train", "valid"):
        corpora[f"CoNLL/{split}"] = [
            " ".join(words)
            for words in _conll_sentences(data / f"conll2003/{split}.txt")]
    for name, path in (
            ("SQuAD-1.1", "squad_v1.1/dev-v1.1.partA.json"),
            ("SQuAD-2.0",
             "squad_v2.0/dev-v2.0.Computational_complexity_theory.json")):
        contexts, questions = _squad(data / path)
        corpora[f"{name}/contexts"] = contexts
        corpora[f"{name}/questions"] = questions
    return corpora


def _our_ids(tokenizer, texts):
    ids = []
    for i in range(0, len(texts), CHUNK):
        ids += tokenizer.tokenize(tf.constant(texts[i:i + CHUNK])).to_list()
    return ids


def _byte_offsets(text, char_offsets):
    """HF's character offsets -> byte offsets into text.encode()."""
    byte_at = np.concatenate(
        [[0], np.cumsum([len(c.encode()) for c in text])]).astype(int)
    return [(int(byte_at[a]), int(byte_at[b])) for a, b in char_offsets]


def _mismatches(hf_ids, our_ids, texts):
    return [(t, h, o) for t, h, o in zip(texts, hf_ids, our_ids) if h != o]


# -- parity on every sentence of the real data ----------------------------------


@pytest.mark.slow
def test_parity_on_all_real_data(ours, hf, shared_data_dir):
    total = 0
    for name, texts in _corpora(shared_data_dir).items():
        hf_ids = [e.ids for e in hf.encode_batch(texts,
                                                 add_special_tokens=False)]
        bad = _mismatches(hf_ids, _our_ids(ours, texts), texts)
        assert not bad, f"{name}: {len(bad)} mismatches, first: {bad[:3]}"
        print(f"{name}: {len(texts)} strings identical")
        total += len(texts)
    print(f"parity: {total} strings identical to HF tokenizers")
    assert total == 129_761  # every string of the files above


def test_tokenize_words_parity_on_conll(ours, hf, shared_data_dir):
    sentences = _conll_sentences(shared_data_dir / "conll2003/valid.txt")
    encodings = hf.encode_batch(sentences, is_pretokenized=True,
                                add_special_tokens=False)
    got = ours.tokenize_words(sentences)
    # Flat comparison: RaggedTensor.to_list() on 3 levels takes seconds.
    expected_ids, expected_words, expected_pieces = [], [], []
    for words, encoding in zip(sentences, encodings):
        pieces = [0] * len(words)
        for word in encoding.word_ids:
            pieces[word] += 1
        expected_ids += encoding.ids
        expected_words.append(len(words))
        expected_pieces += pieces
    assert got.flat_values.numpy().tolist() == expected_ids
    assert got.row_lengths().numpy().tolist() == expected_words
    assert got.values.row_lengths().numpy().tolist() == expected_pieces
    print(f"tokenize_words: {len(sentences)} CoNLL sentences identical")


# -- hostile text ---------------------------------------------------------------

ADVERSARIAL = [
    "", " ", "   \t\n  ", "\u3000\u00a0\u2003", "\t\r\n",
    "Héllo Wörld café naïve résumé ÀÉÎÕÜ ÇA", "e\u0301 cafe\u0301 A\u030a",
    "ÉCOLE Ñandú ØRESUND Straße İstanbul ǅemal",
    "中文字符测试 日本語のテキスト 한국어 텍스트", "混合English中文mixed",
    "emoji 😀👍🏽 family 👨‍👩‍👧 flags 🇺🇸",
    "Привет, мир! ПРИВЕТ Ёлка", "Γειά σου Κόσμε ΟΔΥΣΣΕΥΣ ΣΑΣ σας",
    "مرحبا بالعالم العربية", "שלום עולם",
    "ctrl\x00a\x01b\x0bc\x0cd\x7fe end\x00", "\x00", "a\x1fb\x85c",
    "zero\u200bwidth\u200djoiner\ufeffbom \u200b \ufeff", "bad\ufffdchar \ufffd",
    "nb\u00a0sp em\u2003sp ideo\u3000sp line\u2028para\u2029end",
    "tabs\tand\nnewlines\r\nhere", "soft\u00adhyphen", "private\ue000use",
    "a" * 100, "a" * 101, "д" * 100, "д" * 101, "ж" * 60,
    "x" * 100 + "!" + "y" * 101, "é" * 100 + " " + "e\u0301" * 101,
    "!!!...???", "--- *** ((( ))) [[[ ]]] {{{ }}}", "$5 + 3 = 8 ^ ~ ` | < >",
    "don't won't y'all", "U.S.A. e.g. i.e. Ph.D.", "1,000,000 3.14 -2 1e10",
    "¿Qué? ¡Sí! «quotes» „German“ 'single' “double” …",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ ½ ﬁ ℌ 𝐀𝐁 ß ẞ ™ ①", "≠ a≠b ≮≯ GREEK\u1fefVARIA",
    "Hangul 각 with NFD", "ﾊﾝｶｸ", "Å Ω K", "ǘ ḗ ẫ",
    "mixed \u0301 lone combining \u0301\u0301 marks",
    "#hashtag @mention http://x.y/z?q=1&r=2 foo@bar.com",
    "A" * 50 + "\u200b" + "B" * 60,
]


@pytest.mark.parametrize("lowercase,strip_accents",
                         [(True, None), (True, True), (True, False),
                          (False, None)])
def test_adversarial_parity(minilm_dir, lowercase, strip_accents):
    hf = _hf_wordpiece(minilm_dir, lowercase, strip_accents)
    ours = BertTokenizer(minilm_dir / "vocab.txt", lowercase=lowercase,
                         strip_accents=strip_accents)
    encodings = hf.encode_batch(ADVERSARIAL, add_special_tokens=False)
    ids, starts, ends = ours.tokenize_with_offsets(tf.constant(ADVERSARIAL))
    for text, encoding, got_ids, got_starts, got_ends in zip(
            ADVERSARIAL, encodings, ids.to_list(), starts.to_list(),
            ends.to_list()):
        assert got_ids == encoding.ids, (text, encoding.tokens)
        assert list(zip(got_starts, got_ends)) == _byte_offsets(
            text, encoding.offsets), text


def test_long_word_limit_counts_characters(ours):
    unk = ours.unk_id
    assert ours.tokenize("ж" * 60).numpy().tolist() != [unk]
    assert ours.tokenize("д" * 100).numpy().tolist() != [unk]
    assert ours.tokenize("д" * 101).numpy().tolist() == [unk]
    assert ours.tokenize("a" * 101).numpy().tolist() == [unk]
    short = BertTokenizer(ours.vocabulary, max_chars_per_word=5)
    assert short.tokenize(["hello", "hellos"]).to_list() == [[7592], [unk]]


def test_known_differences_from_hf(ours, hf):
    """Documented, deliberate or unavoidable differences: our behaviour."""
    # User text cannot forge special tokens (HF maps "[CLS]" to id 101).
    text = "[CLS] hi [SEP]"
    got = [ours.id_to_token(i) for i in ours.tokenize(text).numpy()]
    assert got == ["[", "cl", "##s", "]", "hi", "[", "sep", "]"]
    assert hf.encode(text, add_special_tokens=False).ids[0] == ours.cls_id
    # Punctuation newer than HF's Unicode tables is punctuation for us.
    got = [ours.id_to_token(i) for i in ours.tokenize("a\u2e43b").numpy()]
    assert unicodedata.category("\u2e43") == "Po"
    assert got == ["a", "[UNK]", "b"]


# -- offsets --------------------------------------------------------------------


def test_offsets_on_squad_contexts(ours, hf, shared_data_dir):
    contexts, _ = _squad(shared_data_dir / "squad_v1.1/dev-v1.1.partA.json")
    ids, starts, ends = ours.tokenize_with_offsets(tf.constant(contexts))
    encodings = hf.encode_batch(contexts, add_special_tokens=False)
    normalize = hf.normalizer.normalize_str
    n_tokens = 0
    for text, encoding, row_ids, row_starts, row_ends in zip(
            contexts, encodings, ids.to_list(), starts.to_list(),
            ends.to_list()):
        data = text.encode()
        assert row_ids == encoding.ids
        previous_end = 0
        for token_id, start, end in zip(row_ids, row_starts, row_ends):
            assert previous_end <= start < end <= len(data)
            previous_end = end
            # HF's normaliser pads CJK characters with spaces.
            piece = normalize(data[start:end].decode()).strip()
            token = ours.id_to_token(token_id)
            if token != "[UNK]":
                assert piece == token.removeprefix("##"), (text, start, end)
        assert list(zip(row_starts, row_ends)) == _byte_offsets(
            text, encoding.offsets)
        n_tokens += len(row_ids)
    print(f"offsets: {n_tokens} tokens of {len(contexts)} SQuAD contexts")


def test_offsets_trace_through_normalisation(ours):
    text = "Ünï\u200bcode CAFÉ"
    ids, starts, ends = ours.tokenize_with_offsets(text)
    data = text.encode()
    spans = [data[s:e].decode() for s, e in zip(starts.numpy(), ends.numpy())]
    tokens = [ours.id_to_token(i) for i in ids.numpy()]
    assert "".join(t.removeprefix("##") for t in tokens) == "unicodecafe"
    assert "".join(spans) == "Ünï\u200bcodeCAFÉ"
    assert starts.dtype == tf.int64 and ends.dtype == tf.int64


# -- API, graph modes, saving ---------------------------------------------------


def test_input_forms(ours):
    texts = ["Hello world", "café"]
    expected = [[7592, 2088], [7668]]
    assert ours.tokenize(texts).to_list() == expected
    assert ours.tokenize(np.array(texts)).to_list() == expected
    ids = ours.tokenize(tf.constant(texts))
    assert isinstance(ids, tf.RaggedTensor) and ids.dtype == tf.int32
    scalar = ours.tokenize("Hello world")
    assert scalar.shape.rank == 1 and scalar.numpy().tolist() == expected[0]
    with pytest.raises(ValueError, match="batch"):
        ours.tokenize([["a"]])


def test_special_ids_and_lookup(ours):
    assert (ours.pad_id, ours.unk_id, ours.cls_id, ours.sep_id,
            ours.mask_id) == (0, 100, 101, 102, 103)
    assert ours.vocab_size == 30522 == len(ours.vocabulary)
    assert ours.token_to_id("hello") == 7592
    assert ours.id_to_token(7592) == "hello"
    with pytest.raises(KeyError, match="Hello"):
        ours.token_to_id("Hello")
    with pytest.raises(IndexError):
        ours.id_to_token(30522)


def test_detokenize(ours, shared_data_dir):
    texts = _tsv_columns(shared_data_dir / "glue/SST-2/dev.tsv", [0],
                         header=True)[:200] + ["Un-believable, isn't it?"]
    ids = ours.tokenize(texts)
    got = [s.decode() for s in ours.detokenize(ids).numpy()]
    decoder = decoders.WordPiece(prefix="##", cleanup=False)
    expected = [decoder.decode([ours.id_to_token(i) for i in row])
                for row in ids.to_list()]
    assert got == expected
    assert got[-1] == "un - believable , isn ' t it ?"
    dense = tf.constant([[101, 7592, 2088, 102, 0, 0],
                         [101, 100, 103, 102, 0, 0]])
    assert ours.detokenize(dense).numpy().tolist() == [b"hello world", b"[UNK]"]
    assert ours.detokenize(tf.constant([7592, 2088])).numpy() == b"hello world"


def test_tf_function_and_dataset_map(ours):
    texts = ["Hello, world!", "", "Ünïcode 中文 text", "a" * 101] * 5
    expected = ours.tokenize(texts).to_list()

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(x):
        return ours.tokenize(x)

    assert tokenize(tf.constant(texts)).to_list() == expected
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(6).map(
        ours.tokenize)
    got = list(itertools.chain.from_iterable(
        batch.to_list() for batch in dataset))
    assert got == expected
    ends = tf.data.Dataset.from_tensor_slices(texts).batch(6).map(
        lambda x: ours.tokenize_with_offsets(x)[2])
    got = list(itertools.chain.from_iterable(b.to_list() for b in ends))
    assert got == ours.tokenize_with_offsets(texts)[2].to_list()


@pytest.mark.slow
def test_saved_model_in_plain_tensorflow_process(ours, tmp_path,
                                                  run_fresh_python):
    module = tf.Module()
    module.tokenizer = ours
    module.tokenize = tf.function(
        lambda x: ours.tokenize_with_offsets(x),
        input_signature=[tf.TensorSpec([None], tf.string)])
    module.tokenize_words = tf.function(
        lambda w: ours.tokenize_words(w),
        input_signature=[tf.RaggedTensorSpec([None, None], tf.string)])
    tf.saved_model.save(module, str(tmp_path / "tok"))
    texts = ["Héllo, wörld!", "ctrl\x00a\u200bb", "中文 " + "д" * 101]
    words = [["EU", "rejects"], ["German-made", "é"]]
    code = (
        "import json, sys\n"
        "import tensorflow as tf, tensorflow_text\n"
        f"m = tf.saved_model.load({str(tmp_path / 'tok')!r})\n"
        "texts, words = json.loads(sys.stdin.read())\n"
        "ids, s, e = m.tokenize(tf.constant(texts))\n"
        "w = m.tokenize_words(tf.ragged.constant(words, dtype=tf.string))\n"
        "assert not any(k.startswith('tfbert') for k in sys.modules)\n"
        "print(json.dumps([ids.to_list(), s.to_list(), e.to_list(),"
        " w.to_list()]))\n")
    loaded = run_fresh_python(code, stdin=json.dumps([texts, words]),
                              timeout=120)
    ids, starts, ends = ours.tokenize_with_offsets(texts)
    assert loaded == [ids.to_list(), starts.to_list(), ends.to_list(),
                      ours.tokenize_words(words).to_list()]


# -- from_pretrained / save_pretrained ------------------------------------------


def test_from_pretrained_preset_and_directory(minilm_dir):
    by_preset = BertTokenizer.from_pretrained("minilm-l6-h384-uncased")
    by_dir = BertTokenizer.from_pretrained(minilm_dir)
    assert by_preset.vocabulary == by_dir.vocabulary
    assert by_preset.lowercase and by_preset.strip_accents
    assert BertTokenizer.from_pretrained("bert-tiny-uncased").lowercase
    with pytest.raises(ValueError, match="bert-base-cased.*no vocabulary"):
        BertTokenizer.from_pretrained("bert-base-cased")


def test_from_pretrained_infers_case_and_reads_layouts(minilm_dir, tmp_path):
    tokens = load_vocabulary(minilm_dir / "vocab.txt")
    uncased = tmp_path / "uncased"
    uncased.mkdir()
    (uncased / "vocab.txt").write_text("\n".join(tokens) + "\n")
    assert BertTokenizer.from_pretrained(uncased).lowercase

    cased = tmp_path / "cased"
    cased.mkdir()
    (cased / "vocab.txt").write_text("\n".join(tokens + ["Hello"]) + "\n")
    tokenizer = BertTokenizer.from_pretrained(cased)
    assert not tokenizer.lowercase and not tokenizer.strip_accents
    assert tokenizer.tokenize("Hello").numpy().tolist() == [len(tokens)]

    keras_hub = tmp_path / "keras_hub"
    (keras_hub / "assets/tokenizer").mkdir(parents=True)
    (keras_hub / "assets/tokenizer/vocabulary.txt").write_text(
        "\n".join(tokens) + "\n")
    (keras_hub / "tokenizer.json").write_text(json.dumps(
        {"class_name": "BertTokenizer", "config": {"lowercase": False}}))
    assert not BertTokenizer.from_pretrained(keras_hub).lowercase

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match=f"no vocabulary in {empty}"):
        BertTokenizer.from_pretrained(empty)
    with pytest.raises(FileNotFoundError, match="neither a preset"):
        BertTokenizer.from_pretrained(str(tmp_path / "missing"))


def test_save_pretrained_round_trip(ours, tmp_path):
    tokenizer = BertTokenizer(ours.vocabulary, lowercase=True,
                              strip_accents=False,
                              tokenize_chinese_chars=False)
    tokenizer.save_pretrained(tmp_path / "saved")
    config = json.loads((tmp_path / "saved/tokenizer_config.json").read_text())
    assert config["do_lower_case"] is True
    assert config["strip_accents"] is False
    assert config["tokenize_chinese_chars"] is False
    loaded = BertTokenizer.from_pretrained(tmp_path / "saved")
    assert loaded.vocabulary == ours.vocabulary
    assert (loaded.lowercase, loaded.strip_accents,
            loaded.tokenize_chinese_chars) == (True, False, False)
    text = ["Héllo 中文"]
    assert loaded.tokenize(text).to_list() == tokenizer.tokenize(text).to_list()


def test_empty_batch(ours):
    empty = tf.constant([], tf.string)
    assert ours.tokenize(empty).shape.as_list() == [0, None]
    ids, starts, ends = ours.tokenize_with_offsets(empty)
    assert ids.to_list() == starts.to_list() == ends.to_list() == []
    assert ours.detokenize(ours.tokenize(empty)).shape == (0,)

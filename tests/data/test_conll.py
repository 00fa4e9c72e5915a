"""CoNLL reader: real files, tag schemes, and errors naming file:line."""

import pytest

from tfbert.data.conll import (check_tags, labels_from_sentences,
                               parse_labels, read_conll, read_tagged)
from tfbert.data.tag_schemes import to_iob2


def test_reads_real_conll2003(shared_data_dir):
    train = read_conll(shared_data_dir / "conll2003" / "train.txt")
    valid = read_conll(shared_data_dir / "conll2003" / "valid.txt")
    # Counts published in shared/data/README.md.
    assert len(train) == 14041 and len(valid) == 3250
    assert sum(len(s.words) for s in train) == 203621
    assert sum(len(s.words) for s in valid) == 51362
    assert sum(t.startswith("B-LOC") for s in train for t in s.tags) == 7140
    labels = labels_from_sentences(train)
    assert labels == ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG",
                      "I-ORG", "B-PER", "I-PER"]
    check_tags(valid, labels)
    assert train[0].words[:2] == ["EU", "rejects"]
    assert train[0].line_numbers[0] == 3


def test_schemes_normalise_to_iob2():
    iob1 = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"]
    iobes = ["B-PER", "E-PER", "S-PER", "O", "S-LOC", "S-ORG"]
    expected = ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG"]
    assert to_iob2(iob1) == expected
    assert to_iob2(iobes) == expected
    assert to_iob2(expected) == expected


def test_iob1_file(tmp_path):
    path = tmp_path / "iob1.txt"
    path.write_text("-DOCSTART- -X- O\n\nJohn NNP I-PER\nSmith NNP I-PER\n"
                    "Mary NNP B-PER\nin IN O\n\nParis NNP I-LOC\n")
    sentences = read_conll(path, scheme="iob1")
    assert [s.tags for s in sentences] == [["B-PER", "I-PER", "B-PER", "O"],
                                           ["B-LOC"]]
    with pytest.raises(ValueError, match=r"iob1\.txt:3: tag 'I-PER' I-PER "
                       "must continue B-PER or I-PER in IOB2"):
        read_conll(path)


def test_errors_name_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("John NNP B-PER\nSmith I-PER\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2: expected 3 columns"):
        read_conll(path)
    path.write_text("John NNP B-PER\n\nSmith NNP PERSON\n")
    with pytest.raises(ValueError, match=r"bad\.txt:3: tag 'PERSON'"):
        read_conll(path)
    path.write_text("John NNP B-PER\n\nParis NNP B-GPE\n")
    with pytest.raises(ValueError, match=r"bad\.txt:3: tag 'B-GPE'"):
        check_tags(read_conll(path), ["O", "B-PER", "I-PER"])
    path.write_text("John\n")
    with pytest.raises(ValueError, match=r"bad\.txt:1: expected a token"):
        read_conll(path)
    assert read_conll(path, require_tags=False)[0].tags is None


@pytest.mark.parametrize("content,message", [
    (b"", "has no examples"),
    (b"-DOCSTART- -X- -X- O\n\n", "has no examples"),
    (b"EU NNP B-ORG\nr\xe9jects VBZ O\n", ":2: invalid UTF-8 at byte 1"),
])
def test_empty_and_undecodable_files(tmp_path, content, message):
    path = tmp_path / "valid.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError) as error:
        read_conll(path)
    assert str(error.value).startswith(str(path))
    assert message in str(error.value)


def test_directory_instead_of_file_is_named(tmp_path):
    with pytest.raises(IsADirectoryError, match=f"{tmp_path}: is a directory"):
        read_conll(tmp_path)


def test_labels_file_with_invalid_utf8_names_line(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_bytes(b"O\nB-PER\nB-L\xd6C\n")
    with pytest.raises(ValueError, match=r"labels.txt:3: invalid UTF-8 at byte 3"):
        parse_labels(str(path))


def test_parse_labels(tmp_path):
    assert parse_labels("O,B-PER,I-LOC") == ["O", "B-LOC", "I-LOC", "B-PER",
                                             "I-PER"]
    path = tmp_path / "labels.txt"
    path.write_text("O\nB-X\nI-X\n")
    assert parse_labels(str(path)) == ["O", "B-X", "I-X"]
    with pytest.raises(ValueError, match="must include O"):
        parse_labels("B-PER")


def test_pos_and_chunk_columns_of_conll2003(shared_data_dir):
    path = shared_data_dir / "conll2003" / "valid.txt"
    columns = [line.split() for line in path.read_text(encoding="utf-8")
               .splitlines() if line.split() and line.split()[0] != "-DOCSTART-"]
    pos = read_conll(path, tag_column=1, scheme="plain")
    assert [t for s in pos for t in s.tags] == [c[1] for c in columns]
    chunk = read_conll(path, tag_column=2, scheme="iob2")
    assert [t for s in chunk for t in s.tags] == [c[2] for c in columns]
    assert labels_from_sentences(pos, "plain") == sorted({c[1] for c in columns})
    assert "B-NP" in labels_from_sentences(chunk)
    with pytest.raises(ValueError, match=r"valid\.txt:3: no tag column 4"):
        read_conll(path, tag_column=4)
    # POS tags are not entity tags.
    with pytest.raises(ValueError, match=r"valid\.txt:3: tag 'NNP' is not O"):
        read_conll(path, tag_column=1)


@pytest.mark.parametrize("tags, line, reason", [
    (["B-PER", "E-PER", "E-PER"], 3, "E-PER must follow B-PER or I-PER"),
    (["B-PER", "O", "E-PER"], 2, "'O' follows an unfinished B-PER"),
    (["S-PER", "I-PER", "O"], 2, "I-PER must follow B-PER or I-PER"),
    (["O", "B-PER", "I-PER"], 3, "ends inside an entity"),
    (["O", "X-PER", "O"], 2, "is not O or B-/I-/E-/S-"),
])
def test_bioes_violations_name_the_line(tmp_path, tags, line, reason):
    path = tmp_path / "bioes.txt"
    path.write_text("".join(f"w{i} {t}\n" for i, t in enumerate(tags)))
    with pytest.raises(ValueError, match=f"bioes.txt:{line}: .*{reason}"):
        read_conll(path, scheme="bioes")


def test_bioes_tags_are_kept_and_labelled():
    tags = ["S-PER", "O", "B-LOC", "I-LOC", "E-LOC"]
    assert labels_from_sentences(
        [type("S", (), {"tags": tags})], "bioes") == [
            "O", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "B-PER", "I-PER",
            "E-PER", "S-PER"]
    assert parse_labels("O,S-PER", "bioes") == [
        "O", "B-PER", "I-PER", "E-PER", "S-PER"]
    assert parse_labels("VB,NN", "plain") == ["NN", "VB"]


def test_jsonl_sentences(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text('{"tokens": ["John", "lives"], "tags": ["NNP", "VBZ"]}\n'
                    '\n{"tokens": ["Paris"], "tags": ["NNP"]}\n')
    sentences = read_tagged(path, scheme="plain")
    assert [(s.words, s.tags, s.line_numbers) for s in sentences] == [
        (["John", "lives"], ["NNP", "VBZ"], [1, 1]),
        (["Paris"], ["NNP"], [3])]
    path.write_text('{"tokens": ["John"]}\n')
    assert read_tagged(path, require_tags=False)[0].tags is None
    with pytest.raises(ValueError, match=r"data\.jsonl:1: no column 'tags'"):
        read_tagged(path)
    path.write_text('{"tokens": ["a"], "tags": ["O"]}\n'
                    '{"tokens": ["John", "Smith"], "tags": ["B-PER"]}\n')
    with pytest.raises(ValueError, match=r"data\.jsonl:2: 2 tokens but 1 tags"):
        read_tagged(path)
    path.write_text('{"tokens": "John", "tags": ["O"]}\n')
    with pytest.raises(ValueError, match=r":1: 'tokens' must be a non-empty"):
        read_tagged(path)
    path.write_text('{"tokens": ["John"], "tags": ["I-PER"]}\n')
    with pytest.raises(ValueError, match=r"data\.jsonl:1: tag 'I-PER'"):
        read_tagged(path)

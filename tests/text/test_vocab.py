"""Tests for tfbert.text.vocab: reading, writing and rejecting vocab files."""

import pytest

from tfbert.text import load_vocabulary, save_vocabulary

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _write(path, data):
    path.write_bytes(data)
    return path


def test_real_vocabulary(minilm_dir):
    tokens = load_vocabulary(minilm_dir / "vocab.txt")
    assert len(tokens) == 30522
    assert tokens[:1] == ["[PAD]"]
    assert tokens.index("[UNK]") == 100
    assert tokens.index("[CLS]") == 101
    assert tokens.index("[SEP]") == 102
    assert tokens.index("[MASK]") == 103
    assert tokens[7592] == "hello"


def test_round_trip(tmp_path):
    tokens = SPECIALS + ["hello", "##lo", " spaced ", "ünï", "中"]
    save_vocabulary(tokens, tmp_path / "vocab.txt")
    assert load_vocabulary(tmp_path / "vocab.txt") == tokens
    assert (tmp_path / "vocab.txt").read_bytes().endswith(b"\xe4\xb8\xad\n")


def test_crlf_and_missing_final_newline(tmp_path):
    path = _write(tmp_path / "v.txt", "\r\n".join(SPECIALS + ["a"]).encode())
    assert load_vocabulary(path) == SPECIALS + ["a"]


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        load_vocabulary(tmp_path / "nope.txt")


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = _write(tmp_path / "v.txt",
                  "\n".join(SPECIALS).encode() + b"\nok\nbad\xff\n")
    with pytest.raises(ValueError, match=r"v\.txt:7: invalid UTF-8"):
        load_vocabulary(path)


def test_duplicate_names_file_and_both_lines(tmp_path):
    path = _write(tmp_path / "v.txt",
                  "\n".join(SPECIALS + ["a", "b", "a"]).encode() + b"\n")
    message = r"v\.txt:8: duplicate token 'a' \(first on line 6\)"
    with pytest.raises(ValueError, match=message):
        load_vocabulary(path)


def test_empty_line(tmp_path):
    path = _write(tmp_path / "v.txt",
                  "\n".join(SPECIALS[:2] + [""] + SPECIALS[2:]).encode())
    with pytest.raises(ValueError, match=r"v\.txt:3: empty line"):
        load_vocabulary(path)


def test_missing_special_tokens(tmp_path):
    path = _write(tmp_path / "v.txt", b"[PAD]\n[UNK]\n[CLS]\nhello\n")
    with pytest.raises(ValueError, match=r"v\.txt: missing special token\(s\) "
                                         r"\[SEP\], \[MASK\]"):
        load_vocabulary(path)


@pytest.mark.parametrize("bad", ["", "a\nb", "x\r"])
def test_save_rejects_unwritable_tokens(tmp_path, bad):
    with pytest.raises(ValueError, match="cannot be written"):
        save_vocabulary(SPECIALS + [bad], tmp_path / "v.txt")


def test_save_rejects_duplicates(tmp_path):
    with pytest.raises(ValueError, match="duplicate"):
        save_vocabulary(SPECIALS + ["a", "a"], tmp_path / "v.txt")

"""WikiExtractor → BERT corpus conversion."""

import pytest

from tfbert.data import pretraining
from tfbert.data.wikipedia import (
    convert_wikiextractor, is_heading, read_wikiextractor, split_sentences)


@pytest.mark.parametrize("paragraph, expected", [
    ("It rained. Then it stopped! Did it? Yes.",
     ["It rained.", "Then it stopped!", "Did it?", "Yes."]),
    ("Dr. Smith met J. R. R. Tolkien in the U.S. in 1950. He left.",
     ["Dr. Smith met J. R. R. Tolkien in the U.S. in 1950.", "He left."]),
    ('He said "Stop." The car stopped.', ['He said "Stop."', "The car stopped."]),
    ("Pi is about 3.14 in value. 42 is a number.",
     ["Pi is about 3.14 in value.", "42 is a number."]),
    ("Many birds, e.g. Crows, fly. (It rained.) No end",
     ["Many birds, e.g. Crows, fly.", "(It rained.)", "No end"]),
    ("lower case after a period. does not split", 
     ["lower case after a period. does not split"]),
    ("", []),
])
def test_split_sentences(paragraph, expected):
    assert split_sentences(paragraph) == expected


def test_headings():
    assert is_heading("History.")
    assert is_heading("Russian Revolution and other uprisings of the 1910s.")
    assert not is_heading("Anarchism holds the state to be undesirable. It is.")
    assert not is_heading("A paragraph without a final period")


def test_errors_name_file_and_line(tmp_path):
    path = tmp_path / "wiki_00"
    path.write_text('<doc id="1" url="u" title="T">\nT\ntext\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"wiki_00:1: <doc> is never closed"):
        list(read_wikiextractor(path))
    path.write_text("stray text\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"wiki_00:1: text outside"):
        list(read_wikiextractor(path))


def test_real_wikipedia_files(shared_data_dir, tmp_path):
    pattern = str(shared_data_dir / "wikipedia" / "enwiki-wikiextractor" / "AA"
                  / "wiki_0*")
    files = sorted((shared_data_dir / "wikipedia" / "enwiki-wikiextractor"
                    / "AA").glob("wiki_0*"))
    articles = [a for path in files for a in read_wikiextractor(path)]
    assert len(articles) == 436  # The count the data README gives.
    assert articles[0][0] == "Anarchism"

    output = tmp_path / "corpus.txt"
    num_documents, num_sentences = convert_wikiextractor(pattern, output)
    documents = pretraining.read_corpus(str(output))
    assert len(documents) == num_documents
    assert sum(map(len, documents)) == num_sentences
    assert 350 < num_documents <= 436
    text = output.read_text(encoding="utf-8")
    assert "<doc" not in text and "</doc>" not in text and "{{" not in text
    first = documents[0]
    assert first[0].startswith("Anarchism is a political philosophy")
    assert first[1] == ("Anarchism holds the state to be undesirable, "
                        "unnecessary, or harmful.")
    # Headings ("History.") are gone; sentences are whole.
    assert "History." not in first
    lengths = [len(s.split()) for d in documents for s in d]
    assert sum(lengths) / len(lengths) > 12

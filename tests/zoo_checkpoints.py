"""Session fixtures: one small HF checkpoint per model family.

No pretrained weights or tokenizers can be downloaded here, so each family's
tokenizer is trained on the real Wikipedia text in ../shared/data the way the
family's released tokenizer was built, saved with the family's HF tokenizer
class, and written next to a tiny random-weight HF model of that family:

  * bert / distilbert / electra: the real uncased WordPiece vocabulary of
    all-MiniLM-L6-v2 (bert-base-uncased's).
  * roberta: `tokenizers`' byte-level BPE (vocab.json + merges.txt, specials
    <s> <pad> </s> <unk> <mask> first, as in roberta-base).
  * albert: a `sentencepiece` unigram model (spiece.model; <pad> <unk> [CLS]
    [SEP] [MASK] as ids 0-4, as in albert-base-v2).

Every directory has `config.json` (with `model_type`), the model weights and
the tokenizer files, i.e. what `save_pretrained` of a real checkpoint gives.
"""

import fcntl
import itertools
import os
import re
import shutil
from pathlib import Path

import pytest

FAMILIES = ("bert", "distilbert", "electra", "roberta", "albert")
# Small enough to train in a few seconds, big enough that real text is split
# into many multi-piece words (so merges and Viterbi paths are exercised).
WIKIPEDIA_FILES = ("wiki_00", "wiki_01")
BPE_VOCAB_SIZE = 4000
SENTENCEPIECE_VOCAB_SIZE = 4000
TINY_MODEL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=130)
TINY_DISTILBERT = dict(dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                       max_position_embeddings=130)


def wikipedia_lines(data_dir):
    """Non-empty text lines of the Wikipedia sample (doc tags dropped)."""
    folder = Path(data_dir) / "wikipedia" / "enwiki-wikiextractor" / "AA"
    for name in WIKIPEDIA_FILES:
        for line in (folder / name).read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not re.match(r"</?doc[ >]", line):
                yield line


def _save_model(model_class, config, directory):
    import torch

    torch.manual_seed(0)
    model_class(config).eval().save_pretrained(directory)


def save_wordpiece_checkpoint(model_type, vocab_file, directory):
    """A bert/distilbert/electra checkpoint with the given WordPiece vocab."""
    import transformers as hf

    tokenizer_class, model_class, config_class, sizes = {
        "bert": (hf.BertTokenizerFast, hf.BertModel, hf.BertConfig,
                 TINY_MODEL),
        "distilbert": (hf.DistilBertTokenizerFast, hf.DistilBertModel,
                       hf.DistilBertConfig, TINY_DISTILBERT),
        "electra": (hf.ElectraTokenizerFast, hf.ElectraForPreTraining,
                    hf.ElectraConfig, dict(TINY_MODEL, embedding_size=16)),
    }[model_type]
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(vocab_file, directory / "vocab.txt")
    tokenizer = tokenizer_class.from_pretrained(directory, do_lower_case=True)
    tokenizer.save_pretrained(directory)
    _save_model(model_class, config_class(vocab_size=len(tokenizer), **sizes),
                directory)
    return directory


def save_roberta_checkpoint(data_dir, directory):
    """Trains byte-level BPE on Wikipedia; saves RobertaTokenizerFast and a
    tiny RobertaModel."""
    import tokenizers
    import transformers

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        wikipedia_lines(data_dir), vocab_size=BPE_VOCAB_SIZE, min_frequency=2,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        show_progress=False)
    bpe.save_model(str(directory))
    tokenizer = transformers.RobertaTokenizerFast.from_pretrained(directory)
    tokenizer.save_pretrained(directory)
    _save_model(transformers.RobertaModel, transformers.RobertaConfig(
        vocab_size=len(tokenizer), pad_token_id=1, bos_token_id=0,
        eos_token_id=2, type_vocab_size=1, **TINY_MODEL), directory)
    return directory


def save_albert_checkpoint(data_dir, directory):
    """Trains a SentencePiece unigram model on Wikipedia; saves
    AlbertTokenizer and a tiny AlbertModel."""
    import sentencepiece
    import transformers

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=itertools.islice(wikipedia_lines(data_dir), 20000),
        model_prefix=str(directory / "spiece"), model_type="unigram",
        vocab_size=SENTENCEPIECE_VOCAB_SIZE, character_coverage=0.99995,
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        normalization_rule_name="nmt_nfkc", minloglevel=2)
    (directory / "spiece.vocab").unlink()
    tokenizer = transformers.AlbertTokenizer.from_pretrained(
        directory, do_lower_case=True, keep_accents=False)
    tokenizer.save_pretrained(directory)
    _save_model(transformers.AlbertModel, transformers.AlbertConfig(
        vocab_size=len(tokenizer), embedding_size=16, hidden_act="gelu_new",
        **TINY_MODEL), directory)
    return directory


def save_zoo(root, shared_data_dir, minilm_dir):
    """Writes every family's checkpoint under `root`, in `zoo_dirs(root)`."""
    vocab = minilm_dir / "vocab.txt"
    for family in ("bert", "distilbert", "electra"):
        save_wordpiece_checkpoint(family, vocab, root / family)
    save_roberta_checkpoint(shared_data_dir, root / "roberta")
    save_albert_checkpoint(shared_data_dir, root / "albert")


def zoo_dirs(root):
    """{model_type: checkpoint directory} of a zoo written under `root`."""
    return {family: root / family for family in FAMILIES}


@pytest.fixture(scope="session")
def zoo_checkpoints(tmp_path_factory, shared_data_dir, minilm_dir):
    """{model_type: directory of a tiny HF checkpoint} for bert, distilbert,
    electra, roberta and albert, tokenizers trained or real as above,
    written once for every worker of the run (`built_once`; the checkpoints
    are only read)."""
    root = built_once(tmp_path_factory, "zoo", lambda root: save_zoo(
        root, shared_data_dir, minilm_dir))
    return zoo_dirs(root)


def built_once(tmp_path_factory, name, build):
    """The directory `name` that `build(directory)` fills, built by the
    first process of the run to ask and read by the others: under
    $TFBERT_TEST_BUILD_DIR where set (`make test` sets it for all its
    shares), else in the pytest run's common temporary directory (shared by
    its xdist workers)."""
    common = os.environ.get("TFBERT_TEST_BUILD_DIR")
    if common:
        common = Path(common)
    elif "PYTEST_XDIST_WORKER" in os.environ:
        common = tmp_path_factory.getbasetemp().parent
    else:
        common = tmp_path_factory.getbasetemp()
    directory = common / name
    with open(common / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (common / f"{name}.done").exists():
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
            build(directory)
            (common / f"{name}.done").touch()
    return directory


GLUE_FILES = (("SST-2", "train"), ("SST-2", "dev"), ("CoLA", "train"),
              ("CoLA", "dev"), ("MRPC", "train"), ("MRPC", "dev"),
              ("STS-B", "train"), ("STS-B", "dev"), ("RTE", "train"))
CONLL_FILES = ("train", "valid")
SQUAD_FILES = ("squad_v1.1/dev-v1.1.partA.json",
               "squad_v2.0/dev-v2.0.Computational_complexity_theory.json")


def glue_pairs(data_dir, task, split="train"):
    """(text_a, text_b) of a GLUE pair task, as its reader returns them."""
    from tfbert.data.glue import read_examples

    path = Path(data_dir) / "glue" / task / f"{split}.tsv"
    return [(e.text_a, e.text_b) for e in read_examples(path, task)]


def real_texts(data_dir):
    """{source name: list of str}: every text of the GLUE, CoNLL and SQuAD
    files in ../shared/data: GLUE sentences (both segments of pairs), CoNLL
    sentences (words joined by spaces), SQuAD questions and contexts."""
    import json

    from tfbert.data.conll import read_conll
    from tfbert.data.glue import read_examples

    data_dir = Path(data_dir)
    texts = {}
    for task, split in GLUE_FILES:
        examples = read_examples(data_dir / "glue" / task / f"{split}.tsv",
                                 task)
        texts[f"{task}/{split}"] = [t for e in examples
                                    for t in (e.text_a, e.text_b) if t]
    for split in CONLL_FILES:
        sentences = read_conll(data_dir / "conll2003" / f"{split}.txt")
        texts[f"conll2003/{split}"] = [" ".join(s.words) for s in sentences]
    for name in SQUAD_FILES:
        with open(data_dir / name, encoding="utf-8") as f:
            articles = json.load(f)["data"]
        paragraphs = [p for a in articles for p in a["paragraphs"]]
        texts[f"{name}:contexts"] = [p["context"] for p in paragraphs]
        texts[f"{name}:questions"] = [q["question"] for p in paragraphs
                                      for q in p["qas"]]
    return texts


def sample_texts(texts, per_source):
    """Every k-th text of each source, about `per_source` of each."""
    return {name: values[::max(1, len(values) // per_source)]
            for name, values in texts.items()}


def pieces_per_word(encoding, index, num_words):
    """HF's ids of example `index`, grouped by the word they came from."""
    ids, word_ids = encoding["input_ids"][index], encoding.word_ids(index)
    return [[i for i, w in zip(ids, word_ids) if w == word]
            for word in range(num_words)]

"""`Tokenizer`: what every tfbert tokenizer has besides its own tokenization.

`BertTokenizer`, `ByteBpeTokenizer` and `SentencePieceTokenizer` differ in
how text becomes ids; they share the vocabulary (token <-> id), the ids of
the special tokens, the shape checks on their inputs and the reading of an
HF `tokenizer_config.json`, which live here once.
"""

import json
import types
from pathlib import Path

import tensorflow as tf

from tfbert.utils.json_file import read_json


class Tokenizer(tf.Module):
    """Base class: a vocabulary and its special tokens.

    Args:
      ids: dict token (str) -> id (int). Ids may skip numbers (a byte-level
        BPE vocabulary can); `vocab_size` is one past the largest id.
      special_tokens: dict role (str: "pad", "unk", "cls", "sep", "mask",
        ...) -> token (str); the subclass checks that each is in `ids`.
      name: the `tf.Module` name.
    """

    def __init__(self, ids, special_tokens, name=None):
        super().__init__(name=name)
        # One opaque attribute: `tf.Module` wraps a dict in a tracking
        # wrapper and walks any dict, list or tuple attribute entry by entry
        # on every traversal (variables, checkpoints, exports): 2 x 30k
        # entries for BERT's vocabulary, which made construction and
        # `trainable_variables` much slower.
        self._lookup = types.SimpleNamespace(
            ids=dict(ids), tokens={i: t for t, i in ids.items()})
        self._vocab_size = max(ids.values()) + 1
        self.special_tokens = dict(special_tokens)

    @property
    def _ids(self):
        return self._lookup.ids

    @property
    def _tokens(self):
        return self._lookup.tokens

    # -- vocabulary -------------------------------------------------------

    @property
    def vocab_size(self):
        return self._vocab_size

    @property
    def vocabulary(self):
        """The tokens by id ("" for an id the vocabulary skips), as exports
        list them in assets/vocab.txt (a new list)."""
        return [self._tokens.get(i, "") for i in range(self._vocab_size)]

    @property
    def pad_id(self):
        return self._ids[self.special_tokens["pad"]]

    @property
    def unk_id(self):
        return self._ids[self.special_tokens["unk"]]

    @property
    def cls_id(self):
        return self._ids[self.special_tokens["cls"]]

    @property
    def sep_id(self):
        return self._ids[self.special_tokens["sep"]]

    @property
    def mask_id(self):
        return self._ids[self.special_tokens["mask"]]

    @property
    def special_ids(self):
        """The ids of every special token, a set of int."""
        return {self._ids[token] for token in self.special_tokens.values()}

    def continues_word(self, token):
        """Whether `token` (str) continues the word of the token before it
        rather than starting one (WordPiece: "##ing"; byte-level BPE and
        SentencePiece: a piece without the word-start marker)."""
        raise NotImplementedError

    def token_to_id(self, token):
        """The id of `token` (str); KeyError if it is not in the vocabulary."""
        try:
            return self._ids[token]
        except KeyError:
            raise KeyError(
                f"token {token!r} is not in the vocabulary") from None

    def id_to_token(self, token_id):
        """The token (str) with id `token_id` (int); IndexError if there is
        none."""
        token_id = int(token_id)
        if not 0 <= token_id < self._vocab_size:
            raise IndexError(f"id {token_id} is outside the vocabulary "
                             f"[0, {self._vocab_size})")
        try:
            return self._tokens[token_id]
        except KeyError:
            raise IndexError(
                f"id {token_id} is not in the vocabulary") from None

    # -- saving and loading -----------------------------------------------

    def _write_tokenizer_config(self, directory, tokenizer_class, settings):
        """Writes HF's `tokenizer_config.json`: `tokenizer_class`, the
        `settings` dict and the special tokens."""
        config = {"tokenizer_class": tokenizer_class, **settings,
                  **self._special_token_arguments()}
        with open(Path(directory) / "tokenizer_config.json", "w",
                  encoding="utf-8") as f:
            json.dump(config, f, indent=2, ensure_ascii=False)
            f.write("\n")

    def _special_token_arguments(self):
        """The special tokens as constructor arguments (`cls_token`, ...)."""
        return {f"{role}_token": token
                for role, token in self.special_tokens.items()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def as_text_batch(texts):
    """tf.string `[batch]` from texts `[batch]` or a scalar (str, list,
    numpy array or dense tensor), and whether it was a scalar."""
    if isinstance(texts, tf.RaggedTensor):
        raise TypeError("texts must be a dense string tensor [batch]; use "
                        "tokenize_words for pre-split words")
    texts = tf.convert_to_tensor(texts, dtype=tf.string)
    if texts.shape.rank == 0:
        return texts[tf.newaxis], True
    if texts.shape.rank not in (1, None):
        raise ValueError(f"texts must be [batch] strings, got shape "
                         f"{texts.shape}")
    return tf.reshape(texts, [-1]), False


def as_word_batch(words):
    """tf.string ragged [batch, (words)] from a RaggedTensor or lists."""
    if not isinstance(words, tf.RaggedTensor):
        words = tf.ragged.constant(words, dtype=tf.string)
    if words.ragged_rank != 1:
        raise ValueError(f"words must be a [batch, (words)] RaggedTensor, "
                         f"got ragged rank {words.ragged_rank}")
    return words


def read_tokenizer_config(directory, arguments, roles=()):
    """Constructor arguments from an HF `tokenizer_config.json` in
    `directory`; {} if there is none.

    Args:
      directory: a `pathlib.Path`.
      arguments: dict HF key -> constructor argument, for plain settings.
      roles: special-token roles whose `{role}_token` entries (a str or an
        HF AddedToken dict) become `{role}_token` arguments.
    """
    path = directory / "tokenizer_config.json"
    if not path.is_file():
        return {}
    config = read_json(path)
    settings = {arg: config[key] for key, arg in arguments.items()
                if key in config}
    for role in roles:
        token = config.get(f"{role}_token")
        if isinstance(token, dict):  # an AddedToken
            token = token.get("content")
        if token:
            settings[f"{role}_token"] = token
    return settings

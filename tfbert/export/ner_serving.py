"""Serving signatures for token classification: raw text in, a tag per
word and (for entity tags) entities out.

`serving_default` takes `text`, tf.string [batch], and returns, per input:

  word_texts      string [batch, W]  the words (see below), "" = padding
  word_starts     int64  [batch, W]  character offset of each word
  word_ends       int64  [batch, W]  character offset one past each word
  word_labels     string [batch, W]  the tag of each word (IOB2 for IOB1 or
                                     IOB2 data), "" = padding
  word_scores     float32 [batch, W] softmax probability of that tag
  num_words       int32  [batch]     words tagged (the first num_words slots)

and, for entity schemes (iob1, iob2, bioes):

  entity_types    string [batch, E]  e.g. "PER", "" = padding
  entity_starts   int64  [batch, E]  character offset of the entity
  entity_ends     int64  [batch, E]  character offset one past the entity
  entity_texts    string [batch, E]  text[entity_start:entity_end]
  entity_scores   float32 [batch, E] mean over the entity's words of the
                                     softmax probability of the chosen tag
  num_entities    int32  [batch]     entities found (the first slots)

W and E are the largest counts in the batch. Character offsets count Unicode
code points, so in Python `text[start:end]` is the entity.

Words are the tokenizer's pre-tokenizer words, HF's `word_ids()`
(`split_words_with_offsets`): for WordPiece, runs of non-space characters
split further at every punctuation character and CJK ideograph ("U.S." is
"U", ".", "S", "."); for byte-level BPE, the GPT-2 pre-tokens ("U", ".",
"S", "."; "it's" is "it", "'s"); for SentencePiece, whitespace-separated
runs ("U.S." and "Germany," are one word each). Each word is then tokenized
as `tasks.ner` tokenizes a CoNLL word (`tokenize_words`).

Every word is tagged, however long the text (within the export's
`RequestLimits`: characters per text and per request, windows per
request): the words are cut into overlapping windows exactly as
`tasks.ner` evaluates (`tfbert.data.ner_alignment`), and each word takes
its tag from the window where it has the most context. Entities are
grouped from the word tags with the rules `tasks.ner` scores with
(`tfbert.metrics.ner`): conlleval's for IOB2 tags, and for BIOES only
well-formed entities (S-X, or B-X ... E-X).

`serve_token_ids` takes the three int32 [batch, max_seq_length] encoder
inputs and returns `logits`, float32 [batch, max_seq_length, num_labels]
(for a CRF model, its emission scores); at padding positions (mask 0) they
carry no meaning (the encoder skips padding, see `TokenPacking`).
"""

import tensorflow as tf

from tfbert.data.tag_schemes import is_entity_scheme
from tfbert.export.serving_module import ServingModule
from tfbert.text.packing_layout import BERT_LAYOUT


class NerServingModule(ServingModule):
    """Wraps a trained `BertTokenClassifier` and its tokenizer for export.

    Args:
      model: a `BertTokenClassifier` (softmax or CRF).
      tokenizer: the checkpoint's tokenizer (any family's).
      labels: tag names in id order (IOB2 or BIOES tags for entity
        schemes).
      max_seq_length: longest packed window, special tokens included.
      window_stride: pieces between window starts; default half a window
        (as `tfbert.data.ner_alignment.convert_to_features`).
      layout: the family's `PackingLayout` (`preprocessor.layout`).
      scheme: the data's tag scheme (`tfbert.data.tag_schemes.SCHEMES`);
        "plain" exports the word outputs only.
    """

    def __init__(self, model, tokenizer, labels, max_seq_length,
                 window_stride=None, layout=BERT_LAYOUT, scheme="iob2"):
        super().__init__(model, tokenizer, max_seq_length, ("text",),
                         name="ner")
        self.layout = layout
        self._max_pieces = (self.max_seq_length
                            - layout.num_special_tokens(1))
        if self._max_pieces < 1:
            raise ValueError(
                f"max_seq_length must be >= "
                f"{layout.num_special_tokens(1) + 1}, got {max_seq_length}")
        self._window_stride = window_stride or max(1, self._max_pieces // 2)
        if not 1 <= self._window_stride <= self._max_pieces:
            raise ValueError(f"window_stride must be in [1, "
                             f"{self._max_pieces}], got {window_stride}")
        self._labels = tf.constant(list(labels))
        self._entities = is_entity_scheme(scheme)
        self._strict = scheme == "bioes"
        if not self._entities:
            return
        types = sorted({label[2:] for label in labels if label != "O"})
        self._types = tf.constant(types or [""])
        self._type_of_label = tf.constant(
            [types.index(label[2:]) if label != "O" else -1
             for label in labels], tf.int32)
        self._prefix_of_label = tf.constant([label[0] for label in labels])

    def token_id_outputs(self, features):
        return {"logits": tf.cast(self.model_outputs(features),
                                  tf.float32)}

    def _plan_windows(self, piece_starts, num_words):
        """`ner_alignment.plan_windows` for a batch, in the graph.

        Args:
          piece_starts: int64 [batch, W + 1]: piece offset of each word in
            its text, then the text's piece count, then padding larger than
            any offset.
          num_words: int64 [batch].

        Returns:
          `(first, end)` int64 ragged [batch, (windows)]: the word range of
          each window, end exclusive.
        """
        own_start = piece_starts[:, :-1]
        words = tf.range(tf.shape(own_start, tf.int64)[1])[tf.newaxis]
        # Per word w opening a window: its end, and where the next one opens.
        end = tf.searchsorted(piece_starts, own_start + self._max_pieces,
                              side="right", out_type=tf.int64) - 1
        end = tf.maximum(end, words + 1)
        following = tf.searchsorted(
            piece_starts, own_start + self._window_stride, side="left",
            out_type=tf.int64)
        following = tf.minimum(tf.maximum(following, words + 1), end)

        def step(first, firsts, ends):
            active = first < num_words
            safe = tf.minimum(first, tf.maximum(num_words - 1, 0))[:, None]
            window_end = tf.gather(end, safe, batch_dims=1)[:, 0]
            window_next = tf.gather(following, safe, batch_dims=1)[:, 0]
            firsts = tf.concat([firsts, tf.where(active, first, -1)[:, None]],
                               axis=1)
            ends = tf.concat([ends, window_end[:, None]], axis=1)
            first = tf.where(active & (window_end < num_words), window_next,
                             num_words)
            return first, firsts, ends

        batch = tf.shape(num_words)[0]
        empty = tf.zeros([batch, 0], tf.int64)
        _, firsts, ends = tf.while_loop(
            lambda first, *_: tf.reduce_any(first < num_words), step,
            (tf.zeros_like(num_words), empty, empty),
            shape_invariants=(num_words.shape, tf.TensorShape([None, None]),
                              tf.TensorShape([None, None])))
        opened = firsts >= 0
        return (tf.ragged.boolean_mask(firsts, opened),
                tf.ragged.boolean_mask(ends, opened))

    def _word_tags(self, piece_ids, piece_counts):
        """Tags and their probabilities, one per word, from windows.

        Args:
          piece_ids: int32 ragged [batch, (words), (pieces)], no word empty.
          piece_counts: int64 ragged [batch, (words)].

        Returns:
          `(tags, scores)`: int32 and float32 ragged [batch, (words)].
        """
        num_words = piece_counts.row_lengths()
        piece_starts = tf.concat(
            [tf.cumsum(piece_counts, axis=1, exclusive=True),
             tf.reduce_sum(piece_counts, axis=1)[:, None]], axis=1)
        padded_starts = piece_starts.to_tensor(tf.int64.max // 2)
        firsts, ends = self._plan_windows(padded_starts, num_words)
        text = firsts.value_rowids()
        first, end = firsts.flat_values, ends.flat_values
        num_windows = tf.size(first, tf.int64)

        def piece_start(text, word):
            return tf.gather_nd(padded_starts, tf.stack([text, word], axis=1))

        # Window ids: the layout's start, pieces, end ([CLS] pieces [SEP]),
        # cut to max_pieces (a single word longer than a window keeps its
        # first pieces).
        pieces = piece_ids.merge_dims(1, 2)
        begin = piece_start(text, first)
        stop = tf.minimum(piece_start(text, end), begin + self._max_pieces)
        window_pieces = tf.gather(
            pieces.flat_values,
            tf.ragged.range(begin, stop)
            + tf.gather(pieces.row_starts(), text)[:, None])

        def special(part):
            ids = self.layout.token_ids(self.tokenizer, part)
            return tf.tile(tf.constant([ids], tf.int32), [num_windows, 1])

        ids = tf.concat([special("start"), window_pieces, special("end")],
                        axis=1)
        features = {"input_word_ids": ids.to_tensor(self.tokenizer.pad_id),
                    "input_mask": tf.ones_like(ids).to_tensor(0)}
        features["input_type_ids"] = tf.zeros_like(features["input_mask"])
        features = self.windows_checked(features, self.texts_source)
        logits = tf.cast(self.model_outputs(features), tf.float32)

        # Each (window, word): where its first piece sits, and its context.
        window_words = tf.ragged.range(first, end)
        window = window_words.value_rowids()
        word = window_words.flat_values
        word_text = tf.gather(text, window)
        position = (len(self.layout.start) + piece_start(word_text, word)
                    - tf.gather(begin, window))
        context = tf.minimum(word - tf.gather(first, window),
                             tf.gather(end, window) - 1 - word)
        at_word = tf.stack([window, position], axis=1)
        word_mask = tf.scatter_nd(at_word, tf.ones_like(word, tf.int32),
                                  tf.shape(logits[..., 0], tf.int64)) > 0
        # The CRF decoder needs at least one word (a batch of empty texts
        # has no windows).
        window_tags = tf.gather_nd(tf.cond(
            tf.size(word) > 0, lambda: self.model.decode(logits, word_mask),
            lambda: tf.zeros(tf.shape(word_mask), tf.int32)), at_word)
        window_scores = tf.gather_nd(
            tf.nn.softmax(logits, axis=-1),
            tf.concat([at_word, tf.cast(window_tags, tf.int64)[:, None]], 1))

        # The window with the most context wins, the earliest on ties.
        word_id = tf.gather(piece_counts.row_starts(), word_text) + word
        total_words = tf.size(piece_counts.flat_values, tf.int64)
        key = context * (num_windows + 1) + (num_windows - window)
        chosen = tf.equal(key, tf.gather(
            tf.math.unsorted_segment_max(key, word_id, total_words), word_id))
        destination = tf.boolean_mask(word_id, chosen)[:, None]

        def per_word(values):
            return piece_counts.with_flat_values(tf.scatter_nd(
                destination, tf.boolean_mask(values, chosen),
                [total_words]))

        return per_word(window_tags), per_word(window_scores)

    def text_outputs(self, text):
        words, byte_starts, byte_ends = (
            self.tokenizer.split_words_with_offsets(text))
        # A word that normalises to nothing is fed as one unknown token, as
        # in training.
        pieces = _unk_if_empty(self.tokenizer.tokenize_words(words).values,
                               self.tokenizer.unk_id)
        piece_ids = words.with_flat_values(pieces)
        tags, scores = self._word_tags(
            piece_ids, words.with_flat_values(pieces.row_lengths()))
        num_words = tf.cast(words.row_lengths(), tf.int32)
        word_mask = tf.sequence_mask(num_words)
        tags, word_scores = tags.to_tensor(0), scores.to_tensor(0.0)

        # Byte offsets -> code point offsets, per text.
        _, char_byte_starts = tf.strings.unicode_decode_with_offsets(
            text, "UTF-8")
        char_byte_starts = char_byte_starts.to_tensor(tf.int64.max)

        def to_chars(byte_offsets):
            return tf.searchsorted(char_byte_starts, byte_offsets.to_tensor(0),
                                   side="left", out_type=tf.int64)

        word_starts, word_ends = to_chars(byte_starts), to_chars(byte_ends)
        byte_starts = byte_starts.to_tensor(0)
        byte_ends = byte_ends.to_tensor(0)
        word_texts = tf.strings.substr(
            tf.broadcast_to(text[:, None], tf.shape(byte_starts)),
            byte_starts, byte_ends - byte_starts)

        outputs = {
            "word_texts": _masked(word_texts, word_mask, ""),
            "word_starts": word_starts,
            "word_ends": word_ends,
            "word_labels": _masked(tf.gather(self._labels, tags), word_mask,
                                   ""),
            "word_scores": _masked(word_scores, word_mask, 0.0),
            "num_words": num_words,
        }
        if self._entities:
            outputs.update(self._entity_outputs(
                text, tags, word_mask, word_scores, word_starts, word_ends,
                byte_starts, byte_ends))
        return outputs

    def _entity_outputs(self, text, tags, word_mask, word_scores, word_starts,
                        word_ends, byte_starts, byte_ends):
        """The entity outputs from padded [batch, W] word tags."""
        # Chunks by the conlleval rules (B-/S- or a type change opens one,
        # E-/S- closes one); BIOES keeps only the well-formed ones.
        entity_type = tf.where(word_mask, tf.gather(self._type_of_label, tags),
                               -1)
        prefix = tf.gather(self._prefix_of_label, tags)
        inside = entity_type >= 0
        closes = inside & ((prefix == "E") | (prefix == "S"))
        previous_type = tf.pad(entity_type[:, :-1], [[0, 0], [1, 0]],
                               constant_values=-1)
        previous_closes = tf.pad(closes[:, :-1], [[0, 0], [1, 0]])
        begins = inside & ((prefix == "B") | (prefix == "S")
                           | tf.not_equal(previous_type, entity_type)
                           | previous_closes)
        next_inside = tf.pad(inside[:, 1:], [[0, 0], [0, 1]])
        next_begins = tf.pad(begins[:, 1:], [[0, 0], [0, 1]])
        ends = inside & (~next_inside | next_begins | closes)
        word_ids = tf.broadcast_to(tf.range(tf.shape(tags)[1])[None],
                                   tf.shape(tags))
        first = tf.ragged.boolean_mask(word_ids, begins)
        last = tf.ragged.boolean_mask(word_ids, ends)
        if self._strict:
            rows = tf.cast(first.value_rowids(), tf.int32)

            def prefix_at(words):
                return tf.gather_nd(prefix, tf.stack(
                    [rows, words.flat_values], axis=1))

            first_prefix, last_prefix = prefix_at(first), prefix_at(last)
            well_formed = first.with_flat_values(tf.where(
                tf.equal(first.flat_values, last.flat_values),
                tf.equal(first_prefix, "S"),
                tf.equal(first_prefix, "B") & tf.equal(last_prefix, "E")))
            first = tf.ragged.boolean_mask(first, well_formed)
            last = tf.ragged.boolean_mask(last, well_formed)
        num_entities = tf.cast(first.row_lengths(), tf.int32)
        first, last = first.to_tensor(0), last.to_tensor(0)
        entity_mask = tf.sequence_mask(num_entities, tf.shape(first)[1])

        cumulative = tf.cumsum(word_scores, axis=1)
        score_sum = (tf.gather(cumulative, last, batch_dims=1)
                     - tf.gather(cumulative, first, batch_dims=1)
                     + tf.gather(word_scores, first, batch_dims=1))
        entity_scores = score_sum / tf.cast(last - first + 1, tf.float32)
        start_bytes = tf.gather(byte_starts, first, batch_dims=1)
        end_bytes = tf.gather(byte_ends, last, batch_dims=1)
        texts = tf.broadcast_to(text[:, None], tf.shape(first))
        entity_texts = tf.strings.substr(texts, start_bytes,
                                         end_bytes - start_bytes)
        return {
            "entity_types": _masked(tf.gather(
                self._types, tf.maximum(tf.gather(entity_type, first,
                                                  batch_dims=1), 0)),
                entity_mask, ""),
            "entity_starts": _masked(tf.gather(word_starts, first, batch_dims=1),
                                    entity_mask, tf.constant(0, tf.int64)),
            "entity_ends": _masked(tf.gather(word_ends, last, batch_dims=1),
                                  entity_mask, tf.constant(0, tf.int64)),
            "entity_texts": _masked(entity_texts, entity_mask, ""),
            "entity_scores": _masked(entity_scores, entity_mask, 0.0),
            "num_entities": num_entities,
        }


def _masked(values, mask, fill):
    return tf.where(mask, values, tf.fill(tf.shape(values), fill))


def _unk_if_empty(pieces, unk_id):
    """[N, (P)] ids with every empty row replaced by [unk_id]."""
    lengths = pieces.row_lengths()
    unk = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.shape(lengths, tf.int64)[0]], tf.cast(unk_id, pieces.dtype)),
        tf.ones_like(lengths))
    padded = tf.concat([pieces, unk], axis=1)
    keep = tf.ragged.range(lengths + 1) < tf.maximum(lengths, 1)[:, None]
    return tf.ragged.boolean_mask(padded, keep)

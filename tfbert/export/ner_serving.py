"""Serving signatures for NER: raw text in, entities out.

`serving_default` takes `text`, tf.string [batch], and returns, per input:

  word_texts      string [batch, W]  the words (see below), "" = padding
  word_starts     int64  [batch, W]  character offset of each word
  word_ends       int64  [batch, W]  character offset one past each word
  word_labels     string [batch, W]  the IOB2 tag of each word, "" = padding
  num_words       int32  [batch]     words tagged (the first num_words slots)
  entity_types    string [batch, E]  e.g. "PER", "" = padding
  entity_starts   int64  [batch, E]  character offset of the entity
  entity_ends     int64  [batch, E]  character offset one past the entity
  entity_texts    string [batch, E]  text[entity_start:entity_end]
  entity_scores   float32 [batch, E] mean over the entity's words of the
                                     softmax probability of the chosen tag
  num_entities    int32  [batch]     entities found (the first slots)

W and E are the largest counts in the batch. Character offsets count Unicode
code points, so in Python `text[start:end]` is the entity.

Words are what BERT's pre-tokenizer produces: runs of non-space characters
split further at every punctuation character, which becomes a word of its
own ("U.S." is "U", ".", "S", "."). Entities are grouped from the word tags
with the conlleval rules (`tfbert.metrics.ner`). A text longer than
`max_seq_length - 2` WordPieces is truncated: only its first `num_words`
words are tagged (the `tasks.ner` evaluation uses overlapping windows
instead; serving does not).

`token_logits` takes the three int32 [batch, seq] encoder inputs and returns
`logits`, float32 [batch, seq, num_labels] (for a CRF model, its emission
scores).
"""

import tensorflow as tf
import tensorflow_text as tf_text

_WHITESPACE = r"\s\p{Zs}\x{2028}\x{2029}"
_PUNCTUATION = r"\x{21}-\x{2F}\x{3A}-\x{40}\x{5B}-\x{60}\x{7B}-\x{7E}\p{P}"


class NerServingModule(tf.Module):
    """Wraps a trained `BertTokenClassifier` and its tokenizer for export.

    Args:
      model: a `BertTokenClassifier` (softmax or CRF).
      tokenizer: the checkpoint's `BertTokenizer`.
      labels: IOB2 tag names in id order.
      max_seq_length: longest packed input, [CLS] and [SEP] included.
    """

    def __init__(self, model, tokenizer, labels, max_seq_length):
        super().__init__(name="ner")
        self.model = model
        self.tokenizer = tokenizer
        self.max_seq_length = int(max_seq_length)
        self._labels = tf.constant(list(labels))
        types = sorted({label[2:] for label in labels if label != "O"})
        self._types = tf.constant(types or [""])
        self._type_of_label = tf.constant(
            [types.index(label[2:]) if label != "O" else -1
             for label in labels], tf.int32)
        self._is_begin = tf.constant([label.startswith("B-")
                                      for label in labels])

    def token_logits(self, input_word_ids, input_mask, input_type_ids):
        """The `token_logits` computation: int32 [batch, seq] inputs ->
        {"logits": float32 [batch, seq, num_labels]}."""
        return {"logits": self.model(
            {"input_word_ids": input_word_ids, "input_mask": input_mask,
             "input_type_ids": input_type_ids}, training=False)}

    def tag_text(self, text):
        """The `serving_default` computation (see the module docstring)."""
        text = tf.reshape(text, [-1])
        words, byte_starts, byte_ends = tf_text.regex_split_with_offsets(
            text, f"[{_WHITESPACE}]|[{_PUNCTUATION}]", f"[{_PUNCTUATION}]")
        pieces = self.tokenizer.tokenize_words(words).values  # [N, (P)]
        pieces = _unk_if_empty(pieces, self.tokenizer.unk_id)

        # Truncate: keep the words whose first piece fits in the window.
        budget = self.max_seq_length - 2
        piece_counts = words.with_flat_values(pieces.row_lengths())
        first_piece = tf.cumsum(piece_counts, axis=1, exclusive=True)
        kept = first_piece < budget
        num_words = tf.reduce_sum(tf.cast(kept, tf.int32), axis=1)
        text_pieces = words.with_flat_values(pieces).merge_dims(1, 2)
        text_pieces = text_pieces[:, :budget]
        batch = tf.shape(text)[0]
        cls = tf.fill([batch, 1], self.tokenizer.cls_id)
        sep = tf.fill([batch, 1], self.tokenizer.sep_id)
        ids = tf.concat([cls, tf.cast(text_pieces, tf.int32), sep], axis=1)
        input_word_ids = ids.to_tensor(self.tokenizer.pad_id)
        input_mask = tf.ones_like(ids).to_tensor(0)
        logits = self.token_logits(input_word_ids, input_mask,
                                   tf.zeros_like(input_mask))["logits"]

        positions = tf.ragged.boolean_mask(first_piece + 1, kept)
        word_mask = tf.sequence_mask(num_words)
        word_logits = tf.gather(logits, tf.cast(positions.to_tensor(0),
                                                tf.int32), batch_dims=1)
        if self.model.use_crf:
            tags = self.model.crf.decode(word_logits, num_words)
        else:
            tags = tf.argmax(word_logits, axis=-1, output_type=tf.int32)
        probabilities = tf.nn.softmax(word_logits, axis=-1)
        word_scores = tf.gather(probabilities, tags, batch_dims=2)

        # Byte offsets -> code point offsets, per text.
        _, char_byte_starts = tf.strings.unicode_decode_with_offsets(
            text, "UTF-8")
        char_byte_starts = char_byte_starts.to_tensor(
            tf.int64.max)

        def to_chars(byte_offsets):
            dense = tf.ragged.boolean_mask(byte_offsets, kept).to_tensor(0)
            return tf.searchsorted(char_byte_starts, dense, side="left",
                                   out_type=tf.int64)

        word_starts, word_ends = to_chars(byte_starts), to_chars(byte_ends)
        kept_byte_starts = tf.ragged.boolean_mask(byte_starts, kept).to_tensor(0)
        kept_byte_ends = tf.ragged.boolean_mask(byte_ends, kept).to_tensor(0)
        word_texts = tf.ragged.boolean_mask(words, kept).to_tensor("")

        # Entities by the conlleval rules on IOB2 tags.
        entity_type = tf.where(word_mask, tf.gather(self._type_of_label, tags),
                               -1)
        inside = entity_type >= 0
        previous_type = tf.pad(entity_type[:, :-1], [[0, 0], [1, 0]],
                               constant_values=-1)
        begins = inside & (tf.gather(self._is_begin, tags)
                           | tf.not_equal(previous_type, entity_type))
        next_inside = tf.pad(inside[:, 1:], [[0, 0], [0, 1]])
        next_begins = tf.pad(begins[:, 1:], [[0, 0], [0, 1]])
        ends = inside & (~next_inside | next_begins)
        word_ids = tf.broadcast_to(tf.range(tf.shape(tags)[1])[None],
                                   tf.shape(tags))
        first = tf.ragged.boolean_mask(word_ids, begins)
        last = tf.ragged.boolean_mask(word_ids, ends)
        num_entities = tf.cast(first.row_lengths(), tf.int32)
        first, last = first.to_tensor(0), last.to_tensor(0)
        entity_mask = tf.sequence_mask(num_entities, tf.shape(first)[1])

        cumulative = tf.cumsum(word_scores, axis=1)
        score_sum = (tf.gather(cumulative, last, batch_dims=1)
                     - tf.gather(cumulative, first, batch_dims=1)
                     + tf.gather(word_scores, first, batch_dims=1))
        entity_scores = score_sum / tf.cast(last - first + 1, tf.float32)
        start_bytes = tf.gather(kept_byte_starts, first, batch_dims=1)
        end_bytes = tf.gather(kept_byte_ends, last, batch_dims=1)
        texts = tf.broadcast_to(text[:, None], tf.shape(first))
        entity_texts = tf.strings.substr(texts, start_bytes,
                                         end_bytes - start_bytes)

        def masked(values, mask, fill):
            return tf.where(mask, values, tf.fill(tf.shape(values), fill))

        return {
            "word_texts": word_texts,
            "word_starts": word_starts,
            "word_ends": word_ends,
            "word_labels": masked(tf.gather(self._labels, tags), word_mask, ""),
            "num_words": num_words,
            "entity_types": masked(tf.gather(
                self._types, tf.maximum(tf.gather(entity_type, first,
                                                  batch_dims=1), 0)),
                entity_mask, ""),
            "entity_starts": masked(tf.gather(word_starts, first, batch_dims=1),
                                    entity_mask, tf.constant(0, tf.int64)),
            "entity_ends": masked(tf.gather(word_ends, last, batch_dims=1),
                                  entity_mask, tf.constant(0, tf.int64)),
            "entity_texts": masked(entity_texts, entity_mask, ""),
            "entity_scores": masked(entity_scores, entity_mask, 0.0),
            "num_entities": num_entities,
        }

    def signatures(self):
        """`serving_default` (raw text) and `token_logits` (token ids)."""
        text_fn = tf.function(self.tag_text, input_signature=[
            tf.TensorSpec([None], tf.string, name="text")])
        logits_fn = tf.function(self.token_logits, input_signature=[
            tf.TensorSpec([None, None], tf.int32, name="input_word_ids"),
            tf.TensorSpec([None, None], tf.int32, name="input_mask"),
            tf.TensorSpec([None, None], tf.int32, name="input_type_ids")])
        return {"serving_default": text_fn.get_concrete_function(),
                "token_logits": logits_fn.get_concrete_function()}


def _unk_if_empty(pieces, unk_id):
    """[N, (P)] ids with every empty row replaced by [unk_id]."""
    lengths = pieces.row_lengths()
    unk = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.shape(lengths, tf.int64)[0]], tf.cast(unk_id, pieces.dtype)),
        tf.ones_like(lengths))
    padded = tf.concat([pieces, unk], axis=1)
    keep = tf.ragged.range(lengths + 1) < tf.maximum(lengths, 1)[:, None]
    return tf.ragged.boolean_mask(padded, keep)

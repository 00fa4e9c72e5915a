"""Serving module for extractive question answering (SQuAD-style).

The raw-text signature does in the graph what `convert_examples_to_features`
and `postprocess_predictions` do in Python: tokenize, truncate the question,
cut the context into strided windows, run the model on every window, and
pick the best valid span over all windows of each question (same validity
rules, same max-context windows), so both give the same answers. A request
whose contexts need more windows than the export's
`RequestLimits.max_windows` is refused before the encoder runs.
"""

import tensorflow as tf

from tfbert.export.serving_module import ServingModule
from tfbert.text.packing_layout import BERT_LAYOUT

# What Python's str.lstrip() removes (HF's run_qa strips questions so).
_LEADING_SPACE = r"^[\t-\r\x{1C}-\x{20}\x{85}\p{Z}]+"


class SquadServingModule(ServingModule):
    """Raw question and context in, answer out.

    Signatures (see `ServingModule` for names, input specs and checks):
      `serving_default`: `question`, `context` (string [batch]) ->
        `answer_text` string [batch] ("" for no answer), `start_char`,
        `end_char` int64 [batch] (code point offsets of the answer in the
        context, `[start, end)`; -1 for no answer), `score` float32 [batch]
        (start + end logit of the best span; 0 if the context has no valid
        span), and for SQuAD v2.0 models `no_answer_probability` float32
        [batch] = sigmoid(null score - best span score). An empty context
        (or one with no tokens, e.g. only spaces) has no answer.
      `serve_token_ids`: the three int32 [batch, max_seq_length] encoder
        inputs -> `start_logits`, `end_logits` float32 [batch,
        max_seq_length], for clients that tokenize and window themselves.

    Args:
      model: a `BertSpanLabeler`.
      tokenizer: the tokenizer it was trained with (any family's).
      max_seq_length, doc_stride, max_query_length, max_answer_length: as in
        training / prediction.
      version_2_with_negative: a SQuAD v2.0 model (can answer "no answer").
      null_score_diff_threshold: answer "" when null score minus best span
        score exceeds this (v2.0 only).
      layout: the family's `PackingLayout` (`preprocessor.layout`).
    """

    def __init__(self, model, tokenizer, max_seq_length=384, doc_stride=128,
                 max_query_length=64, max_answer_length=30,
                 version_2_with_negative=False, null_score_diff_threshold=0.0,
                 layout=BERT_LAYOUT):
        self._num_special = layout.num_special_tokens(2)
        if max_seq_length <= max_query_length + self._num_special:
            raise ValueError(
                f"max_seq_length ({max_seq_length}) must exceed "
                f"max_query_length ({max_query_length}) + "
                f"{self._num_special} special tokens")
        super().__init__(model, tokenizer, max_seq_length,
                         ("question", "context"))
        self.layout = layout
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length
        self.max_answer_length = max_answer_length
        self.version_2_with_negative = version_2_with_negative
        self.null_score_diff_threshold = null_score_diff_threshold

    def _windows(self, question, context):
        """Windows of every question/context pair.

        Returns a dict: `features` (encoder inputs [W, L]), `example` int64
        [W], `number` int64 [W] (window index within its example), `start`
        and `length` int64 [W] (context tokens covered), `query_length`
        int64 [W], plus the context tokens' byte offsets (ragged [B, (c)]).
        """
        question = tf.strings.regex_replace(question, _LEADING_SPACE, "")
        query = self.tokenizer.tokenize(question)[:, :self.max_query_length]
        doc, byte_starts, byte_ends = self.tokenizer.tokenize_with_offsets(
            context)
        query_len = query.row_lengths()
        doc_len = doc.row_lengths()
        max_tokens = self.max_seq_length - query_len - self._num_special
        stride = tf.minimum(max_tokens, self.doc_stride)
        extra = tf.maximum(doc_len - max_tokens, 0)
        num_windows = 1 + (extra + stride - 1) // stride

        example = tf.repeat(tf.range(tf.size(num_windows, tf.int64)),
                            num_windows)
        number = tf.ragged.range(num_windows).flat_values
        start = number * tf.gather(stride, example)
        length = tf.minimum(tf.gather(max_tokens, example),
                            tf.gather(doc_len, example) - start)
        positions = tf.ragged.range(start, start + length)
        doc_tokens = tf.gather(
            doc.flat_values,
            positions + tf.gather(doc.row_starts(), example)[:, tf.newaxis])
        window_query = tf.gather(query, example)
        num = tf.size(example)

        def special(part):
            ids = self.layout.token_ids(self.tokenizer, part)
            return tf.tile(tf.constant([ids], tf.int32), [num, 1])

        ids = tf.concat([special("start"), window_query, special("middle"),
                         doc_tokens, special("end")], axis=1)
        second_segment = self._context_offset(tf.gather(query_len, example))
        type_ids = self.layout.second_type_id * tf.cast(
            tf.ragged.range(tf.cast(ids.row_lengths(), tf.int64))
            >= second_segment[:, tf.newaxis], tf.int32)
        features = self.windows_checked({
            "input_word_ids": ids.to_tensor(self.tokenizer.pad_id),
            "input_mask": tf.ones_like(ids).to_tensor(0),
            "input_type_ids": type_ids.to_tensor(0),
        }, self.texts_source)
        return {"features": features, "example": example, "number": number,
                "start": start, "length": length,
                "query_length": tf.gather(query_len, example),
                "num_windows": num_windows, "byte_starts": byte_starts,
                "byte_ends": byte_ends}

    def _context_offset(self, query_length):
        """Input position of the first context token, int64 like
        `query_length`."""
        return query_length + len(self.layout.start) + len(self.layout.middle)

    def _is_max_context(self, w, seq):
        """bool [W, seq]: position holds a context token whose max-context
        window is this one (scores x100 in integers, first window wins)."""
        first_context = self._context_offset(w["query_length"])
        context_pos = (tf.range(seq, dtype=tf.int64)[tf.newaxis, :]
                       - first_context[:, tf.newaxis])             # [W, S]
        in_context = (context_pos >= 0) & (
            context_pos < w["length"][:, tf.newaxis])
        token = context_pos + w["start"][:, tf.newaxis]
        # Every window of the same example, as [B, max_windows].
        rows = tf.RaggedTensor.from_value_rowids(
            tf.stack([w["start"], w["length"]], axis=1), w["example"],
            nrows=tf.size(w["num_windows"], tf.int64))
        # One padding column keeps the argmax below defined for a batch of
        # zero examples.
        padded_rows = tf.pad(rows.to_tensor(-1), [[0, 0], [0, 1], [0, 0]],
                             constant_values=-1)
        siblings = tf.gather(padded_rows, w["example"])            # [W, M, 2]
        sib_start = siblings[:, tf.newaxis, :, 0]
        sib_length = siblings[:, tf.newaxis, :, 1]
        offset = token[:, :, tf.newaxis] - sib_start                 # [W, S, M]
        inside = (offset >= 0) & (offset < sib_length)
        score = tf.where(
            inside,
            100 * tf.minimum(offset, sib_length - 1 - offset) + sib_length,
            tf.constant(-1, tf.int64))
        best = tf.argmax(score, axis=-1)
        return in_context & tf.equal(best, w["number"][:, tf.newaxis]), in_context

    def text_outputs(self, question, context):
        w = self._windows(question, context)
        logits = self.model_outputs(w["features"])
        start_logits = tf.cast(logits["start_logits"], tf.float32)
        end_logits = tf.cast(logits["end_logits"], tf.float32)
        seq = tf.shape(start_logits)[1]
        start_ok, end_ok = self._is_max_context(w, seq)

        span = tf.range(self.max_answer_length)
        end_index = tf.range(seq)[:, tf.newaxis] + span[tf.newaxis, :]   # [S, A]
        inside = end_index < seq
        end_index = tf.minimum(end_index, seq - 1)
        valid = (start_ok[:, :, tf.newaxis] & inside[tf.newaxis]
                 & tf.gather(end_ok, end_index, axis=1))
        scores = tf.where(valid,
                          start_logits[:, :, tf.newaxis]
                          + tf.gather(end_logits, end_index, axis=1),
                          -float("inf"))
        flat = tf.reshape(scores, [tf.shape(scores)[0], -1])
        window_best = tf.reduce_max(flat, axis=1)
        window_arg = tf.argmax(flat, axis=1, output_type=tf.int32)

        # Best window of each example (first on ties).
        num_examples = tf.size(w["num_windows"], tf.int64)
        by_example = tf.RaggedTensor.from_value_rowids(
            window_best, w["example"], nrows=num_examples)
        best_number = tf.argmax(
            tf.pad(by_example.to_tensor(-float("inf")), [[0, 0], [0, 1]],
                   constant_values=-float("inf")), axis=1)
        best_window = by_example.row_starts() + best_number
        best_score = tf.gather(window_best, best_window)
        has_span = best_score > -float("inf")
        arg = tf.gather(window_arg, best_window)
        first = tf.cast(arg // self.max_answer_length, tf.int64)
        last = first + tf.cast(arg % self.max_answer_length, tf.int64)

        # Input positions -> context token indices -> byte offsets.
        base = (tf.gather(w["start"], best_window) - self._context_offset(
            tf.gather(w["query_length"], best_window)))
        row_start = w["byte_starts"].row_starts()

        def byte_offset(offsets, token):
            # A trailing 0 to read when there is no span: then the batch may
            # have no context tokens at all.
            values = tf.pad(offsets.flat_values, [[0, 1]])
            return tf.gather(values, tf.where(has_span, row_start + token,
                                              tf.size(values, tf.int64) - 1))

        byte_begin = byte_offset(w["byte_starts"], base + first)
        byte_end = byte_offset(w["byte_ends"], base + last)
        text = tf.strings.substr(context, byte_begin, byte_end - byte_begin,
                                 unit="BYTE")
        start_char = tf.cast(tf.strings.length(
            tf.strings.substr(context, tf.zeros_like(byte_begin), byte_begin,
                              unit="BYTE"),
            unit="UTF8_CHAR"), tf.int64)
        end_char = start_char + tf.cast(
            tf.strings.length(text, unit="UTF8_CHAR"), tf.int64)

        answered = has_span
        outputs = {}
        if self.version_2_with_negative:
            # [CLS] (<s>) scores; sliced, not indexed, as a batch of zero
            # examples has logits of width 0.
            cls_score = tf.reduce_sum(start_logits[:, :1] + end_logits[:, :1],
                                      axis=1)
            null_score = tf.math.unsorted_segment_min(
                cls_score, w["example"], num_examples)
            odds = null_score - best_score
            answered = has_span & (odds <= self.null_score_diff_threshold)
            outputs["no_answer_probability"] = tf.where(
                has_span, tf.sigmoid(tf.where(has_span, odds, 0.0)), 1.0)
        no_answer = tf.constant(-1, tf.int64)
        outputs.update({
            "answer_text": tf.where(answered, text, ""),
            "start_char": tf.where(answered, start_char, no_answer),
            "end_char": tf.where(answered, end_char, no_answer),
            "score": tf.where(has_span, best_score, 0.0),
        })
        return outputs

    def token_id_outputs(self, features):
        logits = self.model_outputs(features)
        return {name: tf.cast(logits[name], tf.float32)
                for name in ("start_logits", "end_logits")}

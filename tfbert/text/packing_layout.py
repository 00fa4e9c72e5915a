"""`PackingLayout`: where a model family puts its special tokens.

Every family packs one or two segments the same way: `start` tokens, segment
A, (`middle` tokens, segment B,) `end` tokens. BERT, DistilBERT, ELECTRA and
ALBERT use `[CLS] A [SEP] B [SEP]`; RoBERTa `<s> A </s></s> B </s>`. The
preprocessors pack raw text with it, and the tasks that build their own
windows (SQuAD's question/context windows, NER's word windows) read it from
the family's preprocessor (`preprocessor.layout`), so no task hard-codes a
family's special tokens.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class PackingLayout:
    """Where a family puts its special tokens.

    Each field names tokenizer ids by role (`"cls"` means `tokenizer.cls_id`).

    Attributes:
      start: tokens before segment A.
      middle: tokens between A and B (pairs only).
      end: tokens after the last segment.
      second_type_id: `input_type_ids` of B and the `end` tokens after it;
        everything before B has type 0.
    """

    start: tuple
    middle: tuple
    end: tuple
    second_type_id: int

    def num_special_tokens(self, num_segments):
        """Special tokens in a packed sequence of 1 or 2 segments."""
        return (len(self.start) + len(self.end)
                + (len(self.middle) if num_segments == 2 else 0))

    def token_ids(self, tokenizer, part):
        """The ids of `part` ("start", "middle" or "end") for `tokenizer`,
        a list of int."""
        return [int(getattr(tokenizer, f"{role}_id"))
                for role in getattr(self, part)]


BERT_LAYOUT = PackingLayout(("cls",), ("sep",), ("sep",), 1)
ROBERTA_LAYOUT = PackingLayout(("bos",), ("eos", "eos"), ("eos",), 0)
# By the names the family registry (`tfbert.families`) uses.
LAYOUTS = {"bert": BERT_LAYOUT, "roberta": ROBERTA_LAYOUT}

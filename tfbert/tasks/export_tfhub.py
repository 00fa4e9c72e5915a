"""Exports a checkpoint as TF Hub SavedModels: a BERT encoder and its
matching preprocessor, and/or a text-embedding model.

The command line (flags, the checks on their values, --help) is
`tfbert_cli.export_tfhub`.
"""

from tfbert_config.export import check_tfhub_export

# The masked-LM head --with_mlm exports (canonical names).
_MLM_HEAD_PREFIX = "cls/predictions/"


def export_tfhub(init_checkpoint, encoder_export_dir=None,
                 preprocessor_export_dir=None, with_mlm=False, seq_length=128,
                 precision="float32", text_embedding_export_dir=None,
                 pooling=None, normalize=None):
    """Writes the requested SavedModels; returns the directories written."""
    from tfbert import families
    from tfbert.hub import export_encoder, export_preprocessor
    from tfbert.text import BertTokenizer, Preprocessor
    from tfbert.text.packing_layout import BERT_LAYOUT

    check_tfhub_export(encoder_export_dir, preprocessor_export_dir,
                       text_embedding_export_dir, seq_length)
    written = []
    if text_embedding_export_dir:
        written.append(_export_text_embedding(
            init_checkpoint, text_embedding_export_dir, pooling, normalize))
    if not (encoder_export_dir or preprocessor_export_dir):
        return written
    family = families.family_of(init_checkpoint)
    if family.model_type == "bert":
        tokenizer = BertTokenizer.from_pretrained(init_checkpoint)
        layout = BERT_LAYOUT
    else:
        preprocessor = Preprocessor.from_pretrained(init_checkpoint)
        tokenizer, layout = preprocessor.tokenizer, preprocessor.layout
    if encoder_export_dir:
        encoder, pretrainer = _models(init_checkpoint, family, with_mlm,
                                      precision)
        written.append(export_encoder(encoder, tokenizer, encoder_export_dir,
                                      pretrainer=pretrainer))
    if preprocessor_export_dir:
        if layout != BERT_LAYOUT:
            raise ValueError(
                f"`preprocessor_export_dir`: a TF Hub BERT preprocessor packs "
                f"[CLS] A [SEP] B [SEP]; {init_checkpoint} is a "
                f"{family.model_type} checkpoint with another layout")
        written.append(export_preprocessor(tokenizer, preprocessor_export_dir,
                                           seq_length=seq_length))
    return written


def _export_text_embedding(init_checkpoint, export_dir, pooling, normalize):
    from tfbert.hub import export_text_embedding
    from tfbert.models import SentenceEncoder

    model = SentenceEncoder.from_pretrained(init_checkpoint, pooling=pooling,
                                            normalize=normalize)
    return export_text_embedding(model, export_dir)


def _models(init_checkpoint, family, with_mlm, precision):
    """`(encoder, pretrainer or None)` to export, in `precision`."""
    from tfbert.checkpoints import load_pretrainer, read_checkpoint
    from tfbert.export import serving_model
    from tfbert.models import Encoder

    if family.model_type == "bert":
        checkpoint = read_checkpoint(init_checkpoint)
        if not checkpoint.weights:
            raise ValueError(f"`init_checkpoint`={init_checkpoint} has no "
                             "weights (a random-init preset)")
        heads = checkpoint.weights
    else:
        heads = read_checkpoint(init_checkpoint).weights if with_mlm else {}
    if with_mlm and not any(name.startswith(_MLM_HEAD_PREFIX)
                            for name in heads):
        raise ValueError(f"`with_mlm`: {init_checkpoint} has no masked-LM "
                         "head")
    if with_mlm:
        pretrainer = load_pretrainer(init_checkpoint)
        encoder = pretrainer.encoder
    else:
        pretrainer = None
        encoder = Encoder.from_pretrained(init_checkpoint)
    if encoder.pooler is None:
        raise ValueError(
            f"`init_checkpoint`={init_checkpoint}: a TF Hub BERT encoder "
            f"returns pooled_output, and this {type(encoder).__name__} has "
            "no pooler")
    if pretrainer is None:
        return serving_model(encoder, precision), None
    pretrainer = serving_model(pretrainer, precision)
    return pretrainer.encoder, pretrainer


def run(config):
    """`export_tfhub` as `config` (the fields of `tfbert_cli.export_tfhub`'s
    flags) says; prints each directory written and returns 0."""
    for directory in export_tfhub(
            config.init_checkpoint, config.encoder_export_dir,
            config.preprocessor_export_dir, config.with_mlm,
            config.seq_length, config.export_precision,
            config.text_embedding_export_dir, config.pooling,
            config.normalize):
        print(f"wrote {directory}")
    return 0


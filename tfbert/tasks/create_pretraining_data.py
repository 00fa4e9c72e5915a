r"""Writes static masked-LM pretraining data as TFRecords.

The command line (flags, the checks on their values, --help) is
`tfbert_cli.create_pretraining_data`.
"""

import time

from tfbert.data import pretraining
from tfbert import families
from tfbert.models import BertEncoder
from tfbert.tasks import runner

def run(config):
    """Writes the records `config` (the fields of
    `tfbert_cli.create_pretraining_data`'s flags) describes; returns 0."""
    preprocessor = runner.load_preprocessor(config)
    tokenizer = preprocessor.tokenizer
    objective = (BertEncoder if config.vocab_file
                 else families.family_of(config.init_checkpoint).encoder_class
                 ).sentence_objective
    start = time.perf_counter()
    documents = pretraining.tokenize_documents(
        pretraining.read_corpus(config.input_file.split(",")), tokenizer)
    read_seconds = time.perf_counter() - start
    masking = pretraining.MaskingConfig(
        max_predictions_per_seq=config.max_predictions_per_seq,
        masked_lm_prob=config.masked_lm_prob,
        whole_word_mask=config.do_whole_word_mask)
    instances = pretraining.create_instances(
        documents, tokenizer, max_seq_length=config.max_seq_length,
        short_seq_prob=config.short_seq_prob, dupe_factor=config.dupe_factor,
        masking=masking, seed=config.random_seed, objective=objective,
        layout=preprocessor.layout)
    outputs = pretraining.shard_paths(config.output_file,
                                      config.num_output_shards)
    counts = pretraining.write_instances(
        instances, outputs, config.max_seq_length,
        config.max_predictions_per_seq, pad_id=tokenizer.pad_id)
    seconds = time.perf_counter() - start
    pretraining.write_vocabulary_records(outputs, tokenizer, objective)
    for path, count in zip(outputs, counts):
        print(f"wrote {count} instances to {path}")
    print(f"{len(documents)} documents, {len(instances)} instances in "
          f"{seconds:.1f} s (reading + tokenizing {read_seconds:.1f} s): "
          f"{len(instances) / seconds:.0f} instances/s")
    return 0


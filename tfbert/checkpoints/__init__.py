"""Reading and writing checkpoints of every family: presets, HF (per-family
adapters), Google TF1, keras-hub, TF Hub SavedModels and tfbert's own
`save_pretrained` directories. The models reach it only through
`tfbert.models.checkpoint_entry`."""

from tfbert.checkpoints.loading import (
    FORMATS, Checkpoint, build_encoder, find_vocabulary, load_encoder,
    load_pretrainer, read_checkpoint, save_encoder, save_pretrainer,
    write_checkpoint)
from tfbert.checkpoints.hf_families import load_task_weights
from tfbert.checkpoints.sentence_transformers import read_pipeline
from tfbert.checkpoints.tf_hub import read_hub_checkpoint

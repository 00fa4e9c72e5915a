"""Reading and writing BERT checkpoints: presets, HF, Google TF1, keras-hub."""

from tfbert.checkpoints.loading import (
    FORMATS, Checkpoint, find_vocabulary, load_encoder, load_pretrainer,
    read_checkpoint, save_encoder, save_pretrainer, write_checkpoint)

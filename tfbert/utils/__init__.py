"""Small helpers shared across tfbert that are not about BERT itself."""

from tfbert.utils.atomic import atomic_write, write_json_atomic

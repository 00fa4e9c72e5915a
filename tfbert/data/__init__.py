"""Dataset readers and input pipelines."""

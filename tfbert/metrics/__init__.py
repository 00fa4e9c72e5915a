"""Evaluation metrics computed over whole evaluation sets."""

"""Helpers shared by the pipeline stages: reading tokenizer.json, patterns, numbers."""

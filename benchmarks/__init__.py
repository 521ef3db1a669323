"""Benchmarks run from the repository root: ``python -m benchmarks.bench_runner``."""

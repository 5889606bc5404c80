"""Benchmarks for the performance goals; `make bench` runs bench/run.py."""

"""Benchmarks: ``python -m bench`` (``make bench``) prints cycles/s, per-plugin time, memory."""

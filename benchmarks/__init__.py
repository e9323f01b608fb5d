"""Benchmarks of the loop guard: overhead per step, cost against history, canonical text, memory.

`python -m benchmarks` (or `make bench`) runs every measurement in one process, prints a table
with the machine it ran on, and writes `benchmarks/results.json`. Timings are ratios of
medians taken from interleaved repetitions, so a busy machine slows both sides alike.
"""

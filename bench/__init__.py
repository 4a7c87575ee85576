"""Benchmarks: each bench_<name> module is one command (`python -m bench.bench_<name>`) that prints its
figures as ratios against a baseline measured in the same run. `python -m bench` runs them all."""

"""Benchmarks: `make bench` prints numbers and ratios; no test asserts on time."""

"""Benchmarks of lwec against straightforward dense/sparse references.

Run ``python -m benchmarks --help`` from the source checkout. Every case runs in its
own subprocess so that peak memory (ru_maxrss) is per case.
"""

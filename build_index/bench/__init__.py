"""`toolrec bench`: latency, cold start, memory, index size and build time, printed as figures.

Benchmarks are scripts, not timed tests: these machines are shared and noisy, so every latency is a
median (and p99) over many runs, reported beside the BM25-only path measured in the same run.
"""

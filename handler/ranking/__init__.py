"""The pure ranking core: text analysis, BM25, int8 dense scoring, fusion and top-k.

Nothing in this package does I/O, reads the environment or imports a web or AWS library.
"""

"""The data: cells, replicates, records, results, their schema and the journal's format.

Plain data, read and written by both processes; nothing here imports ``analysis`` or ``render``.
Files from disk are read as untrusted input (``schema``).
"""

"""Executors decide where replicates run and bring them home; they never measure.

``local``: worker processes on this machine, one library at a time.
"""

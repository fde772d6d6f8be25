"""Rendering: tables, plots, HTML, Markdown and CSV drawn from records; it only formats.

``report`` is the facade every caller shows a run through; findings are computed once per run.
Only ``mpl`` imports matplotlib, and nothing imports it to write a table or the HTML report.
"""

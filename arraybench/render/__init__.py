"""Rendering: tables, plots, HTML, Markdown and CSV drawn from records; it only formats.

Nothing here measures or computes a statistic (that is ``analysis``); only the plot modules import
matplotlib, and nothing imports them to write a table or the HTML report.
"""

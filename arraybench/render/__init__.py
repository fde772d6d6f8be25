"""Rendering: tables, plots, HTML, Markdown and CSV drawn from records; it only formats. ``report`` is the
facade every caller shows a run through. Only ``mpl`` imports matplotlib, never to write a table or the HTML report.
"""

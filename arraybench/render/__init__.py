"""Rendering: tables, plots, HTML, Markdown and CSV drawn from records; it only formats.

``report`` is the facade a run is shown through (``Results`` methods, the commands and the API all
use it): it computes a run's findings once and hands them to every format. Nothing here measures or
computes a statistic (that is ``analysis``); the HTML report's markup is in ``templates/``; only
``mpl`` imports matplotlib, and nothing imports it to write a table or the HTML report.
"""

"""arraybench in pytest: the ``arraybench_run`` fixture, the ``arraybench`` marker and the
``--arraybench-*`` options (docs/pytest.md).

``plugin`` is what pytest loads (the ``pytest11`` entry point): hooks and the fixture, importing
nothing of arraybench until a session uses them. ``settings`` reads the options, ``suite`` keeps the
session's measurements and judges them, ``store.refs`` finds the run to compare with in the store.
"""

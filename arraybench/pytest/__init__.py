"""arraybench in pytest: the ``arraybench_run`` fixture, the ``arraybench`` marker and the
``--arraybench-*`` options (docs/pytest.md); ``plugin`` is what pytest loads."""

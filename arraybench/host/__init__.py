"""This machine: its facts (``machine``), its CPU time (``cpu_time``), the variables that change
kernels (``knobs``), the CPUs, threads and allocator state a worker starts with (``threads``), the
builds side by side (``environments``, ``against``) and the commit a run was made at (``git``)."""

"""This machine: its facts (``machine``), its CPU time (``cpu_time``), the variables that change
kernels (``knobs``), the CPUs and environment a worker gets (``threads``, ``allocator``), the
builds side by side (``environments``, ``against``) and the commit a run was made at (``git``)."""

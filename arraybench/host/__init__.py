"""This machine: its facts (``machine``), its CPU time (``cpu_time``), the CPUs, threads, allocator
state and variables that change kernels a worker starts with (``threads``), the builds side by
side (``environments``) and the code as git knows it: the commit a run was made at, and another
measured against it (``git``)."""

"""This machine: its facts (``machine``), its CPU time (``cpu_time``), the CPUs, threads, allocator
state and kernel variables a worker starts with (``threads``), the builds side by side
(``environments``) and the code as git knows it: a run's commit, and one it measures against (``git``)."""

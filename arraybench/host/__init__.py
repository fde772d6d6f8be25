"""This machine, seen from the parent: its facts (``environment``), the variables that change
kernels (``knobs``), the CPUs and environment a worker gets (``threads``), which libraries work here
(``probe``) and the doctor's self-checks, each in a worker process of its own (``doctor``)."""

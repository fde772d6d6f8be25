"""Everything that runs in a worker process: one library, one device, a typed job in, messages out.

``python -m arraybench.worker`` starts one (``main``). The worker prepares each cell on the device
(``prepare``), times it (``timer``, ``sampling``, ``stopping``, ``loops``), reads counters around
the timed loop (``counters``, ``perf_events``), keeps inputs fresh for in-place code (``fresh``),
checks what a call did and how exact it was (``effects``, ``accuracy``, ``finite_diff``), watches
memory and the GPU (``memory``, ``gpu_health``) and runs the doctor's self-checks (``selfcheck``).
Nothing here is imported by the parent to measure: the parent only reads the protocol's messages.
"""

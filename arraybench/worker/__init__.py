"""Everything that runs in a worker process: one library, one device, a typed job in, messages out.

``python -m arraybench.worker`` starts one (``main``). It prepares each cell on the device
(``prepare``), times it with inputs fresh for in-place code (``timer``, ``sampling``), reads
counters around the timed loop (``counters``), looks at what a call did and how
exact it was (``effects``, ``references``, ``accuracy``), measures memory and energy
(``footprint``) and runs the doctor's self-checks (``selfcheck``). The parent only reads the
protocol's messages and heartbeat board (``protocol``).
"""

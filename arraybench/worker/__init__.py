"""Everything that runs in a worker process (``python -m arraybench.worker``): one library, one
device, a typed job in, messages out; the parent reads only ``protocol``'s messages and board."""

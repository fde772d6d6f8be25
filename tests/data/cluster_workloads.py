"""A workload slow enough that a test can kill a cluster node while its shard is under way.

Each call sleeps, so a replicate takes about two seconds whatever the machine's load, and the
second replicate of a shard gives a test a wide window after the first has been journalled.
"""

import time

import arraybench


@arraybench.workload(sizes={"small": 16}, inputs=lambda n, rng: rng.standard_normal(n),
                     reference=lambda x: 2 * x)
def slow(xp, x):
    time.sleep(0.4)
    return 2 * x

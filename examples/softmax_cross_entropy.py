"""Softmax cross-entropy over a batch: the loss at the end of every classifier.

Each row of ``logits`` holds one example's scores for ``CLASSES`` classes and ``labels`` the right
class; the result is each example's loss, ``log(sum(exp(logits))) - logits[label]``, computed the
stable way (shift by the row's max first, so ``exp`` never overflows). The size ``n`` is the batch.

    arraybench run --workload-files examples/softmax_cross_entropy.py
"""

import numpy as np

import arraybench

#: Classes per example (a fixed "vocabulary"; the size of the run is the batch).
CLASSES = 512


def make_batch(n, rng):
    logits = 3.0 * rng.standard_normal((n, CLASSES))
    labels = rng.integers(0, CLASSES, size=n)  # int64: kept as is, never cast to the run's dtype
    return logits, labels


def reference(logits, labels):
    """NumPy float64, written independently of the xp version: log-softmax, then pick the label."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_softmax[np.arange(len(labels)), labels]


@arraybench.workload(
    sizes={"small": 256, "large": 16_384},
    inputs=make_batch,
    reference=reference,
    # Each loss is a log of a sum of CLASSES exponentials: its rounding error can grow with the
    # length of that sum, so the bound is CLASSES ulps of the batch's largest loss.
    check=arraybench.Check.normwise(growth=lambda n: CLASSES),
    # Per logit: max, subtract, exp, add; per row: log, subtract. Reads the logits and labels once,
    # writes one loss per row.
    work=lambda n, itemsize: arraybench.Work(
        flops=4 * n * CLASSES + 2 * n,
        bytes=n * CLASSES * itemsize + 8 * n + n * itemsize,
    ),
)
def softmax_cross_entropy(xp, logits, labels):
    """per-example softmax cross-entropy of a batch of logits (512 classes; n = batch size)"""
    shifted = logits - xp.max(logits, axis=1, keepdims=True)
    log_sum_exp = xp.log(xp.sum(xp.exp(shifted), axis=1))
    picked = xp.take_along_axis(shifted, labels[:, None], axis=1)[:, 0]
    return log_sum_exp - picked

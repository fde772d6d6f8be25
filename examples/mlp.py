"""A small multilayer perceptron: its forward pass, and its forward and backward pass.

``tanh(x @ W1 + b1) @ W2 + b2`` gives the logits of each example and the loss is their mean softmax
cross-entropy. The weights travel as one flat vector, the first input, so that ``grad=True`` times
the gradient of the loss with respect to all of them: ``jax.grad`` on JAX, autograd on PyTorch,
forward finite differences on NumPy (one extra forward pass per weight: the cost autodiff avoids).
The size ``n`` is the batch.

    arraybench run --workload-files examples/mlp.py
"""

import numpy as np

import arraybench

N_IN, N_HIDDEN, N_OUT = 16, 32, 4
#: Weights and biases of both layers, packed into one vector.
N_PARAMS = N_IN * N_HIDDEN + N_HIDDEN + N_HIDDEN * N_OUT + N_OUT


def unpack(xp, params):
    """W1, b1, W2, b2 as views of the flat parameter vector."""
    at = 0
    pieces = []
    for shape in ((N_IN, N_HIDDEN), (N_HIDDEN,), (N_HIDDEN, N_OUT), (N_OUT,)):
        size = int(np.prod(shape))
        pieces.append(xp.reshape(params[at:at + size], shape))
        at += size
    return pieces


def make_batch(n, rng):
    # Glorot-scaled weights, so the hidden layer neither saturates nor vanishes.
    w1 = rng.standard_normal((N_IN, N_HIDDEN)) * np.sqrt(2.0 / (N_IN + N_HIDDEN))
    b1 = 0.1 * rng.standard_normal(N_HIDDEN)
    w2 = rng.standard_normal((N_HIDDEN, N_OUT)) * np.sqrt(2.0 / (N_HIDDEN + N_OUT))
    b2 = 0.1 * rng.standard_normal(N_OUT)
    params = np.concatenate([w1.ravel(), b1, w2.ravel(), b2])
    x = rng.standard_normal((n, N_IN))
    labels = rng.integers(0, N_OUT, size=n)
    return params, x, labels


def loss(xp, params, x, labels):
    w1, b1, w2, b2 = unpack(xp, params)
    hidden = xp.tanh(x @ w1 + b1)
    logits = hidden @ w2 + b2
    shifted = logits - xp.max(logits, axis=1, keepdims=True)
    log_sum_exp = xp.log(xp.sum(xp.exp(shifted), axis=1))
    picked = xp.take_along_axis(shifted, labels[:, None], axis=1)[:, 0]
    return xp.mean(log_sum_exp - picked)


def _forward_np(params, x):
    w1, b1, w2, b2 = unpack(np, params)
    hidden = np.tanh(x @ w1 + b1)
    logits = hidden @ w2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted)
    probs /= probs.sum(axis=1, keepdims=True)
    return hidden, shifted, probs


def reference_loss(params, x, labels):
    """NumPy float64 loss, by log-softmax."""
    _, shifted, probs = _forward_np(params, x)
    return np.mean(-np.log(probs[np.arange(len(labels)), labels]))


def reference_gradient(params, x, labels):
    """NumPy float64 gradient, by hand-written backpropagation (exact, not finite differences)."""
    w1, b1, w2, b2 = unpack(np, params)
    hidden, _, probs = _forward_np(params, x)
    n = x.shape[0]
    d_logits = probs.copy()
    d_logits[np.arange(n), labels] -= 1.0
    d_logits /= n
    d_hidden = (d_logits @ w2.T) * (1.0 - hidden**2)
    return np.concatenate([
        (x.T @ d_hidden).ravel(), d_hidden.sum(axis=0),
        (hidden.T @ d_logits).ravel(), d_logits.sum(axis=0),
    ])


def _forward_flops(n):
    # Two matrix products, then tanh on the hidden layer and ~5 operations per logit.
    return 2 * n * (N_IN * N_HIDDEN + N_HIDDEN * N_OUT) + n * N_HIDDEN + 5 * n * N_OUT


@arraybench.workload(
    sizes={"small": 64, "large": 4_096},
    inputs=make_batch,
    reference=reference_loss,
    # A mean over the batch of sums over the hidden layer: rounding can grow with both lengths.
    check=arraybench.Check.normwise(growth=lambda n: n + N_HIDDEN, matmul=True),
    work=lambda n, itemsize: arraybench.Work(
        flops=_forward_flops(n),
        bytes=(N_PARAMS + n * N_IN + 1) * itemsize + 8 * n,
    ),
)
def mlp_forward(xp, params, x, labels):
    """MLP 16-32-4 (tanh), mean softmax cross-entropy of a batch of n: the forward pass"""
    return loss(xp, params, x, labels)


@arraybench.workload(
    sizes={"small": 64, "large": 4_096},
    inputs=make_batch,
    reference=reference_gradient,
    grad=True,
    # Weight gradients are sums over the batch, through the hidden layer: growth with both lengths.
    # This bounds autodiff. NumPy's forward differences are judged by arraybench's own
    # finite-difference bound instead (at most 1%): in float32 they come out ~0.4-0.8% off here,
    # the float32 rounding of a loss of ~1.4 divided by a step of sqrt(eps) ~ 3e-4.
    check=arraybench.Check.normwise(growth=lambda n: n + N_HIDDEN, matmul=True),
    # Backpropagation costs about twice the forward pass (two products per layer instead of one).
    # Reads the weights, the batch and the labels, writes one gradient per weight.
    work=lambda n, itemsize: arraybench.Work(
        flops=3 * _forward_flops(n),
        bytes=(2 * N_PARAMS + n * N_IN) * itemsize + 8 * n,
    ),
)
def mlp_forward_backward(xp, params, x, labels):
    """MLP 16-32-4: gradient of the loss w.r.t. its 676 weights (forward + backward pass; n = batch)"""
    return loss(xp, params, x, labels)

"""One iteration of k-means (Lloyd's algorithm): assign each point to its nearest centroid, then
move every centroid to the mean of its points.

Distances use the expansion ``|x|^2 - 2 x.c + |c|^2`` (one matrix product, as scikit-learn does) and
the new centroids another product, with a one-hot matrix of the assignments, so the whole step is
array operations with no Python loop over clusters. The size ``n`` is the number of points.

    arraybench run --workload-files examples/kmeans.py
"""

import array_api_compat

import arraybench

K = 8   # clusters
D = 16  # features per point


def make_points(n, rng):
    # Clusters well apart (centres ~57 apart, points within ~4 of theirs) with the centroids of a
    # previous iteration nearby: every point has one clear nearest centroid. With points halfway
    # between two centroids, float32 rounding of the distances could flip an assignment; the
    # float64 reference would then disagree with a correct float32 result by a whole point.
    centres = 10.0 * rng.standard_normal((K, D))
    points = centres[rng.integers(0, K, size=n)] + rng.standard_normal((n, D))
    centroids = centres + 0.5 * rng.standard_normal((K, D))
    return points, centroids


def reference(points, centroids):
    """NumPy float64, the direct way: every distance explicitly, a loop over clusters for the means."""
    distances = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    labels = distances.argmin(axis=1)
    new = centroids.copy()
    for k in range(K):
        members = points[labels == k]
        if len(members):
            new[k] = members.mean(axis=0)
    return labels, new


@arraybench.workload(
    sizes={"small": 2_000, "large": 200_000},
    inputs=make_points,
    reference=reference,
    # The labels must match exactly (any difference is a whole cluster index, far above the bound);
    # each new centroid is a sum over its ~n/K points, whose rounding error can grow with that length.
    check=arraybench.Check.normwise(growth=lambda n: n / K, matmul=True),  # TF32 when allowed
    # Two n x K x D products (distances, sums) dominate; norms, argmin and the one-hot are O(nK + nD).
    # Reads the points once, writes a label per point and the K centroids.
    work=lambda n, itemsize: arraybench.Work(
        flops=4 * n * K * D + 2 * n * D + 6 * n * K + 3 * K * D,
        bytes=(n * D + 2 * K * D) * itemsize + 8 * n,
    ),
)
def kmeans_step(xp, points, centroids):
    """one k-means iteration: nearest centroid for each point, then new centroids (K=8, D=16; n points)"""
    distances = (xp.sum(points * points, axis=1)[:, None]
                 - 2.0 * (points @ centroids.T)
                 + xp.sum(centroids * centroids, axis=1)[None, :])
    labels = xp.argmin(distances, axis=1)
    # New arrays go where the data is (a GPU), as the standard's device= says.
    clusters = xp.arange(K, device=array_api_compat.device(points))
    one_hot = xp.astype(labels[:, None] == clusters[None, :], points.dtype)
    counts = xp.sum(one_hot, axis=0)
    sums = one_hot.T @ points
    means = sums / xp.maximum(counts, xp.ones_like(counts))[:, None]
    # A cluster that lost all its points keeps its centroid.
    return labels, xp.where(counts[:, None] > 0, means, centroids)

"""Similarities and distances between embeddings, shared by the losses."""

from keras import ops

DISTANCES = ("cosine", "euclidean", "manhattan")


def l2_normalized(x):
    """`x / max(||x||, 1e-12)` over the last axis."""
    norm = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))
    return x / ops.maximum(norm, 1e-12)


def cosine_matrix(a, b):
    """Cosine similarity of every row of a [n, D] with every row of b
    [m, D]: float32 [n, m]."""
    return ops.matmul(l2_normalized(a), ops.transpose(l2_normalized(b)))


def pairwise_cosine(a, b):
    """Cosine similarity of row i of a with row i of b: [n]."""
    return ops.sum(l2_normalized(a) * l2_normalized(b), axis=-1)


def pairwise_distance(a, b, metric):
    """Distance of row i of a [n, D] to row i of b [n, D]: [n].

    Args:
      metric: "cosine" (1 - cosine similarity), "euclidean" or "manhattan".
    """
    if metric == "cosine":
        return 1.0 - pairwise_cosine(a, b)
    if metric == "euclidean":
        return ops.sqrt(ops.sum(ops.square(a - b), axis=-1))
    if metric == "manhattan":
        return ops.sum(ops.abs(a - b), axis=-1)
    raise ValueError(f"distance_metric must be one of {DISTANCES}, got "
                     f"{metric!r}")


def check_metric(metric):
    if metric not in DISTANCES:
        raise ValueError(f"distance_metric must be one of {DISTANCES}, got "
                         f"{metric!r}")
    return metric


def columns(y_pred, count=None, owner="loss"):
    """The k columns of y_pred [batch, k, D] as a list of [batch, D]; with
    `count`, exactly that many are required."""
    if len(y_pred.shape) != 3:
        raise ValueError(f"{owner} takes embeddings [batch, k, D], got shape "
                         f"{tuple(y_pred.shape)}")
    k = y_pred.shape[1]
    if count is not None and k != count:
        raise ValueError(f"{owner} takes {count} text columns, got {k}")
    return [y_pred[:, i] for i in range(k)]

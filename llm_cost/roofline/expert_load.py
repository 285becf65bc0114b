"""The busiest GPU of an expert-parallel MoE layer: a step waits for it, not for the average GPU.

Symbols: N routed experts, top-k per token, ep GPUs holding g = N / ep whole experts each, m rows
routed into the layer (every replica's rows meet there).

Bytes. Under uniform top-k routing an expert is touched by at least one of m rows with probability
p = 1 - (1 - k/N)^m (exact: `expected_experts_touched` is N p). Taking the g experts of a GPU as
touched independently, a GPU reads D ~ Binomial(g, p) experts, and the busiest GPU of ep

    E[max D] = sum_{j=0}^{g-1} (1 - F(j)^ep) / (1 - (1 - p)^N)       (F: the Binomial(g, p) CDF)

conditioned on at least one expert touched (always so for m >= 1: the independent model alone
would let every GPU be idle). Mixtral (N 8, k 2) on ep 8 at m = 1: p = 1/4, g = 1, and
E[max D] = (1 - (3/4)^8) / (1 - (3/4)^8) = 1: two GPUs each read one whole expert per layer, and
the step waits for one of them (the average GPU reads 1/4 of an expert). As m grows p -> 1 and
E[max D] -> g: every GPU reads all its experts, the average.

FLOPs. A GPU's routed (token, expert) pairs X have mean mu = m k / ep; a token sends
c = min(k, g) pairs at most to one GPU, so X ~ Binomial(m c, k / (ep c)) (same mean), and the
busiest of ep is about mu + sigma z_ep (z_ep: the expected largest of ep standard normals, Blom's
approximation Phi^-1((ep - 0.375) / (ep + 0.25)); 1.43 for ep 8, exactly 1.424), kept within [max(mu, 1), m c].
The factor E[max X] / mu multiplies the routed experts' share of a row's FLOPs.

Both are 1 (the average GPU) when ep is 1: experts sharded over tp have no imbalance.
Numbers or numpy arrays of m (broadcast); nothing is checked.
"""

from __future__ import annotations

import math

from llm_cost.roofline.pass_terms import clip_to


def largest_normal_z(n: int) -> float:
    """E[max of `n` standard normals], Blom (1958): Phi^-1((n - 0.375) / (n + 0.25)); 0 for n = 1.

    >>> round(largest_normal_z(8), 2), round(largest_normal_z(2), 2)
    (1.43, 0.59)
    """
    if n <= 1:
        return 0.0
    from statistics import NormalDist  # here: `statistics` is 2% of the CLI's start, and MoE under ep alone reads it

    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25))


def busiest_gpu_experts(num_experts: int, experts_per_token: int, rows, ep: int):
    """Routed experts per layer the busiest of `ep` GPUs reads for `rows` routed rows (module doc):
    sum_{j<g} (1 - F(j)^ep) / (1 - (1 - p)^N), p = 1 - (1 - k/N)^m, g = N / ep. In the code `n` is N,
    `k` top-k, `g` and `p` as here, `q` = 1 - p and `j` the sum's index.

    >>> busiest_gpu_experts(8, 2, 1, 8)
    1.0
    >>> round(busiest_gpu_experts(8, 2, 1, 8) * 8 / 2, 2)  # x the average GPU's 2 / 8
    4.0
    """
    n, k = num_experts, experts_per_token
    g = n // ep
    p = 1.0 - (1.0 - k / n) ** rows
    q = 1.0 - p
    cdf, total = 0.0, 0.0
    for j in range(g):
        cdf = cdf + math.comb(g, j) * p ** j * q ** (g - j)
        total = total + (1.0 - cdf ** ep)
    some = 1.0 - q ** n
    return total / (some + (some == 0))  # m = 0: nothing touched, 0


def busiest_gpu_pairs_factor(num_experts: int, experts_per_token: int, rows, ep: int, z: float):
    """E[max X] / mu: the busiest GPU's routed (token, expert) pairs over the average GPU's
    (module doc; `z` = `largest_normal_z(ep)`), for `rows` routed rows. In the code `n` is N experts,
    `k` top-k, `c` = min(k, N / ep) a token's pairs at most on one GPU and `q` = k / (ep c), a pair's
    chance, so the pairs are Binomial(rows c, q).

    >>> busiest_gpu_pairs_factor(8, 2, 1, 8, largest_normal_z(8))  # one pair on a GPU, mean 1/4
    4.0
    """
    n, k = num_experts, experts_per_token
    c = min(k, n // ep)
    mean = rows * k / ep
    q = k / (ep * c)
    spread = (rows * c * q * (1.0 - q)) ** 0.5
    busiest = mean + spread * z
    low = _larger(mean, 1.0)
    busiest = clip_to(busiest, low, rows * c)
    return busiest / (mean + (mean == 0))


def _larger(x, y):
    """max(`x`, `y`) for a number or a numpy array `x`."""
    if isinstance(x, (int, float)):
        return x if x > y else y
    import numpy as np

    return np.maximum(x, y)

# Copyright 2014 Jérôme Kieffer et al.
# This is an open-access article distributed under the terms of the
# Creative Commons Attribution License, which permits unrestricted use,
# distribution, and reproduction in any medium, provided the original author
# and source are credited.
# http://creativecommons.org/licenses/by/3.0/
# Jérôme Kieffer and Giannis Ashiotis. Pyfai: a python library for
# high performance azimuthal integration on gpu, 2014. In Proceedings of the
# 7th European Conference on Python in Science (EuroSciPy 2014).

import jax
import jax.numpy as jnp
from jax import lax
from functools import partial


@partial(jax.jit, static_argnums=(2,))  
def azimint_naive(data, radius, npt):
    rmax = radius.max()
    res = jnp.zeros(npt, dtype=jnp.float64)

    def loop_body(i, res):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        mask_r12 = jnp.logical_and((r1 <= radius), (radius < r2))
        mean = jnp.where(mask_r12, data, 0).mean(where=mask_r12)
        res = res.at[i].set(mean)
        return res

    res = lax.fori_loop(0, npt, loop_body, res)

    return res

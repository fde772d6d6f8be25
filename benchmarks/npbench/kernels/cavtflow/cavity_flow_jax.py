# Barba, Lorena A., and Forsyth, Gilbert F. (2018).
# CFD Python: the 12 steps to Navier-Stokes equations.
# Journal of Open Source Education, 1(9), 21,
# https://doi.org/10.21105/jose.00021
# TODO: License
# (c) 2017 Lorena A. Barba, Gilbert F. Forsyth.
# All content is under Creative Commons Attribution CC-BY 4.0,
# and all code is under BSD-3 clause (previously under MIT, and changed on March 8, 2018).

import jax.numpy as jnp
import jax
from jax import lax
from functools import partial


@partial(jax.jit, static_argnums=(1,))
def build_up_b(b, rho, dt, u, v, dx, dy):

    b = b.at[1:-1,
      1:-1].set(rho * (1 / dt * ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx) +
                                (v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy)) -
                      ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx))**2 - 2 *
                      ((u[2:, 1:-1] - u[0:-2, 1:-1]) / (2 * dy) *
                       (v[1:-1, 2:] - v[1:-1, 0:-2]) / (2 * dx)) -
                      ((v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy))**2))
    
    return b


@partial(jax.jit, static_argnums=(0,))
def pressure_poisson(nit, p, dx, dy, b):
    def body_func(p, _):
        pn = p.copy()
        p = p.at[1:-1, 1:-1].set(((pn[1:-1, 2:] + pn[1:-1, 0:-2]) * dy**2 +
                          (pn[2:, 1:-1] + pn[0:-2, 1:-1]) * dx**2) /
                         (2 * (dx**2 + dy**2)) - dx**2 * dy**2 /
                         (2 * (dx**2 + dy**2)) * b[1:-1, 1:-1])

        p = p.at[:, -1].set(p[:, -2])  # dp/dx = 0 at x = 2
        p = p.at[0, :].set(p[1, :])  # dp/dy = 0 at y = 0
        p = p.at[:, 0].set(p[:, 1])  # dp/dx = 0 at x = 0
        p = p.at[-1, :].set(0)  # p = 0 at y = 2

        return p, None
    
    p, _ = lax.scan(body_func, p, jnp.arange(nit))

    return p


@partial(jax.jit, static_argnums=(0,1,2,3,10,11,))
def cavity_flow(nx, ny, nt, nit, u, v, dt, dx, dy, p, rho, nu):
    b = jnp.zeros((ny, nx))
    array_vals = (u, v, p, b)

    def body_func(array_vals, _):
        
        u, v, p, b = array_vals

        un = u.copy()
        vn = v.copy()

        b = build_up_b(b, rho, dt, u, v, dx, dy)
        p = pressure_poisson(nit, p, dx, dy, b)

        u = u.at[1:-1,
          1:-1].set(un[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx *
                   (un[1:-1, 1:-1] - un[1:-1, 0:-2]) -
                   vn[1:-1, 1:-1] * dt / dy *
                   (un[1:-1, 1:-1] - un[0:-2, 1:-1]) - dt / (2 * rho * dx) *
                   (p[1:-1, 2:] - p[1:-1, 0:-2]) + nu *
                   (dt / dx**2 *
                    (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, 0:-2]) +
                    dt / dy**2 *
                    (un[2:, 1:-1] - 2 * un[1:-1, 1:-1] + un[0:-2, 1:-1])))

        v = v.at[1:-1,
          1:-1].set(vn[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx *
                   (vn[1:-1, 1:-1] - vn[1:-1, 0:-2]) -
                   vn[1:-1, 1:-1] * dt / dy *
                   (vn[1:-1, 1:-1] - vn[0:-2, 1:-1]) - dt / (2 * rho * dy) *
                   (p[2:, 1:-1] - p[0:-2, 1:-1]) + nu *
                   (dt / dx**2 *
                    (vn[1:-1, 2:] - 2 * vn[1:-1, 1:-1] + vn[1:-1, 0:-2]) +
                    dt / dy**2 *
                    (vn[2:, 1:-1] - 2 * vn[1:-1, 1:-1] + vn[0:-2, 1:-1])))

        u = u.at[0, :].set(0)
        u = u.at[:, 0].set(0)
        u = u.at[:, -1].set(0)
        u = u.at[-1, :].set(1)  # set velocity on cavity lid equal to 1
        v = v.at[0, :].set(0)
        v = v.at[-1, :].set(0)
        v = v.at[:, 0].set(0)
        v = v.at[:, -1].set(0)

        return (u, v, p, b), None
    
    out_vals, _ = lax.scan(body_func, array_vals, jnp.arange(nt))
    u, v, p, b = out_vals

    return u, v, p

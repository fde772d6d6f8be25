import jax
import jax.numpy as jnp
from jax import lax

def kernel(TSTEPS, N, u):

    v = jnp.zeros_like(u)
    p = jnp.zeros_like(u)
    q = jnp.zeros_like(u)

    DX = 1.0 / N
    DY = 1.0 / N
    DT = 1.0 / TSTEPS
    B1 = 2.0
    B2 = 1.0
    mul1 = B1 * DT / (DX * DX)
    mul2 = B2 * DT / (DY * DY)

    a = -mul1 / 2.0
    b = 1.0 + mul2
    c = a
    d = -mul2 / 2.0
    e = 1.0 + mul2
    f = d

    def first_j_loop_body(j, carry):
        p, q, u = carry
        p = p.at[1:N-1, j].set(-c / (a * p[1:N-1, j-1] + b))
        q = q.at[1:N-1, j].set(
            (-d * u[j, 0:N-2] + (1.0 + 2.0 * d) * u[j, 1:N-1] - f * u[j, 2:N] -
             a * q[1:N-1, j-1]) / (a * p[1:N-1, j-1] + b))
        return (p, q, u)

    def first_backward_j_loop_body(j, carry):
        v, p, q = carry
        idx = N-2-j
        v = v.at[idx, 1:N-1].set(p[1:N-1, idx] * v[idx+1, 1:N-1] + q[1:N-1, idx])
        return (v, p, q)

    def second_j_loop_body(j, carry):
        p, q, v = carry
        p = p.at[1:N-1, j].set(-f / (d * p[1:N-1, j-1] + e))
        q = q.at[1:N-1, j].set(
            (-a * v[0:N-2, j] + (1.0 + 2.0 * a) * v[1:N-1, j] - c * v[2:N, j] -
             d * q[1:N-1, j-1]) / (d * p[1:N-1, j-1] + e))
        return (p, q, v)

    def second_backward_j_loop_body(j, carry):
        u, p, q = carry
        idx = N-2-j
        u = u.at[1:N-1, idx].set(p[1:N-1, idx] * u[1:N-1, idx+1] + q[1:N-1, idx])
        return (u, p, q)

    def time_step_body(t, carry):
        u, v, p, q = carry

        v = v.at[0, 1:N-1].set(1.0)
        p = p.at[1:N-1, 0].set(0.0)
        q = q.at[1:N-1, 0].set(v[0, 1:N-1])

        p, q, u = lax.fori_loop(1, N-1, first_j_loop_body, (p, q, u))

        v = v.at[N-1, 1:N-1].set(1.0)

        v, p, q = lax.fori_loop(0, N-2, first_backward_j_loop_body, (v, p, q))

        u = u.at[1:N-1, 0].set(1.0)
        p = p.at[1:N-1, 0].set(0.0)
        q = q.at[1:N-1, 0].set(u[1:N-1, 0])

        p, q, v = lax.fori_loop(1, N-1, second_j_loop_body, (p, q, v))

        u = u.at[1:N-1, N-1].set(1.0)

        u, p, q = lax.fori_loop(0, N-2, second_backward_j_loop_body, (u, p, q))

        return (u, v, p, q)

    u, v, p, q = lax.fori_loop(1, TSTEPS + 1, time_step_body, (u, v, p, q))

    return u
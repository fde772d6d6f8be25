"""The timed loops, generated as source and compiled as ``timeit`` does.

A loop adds no more than a tight ``timeit`` loop would: no closure layer, no ``*args`` unpacking,
no sync call for libraries that compute synchronously. ``timer.Timer`` is their only user.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence


_LOOP_TEMPLATE = """
def _loop(_it, _op, {params}_sync, _clock, _dt):
{body}
"""


def _loop_source(arity: int, mode: str, has_sync: bool, has_device_timer: bool,
                 keywords: Sequence[str] = (), pooled: bool = False) -> str:
    """The timed loop. ``keywords``: settings passed by name (``_op(_a0, tsteps=_k0)``).
    ``pooled``: ``_it`` is a pool of argument tuples, one per call (inputs a call changes, fresh
    for each), instead of a range over the same arguments."""
    args = ", ".join([f"_a{i}" for i in range(arity)] + [f"{k}=_k{j}" for j, k in enumerate(keywords)])
    call = f"_op({args})"
    settings = "".join(f"_k{j}, " for j in range(len(keywords)))
    params = settings if pooled else "".join(f"_a{i}, " for i in range(arity)) + settings
    # A pool's tuples unpack in the for statement itself, as cheap as timeit's own loop variable.
    each = ("(" + "".join(f"_a{i}, " for i in range(arity)) + ")") if pooled else "_"
    lines: list[str] = []
    if mode == "device":
        # The device pass of latency mode (cupyx.profiler.benchmark's convention: events around
        # each call, then wait). It reads no clock: recording, waiting for and reading two events
        # costs microseconds per call that a wall-clock sample must not carry, or torch and CuPy
        # would pay them and JAX, which has no events, would not. ``hold`` first queues a kernel
        # that keeps the stream busy while the call is issued (nvbench's blocking kernel), so the
        # events time the call's kernels, not the host issuing them.
        lines += [
            "    _dev = 0.0",
            f"    for {each} in _it:",
            "        _dt.hold()",
            "        _dt.begin()",
            f"        _r = {call}",
            "        _dt.end()",
            "        _sync(_r)",
            "        _dev += _dt.elapsed()",
            "    return None, _dev",
        ]
    elif mode == "latency":
        stmt = f"_sync({call})" if has_sync else call
        lines += [
            "    _t0 = _clock()",
            f"    for {each} in _it:",
            f"        {stmt}",
            "    _t1 = _clock()",
            "    return _t1 - _t0, None",
        ]
    else:  # throughput: issue the whole batch, wait once, at the end
        # One event pair per batch: the end event's record is the one event call inside the
        # wall-clock span, once per batch, not once per call.
        lines += ["    _keep = []", "    _push = _keep.append"]
        if has_device_timer:
            lines.append("    _dt.begin()")
        lines += [
            "    _t0 = _clock()",
            f"    for {each} in _it:",
            f"        _push({call})",
        ]
        if has_device_timer:
            lines.append("    _dt.end()")
        if has_sync:
            lines.append("    _sync(_keep)")
        lines.append("    _t1 = _clock()")
        lines.append("    return _t1 - _t0, " + ("_dt.elapsed()" if has_device_timer else "None"))
    return _LOOP_TEMPLATE.format(params=params, body="\n".join(lines))


def compile_loop(arity: int, mode: str, has_sync: bool, has_device_timer: bool,
                  keywords: Sequence[str] = (), pooled: bool = False) -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    source = _loop_source(arity, mode, has_sync, has_device_timer, keywords, pooled)
    exec(compile(source, f"<arraybench timer loop {mode}/{arity}>", "exec"), namespace)
    return namespace["_loop"]

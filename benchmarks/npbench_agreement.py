"""Does arraybench time NPBench's kernels as NPBench does? The JAX/NumPy ratio, both ways, for 53 kernels.

NPBench (spcl/npbench) times each kernel in a plain process: ``initialize`` builds the data, a
first call compiles (JAX) and validates, then ``timeit.repeat(number=1, repeat=10)`` with every
array argument copied in the setup, outside the timer, and JAX's call wrapped in
``jax.block_until_ready``; its figure is the median.

This script times every kernel with a JAX implementation both ways, at NPBench's "S" preset:

(a) NPBench's way: ``benchmarks/npbench/plain.py``, one plain subprocess per library, started
    with the environment this script was started with (nothing of arraybench's: no allocator
    variables, no thread limits);
(b) arraybench's way: one ``arraybench.run`` of the same code as workloads (NumPy's kernel the
    workload, JAX's an override; NPBench's scalars as settings, the arrays it copies in ``mutates=``)
    on NumPy and JAX.

It prints, per kernel, each library's median both ways, the JAX/NumPy ratio both ways, and how many
kernels' ratios agree within [0.67, 1.5]x. arraybench's headline is the allocator state "reused"
(chosen so that a cell's time does not depend on what its process allocated before:
``model/replicate``); ``--plain-env reused`` runs the plain processes in that state too, which
separates what the state does from what the harness does.

NPBench's code is read from a checkout the user keeps, not from this repository: ``git clone
https://github.com/spcl/npbench``, then from the repository root ``nice python
benchmarks/npbench_agreement.py --npbench PATH/TO/npbench`` (or set ``ARRAYBENCH_NPBENCH``; a few
minutes on two cores; ``--kernels ludcmp,symm`` for some). On a shared machine the figures are
indicative.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE / "npbench"))

import arraybench  # noqa: E402
import loader  # noqa: E402
from arraybench.model.replicate import environment as allocator_env  # noqa: E402

AGREE = (0.67, 1.5)
#: Where JAX's kernel returns the arrays NumPy's changes in another order, ``mutates=`` follows
#: JAX's return, so both results are compared array by array.
RESULT_ORDER = {"gemver": ("A", "x", "w")}
#: Where JAX's kernel returns more than the arrays NumPy's changes: the part that is the result.
JAX_PICK = {"fdtd_2d": "[:3]", "vadv": "[3]"}


def changed_by_numpy(name: str, preset: str) -> tuple[str, ...]:
    """The array arguments NumPy's kernel changes in place (bench_info's output_args miss some:
    doitgen's A, trisolv's x, scattering_self_energies' Sigma), found by calling it once."""
    bench, data = loader.info(name), loader.data(name, preset)
    before = {a: np.array(data[a], copy=True) for a in bench["array_args"]}
    loader.implementation(name, "numpy")(*[data[a] for a in bench["input_args"]])
    return tuple(a for a in bench["array_args"]
                 if not np.array_equal(before[a], data[a], equal_nan=before[a].dtype.kind in "fc"))


def plain_times(library: str, kernels: list[str], preset: str, env: dict[str, str]) -> dict[str, dict[str, Any]]:
    """(a): NPBench's median per kernel, from one plain process of ``library``."""
    proc = subprocess.run([sys.executable, str(HERE / "npbench" / "plain.py"), library, preset, *kernels],
                          capture_output=True, text=True, env=env, cwd=HERE / "npbench")
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0:
        print(f"plain {library} process ended with {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return {d["name"]: d for d in lines}


def _literal(value: Any) -> str:
    """A setting's default as source text: Python and NumPy scalars keep their type."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        return f"np.{type(value).__name__}({value.item()!r})"
    return repr(value)


def workload_source(kernels: list[str], preset: str, root: Path) -> str:
    """(b): a workload file defining each kernel as an arraybench workload, NumPy's and JAX's code
    read from the NPBench checkout at ``root``."""
    lines = ["import sys", "import numpy as np", "import arraybench",
             f"sys.path.insert(0, {str(HERE / 'npbench')!r})", "import loader",
             f"loader.use({str(root)!r})", "",
             "def _arrays(name, preset):",
             "    bench, data = loader.info(name), loader.data(name, preset)",
             "    out = {}",
             "    for a in bench['array_args']:",
             "        v = np.asarray(data[a])",
             "        # A dtype NPBench chose (float32, complex) stays as it is; float64 follows --dtype.",
             "        out[a] = arraybench.fixed(v) if v.dtype.kind in 'fc' and v.dtype != np.float64 else v",
             "    return out", ""]
    for name in kernels:
        bench, data = loader.info(name), loader.data(name, preset)
        arrays = bench["array_args"]
        settings = ", ".join(f"{s}={_literal(data[s])}" for s in loader.scalar_args(name))
        params = ", ".join(["xp", *arrays] + ([f"*, {settings}"] if settings else []))
        call = ", ".join(bench["input_args"])
        # heat_3d writes values equal to those there (the Laplacian of its linear start is 0):
        # bench_info's output_args then, since the kernel does write them.
        mutated = (RESULT_ORDER.get(name) or changed_by_numpy(name, preset)
                   or tuple(a for a in bench.get("output_args", []) if a in arrays))
        fn = "npb_" + name
        lines += [f"@arraybench.workload(name={fn!r}, sizes={{{preset!r}: 1}}, "
                  f"inputs=lambda n: _arrays({name!r}, {preset!r}), mutates={mutated!r} or None)",
                  f"def {fn}({params}):",
                  f"    return loader.implementation({name!r}, 'numpy')({call})", "",
                  f"@{fn}.override('jax', namespace='native')",
                  f"def _{fn}_jax({params.replace('xp', 'jnp', 1)}):",
                  f"    return loader.implementation({name!r}, 'jax')({call}){JAX_PICK.get(name, '')}", ""]
    return "\n".join(lines)


def ratio(jax_s: float | None, numpy_s: float | None) -> float | None:
    return jax_s / numpy_s if jax_s and numpy_s else None


def main(argv: list[str] | None = None) -> int:
    """Time the kernels both ways and print the table; 2 where no NPBench checkout is named."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", default="", help="comma-separated short names (default: every one with a JAX kernel, 53 at f2d7f27)")
    parser.add_argument("--preset", default="S")
    parser.add_argument("--plain-env", choices=("user", "reused"), default="user",
                        help="the plain processes' allocator: the caller's (NPBench's), or arraybench's headline")
    parser.add_argument("--max-time", type=float, default=0.3, help="arraybench's seconds of sampling per cell")
    parser.add_argument("--npbench", metavar="DIR", default=None,
                        help=f"an NPBench checkout (default: ${loader.ENV})")
    args = parser.parse_args(argv)
    try:
        root = loader.locate(args.npbench)
    except loader.NoCheckout as exc:
        print(f"npbench_agreement: {exc}", file=sys.stderr)
        return 2
    loader.use(root)
    kernels = args.kernels.split(",") if args.kernels else loader.names()
    started = time.perf_counter()

    # The plain processes find the checkout as loader does when not told: by the variable.
    env = dict(os.environ, **{loader.ENV: str(root)})
    if args.plain_env == "reused":
        env.update(allocator_env("reused"))
    plain = {lib: plain_times(lib, kernels, args.preset, env) for lib in ("numpy", "jax")}

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "npbench_workloads.py"
        path.write_text(workload_source(kernels, args.preset, root))
        results = arraybench.run([f"npb_{k}" for k in kernels], workload_files=[str(path)],
                                 backends="numpy,jax", devices="cpu", dtype="float64", processes=2,
                                 max_processes=2, max_time=args.max_time, store=False, plots=False,
                                 progress=False)
    ours = {(r.workload[4:], r.backend): r for r in results.records}

    counts = {"wall": [0, 0], "cpu": [0, 0]}
    print(f"NPBench preset {args.preset}, {len(kernels)} kernels; plain processes: {args.plain_env} allocator; "
          f"arraybench: 2 processes, headline allocator state 'reused'. Medians in ms; ratios JAX/NumPy; "
          f"'cpu' is the process's CPU time per call (coarse below 1 ms); faults: minor page faults per "
          f"call, NumPy/JAX; 'fresh pages': arraybench's other allocator state, measured beside the "
          f"headline where outputs are 128 KiB or more")
    print(f"{'kernel':10} {'NumPy plain':>11} {'ours':>7} {'JAX plain':>9} {'ours':>7} | {'wall plain':>10} "
          f"{'ours':>5} {'agree':>5} | {'cpu plain':>9} {'ours':>5} {'agree':>5} | {'faults plain':>13} "
          f"{'ours':>9}  status")
    for name in kernels:
        p_np, p_jx = (plain[lib].get(name, {}) for lib in ("numpy", "jax"))
        a_np, a_jx = (ours.get((name, lib)) for lib in ("numpy", "jax"))
        row = {"wall": (ratio(p_jx.get("median_s"), p_np.get("median_s")),
                        ratio(*(r.median_s if r else None for r in (a_jx, a_np)))),
               "cpu": (ratio(p_jx.get("cpu_median_s"), p_np.get("cpu_median_s")),
                       ratio(*(cpu_per_call(r) for r in (a_jx, a_np))))}
        verdict = {}
        for kind, (r_plain, r_ours) in row.items():
            if r_plain is not None and r_ours is not None:
                verdict[kind] = AGREE[0] <= r_ours / r_plain <= AGREE[1]
                counts[kind][0] += verdict[kind]
                counts[kind][1] += 1
        status = ", ".join(f"{lib} {r.status}" for lib, r in (("numpy", a_np), ("jax", a_jx))
                           if r and r.status != "ok") or "ok"
        errors = [d["error"] for d in (p_np, p_jx) if "error" in d]
        fresh = ", ".join(f"{lib} fresh pages {ms(r.other_median_s)}" for lib, r in (("NumPy", a_np), ("JAX", a_jx))
                          if r and r.other_median_s)
        status += f"; {fresh}" if fresh else ""
        print(f"{name:10} {ms(p_np.get('median_s')):>11} {ms(a_np and a_np.median_s):>7} "
              f"{ms(p_jx.get('median_s')):>9} {ms(a_jx and a_jx.median_s):>7} | {num(row['wall'][0]):>10} "
              f"{num(row['wall'][1]):>5} {yes(verdict.get('wall')):>5} | {num(row['cpu'][0]):>9} "
              f"{num(row['cpu'][1]):>5} {yes(verdict.get('cpu')):>5} | {faults(p_np, p_jx):>13} "
              f"{faults(a_np, a_jx):>9}  {status}{'; plain: ' + '; '.join(errors) if errors else ''}")
    for kind, (agree, compared) in counts.items():
        print(f"JAX/NumPy {kind}-time ratios within [{AGREE[0]}, {AGREE[1]}]x of NPBench's own: "
              f"{agree} of {compared} kernels")
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


def cpu_per_call(r: Any) -> float | None:
    """arraybench's CPU seconds per call of a record (user and system, over its sample windows)."""
    u = r.usage if r else None
    return (u.user_s + u.system_s) / u.calls if u and u.calls else None


def faults(np_side: Any, jax_side: Any) -> str:
    """NumPy's and JAX's minor page faults per call, from plain.py's lines or from records."""
    def one(x: Any) -> str:
        if isinstance(x, dict):
            return num(x.get("minor_faults_per_call"))
        u = x.usage if x else None
        return num(u.minor_faults / u.calls) if u and u.calls else "-"
    return f"{one(np_side)}/{one(jax_side)}"


def ms(t: float | None) -> str:
    return f"{t * 1e3:.3f}" if t else "-"


def num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def yes(ok: bool | None) -> str:
    return "-" if ok is None else "yes" if ok else "NO"


if __name__ == "__main__":
    sys.exit(main())

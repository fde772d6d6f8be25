"""GPU acceptance: does arraybench hold on this GPU machine? (issue 26; docs/gpu.md says when to run it)

Steps, each saved under the output folder (default ``./gpu_acceptance_out``):

1. ``arraybench doctor`` (every library, CPU and GPU)                        -> doctor.txt
2. the default suite with ``--devices gpu,cpu``                              -> suite/
3. a float32 matmul on the GPU libraries                                    -> suite_f32/
4. an independent reference timing of the seed's five workloads (elementwise, matmul, gradient,
   fft, sort) per GPU library, each library in a process of its own, timed with the library's own
   tool or a plain loop, never with arraybench's code                        -> reference.jsonl
5. arraybench / reference per cell, flagging any ratio outside [0.67, 1.5]  -> comparison.txt

Run from a checkout, with the Python that has the GPU libraries:

    python benchmarks/gpu_acceptance.py                 # in your own venv (pip install -e '.[nvml]')
    bash benchmarks/gpu_acceptance.sh --wheels wheels/  # any python3 with torch, jax and cupy

Without network: the checkout goes on ``PYTHONPATH``, and the pure-Python packages that Python
lacks (array-api-compat, platformdirs...) come from a folder of wheels, installed with
``pip install --no-index --find-links DIR --no-deps --target OUT/site``. Make the folder anywhere
with network: ``pip download --no-deps -d wheels array-api-compat platformdirs``.

Exit status: 0 all cells within range, 1 a flagged cell or a failed step, 2 bad options or a
dependency missing, 3 no NVIDIA GPU here (one line says so).
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The ratio arraybench / reference a cell may have before it is flagged.
RANGE = (0.67, 1.5)
LIBRARIES = ("torch", "jax", "cupy")
#: The seed's five workloads at the sizes of arraybench's suite (small, large), as the reference
#: builds them: how many elements, and the shape of each input.
SIZES = {"elementwise": (1_000, 1_000_000), "matmul": (100, 2_000), "gradient": (100, 10_000),
         "fft": (1_000, 1_000_000), "sort": (1_000, 1_000_000)}
#: The modules arraybench imports, by the distribution that provides them.
DEPENDENCIES = {"numpy": "numpy", "matplotlib": "matplotlib", "rich": "rich", "threadpoolctl": "threadpoolctl",
                "array_api_compat": "array-api-compat", "cloudpickle": "cloudpickle",
                "platformdirs": "platformdirs", "scipy": "scipy", "jinja2": "jinja2"}


def nvidia_gpu() -> str | None:
    """Why there is no NVIDIA GPU to accept here, or None where there is one."""
    devices = glob.glob(os.environ.get("ARRAYBENCH_NVIDIA_DEVICES", "/dev/nvidia[0-9]*"))
    if not devices:
        return "no NVIDIA GPU on this machine (no /dev/nvidia0 and the like)"
    if shutil.which("nvidia-smi"):
        try:
            listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"nvidia-smi does not answer ({exc})"
        if listed.returncode != 0 or "GPU" not in listed.stdout:
            return f"nvidia-smi lists no GPU ({(listed.stderr or listed.stdout).strip()[:200]})"
    return None


def missing_modules() -> list[str]:
    return [m for m in DEPENDENCIES if importlib.util.find_spec(m) is None]


def child_env(site: Path | None) -> dict[str, str]:
    """The children's environment: the checkout (and the wheels' site) first on PYTHONPATH."""
    env = dict(os.environ)
    paths = ([str(site)] if site else []) + [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def install_wheels(wheels: Path, site: Path, modules: list[str]) -> list[str]:
    """Install the distributions of ``modules`` from ``wheels`` into ``site``, offline; return what
    is still missing."""
    names = sorted({DEPENDENCIES[m] for m in modules})
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheels),
           "--no-deps", "--no-compile", "--target", str(site), *names]
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=False)
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    return missing_modules()


def step(title: str) -> None:
    print(f"\n=== {title} ===", flush=True)


def run_logged(cmd: list[str], log: Path, env: dict[str, str], timeout: float) -> int:
    """Run ``cmd``, its output to the terminal and to ``log``; its exit status (124: timed out)."""
    print("$ " + " ".join(cmd), flush=True)
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                cwd=str(ROOT))
        deadline = time.monotonic() + timeout
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            out.write(line)
            if time.monotonic() > deadline:
                proc.kill()
                out.write(f"[killed after {timeout:g} s]\n")
                return 124
        status = proc.wait()
        out.write(f"[exit status {status}]\n")
    return status


# -- the reference, in a process of its own per library ------------------------------------------

def per_call(call, min_time: float = 0.5) -> float:
    """Median seconds per call over batches of at least 2 ms, after three warm-up calls."""
    for _ in range(3):
        call()
    t0 = time.perf_counter()
    call()
    one = max(time.perf_counter() - t0, 1e-7)
    number = max(1, int(2e-3 / one))
    batches: list[float] = []
    end = time.perf_counter() + min_time
    while len(batches) < 5 or (time.perf_counter() < end and len(batches) < 2000):
        t0 = time.perf_counter()
        for _ in range(number):
            call()
        batches.append((time.perf_counter() - t0) / number)
    return statistics.median(batches)


def reference(lib: str, out: Path, cpu: bool = False, quick: bool = False) -> None:
    """Time the seed's workloads with ``lib`` on its GPU, each call waited for (arraybench's latency
    mode), and append one JSON line per cell to ``out``. ``cpu``: a dry run of this code on the
    CPU, small sizes only (the tests' way to run it without a GPU)."""
    import numpy as np

    rng = np.random.default_rng(0)
    budget = 0.1 if cpu or quick else 0.5  # seconds of timing per cell

    if lib == "torch":
        import torch
        from torch.utils.benchmark import Timer

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        dev = torch.device("cpu") if cpu else torch.device("cuda", 0)
        wait = "" if cpu else "; torch.cuda.synchronize()"

        def put(h):
            return torch.from_numpy(h).to(dev)

        def grad(w, x):  # a fresh leaf per call: no gradient accumulates
            leaf = w.detach().requires_grad_(True)
            torch.sum((leaf * x) ** 2).backward()
            return leaf.grad

        fns = {"elementwise": lambda a, b: (a + b, a * b, torch.sin(a)), "matmul": lambda a, b: a @ b,
               "gradient": grad, "fft": torch.fft.fft, "sort": lambda a: torch.sort(a).values}

        def wall(f, args, slow):
            timer = Timer("f(*args)" + wait, globals={"f": f, "args": args, "torch": torch},
                          num_threads=torch.get_num_threads())
            return timer.blocked_autorange(min_run_time=budget).median, None
        tool = "torch.utils.benchmark.Timer + cuda.synchronize"
    elif lib == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_default_matmul_precision", "highest")
        import jax.numpy as jnp

        dev = jax.devices("cpu" if cpu else "gpu")[0]

        def put(h):
            return jax.device_put(h, dev).block_until_ready()

        fns = {"elementwise": lambda a, b: (a + b, a * b, jnp.sin(a)), "matmul": lambda a, b: a @ b,
               "gradient": jax.grad(lambda w, x: jnp.sum((w * x) ** 2)),  # eager: latency mode
               "fft": jnp.fft.fft, "sort": jnp.sort}

        def wall(f, args, slow):
            return per_call(lambda: jax.block_until_ready(f(*args)), budget), None
        tool = "a jax.block_until_ready loop"
    elif lib == "cupy":
        import cupy as cp
        from cupyx.profiler import benchmark

        put = cp.asarray

        def fd_grad(w, x):  # forward differences, one pass per parameter: CuPy has no autodiff
            def loss():
                return float(cp.sum((w * x) ** 2))
            root = float(np.sqrt(np.finfo(w.dtype).eps))
            g, f0 = cp.empty_like(w), loss()
            for i in range(w.size):
                wi = float(w[i])
                w[i] = wi + root * max(1.0, abs(wi))
                h = float(w[i]) - wi
                g[i] = (loss() - f0) / h
                w[i] = wi
            return g

        fns = {"elementwise": lambda a, b: (a + b, a * b, cp.sin(a)), "matmul": lambda a, b: a @ b,
               "gradient": fd_grad, "fft": cp.fft.fft, "sort": cp.sort}

        def wall(f, args, slow):
            sync = cp.cuda.get_current_stream().synchronize
            w = per_call(lambda: (f(*args), sync()), min_time=0.1 if slow else budget)
            events = benchmark(f, args, n_repeat=3 if slow else 200, n_warmup=1 if slow else 10,
                               max_duration=max(budget, 0.1))
            return w, float(np.median(events.gpu_times[0]))  # CUDA events around each call
        tool = "a loop + stream.synchronize; cupyx.profiler.benchmark's gpu_times"
    else:
        raise SystemExit(f"unknown library {lib!r}")

    cases = [(w, label, n, "float64") for w, ns in SIZES.items() for label, n in zip(("small", "large"), ns)]
    cases.append(("matmul", "large", SIZES["matmul"][1], "float32"))
    if cpu:
        cases = [c for c in cases if c[1] == "small"]
    with open(out, "a", encoding="utf-8") as f:
        for workload, label, n, dtype in cases:
            shape = (n, n) if workload == "matmul" else (n,)
            count = 1 if workload in ("fft", "sort") else 2
            args = tuple(put(rng.standard_normal(shape).astype(dtype)) for _ in range(count))
            slow = lib == "cupy" and workload == "gradient"
            wall_s, device_s = wall(fns[workload], args, slow)
            row = {"backend": lib, "workload": workload, "size_label": label, "size": n, "dtype": dtype,
                   "wall_s": wall_s, "device_s": device_s, "tool": tool}
            print(json.dumps(row), flush=True)
            f.write(json.dumps(row) + "\n")


# -- the comparison -----------------------------------------------------------------------------

def compare(out: Path) -> int:
    """Print arraybench / reference per cell; the number of flagged cells."""
    records = []
    for name in ("suite", "suite_f32"):
        path = out / name / "results.json"
        if path.exists():
            records += json.loads(path.read_text())["records"]
        else:
            print(f"MISSING {path}")
    ours = {(r["backend"], r["workload"], r["size_label"], r["dtype"]): r for r in records
            if r["device"] == "gpu" and r["mode"] == "latency" and not r.get("transfer")}
    path = out / "reference.jsonl"
    refs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    low, high = RANGE
    flagged = 0
    print(f"{'cell (gpu, latency)':36} {'arraybench':>11} {'reference':>11} {'ratio':>6}  note")
    for ref in refs:
        key = (ref["backend"], ref["workload"], ref["size_label"], ref["dtype"])
        cell = "/".join(key)
        r = ours.get(key)
        if r is None or r.get("median_s") is None:
            flagged += 1
            why = f" ({r['status']}: {str(r.get('reason', ''))[:70]})" if r else ""
            print(f"{cell:36} {'-':>11} {ref['wall_s']:11.3e} {'-':>6}  FLAG: no arraybench time{why}")
            continue
        if r.get("size") not in (None, ref["size"]):
            print(f"{cell:36} sizes differ: arraybench {r['size']}, reference {ref['size']}: not compared")
            flagged += 1
            continue
        ratio = r["median_s"] / ref["wall_s"]
        flag = not low <= ratio <= high
        note = r["status"]
        if ref.get("device_s") and r.get("device_median_s"):
            events = r["device_median_s"] / ref["device_s"]
            note += f"; events ratio {events:.2f}"
            # cupyx's events start on an idle stream and so include the host's issuing, which
            # arraybench's hold leaves out: only calls of 1 ms or more are held to the range.
            if ref["device_s"] >= 1e-3 and not low <= events <= high:
                flag = True
                note += " (outside)"
        flagged += flag or r["status"] != "ok"
        print(f"{cell:36} {r['median_s']:11.3e} {ref['wall_s']:11.3e} {ratio:6.2f}  {'FLAG ' if flag else ''}{note}")
    if not refs:
        print("no reference timings were produced")
        return 1
    print(f"\n{flagged} flagged cell(s) of {len(refs)}; range [{low}, {high}]")
    return flagged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("gpu_acceptance_out"), help="results folder")
    parser.add_argument("--wheels", type=Path, default=ROOT / ".whl" if (ROOT / ".whl").is_dir() else None,
                        help="a folder of wheels for the packages this Python lacks (default: .whl/ "
                             "in the checkout, where there is one)")
    parser.add_argument("--quick", action="store_true",
                        help="shorter budgets everywhere (2 processes, 0.3 s per cell): a few minutes, noisier")
    parser.add_argument("--reference", choices=LIBRARIES, help=argparse.SUPPRESS)  # a child's job
    parser.add_argument("--into", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cpu", action="store_true", help=argparse.SUPPRESS)  # the reference, dry run
    args = parser.parse_args(argv)
    if args.reference:
        reference(args.reference, args.into, cpu=args.cpu, quick=args.quick)
        return 0

    why = nvidia_gpu()
    if why:
        print(f"gpu_acceptance: {why}; nothing to accept here", file=sys.stderr)
        return 3
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    site = None
    missing = missing_modules()
    if missing and args.wheels:
        site = out / "site"
        missing = install_wheels(args.wheels, site, missing)
    if missing:
        names = " ".join(sorted({DEPENDENCIES[m] for m in missing}))
        print(f"gpu_acceptance: this Python lacks {names}; with network: pip install {names}; "
              f"without: pip download --no-deps -d wheels {names} elsewhere, then --wheels wheels", file=sys.stderr)
        return 2
    env = child_env(site)
    # find_spec saw each package; importing them all (and arraybench) also finds what they need.
    probe = subprocess.run([sys.executable, "-c", "import arraybench.commands.main, rich.console, jinja2, scipy.stats, "
                            + ", ".join(DEPENDENCIES)], capture_output=True, text=True, env=env)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        print(f"gpu_acceptance: arraybench does not import with this Python ({last}); add the missing "
              "package's wheel to --wheels", file=sys.stderr)
        return 2
    arraybench = [sys.executable, "-m", "arraybench"]
    budget = ["--processes", "2", "--max-time", "0.3", "--min-samples", "5"] if args.quick else []
    status = 0

    step("1. the machine")
    if shutil.which("nvidia-smi"):
        run_logged(["nvidia-smi"], out / "nvidia-smi.txt", env, 60)
    run_logged([sys.executable, "-c", "import sys; print(sys.version)"], out / "python.txt", env, 60)

    step("2. arraybench doctor")
    status |= run_logged([*arraybench, "doctor"], out / "doctor.txt", env, 1800) != 0

    step("3. the default suite on gpu,cpu")
    status |= run_logged([*arraybench, "run", "--devices", "gpu,cpu", "-o", str(out / "suite"), "--overwrite",
                          "--no-store", "--no-plots", *budget], out / "suite.log", env, 7200) not in (0, 1)
    step("4. float32 matmul on the GPU libraries")
    status |= run_logged([*arraybench, "run", "--devices", "gpu", "--backends", ",".join(LIBRARIES),
                          "--workloads", "matmul", "--sizes", "large", "--dtype", "float32",
                          "-o", str(out / "suite_f32"), "--overwrite", "--no-store", "--no-plots", *budget],
                         out / "suite_f32.log", env, 1800) not in (0, 1)

    step("5. independent reference timings")
    into = out / "reference.jsonl"
    into.unlink(missing_ok=True)
    for lib in LIBRARIES:
        ref_env = dict(env, CUPY_TF32="0")  # full float32, as arraybench's CuPy workers are set
        code = run_logged([sys.executable, str(Path(__file__).resolve()), "--reference", lib, "--into", str(into),
                           *(["--quick"] if args.quick else [])], out / f"reference_{lib}.log", ref_env, 3600)
        if code != 0:
            print(f"reference for {lib} FAILED (exit status {code}; {out / f'reference_{lib}.log'})")
            status = 1

    step("6. arraybench / reference, per cell")
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        flagged = compare(out)
    (out / "comparison.txt").write_text(buffer.getvalue())
    print(buffer.getvalue(), end="")
    print(f"\neverything is under {out}")
    return 1 if flagged or status else 0


if __name__ == "__main__":
    sys.exit(main())

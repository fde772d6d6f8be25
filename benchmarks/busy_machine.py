"""Decisive on a busy machine, in a minute: the default run's verdicts under a bursty tenant.

What it does, printing every figure:

1. A reference: the default CPU suite with 12 processes per cell, on the machine as it is (run it
   quiet); its pairs are the verdicts to reproduce.
2. The default run (``arraybench run``, as a user types it) on the quiet machine: wall time, and
   which of the reference's pairs separated by >= 5% it decides, and which way.
3. The same under a tenant that keeps one core busy in random bursts (busy 0.5-3 s, idle 0.2-1.5 s):
   wall time, the share of the reference's pairs separated by >= 1.1x it decides, any decided the
   wrong way, and the widest interval relative to its median.
4. The same-session gate under the tenant: a workload made 1.5x and 2x slower in the work tree than
   at the committed ref, run ``--against HEAD`` with 3 processes, and unchanged code the same way.

    python benchmarks/busy_machine.py            # everything (about 10 minutes on 2 cores)
    python benchmarks/busy_machine.py --skip-reference REF_RESULTS_JSON
    python benchmarks/busy_machine.py --skip-reference REF_RESULTS_JSON --only busy

The machine must be otherwise quiet: two benchmarks on 2 cores measure each other.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _arraybench(*args: str, cwd: Path | None = None) -> tuple[float, int, str]:
    """Run ``arraybench ARGS`` as a user would; (wall seconds, exit status, output)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(HERE), os.environ.get("PYTHONPATH"))))}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "arraybench", *args], capture_output=True, text=True,
                          cwd=cwd, env=env)
    return time.perf_counter() - start, done.returncode, done.stdout + done.stderr


def _tenant(stop: "multiprocessing.synchronize.Event", seed: int) -> None:
    """Keep one core busy in random bursts until ``stop``."""
    rng = random.Random(seed)
    while not stop.is_set():
        end = time.perf_counter() + rng.uniform(0.5, 3.0)
        x = 0
        while time.perf_counter() < end:
            x += 1
        stop.wait(rng.uniform(0.2, 1.5))


class Tenant:
    """A bursty neighbour, for the duration of a ``with`` block."""

    def __enter__(self) -> "Tenant":
        self.stop = multiprocessing.Event()
        self.proc = multiprocessing.Process(target=_tenant, args=(self.stop, 7), daemon=True)
        self.proc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.proc.join(10)


def _pairs(results: Path) -> dict[tuple[str, str, str], dict]:
    """The run's pairs by (case, a's library, b's library), a before b in label order."""
    data = json.loads(results.read_text())
    out = {}
    for p in data.get("pairs", []):
        a, b = p["a_label"], p["b_label"]
        if a > b:
            p = {**p, "a_label": b, "b_label": a, "ratio": 1 / p["ratio"], "ci_low": 1 / p["ci_high"],
                 "ci_high": 1 / p["ci_low"], "verdict": {"faster": "slower", "slower": "faster"}.get(p["verdict"],
                                                                                              p["verdict"])}
        out[(p["case"], p["a_label"], p["b_label"])] = p
    return out


def _widest(results: Path) -> str:
    """The widest interval of an ok cell, as (high - low) / median; how many cells' intervals the
    tables show as "undecided" (wider than a factor of 2 either way) rather than as ±; and the
    widest of those they show as numbers."""
    from arraybench.units import format_interval

    data = json.loads(results.read_text())
    ok = [r for r in data["records"] if r.get("status") == "ok" and r.get("median_s") and r.get("ci_low_s") is not None]
    widths = [(r["ci_high_s"] - r["ci_low_s"]) / r["median_s"] for r in ok]
    shown = [format_interval(r["ci_low_s"], r["median_s"], r["ci_high_s"]) != "undecided" for r in ok]
    widest_shown = max((w for w, s in zip(widths, shown) if s), default=0.0)
    return (f"{max(widths, default=0.0):.2f}x its median ({shown.count(False)} shown as undecided; "
            f"the widest shown as a number: {widest_shown:.2f}x)")


def _judge(reference: dict, run: dict, separated: float) -> tuple[int, int, list[str]]:
    """(pairs the reference separates by >= ``separated``, how many ``run`` decides its way, the
    ones decided the wrong way)."""
    wanted = {k: p for k, p in reference.items()
              if p["verdict"] in ("faster", "slower") and max(p["ratio"], 1 / p["ratio"]) >= separated}
    right, wrong = 0, []
    for key, p in wanted.items():
        got = run.get(key)
        if got is None or got["verdict"] not in ("faster", "slower"):
            if separated == 1.1:
                print(f"    not decided: {key}: reference {p['ratio']:.3g}, run "
                      + (f"{got['verdict']} {got['ratio']:.3g} [{got['ci_low']:.3g}, {got['ci_high']:.3g}]"
                         if got else "no pair"))
            continue
        if got["verdict"] == p["verdict"]:
            right += 1
        else:
            wrong.append(f"{key}: reference {p['verdict']} {p['ratio']:.3g}, run {got['verdict']} {got['ratio']:.3g}")
    return len(wanted), right, wrong


def _report(name: str, wall: float, results: Path, reference: dict) -> None:
    run = _pairs(results)
    for separated in (1.05, 1.1):
        n, right, wrong = _judge(reference, run, separated)
        print(f"  {name}: of the {n} pairs the reference separates by >= {separated:g}x, decided the same way: "
              f"{right} ({right / max(n, 1):.0%}); the wrong way: {len(wrong)}")
        for line in wrong:
            print("    wrong:", line)
    print(f"  {name}: wall {wall:.0f} s; widest interval {_widest(results)}; "
          f"{sum(p['verdict'] == 'undecided' for p in run.values())} of {len(run)} pairs undecided")


WORKLOAD = '''from arraybench import workload


@workload(sizes={{"small": 200_000}})
def planted(xp, x):
    y = x
    for _ in range({k}):
        y = xp.sqrt(xp.abs(y) + 1.0)
    return y
'''


def _gate(k_base: int, k_new: int, tmp: Path) -> str:
    """The verdict of ``--against HEAD`` on a workload made ``k_new / k_base`` times the work."""
    repo = tmp / f"repo_{k_base}_{k_new}"
    repo.mkdir()
    (repo / "bench.py").write_text(WORKLOAD.format(k=k_base))
    for cmd in (["init", "-q"], ["add", "."], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "base"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    (repo / "bench.py").write_text(WORKLOAD.format(k=k_new))
    wall, code, out = _arraybench("run", "--workload-file", "bench.py", "--against", "HEAD", "--backends", "numpy",
                                  "--processes", "3", "--no-store", "--output-dir", str(repo / "out"), cwd=repo)
    if code not in (0, 1):
        return f"failed ({code}): {out.strip().splitlines()[-1:]}"
    pairs = json.loads((repo / "out" / "results.json").read_text())["pairs"]
    if not pairs:
        return "no pair"
    p = pairs[0]
    here_over_ref = p["ratio"] if "[here]" in p["a_label"] else 1 / p["ratio"]
    lo, hi = (p["ci_low"], p["ci_high"]) if "[here]" in p["a_label"] else (1 / p["ci_high"], 1 / p["ci_low"])
    verdict = p["verdict"] if "[here]" in p["a_label"] else {"faster": "slower", "slower": "faster"}.get(
        p["verdict"], p["verdict"])
    return f"work tree {verdict}: {here_over_ref:.2f}x the ref's time [{lo:.2f}, {hi:.2f}] in {wall:.0f} s"


def _default_run(folder: Path) -> tuple[float, int]:
    """A default run as a user types it, into ``folder``; (wall seconds, exit status). A folder
    left by an earlier run, or a run that did not finish, stops the script: its figures would be
    another run's."""
    if folder.exists():
        sys.exit(f"{folder} exists: give --out a new folder")
    wall, code, out = _arraybench("run", "--no-store", "--output-dir", str(folder))
    if code not in (0, 1):
        sys.exit(f"the run into {folder} failed ({code}): {out.strip().splitlines()[-1:]}")
    return wall, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-reference", type=Path, help="a reference results.json made before")
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="busy-")))
    parser.add_argument("--only", choices=("quiet", "busy", "gate"), action="append",
                        help="run only these parts (repeatable; default: all three)")
    args = parser.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} cores; output in {out}")
    if args.skip_reference:
        ref_results = args.skip_reference
    else:
        wall, code, _ = _arraybench("run", "--devices", "cpu", "--processes", "12", "--allocator", "reused",
                                    "--no-store", "--output-dir", str(out / "reference"))
        ref_results = out / "reference" / "results.json"
        print(f"reference (12 processes, quiet): {wall:.0f} s, exit {code}")
    reference = _pairs(ref_results)
    print(f"reference pairs: {len(reference)}, decided {sum(p['verdict'] in ('faster', 'slower') for p in reference.values())}")

    parts = set(args.only or ("quiet", "busy", "gate"))
    if "quiet" in parts:
        wall, code = _default_run(out / "quiet")
        print(f"default run, quiet (exit {code}):")
        _report("quiet", wall, out / "quiet" / "results.json", reference)

    if "busy" in parts:
        with Tenant():
            wall, code = _default_run(out / "busy")
        print(f"default run, one core busy in bursts (exit {code}):")
        _report("busy", wall, out / "busy" / "results.json", reference)

    if "gate" not in parts:
        return
    print("same-session gate, --against HEAD, 3 processes, one core busy in bursts:")
    with Tenant():
        for k_base, k_new, what in ((2, 3, "planted 1.5x"), (2, 4, "planted 2x"), (2, 2, "unchanged")):
            print(f"  {what}: {_gate(k_base, k_new, out)}")


if __name__ == "__main__":
    main()

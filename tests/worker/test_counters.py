"""The counters read around each sample, each collected for real: a workload that faults pages on
purpose, one that runs two threads at once, one that sleeps, a machine loaded by real spinning
processes, and perf_event_open as this kernel allows it. Then the same through a real run: the
replicates carry it, and results.json, the CSV and the HTML report show it."""

from __future__ import annotations

import csv
import hashlib
import json
import mmap
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import arraybench
from arraybench.worker import counters as perf_events
from arraybench.analysis.aggregate import aggregate
from arraybench.worker.counters import SampleCounters
from arraybench.model.replicate import Replicate, Usage
from arraybench.model.cell import Cell

MIB = 1 << 20
DATA = Path(__file__).resolve().parents[1] / "data"


def _windows(fn, calls: int = 5) -> "arraybench.model.replicate.Usage":
    """``fn`` called ``calls`` times, each in a counted window, as the worker counts samples."""
    counters = SampleCounters(1)
    try:
        for _ in range(calls):
            counters.begin(0)
            fn()
            counters.end(0, 1)
        usage = counters.usage(0)
    finally:
        counters.close()
    assert usage is not None and usage.calls == calls
    return usage


def _fault_8_mib() -> None:
    m = mmap.mmap(-1, 8 * MIB)
    for offset in range(0, 8 * MIB, mmap.PAGESIZE):
        m[offset] = 1
    m.close()


def test_fresh_pages_are_counted_as_minor_faults_with_their_kernel_time_and_memory():
    usage = _windows(_fault_8_mib)
    pages = 8 * MIB // mmap.PAGESIZE
    assert pages * 0.95 <= usage.minor_faults_per_call <= pages * 1.2
    assert usage.sample_minor_faults and min(usage.sample_minor_faults) >= pages * 0.95
    assert usage.major_faults_per_call == 0
    assert usage.kernel_share > 0.3  # zeroing pages is the kernel's work
    assert usage.peak_growth_bytes >= 7 * MIB  # resident memory rose by the mapping, then fell


def test_a_loop_that_reuses_its_memory_takes_no_faults():
    buffer = bytearray(8 * MIB)

    def reuse() -> None:
        for offset in range(0, 8 * MIB, mmap.PAGESIZE):
            buffer[offset] = 1

    usage = _windows(reuse)
    assert usage.minor_faults_per_call < 5 and usage.peak_growth_bytes < MIB


def test_the_cpu_time_of_every_thread_is_counted():
    data = os.urandom(4 * MIB)
    spent: list[float] = []

    def hash_loop() -> None:
        start = time.thread_time()
        for _ in range(6):
            hashlib.sha256(data).digest()  # releases the GIL: both threads run at once
        spent.append(time.thread_time() - start)

    def two_threads() -> None:
        threads = [threading.Thread(target=hash_loop) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    usage = _windows(two_threads, calls=3)
    threads_cpu = sum(spent)
    assert len(spent) == 6 and threads_cpu > 0
    # The main thread only waited: the process's CPU time is the two threads' (getrusage with
    # RUSAGE_SELF counts them all; a per-thread counter would see almost nothing).
    assert usage.user_s + usage.system_s >= 0.9 * threads_cpu
    assert usage.cores == pytest.approx((usage.user_s + usage.system_s) / usage.wall_s)
    if usage.others_cores is not None and usage.others_cores < 0.2 and (os.cpu_count() or 1) >= 2:
        assert usage.cores > 1.2  # a quiet machine with two cores ran both at once (one core: <= 1)


def test_sleeping_is_a_voluntary_context_switch_per_call():
    usage = _windows(lambda: time.sleep(0.002), calls=10)
    assert usage.voluntary_switches_per_call >= 1
    assert usage.cores < 0.5  # asleep, not computing


SPIN = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


def test_other_processes_loading_the_machine_are_counted_and_the_cell_says_so():
    cpus = os.cpu_count() or 1
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=6)]) for _ in range(cpus)]
    try:
        time.sleep(0.5)  # let them start spinning
        usage = _windows(lambda: time.sleep(0.05), calls=12)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    # Every CPU had a spinner; this process slept: the others used most of the machine.
    assert usage.others_cores >= 0.6 * cpus
    assert usage.load_average is not None and usage.load_readings == 12
    rep = Replicate(samples_s=[0.05] * 12, number=1, max_rel_error=0.0, tolerance=1e-14, usage=usage)
    rec = aggregate(Cell("sleeps", "small", 64, "numpy", "cpu", "float64", "latency"), [rep] * 3, 3,
                    rel_ci=1.0)
    assert rec.busy is True
    assert any(w.startswith("measured while the machine was busy: other processes used") for w in rec.warnings)


def test_a_quiet_machine_is_not_called_busy():
    usage = Usage(calls=10, wall_s=1.0, user_s=1.0, machine_busy_s=1.05,
                                   machine_total_s=2.0, machine_cpus=2).derive()
    rep = Replicate(samples_s=[0.1] * 10, number=1, max_rel_error=0.0, tolerance=1e-14, usage=usage)
    rec = aggregate(Cell("w", "small", 64, "numpy", "cpu", "float64", "latency"), [rep] * 3, 3, rel_ci=1.0)
    assert usage.others_cores == pytest.approx(0.05)
    assert rec.busy is False and not any("busy" in w for w in rec.warnings)


def test_short_windows_are_not_called_busy_for_one_unit_of_proc_stat():
    # /proc/stat counts in 10 ms units: nine 5 ms windows on an idle machine counted one unit more
    # than the worker's own 45 ms, which read as others taking 0.2 of 2 cores.
    idle = Usage(calls=9, wall_s=0.045, user_s=0.045, machine_busy_s=0.055, machine_total_s=0.09,
                 machine_cpus=2, load_sum=4.5, load_readings=9).derive()
    assert idle.others_cores == 0.0
    loaded = Usage(calls=9, wall_s=0.045, user_s=0.045, machine_busy_s=0.135, machine_total_s=0.09,
                   machine_cpus=2, load_sum=4.5, load_readings=9).derive()
    assert loaded.others_cores == pytest.approx(2.0)  # both cores' worth beside it: beyond the units


def test_hardware_counters_count_or_say_why_not():
    counters = perf_events.Counters()
    try:
        if counters.reason:  # these VMs expose no PMU: ENOENT, with the paranoid level said
            assert counters.reason.startswith("perf_event_open failed with E")
            assert counters.read() is None
            level = perf_events.paranoid_level()
            assert level is None or f"perf_event_paranoid is {level}" in counters.reason
        else:
            before = counters.read()
            sum(i * i for i in range(200_000))
            after = counters.read()
            assert after["instructions"] > before["instructions"] and after["cycles"] > before["cycles"]
    finally:
        counters.close()


def test_the_per_thread_binding_sums_every_thread_software_task_clock():
    # The same code path as the hardware events, with an event every kernel has.
    data = os.urandom(4 * MIB)
    go = threading.Event()

    def work() -> None:
        go.wait()
        for _ in range(8):
            hashlib.sha256(data).digest()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    # PERF_TYPE_SOFTWARE's task clock, which every Linux kernel has, where no PMU exists.
    counters = perf_events.Counters({"task_clock": (1, 1)})
    try:
        if counters.reason:
            pytest.skip(f"no software events here either: {counters.reason}")
        before, cpu_before = counters.read()["task_clock"], time.process_time()
        go.set()
        for t in threads:
            t.join()
        after, cpu_after = counters.read()["task_clock"], time.process_time()
    finally:
        counters.close()
    counted = (after - before) / 1e9
    assert counted == pytest.approx(cpu_after - cpu_before, rel=0.25)


# -- through a real run ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def usage_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("usage")
    shutil.copy(DATA / "usage_workloads.py", folder / "usage_workloads.py")
    out = folder / "run"
    arraybench.run(["fault_pages", "two_threads", "one_thread", "sleeps"], backends=["numpy"], devices=["cpu"],
                   workload_files=[str(folder / "usage_workloads.py")], output_dir=out, processes=2,
                   max_time=0.3, min_samples=5, plots=False)
    return out


def test_a_real_run_stores_each_processes_usage_and_the_records_totals(usage_run):
    results = arraybench.load_results(usage_run)
    by = {r.workload: r for r in results.records}
    faults = by["fault_pages"]
    assert faults.status == "ok" and len(faults.replicates) == 2
    for rep in faults.replicates:
        # Every timed call is counted, whatever the machine's load allowed in the budget.
        assert rep.usage.minor_faults_per_call >= 2000
        assert rep.usage.calls >= len(rep.samples_s) * rep.number >= 3  # and any re-warming call
    assert faults.usage.minor_faults_per_call >= 2000
    assert faults.usage.calls == sum(rep.usage.calls for rep in faults.replicates)
    # Two threads doing one thread's work each, counted from the process (the main thread only
    # waits): more CPU time per call than the one thread. Not "twice": the two cells run at other
    # moments, and beside CPU hogs the ratio came out 1.38 and 4.2 (every thread's count against the
    # threads' own clocks, in the same calls: test_the_cpu_time_of_every_thread_is_counted).
    two, one = by["two_threads"].usage, by["one_thread"].usage
    per_call = [(u.user_s + u.system_s) / u.calls for u in (two, one)]
    assert per_call[0] > per_call[1]
    assert two.cores == pytest.approx((two.user_s + two.system_s) / two.wall_s)
    assert by["sleeps"].usage.voluntary_switches_per_call >= 1
    assert by["sleeps"].usage.cores < 0.5
    assert faults.usage.hardware_absent or faults.usage.instructions_per_call
    # The journal keeps each replicate's usage as it arrived.
    journal = [json.loads(line) for line in (usage_run / "journal.jsonl").read_text().splitlines()]
    assert any(e.get("type") == "replicate" and e["replicate"]["usage"]["minor_faults"] > 0 for e in journal)


def test_the_csv_and_the_report_show_the_usage(usage_run):
    rows = {r["workload"]: r for r in csv.DictReader((usage_run / "results.csv").open())}
    assert float(rows["fault_pages"]["usage.minor_faults_per_call"]) >= 2000
    assert float(rows["two_threads"]["usage.cores"]) > 0
    # Per call: the totals depend on how many calls each cell's share of the budget allowed.
    per_call = {w: (float(rows[w]["usage.user_s"]) + float(rows[w]["usage.system_s"])) / float(rows[w]["usage.calls"])
                for w in ("two_threads", "one_thread")}
    assert per_call["two_threads"] > per_call["one_thread"]  # as above: more, by a load-dependent share
    assert "usage.hardware_absent" in rows["sleeps"]
    html = (usage_run / "report.html").read_text()
    assert "faults/call" in html and "cores" in html and "kernel variables" in html

"""Cluster runs on a real two-node Ray cluster on this machine (``tests/cluster_holder.py``).

The cluster lives in a network namespace of its own that has only ``lo``: there Ray binds
127.0.0.1, and no test traffic can leave loopback. Every command of a test enters that namespace
(``nsenter``) and runs the real command line; the test itself only reads the files the runs
write. One cluster serves the whole module; the tests that kill a node come last and put it back.
Without Ray, or where no namespace can be made, the cluster tests skip and say why.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from arraybench.errors import UsageError
from arraybench.executors.cluster import Node, differences, is_free, labels, read_shard_log, select

from ..conftest import ROOT, signals_setup

TINY = ("--backends", "numpy", "--devices", "cpu", "--sizes", "small", "--max-time", "0.05",
        "--min-samples", "3", "-q")


# -- without a cluster ---------------------------------------------------------------------------
_WITHOUT_RAY = ("import sys; sys.modules['ray'] = None  # what `import ray` meets where it is absent\n"
                "from arraybench.commands.main import main; sys.exit(main(sys.argv[1:]))")


# A real Ray cluster of two nodes, nodes lost and resumed: two minutes on two cores.
pytestmark = pytest.mark.budget(150)


@pytest.mark.parametrize("command", [["run", "--cluster", "auto", "--backends", "numpy"],
                                     ["info", "--cluster", "127.0.0.1:6379"]])
def test_without_ray_cluster_is_one_line_and_exit_2(tmp_path, command):
    out = tmp_path / "out"
    args = command + (["--output-dir", str(out)] if command[0] == "run" else [])
    done = subprocess.run([sys.executable, "-c", _WITHOUT_RAY, *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "needs Ray" in lines[0] and "pip install 'arraybench[ray]'" in lines[0]
    assert not out.exists()  # refused before anything was written


def test_cluster_options_without_a_cluster_are_refused(tmp_path):
    for extra in (["--on", "any-node"], ["--gpu-type", "H100"]):
        done = subprocess.run([sys.executable, "-m", "arraybench", "run", *extra, "-o", str(tmp_path / "o")],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert done.returncode == 2 and "give --cluster ADDRESS too" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def _node(label: str, **fingerprint) -> Node:
    from arraybench.host import machine

    env = machine.collect()
    env["fingerprint"] = {**env["fingerprint"], **fingerprint}
    return Node(label=label, node_id=label * 8, address="10.0.0.1", environment=env)


def test_any_node_needs_one_machine_and_says_which_node_differs_in_what():
    same = [_node("a"), _node("b", host_sha="0123456789ab")]  # another host of the same kind
    assert differences(same) is None
    text = differences([_node("a"), _node("b"), _node("c", cpu_model="Other CPU 9000", memory_gib=512.0)])
    assert text is not None and text.startswith("--on any-node needs identical nodes")
    assert "c: " in text and "cpu_model Other CPU 9000" in text and "memory_gib 512.0" in text
    assert "b:" not in text  # only the node that differs is named


def test_node_labels_are_unique_and_safe_in_file_names():
    assert labels(["gpu-1", "gpu-2"], ["aaaaaaaa", "bbbbbbbb"]) == ["gpu-1", "gpu-2"]
    assert labels(["vm", "vm"], ["1234567890", "abcdef1234"]) == ["vm-123456", "vm-abcdef"]
    assert labels(["../x y"], ["1"]) == ["x-y"]


def test_a_node_takes_shards_by_its_cpus_alone_without_a_custom_resource():
    head = Node("head", "h" * 8, "10.0.0.1", resources={"CPU": 0.0, "memory": 1e9})  # --num-cpus 0
    gpu = Node("ws2", "g" * 8, "10.0.0.2", resources={"CPU": 8.0, "GPU": 1.0, "accelerator_type:H100": 1.0})
    cpu = Node("ws3", "c" * 8, "10.0.0.3", resources={"CPU": 4.0})
    assert [n.takes_shards for n in (head, gpu, cpu)] == [False, True, True]
    assert select([head, gpu, cpu], None) == [gpu, cpu]
    assert select([head, gpu, cpu], "H100") == [gpu]
    with pytest.raises(UsageError, match="--gpu-type T4: no node that takes shards .*H100"):
        select([head, gpu, cpu], "T4")
    with pytest.raises(UsageError, match="no node of the cluster offers Ray a CPU .*ray start --address HEAD"):
        select([head], None)


def test_a_node_is_free_only_while_none_of_its_cpus_and_gpus_is_reserved():
    total = {"CPU": 8.0, "GPU": 2.0, "memory": 1e10, "accelerator_type:H100": 1.0}
    assert is_free(total, dict(total))
    assert is_free(total, {"CPU": 8.0, "GPU": 2.0})  # memory and the like reserve nothing of ours
    assert not is_free(total, {"memory": 1e10})  # a shard holds every CPU and GPU (Ray omits zeros)
    assert not is_free(total, {"CPU": 7.0, "GPU": 2.0})  # other Ray work holds one CPU
    assert not is_free(total, {"CPU": 8.0, "GPU": 1.5})  # ... or part of a GPU
    assert is_free({"CPU": 4.0}, {"CPU": 4.0})


def _overlaps(entries: list[dict]) -> list[tuple[str, str, str]]:
    """(node, shard, shard) for every two shards whose time on one node overlapped (ended shards,
    in the node's clock); [] when the one-shard-per-node rule held."""
    by_node: dict[str, list[tuple[float, float, str]]] = {}
    for e in entries:
        if e.get("type") == "shard_ended" and e.get("started") is not None:
            by_node.setdefault(str(e["node"]), []).append((float(e["started"]), float(e["ended"]),
                                                           str(e["shard"])))
    found = []
    for node, spans in by_node.items():
        spans.sort()
        for (s1, e1, a), (s2, _e2, b) in zip(spans, spans[1:]):
            if s2 < e1:
                found.append((node, a, b))
    return found


def test_overlapping_shards_on_one_node_are_found():
    def ended(shard, node, started, end):
        return {"type": "shard_ended", "shard": shard, "node": node, "started": started, "ended": end}

    apart = [ended("a", "n1", 0.0, 1.0), ended("b", "n1", 1.0, 2.0), ended("c", "n2", 0.5, 1.5)]
    assert _overlaps(apart) == []
    assert _overlaps(apart + [ended("d", "n1", 1.5, 3.0)]) == [("n1", "b", "d")]


# -- a real cluster ------------------------------------------------------------------------------
class LocalCluster:
    """The holder process and its cluster; commands run in its network namespace."""

    def __init__(self, holder: subprocess.Popen, address: str, pid: int, temp: str) -> None:
        self.holder = holder
        self.address = address
        self.pid = pid
        self.temp = temp
        #: The nodes' ``TMPDIR``: where their agents make their shard folders.
        self.node_tmp = Path(temp) / "nodes"
        self.removed: set[str] = set()

    def argv(self, *args: str) -> list[str]:
        return ["nsenter", f"--net=/proc/{self.pid}/ns/net", "--", sys.executable, "-m", "arraybench", *args]

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(*args), capture_output=True, text=True, cwd=ROOT, timeout=timeout)

    def start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(self.argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=ROOT, preexec_fn=signals_setup())

    def command(self, line: str) -> None:
        assert self.holder.stdin is not None and self.holder.stdout is not None
        self.holder.stdin.write(line + "\n")
        self.holder.stdin.flush()
        assert self.holder.stdout.readline().strip() == "ok"
        if line.startswith(("remove ", "add ")):
            name = line.split()[1]
            (self.removed.add if line.startswith("remove") else self.removed.discard)(name)


def _namespace_or_skip() -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install 'arraybench[ray]'): no cluster to test on")
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed: cannot make a network namespace for the cluster")
    try:
        probe = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True,
                               text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot make a network namespace here ({exc})")
    if probe.returncode != 0:
        pytest.skip("cannot make a network namespace here (unshare -n needs root or user "
                    f"namespaces): {probe.stderr.strip()[:200]}")


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    _namespace_or_skip()
    temp = tempfile.mkdtemp(prefix="abray")  # short: Ray's socket paths must fit in 107 bytes
    (Path(temp) / "nodes").mkdir()
    log = open(tmp_path_factory.mktemp("cluster") / "holder.log", "w")
    holder = subprocess.Popen(
        ["unshare", "-n", "sh", "-c", f'ip link set lo up && exec "{sys.executable}" tests/cluster_holder.py "{temp}"'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT,
        env={**os.environ, "TMPDIR": str(Path(temp) / "nodes")},  # what the nodes leave, the test sees
        start_new_session=True)  # Ray's reaper signals its whole process group: never pytest's
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(holder.stdout.readline()), daemon=True)
    reader.start()
    reader.join(180)
    if not first or not first[0].strip():
        holder.kill()
        log.close()
        pytest.fail(f"the Ray cluster did not start: {Path(log.name).read_text()[-2000:]}")
    info = json.loads(first[0])
    cluster = LocalCluster(holder, info["address"], info["pid"], temp)
    yield cluster
    try:
        holder.stdin.write("quit\n")
        holder.stdin.flush()
        holder.wait(60)
    except (OSError, subprocess.TimeoutExpired):
        holder.kill()
        holder.wait()
    # A node killed without grace leaves its dashboard and runtime-env agents behind, orphaned in
    # the holder's session: they would outlive the suite.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(holder.pid, signal.SIGKILL)
    log.close()
    shutil.rmtree(temp, ignore_errors=True)


def _results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def _ended(out: Path) -> list[dict]:
    return [e for e in read_shard_log(out) if e.get("type") == "shard_ended"]


def test_info_lists_the_nodes_their_machines_and_which_are_free(ray_cluster):
    as_json = ray_cluster.start("info", "--cluster", ray_cluster.address, "--json")
    as_text = ray_cluster.start("info", "--cluster", ray_cluster.address)  # at once: the suite waits less
    (stdout, stderr), (text, _) = as_json.communicate(timeout=300), as_text.communicate(timeout=300)
    assert as_json.returncode == 0, stderr
    nodes = {n["label"]: n for n in json.loads(stdout)["nodes"]}
    workers = {k: v for k, v in nodes.items() if v["slot"]}
    assert sorted(workers) == ["n1", "n2"]
    assert not [r for n in nodes.values() for r in n["resources"] if r.startswith("arraybench")]  # plain Ray
    assert all(n["free"] is True for n in workers.values())
    assert len({n["machine_id"] for n in workers.values()}) == 1  # one host, one machine
    assert workers["n1"]["gpu_types"] == ["T4"] and workers["n2"]["gpu_types"] == []
    head = [n for n in nodes.values() if not n["slot"]]
    assert len(head) == 1 and head[0]["machine_id"] is None  # the head takes no shards
    assert as_text.returncode == 0 and "n1" in text and "n2" in text and "busy" not in text


# A workload whose every call waits while its gate file exists (``slow`` also sleeps 0.4 s a call,
# so that a replicate takes about two seconds): a test holds a shard under way for as long as it
# needs, whatever the machine's load.
_GATED = """
import os, time
import arraybench

@arraybench.workload(sizes={{"small": 16}}, inputs=lambda n, rng: rng.standard_normal(n),
                     reference=lambda x: 2 * x)
def {name}(xp, x):
    time.sleep({sleep})
    deadline = time.monotonic() + 120  # never forever, whatever the test does
    if os.path.exists({gate!r}):  # who waits at the gate, by pid
        open({gate!r} + "." + str(os.getpid()), "w").close()
    while os.path.exists({gate!r}) and time.monotonic() < deadline:
        time.sleep(0.05)
    return 2 * x
"""


def test_every_node_and_any_node_runs_side_by_side_never_share_a_node(ray_cluster, tmp_path):
    # Run A's first shard on each node waits at a gate; run B is started meanwhile and must wait
    # for the nodes' CPUs, which A's shards reserve: the two runs are under way together whatever
    # the machine's load.
    gate = tmp_path / "gate"
    gate.touch()
    gated = tmp_path / "gated.py"
    gated.write_text(_GATED.format(name="gated", sleep=0, gate=str(gate)))
    every, anyn = tmp_path / "every", tmp_path / "any"
    a = ray_cluster.start("run", "--cluster", ray_cluster.address, "--on", "every-node", *TINY,
                          "--workload-file", str(gated), "--workloads", "gated,elementwise,sort",
                          "--processes", "2", "-o", str(every))
    _wait_for(lambda: len([e for e in read_shard_log(every) if e.get("type") == "shard_started"]) == 2,
              "run A's first shard on both nodes", a)
    b = ray_cluster.start("run", "--cluster", ray_cluster.address, "--on", "any-node", *TINY,
                          "--workloads", "elementwise,sort,fft,matmul", "--processes", "1", "-o", str(anyn))
    _wait_for(lambda: any(e.get("type") == "nodes" for e in read_shard_log(anyn)), "run B's dispatch", b)
    b_dispatch = next(e["time"] for e in read_shard_log(anyn) if e.get("type") == "nodes")
    # Meanwhile B's shards are asked for; the nodes' CPUs are A's, and info says so.
    busy = ray_cluster.cli("info", "--cluster", ray_cluster.address, "--json")
    assert busy.returncode == 0, busy.stderr
    assert {n["label"]: n["free"] for n in json.loads(busy.stdout)["nodes"] if n["slot"]} == {
        "n1": False, "n2": False}
    gate.unlink()
    (_, a_err), (_, b_err) = a.communicate(timeout=300), b.communicate(timeout=300)
    assert a.returncode == 0, a_err[-3000:]
    assert b.returncode == 0, b_err[-3000:]

    # every-node: both nodes' records arrive, labelled by node, each node described.
    res = _results(every)
    assert res["complete"]
    by_machine = {}
    for r in res["records"]:
        assert r["status"] == "ok" and len(r["replicates"]) == 2
        assert {rep["machine"] for rep in r["replicates"]} == {r["machine"]}
        by_machine.setdefault(r["machine"], set()).add(r["workload"])
    assert by_machine == {"n1": {"gated", "elementwise", "sort"}, "n2": {"gated", "elementwise", "sort"}}
    machines = res["environment"]["machines"]
    assert {"n1", "n2"} <= set(machines)
    assert machines["n1"]["fingerprint"]["cpu_model"] and machines["n1"]["backends"]["numpy/cpu"]
    assert "OMP_NUM_THREADS" not in machines["n1"]["thread_env"]  # Ray's own setting kept out
    assert sorted((e["shard"], e["outcome"]) for e in _ended(every)) == sorted(
        (f"{w}|small@{n}", "done") for w in ("gated", "elementwise", "sort") for n in ("n1", "n2"))

    # any-node: every shard ran exactly once, on one node, and the records are one machine's.
    res = _results(anyn)
    assert res["complete"] and all(r["status"] == "ok" and r["machine"] == "" for r in res["records"])
    ended = _ended(anyn)
    assert sorted(e["shard"] for e in ended) == sorted(
        f"{w}|small" for w in ("elementwise", "sort", "fft", "matmul"))
    assert all(e["outcome"] == "done" for e in ended)
    node_of = {e["shard"]: e["node"] for e in ended}
    for r in res["records"]:
        assert {rep["machine"] for rep in r["replicates"]} == {node_of[f"{r['workload']}|small"]}

    # No two shards, of either run, overlapped on one node, though B was dispatching while A's
    # gated shards held both nodes: reserving each node's CPUs kept them apart.
    assert _overlaps(_ended(every) + _ended(anyn)) == []
    gated_ends = [e["ended"] for e in _ended(every) if e["shard"].startswith("gated|")]
    assert b_dispatch < min(gated_ends)
    assert min(e["started"] for e in ended) > min(gated_ends)


def test_gpu_type_runs_only_on_matching_nodes(ray_cluster, tmp_path):
    out = tmp_path / "t4"
    t4 = ray_cluster.start("run", "--cluster", ray_cluster.address, "--gpu-type", "T4", *TINY,
                           "--workloads", "sort", "--processes", "1", "-o", str(out))
    h100 = ray_cluster.start("run", "--cluster", ray_cluster.address, "--gpu-type", "H100", *TINY,
                             "--workloads", "sort", "-o", str(tmp_path / "h100"))  # at once: less to wait
    (_, t4_err), (_, h100_err) = t4.communicate(timeout=300), h100.communicate(timeout=300)
    assert t4.returncode == 0, t4_err[-3000:]
    assert {r["machine"] for r in _results(out)["records"]} == {"n1"}
    assert h100.returncode == 2
    assert "--gpu-type H100: no node" in h100_err and "T4" in h100_err
    assert not (tmp_path / "h100").exists()


_RESUME_REPORTING = """
import json, sys
import arraybench

class Started(arraybench.Reporter):
    seen = []
    def worker_started(self, backend, device, replicate, cells, environment=""):
        self.seen.append([backend, device, replicate, cells, environment])

arraybench.resume(sys.argv[1], reporter=Started(), plots=False, store=False)
print(json.dumps(Started.seen))
"""


def test_environments_run_on_every_node_and_one_missing_there_is_said_per_node(ray_cluster, tmp_path):
    # This interpreter under two variants, and an interpreter no node has: each node runs the
    # first two and says of the third that it is missing there; --resume goes on with environments.
    out, gone = tmp_path / "envs", tmp_path / "nowhere" / "bin" / "python"
    envs = ("--python", f"here={sys.executable}", "--python", f"gone={gone}",
            "--variant", "base:", "--variant", "t1:OPENBLAS_NUM_THREADS=1")
    done = ray_cluster.cli("run", "--cluster", ray_cluster.address, "--on", "every-node", *TINY,
                           "--workloads", "sort", "--processes", "1", *envs, "-o", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    res = _results(out)
    recs = {(r["environment"], r["machine"]): r for r in res["records"]}
    assert res["complete"] and sorted(recs) == sorted(
        (f"{p}/{v}", n) for p in ("here", "gone") for v in ("base", "t1") for n in ("n1", "n2"))
    for n in ("n1", "n2"):
        for v in ("base", "t1"):
            ran, missing = recs[(f"here/{v}", n)], recs[(f"gone/{v}", n)]
            assert ran["status"] == "ok" and [rep["machine"] for rep in ran["replicates"]] == [n]
            assert missing["status"] == "skipped"
            assert missing["reason"] == f"node {n}: --pythons gone={gone}: no such interpreter (or it is not executable)"
        workers = res["environment"]["machines"][n]["backends"]  # each environment's own report, per node
        assert sorted(workers) == ["numpy/cpu[here/base]", "numpy/cpu[here/t1]"]
        assert workers["numpy/cpu[here/t1]"]["kernel_env"]["OPENBLAS_NUM_THREADS"] == "1"
        assert "OPENBLAS_NUM_THREADS" not in workers["numpy/cpu[here/base]"]["kernel_env"]

    # A run cut short before n2's t1 replicate came home: --resume measures that one alone, there.
    journal = out / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if not ('"type": "replicate"' in ln and "[here/t1]@n2" in ln)]
    assert len(kept) == len(lines) - 1
    journal.write_text("".join(kept))
    # Through the API, with a reporter: the head hears which environment's worker each node starts.
    again = subprocess.run(["nsenter", f"--net=/proc/{ray_cluster.pid}/ns/net", "--", sys.executable, "-c",
                            _RESUME_REPORTING, str(out)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout.splitlines()[-1]) == [["numpy", "cpu", 0, 1, "here/t1"]]
    after = {(r["environment"], r["machine"]): r for r in _results(out)["records"]}
    assert after[("here/t1", "n2")]["status"] == "ok"
    assert [rep["machine"] for rep in after[("here/t1", "n2")]["replicates"]] == ["n2"]
    assert all(after[k]["replicates"] == recs[k]["replicates"] for k in recs if k != ("here/t1", "n2"))
    assert sorted(e["shard"] for e in read_shard_log(out) if e.get("type") == "shard_started") == [
        "sort|small@n1", "sort|small@n2", "sort|small@n2"]


def _wait_for(predicate, what: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            pytest.fail(f"the run ended before {what}: {proc.stderr.read()[-3000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def _journalled(out: Path, key_part: str) -> int:
    try:
        lines = (out / "journal.jsonl").read_text().splitlines()
    except OSError:
        return 0
    return sum(1 for ln in lines[1:] if f'"key": "{key_part}' in ln and '"type": "replicate"' in ln)


def _shard_folders(cluster: LocalCluster) -> list[Path]:
    from arraybench.executors.ray_agent import SHARD_PREFIX

    return sorted(cluster.node_tmp.glob(SHARD_PREFIX + "*"))


def _slow(tmp_path: Path) -> tuple[str, Path]:
    """A workload file of ``slow``, and its gate, not yet made: a test makes it once it has seen
    a shard's first replicate journalled, so the second cannot finish before the test acts."""
    gate = tmp_path / "gate"
    (tmp_path / "slow.py").write_text(_GATED.format(name="slow", sleep=0.4, gate=str(gate)))
    return str(tmp_path / "slow.py"), gate


def test_every_node_a_node_lost_mid_shard_loses_only_that_shard_and_resume_completes(ray_cluster, tmp_path):
    out = tmp_path / "lost"
    slow, gate = _slow(tmp_path)
    run = ray_cluster.start("run", "--cluster", ray_cluster.address, "--on", "every-node", *TINY,
                            "--workload-file", slow, "--workloads", "slow,sort", "--processes", "2",
                            "-o", str(out))
    _wait_for(lambda: _journalled(out, "slow|small|numpy|cpu|float64|latency@n2") >= 1,
              "the first replicate of n2's slow shard", run)
    gate.touch()
    ray_cluster.command("remove n2")
    gate.unlink()
    _, err = run.communicate(timeout=300)
    assert run.returncode == 1, err[-3000:]
    assert "not fully measured" in err and "--resume" in err and "Traceback" not in err

    res = _results(out)
    assert not res["complete"]
    recs = {(r["workload"], r["machine"]): r for r in res["records"]}
    assert all(len(recs[(w, "n1")]["replicates"]) == 2 for w in ("slow", "sort"))  # n1 finished
    kept = recs[("slow", "n2")]["replicates"]
    assert len(kept) == 1 and kept[0]["machine"] == "n2"  # what n2 sent before it died is kept
    assert recs[("sort", "n2")]["replicates"] == [] and "node n2 was lost" in recs[("sort", "n2")]["reason"]
    lost = [e for e in _ended(out) if e["outcome"] == "lost"]
    assert [(e["shard"], e["node"]) for e in lost] == [("slow|small@n2", "n2")]

    ray_cluster.command("add n2")
    done = ray_cluster.cli("run", "--resume", str(out), "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    res = _results(out)
    assert res["complete"]
    assert all(r["status"] == "ok" and len(r["replicates"]) == 2 for r in res["records"])
    again = {(r["workload"], r["machine"]): r for r in res["records"]}
    assert again[("slow", "n2")]["replicates"][0]["samples_s"] == kept[0]["samples_s"]  # not re-measured
    assert _overlaps(_ended(out)) == []


def test_any_node_a_lost_shard_finishes_on_the_other_node(ray_cluster, tmp_path):
    for name in sorted(ray_cluster.removed):
        ray_cluster.command(f"add {name}")
    out = tmp_path / "moved"
    slow, gate = _slow(tmp_path)
    run = ray_cluster.start("run", "--cluster", ray_cluster.address, "--on", "any-node", *TINY,
                            "--workload-file", slow, "--workloads", "slow,sort", "--processes", "2",
                            "-o", str(out))
    _wait_for(lambda: _journalled(out, "slow|") >= 1, "the first replicate of the slow shard", run)
    gate.touch()
    first = next(e for e in read_shard_log(out) if e.get("type") == "shard_started" and e["shard"] == "slow|small")
    ray_cluster.command(f"remove {first['node']}")
    gate.unlink()
    _, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-3000:]
    res = _results(out)
    assert res["complete"] and all(r["status"] == "ok" and len(r["replicates"]) == 2 for r in res["records"])
    slow = next(r for r in res["records"] if r["workload"] == "slow")
    other = ({"n1", "n2"} - {first["node"]}).pop()
    assert [rep["machine"] for rep in slow["replicates"]] == [first["node"], other]
    outcomes = [(e["shard"], e["node"], e["outcome"]) for e in _ended(out) if e["shard"] == "slow|small"]
    assert outcomes == [("slow|small", first["node"], "lost"), ("slow|small", other, "done")]
    ray_cluster.command(f"add {first['node']}")


def test_a_shard_folder_an_agent_killed_mid_shard_left_is_removed_by_a_later_agent(ray_cluster, tmp_path):
    for name in sorted(ray_cluster.removed):
        ray_cluster.command(f"add {name}")
    gate = tmp_path / "gate"
    gate.touch()
    (tmp_path / "gated.py").write_text(_GATED.format(name="gated", sleep=0, gate=str(gate)))
    out = tmp_path / "killed"
    before = set(_shard_folders(ray_cluster))  # an earlier test's, if no agent has come since
    run = ray_cluster.start("run", "--cluster", ray_cluster.address, "--on", "every-node", *TINY,
                            "--workload-file", str(tmp_path / "gated.py"), "--workloads", "gated",
                            "--processes", "1", "-o", str(out))
    _wait_for(lambda: len(set(_shard_folders(ray_cluster)) - before) == 2, "a shard under way on each node", run)
    waiting = lambda: {int(p.suffix[1:]) for p in tmp_path.glob("gate.*")}  # noqa: E731
    _wait_for(lambda: len(waiting()) == 2, "a worker at the gate on each node", run)
    under_way = set(_shard_folders(ray_cluster)) - before
    ray_cluster.command("remove n2")  # its agent is killed at the gate: its ``finally`` never runs
    # The gate opens once n2's worker is gone with its agent: opened before, the shard could end
    # and its agent's process (not yet ended by Ray) hand it to the head, and the run succeed.
    _wait_for(lambda: not all(os.path.exists(f"/proc/{pid}") for pid in waiting()), "n2's worker gone", run)
    gate.unlink()
    _, err = run.communicate(timeout=300)
    assert run.returncode == 1, err[-3000:]
    left = set(_shard_folders(ray_cluster)) - before
    assert len(left) == 1 and left < under_way  # n1's agent removed its own; n2's could not

    ray_cluster.command("add n2")
    done = ray_cluster.cli("run", "--resume", str(out), "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    assert _shard_folders(ray_cluster) == []  # the next agents removed what the killed ones left


def test_a_cluster_lost_mid_run_ends_the_run_with_its_results_and_how_to_go_on(ray_cluster, tmp_path):
    """Last in the module: it loses the cluster for good. About 20 s (the head is noticed gone
    within HEAD_LOST_S = 5 s of missed connections, then results, report and store). Before,
    Ray ended the process 60 s after its head was gone, with no results.json and no report."""
    for name in sorted(ray_cluster.removed):
        ray_cluster.command(f"add {name}")
    out = tmp_path / "headless"
    slow, gate = _slow(tmp_path)
    run = ray_cluster.start("run", "--cluster", ray_cluster.address, "--on", "every-node", *TINY,
                            "--workload-file", slow, "--workloads", "slow,sort", "--processes", "2",
                            "-o", str(out))
    _wait_for(lambda: _journalled(out, "slow|") >= 1, "the first replicate of a slow shard", run)
    gate.touch()  # the run is still under way when its head goes, however slow the command
    lost_at = time.monotonic()
    ray_cluster.command("lose-head")  # the head's GCS killed, as `ray stop --force` there does
    _, err = run.communicate(timeout=120)
    gate.unlink()
    took = time.monotonic() - lost_at
    assert run.returncode == 1, err[-3000:]
    assert took < 45, took  # well before Ray's own end of a driver without its head (60 s)
    assert "Traceback" not in err and "the cluster was lost" in err
    assert f"Continue with: arraybench run --resume {out}" in err
    res = _results(out)
    assert not res["complete"]
    journalled = _journalled(out, "slow|") + _journalled(out, "sort|")
    assert journalled >= 1 and sum(len(r["replicates"]) for r in res["records"]) == journalled  # all kept
    assert (out / "report.html").is_file()
    assert any(e["outcome"] == "lost" and "stopped answering" in e["reason"] for e in _ended(out))

"""Property-based tests of the command line's front end: any argument list for ``arraybench run``
either becomes a valid plan or a one-line ``UsageError``; never another exception.

They drive the real parser and the real parse-and-check stage of ``run`` (``api.plan``,
``resume_state``), which is everything ``arraybench run`` does before it starts a worker.
"""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from arraybench import backends
from arraybench.model import options as plan
from arraybench.workloads import definition as sizes
from arraybench.plan import validate
from arraybench.plan import build_plan
from arraybench.commands.main import parse
from arraybench import api
from arraybench.commands.run import options_from_args, resume_state
from arraybench.errors import UsageError
from arraybench.model.journal import JournalState
from arraybench.workloads import BUILTIN, REGISTRY

from ..model.test_journal import make_journal

NUMBERS = st.one_of(
    st.integers(-10**12, 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["0", "-0", "1", "2", "1e999", "-1e999", "nan", "inf", "1_000", " 5 ", "0x10",
                     "1e10", "1e11", "10%", "150%", "0.5", "", "٣"]),
)
JUNK = st.text(max_size=12)


def csv_of(choices) -> st.SearchStrategy[str]:
    item = st.one_of(st.sampled_from(list(choices)), JUNK.filter(lambda s: "," not in s))
    return st.lists(item, max_size=4).map(",".join)


SIZE = st.one_of(
    st.sampled_from(["small", "large", "medium", "tiny"]),
    st.integers(-5, 10**11).map(str),
    st.tuples(st.integers(-5, 10**5), st.integers(-5, 10**6)).map(lambda t: f"{t[0]}:{t[1]}"),
    st.tuples(st.integers(-5, 10**4), st.integers(-5, 10**5), st.integers(-3, 3000)).map(
        lambda t: f"{t[0]}:{t[1]}:{t[2]}"),
    NUMBERS, JUNK.filter(lambda s: "," not in s),
)
VALUES = {
    "--backends": csv_of(list(backends.SPECS) + ["numpi", "tensorflow"]),
    "--devices": csv_of(list(backends.DEVICES) + ["tpu", "cuda"]),
    "--workloads": csv_of(list(BUILTIN) + ["matmull"]),
    "--sizes": st.lists(SIZE, min_size=0, max_size=4).map(",".join),
    "--dtype": st.sampled_from(list(plan.DTYPES) + ["float16", "int8", ""]),
    "--mode": csv_of(list(plan.MODES) + ["fast"]),
    "--processes": NUMBERS, "--min-samples": NUMBERS, "--threads": NUMBERS, "--seed": NUMBERS,
    "--max-time": NUMBERS, "--timeout": NUMBERS, "--rel-ci": NUMBERS,
    "--workload-file": st.sampled_from(["/no/such/file.py", "", "."]),
    "--output-dir": st.sampled_from(["out", "", "deep/er/out"]),
    "--resume": st.sampled_from(["NOJOURNAL", "JOURNAL", "/no/such/dir", ""]),
}
FLAGS = ["--include-transfer", "--cold", "--allow-tf32", "--overwrite", "-q", "--json", "--no-plots"]


def _not_help(token: str) -> bool:
    # argparse exits the process for --help and any prefix of it; that is not bad input.
    return not (token.startswith("-h") or (len(token) > 2 and "--help".startswith(token)))


@st.composite
def argument_lists(draw) -> list[str]:
    argv: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["option", "option", "option", "flag", "junk"]))
        if kind == "option":
            name = draw(st.sampled_from(sorted(VALUES)))
            value = draw(st.one_of(VALUES[name], VALUES[name], NUMBERS, JUNK))
            if draw(st.booleans()):
                argv.append(f"{name}={value}")
            else:
                argv += [name, value]
        elif kind == "flag":
            argv.append(draw(st.sampled_from(FLAGS)))
        else:
            argv.append(draw(JUNK))
    return [a for a in argv if _not_help(a)]


def front_end(argv: list[str], tmp: Path):
    """What ``arraybench run`` does before it starts anything: parse, check, plan."""
    argv = [str(tmp / "journal") if a == "JOURNAL" else str(tmp) if a == "NOJOURNAL" else a
            for a in argv]
    args = parse(["run", *argv])
    if args.resume:
        return resume_state(args)
    return api.plan(options_from_args(args))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=argument_lists())
@example(argv=["--include-transfer", "--workload-file", "\x00"])  # no file name holds a NUL
def test_any_arguments_give_a_valid_plan_or_one_line(tmp_path_factory, argv):
    tmp = tmp_path_factory.mktemp("cli")
    if "JOURNAL" in argv:  # only a --resume of it reads it: the others need no fsynced journal
        make_journal(tmp / "journal")
    registry_before = dict(REGISTRY)
    try:
        outcome = front_end(argv, tmp)
    except UsageError as exc:
        text = str(exc)
        assert text and len(text.splitlines()) == 1 and "Traceback" not in text
        return
    finally:
        assert REGISTRY == registry_before  # a failed workload file leaves nothing behind
    if isinstance(outcome, JournalState):  # --resume of the journal, with agreeing options
        assert outcome.cells and outcome.options.processes >= 1
        return
    options, cells = outcome.options, outcome.cells
    assert cells
    assert len({c.key for c in cells}) == len(cells)
    for c in cells:
        assert 1 <= c.size <= sizes.MAX_SIZE
        assert c.workload in REGISTRY
        assert c.device in backends.SPECS[c.backend].devices
        assert c.dtype in plan.DTYPES and c.mode in plan.MODES
    assert options.processes >= 1 and options.min_samples >= 1 and options.seed >= 0
    for value in (options.max_time, options.timeout):
        assert math.isfinite(value) and value > 0
    assert 0 < options.rel_ci < 1
    assert options.threads is None or options.threads >= 1


@settings(max_examples=100, deadline=None)
@given(text=st.lists(SIZE, max_size=5).map(",".join))
def test_any_sizes_give_cells_in_range_or_one_line(text):
    options = plan.RunOptions(backends=["numpy"], devices=["cpu"], workloads=["matmul", "sort"])
    try:
        options.sizes = sizes.parse_sizes(text)
        options = validate(options, REGISTRY)
        cells = build_plan(options, REGISTRY)
    except UsageError as exc:
        assert str(exc) and len(str(exc).splitlines()) == 1
        return
    assert cells and all(1 <= c.size <= sizes.MAX_SIZE for c in cells)
    assert len(cells) <= 2 * (sizes.MAX_STEPS + 40) * 5

"""The terminal: a console that shows any text and never obeys it (callers still escape what they put
into markup), tables fitted to a width, and the plain listings (a cluster's nodes, stored runs, this
machine and its libraries for ``info``).
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass
from typing import Any, Iterable, Callable, Sequence, Mapping

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, Group
from rich.errors import MarkupError
from rich.markup import escape
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from .notes import knobs_text, library_kernels
from ..backends import DEVICES, SPECS
from ..errors import printable
from ..executors.cluster import Node, identity
from ..store.store import StoredRun


#: The longest text rich's highlighter colours (numbers, paths); longer text prints plain.
_MAX_HIGHLIGHTED = 2000

#: The width a file or a pipe gets (as in CI): a terminal's usual 80, to which every table fits.
TABLE_WIDTH = 80


class SafeConsole(Console):
    """A rich ``Console`` that escapes control characters, emits no hyperlinks and never raises for markup."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        text = printable(text)
        if len(text) > _MAX_HIGHLIGHTED:
            # rich's highlighter backtracks: a 20,000-character name took ten seconds to print
            kwargs["highlight"] = False
        try:
            return super().render_str(text, **kwargs)
        except MarkupError:
            return super().render_str(text, **{**kwargs, "markup": False})

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        segments = (safe_segment(s) for s in super().render(renderable, options))
        # rich pads a line to the width; in a log or a file those spaces are noise a diff shows
        yield from segments if self.is_terminal else _without_trailing_spaces(segments)


def _without_trailing_spaces(segments: Iterable[Segment]) -> Iterable[Segment]:
    """``segments`` with the spaces before each line's end dropped; a segment that ends in spaces is
    held until the next shows whether a line ends there."""
    held: Segment | None = None
    for segment in segments:
        if not segment.control:
            segment = Segment(_TRAILING.sub("\n", segment.text), segment.style)
        if held is not None:
            if segment.text.startswith("\n"):
                held = Segment(held.text.rstrip(" "), held.style)
            if held.text:
                yield held
            held = None
        if not segment.control and segment.text.endswith(" "):
            held = segment
        else:
            yield segment
    if held is not None:
        yield held


_TRAILING = re.compile(r" +\n")


def safe_segment(segment: Segment) -> Segment:
    """``segment`` with control characters escaped and any hyperlink dropped (rich's control segments kept)."""
    style = segment.style
    if segment.control:
        return segment
    if style is not None and style.link:
        style = style.update_link(None)
    cleaned = printable(segment.text)
    return segment if cleaned == segment.text and style is segment.style else Segment(cleaned, style)


def plain(text: object) -> Text:
    """``text`` as a table cell or a line that no markup in it is read from."""
    return Text(printable(str(text)))


#: A ``SafeConsole`` (``stderr=True`` for standard error; other keywords as rich's).
console = SafeConsole


def stdout_console(width: int = TABLE_WIDTH) -> Console:
    """A console on stdout (see ``widened``)."""
    return widened(SafeConsole(), width)


def widened(console: Console, width: int = TABLE_WIDTH) -> Console:
    """``console``, or one ``width`` wide without colour where it writes to a file or pipe and $COLUMNS is unset."""
    if console.is_terminal or console.width >= width or os.environ.get("COLUMNS", "").strip().isdigit():
        return console
    return SafeConsole(width=width, file=console.file, color_system=None)


#: A name column keeps this much at the least, so that names wrap into lines of a few words.
TEXT_MIN_WIDTH = 13


@dataclass(frozen=True)
class Column:
    """``numeric``: right-aligned, never wraps; ``whole``: never wraps or shortens; higher ``drop`` goes first."""

    name: str
    numeric: bool = False
    drop: int = 0
    whole: bool = False


@dataclass
class Row:
    cells: Sequence[RenderableType]
    style: str | None = None
    end_section: bool = False


def fitted_table(title: RenderableType, columns: Sequence[Column], rows: Sequence[Row],
                 width: int | None, fits: Callable[[Table, int], bool] | None = None) -> tuple[Table, list[str]]:
    """The table within ``width`` columns (None: as wide as it wants), and the columns left out to fit."""
    kept = list(range(len(columns)))
    table = build_table(title, columns, rows, kept)
    dropped: list[str] = []
    if width is not None:
        for i in sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: -columns[i].drop):
            if (fits or _fits)(table, width):
                break
            kept.remove(i)
            dropped.append(columns[i].name)
            table = build_table(title, columns, rows, kept)
    return table, dropped


def fitted(title: RenderableType, columns: Sequence[Column], rows: Sequence[Row], width: int | None,
           *under: RenderableType) -> Group:
    """``fitted_table``, what goes ``under`` it, and a line naming the columns it left out."""
    table, dropped = fitted_table(title, columns, rows, width)
    if dropped:
        under += (Text(f"Hidden to fit {width} columns: {', '.join(dropped)} (a wider terminal, or "
                       "COLUMNS=160, shows them; --json gives everything).", style="dim"),)
    return Group(table, *under)


def build_table(title: RenderableType, columns: Sequence[Column], rows: Sequence[Row],
                kept: Sequence[int]) -> Table:
    """The table of ``rows`` with the columns ``kept`` (indices into ``columns``), unfitted."""
    table = Table(title=title, header_style="bold", pad_edge=False, title_justify="left")
    for i in kept:
        c = columns[i]
        # The widest cell as rich counts it (the header's longest word for a text column).
        widest = max((cell_len(line) for r in rows for line in str(r.cells[i]).splitlines()), default=0)
        if c.numeric or c.whole:  # never wrap or shorten: the column is as wide as its cells
            table.add_column(c.name, justify="right" if c.numeric else "left", no_wrap=True,
                             min_width=max(widest, len(c.name)))
        else:  # names wrap between words, in a column kept wide enough for a short name on one
            # line; a word too long for the column ends in "…", never splits
            longest_word = max((len(w) for w in c.name.split()), default=1)
            table.add_column(c.name, justify="left", overflow="ellipsis",
                             min_width=max(longest_word, min(widest, TEXT_MIN_WIDTH)))
    for r in rows:
        table.add_row(*(r.cells[i] for i in kept), style=r.style, end_section=r.end_section)
    return table


def _fits(table: Table, width: int) -> bool:
    """Whether ``table`` shows whole at ``width``: rich's measure can be a column short, and a table wider
    than its console loses its right edge, so the table is drawn and its top border looked at."""
    if measure(table).minimum > width:
        return False
    drawn = console(width=width, color_system=None, record=True, file=io.StringIO())
    drawn.print(table)
    top = next((ln for ln in drawn.export_text().splitlines() if ln.startswith(("┏", "┌"))), "")
    return top.rstrip().endswith(("┓", "┐"))


def measure(table: Any) -> Measurement:
    """The table's least and natural widths, measured on a wide console."""
    wide = console(width=10_000, color_system=None, file=io.StringIO())
    return Measurement.get(wide, wide.options, table)


def runs_table(runs: Sequence[StoredRun], where: str, width: int | None = None) -> Group:
    """One row per stored run (``no``: interrupted, ``empty``: measured nothing), fitted to ``width``."""
    columns = (Column("run", whole=True), Column("started", whole=True), Column("complete"),
               Column("records", True, 2),
               Column("machine", False, 3), Column("context", False, 1), Column("from", False, 4))
    rows = [Row([plain(x) for x in (r.run_id, r.started_at[:19].replace("T", " "),
                                     ("yes" if r.measured else "empty") if r.complete else "no",
                                     r.records, r.machine_id,
                                     ", ".join(f"{k}={v}" for k, v in r.context.items()),
                                     r.source or "(in memory)")]) for r in runs]
    # The store's location under the table, whole: a path folded into a title cannot be copied.
    title = f"arraybench store: {len(runs)} run{'s' if len(runs) != 1 else ''}"
    return fitted(title, columns, rows, width, Text(f"store {where}", no_wrap=True, overflow="ignore"))


def nodes_table(nodes: list[Node], address: str) -> Table:
    """One row per node: resources, whether it takes shards and is free, and its machine identity."""
    t = Table(title=f"Ray cluster at {escape(address)}: {len(nodes)} nodes", title_justify="left",
              header_style="bold", pad_edge=False)
    for name in ("node", "address", "CPUs", "GPUs", "shards", "free", "machine", "identity", "CPU model"):
        t.add_column(name, overflow="fold")
    groups: dict[str, str] = {}
    for n in nodes:
        env = n.environment
        key = repr(sorted(identity(env).items())) if env else ""
        group = groups.setdefault(key, chr(ord("A") + len(groups))) if env else "—"
        gpus = f"{n.gpus:g}" + (f" ({', '.join(n.gpu_types)})" if n.gpu_types else "")
        free = "—" if not n.takes_shards else "unknown" if n.free is None else "yes" if n.free else "busy"
        t.add_row(escape(n.label), escape(n.address), f"{n.cpus:g}", gpus, "yes" if n.takes_shards else "no",
                  free, str(env.get("machine_id", "—")), group, escape(str(env.get("cpu_model", "—"))))
    return t


def nodes_json(nodes: list[Node]) -> list[dict[str, Any]]:
    """The nodes as JSON-ready data (``info --cluster --json``)."""
    return [{"label": n.label, "node_id": n.node_id, "address": n.address, "resources": n.resources,
             "slot": n.takes_shards, "free": n.free, "gpu_types": n.gpu_types,
             "machine_id": n.environment.get("machine_id"), "fingerprint": n.environment.get("fingerprint"),
             "arraybench": n.environment.get("arraybench")} for n in nodes]


def print_info(env: Mapping[str, Any], state: Mapping[str, Any], defaults: Mapping[str, Any],
               console: Console) -> None:
    """The machine, the backends, what each library reported, and the project defaults."""
    machine = Table(title=f"arraybench {env.get('arraybench')}", title_justify="left", show_header=False,
                    pad_edge=False, box=None)
    machine.add_column(style="bold", no_wrap=True)
    machine.add_column(overflow="fold")
    for name, text in machine_rows(env, state):
        machine.add_row(name, text)
    console.print(machine)
    console.print(backends_table(state))
    console.print(details_table(state))
    where = f" in {defaults['file']}" if defaults["file"] else ""
    said = ([f"project defaults from {defaults['file']} [tool.arraybench] (the command line wins):"]
            + [f"  {k} = {v!r}" for k, v in defaults["options"].items()] if defaults["options"]
            else [f"project defaults: none ([tool.arraybench]{where} sets no option)"])
    console.print("\n".join(said), soft_wrap=True, markup=False, highlight=False)


def machine_rows(env: Mapping[str, Any], state: Mapping[str, Any] | None = None,
                 threads: str | None = None) -> list[tuple[str, str]]:
    """A machine as (name, text) rows, empty ones left out: ``info``'s, and the report's (``threads``: the run's)."""
    fp, libs = env.get("fingerprint") or {}, env.get("libraries") or {}
    physical = f", {env['cpu_physical_cores']} physical" if env.get("cpu_physical_cores") else ""
    if threads is None:  # info's: the thread-limiting variables, or that there are none
        threads = ("set: " + ", ".join(f"{k}={v}" for k, v in env["thread_env"].items()) if env.get("thread_env")
                   else "no limit set (OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS unset): every "
                   "library uses the available cores; `arraybench run --threads N` limits them all alike")
    rows = [("Python", f"{env.get('python', '?')} ({env.get('python_implementation', '?')})"),
            ("platform", env.get("platform")),
            ("CPU", f"{env.get('cpu_model', '?')} ({env.get('cpu_count', '?')} logical{physical}; "
                    f"{env.get('cpus_available', '?')} available to arraybench)"),
            ("memory", f"{env['memory_gib']} GiB" if env.get("memory_gib") else ""),
            ("GPUs", gpu_text(env, state or {})),
            ("machine id", f"{env['machine_id']} (history and compare tell machines apart by it)"
             if env.get("machine_id") else ""),
            ("threads", threads),
            ("kernel variables", knobs_text(env.get("kernel_env"))),
            ("CPU features", " ".join(map(str, fp.get("cpu_isa") or []))),
            ("libraries", ", ".join(f"{k} {v}" for k, v in libs.items() if v) or "none"),
            ("not installed", ", ".join(k for k, v in libs.items() if not v))]
    return [(name, str(text)) for name, text in rows if text]


def gpu_text(env: Mapping[str, Any], state: Mapping[str, Any]) -> str:
    """The GPUs nvidia-smi lists, or those a backend opened, or why none were found."""
    found = [", ".join(str(g[k]) for k in ("name", "memory", "driver") if g.get(k))
             for g in env.get("gpus") or []]
    if found:
        return "; ".join(found)
    opened = {s["info"].get("device_name") for s in state.values()
              if s.get("devices", {}).get("gpu") is None and "gpu" in s.get("devices", {})
              and s.get("info", {}).get("device_name") not in (None, "cpu")}
    return ", ".join(sorted(opened)) or "none found (no nvidia-smi, or it lists no GPU)"


def linalg_text(info: Mapping[str, Any]) -> str:
    """BLAS and LAPACK as a library reports them ("" where it does not)."""
    if info.get("library") == "torch":
        parts = [f"{k} {info[f]}" for k, f in (("BLAS", "torch_blas"), ("LAPACK", "torch_lapack"))
                 if info.get(f)]
        detail = str(info.get("torch_blas_detail") or "")
        mkl = re.search(r"Math Kernel Library Version ([\w.]+)", detail)
        if mkl:
            detail = f"Intel oneAPI MKL {mkl.group(1).split('-')[0]}"
        text = ", ".join(parts) + (f": {detail}" if detail else "")
        return (text + " (torch.__config__; linked into torch, so threadpoolctl cannot see it)"
                if text else "")
    if info.get("library") != "numpy":
        return ""
    return "; ".join(([f"BLAS {info['blas']} (loaded, per threadpoolctl)"] if info.get("blas") else [])
                     + ([f"LAPACK {info['lapack']} (NumPy's build)"] if info.get("lapack") else []))


def pools_text(info: Mapping[str, Any]) -> str:
    """Thread pools in the library's process: its own settings and threadpoolctl's view."""
    parts = []
    if info.get("torch_threads") is not None:
        parts.append(f"torch {info['torch_threads']} intra-op, {info.get('torch_interop_threads')} inter-op")
    for p in info.get("threadpools") or []:
        parts.append(f"{p.get('internal_api')} ({p.get('prefix')}) {p.get('num_threads')}")
    if info.get("xla_flags"):
        parts.append(f"XLA_FLAGS={info['xla_flags']}")
    if info.get("affinity_cpus") is not None:
        parts.append(f"may run on {info['affinity_cpus']} CPUs")
    return " · ".join(parts)


def backends_table(state: Mapping[str, Any]) -> Table:
    """One row per backend: version, and each device usable or why not."""
    t = Table(title="backends (each asked in its own worker process)", title_justify="left",
              header_style="bold", pad_edge=False)
    t.add_column("library", no_wrap=True)
    t.add_column("version", no_wrap=True)
    for dev in DEVICES:
        t.add_column(dev.upper(), overflow="fold")
    for name, s in state.items():
        found = s["devices"]
        cells = ["[dim]—[/]" if dev not in found else "[green]usable[/]" if found[dev] is None
                 else f"[yellow]{escape(found[dev])}[/]" for dev in DEVICES]
        t.add_row(SPECS[name].label, s.get("version") or "not installed", *cells)  # probe_backends: SPECS's
    return t


def details_table(state: Mapping[str, Any]) -> Table:
    """BLAS/LAPACK and thread pools of every usable backend, as its worker reported them."""
    t = Table(show_header=False, box=None, pad_edge=False, title="as each library sees itself",
              title_justify="left")
    t.add_column(style="bold", no_wrap=True)
    t.add_column(no_wrap=True, style="dim")
    t.add_column(overflow="fold")
    for name, s in state.items():
        info = s.get("info") or {}
        if not info:
            continue
        rows = [("BLAS/LAPACK", linalg_text(info)), ("kernels", library_kernels(info)),
                ("threads", pools_text(info))]
        if info.get("device_name") != "cpu":
            rows.append(("device", str(info.get("device_name") or "")))
        rows += [(key, "" if info.get(key) is None else str(info[key]))
                 for key in ("platform", "x64", "matmul_precision", "allow_tf32", "reduced_precision_float32",
                             "cuda", "gpu_monitor", "numba", "metal_available", "gpu_dtypes_missing",
                             "mps_dtypes_missing")]
        for i, (key, text) in enumerate([(k, text) for k, text in rows if text]):
            t.add_row(SPECS[name].label if i == 0 else "", key, escape(text))
    return t

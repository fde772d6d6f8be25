"""One options table: each option's one spelling on the command line, in the pytest plugin, in
``[tool.arraybench]`` and in the API, and the older spellings still taken."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

import arraybench
from arraybench import config
from arraybench.commands.main import _run_parser, parse
from arraybench.commands.run import options_from_args
from arraybench.errors import UsageError
from arraybench.model.options import RunOptions
from arraybench.options import API, CLI, FILE, KEYWORDS, OPTIONS, OWN_KEYS, PYTEST_NAMES, dashed, on


def test_the_api_keywords_are_the_run_options_fields():
    assert set(KEYWORDS) == {f.name for f in dataclasses.fields(RunOptions)}


def test_every_option_of_the_table_is_on_the_surfaces_it_names():
    flags = set(_run_parser()._option_string_actions)
    for o in on(CLI):
        assert {"--" + dashed(n) for n in (o.name, *o.aliases)} <= flags, o.name
    assert [o.name for o in OPTIONS if API in o.on and CLI in o.on] == \
        [o for o in KEYWORDS if o not in ("max_processes", "target_sample", "shipped_workloads")]
    assert PYTEST_NAMES["max_time"] == "--arraybench-max-time"
    assert {o.name for o in on(FILE) if o.own} == {"workload_files", "pythons", "variants", "cluster", "against",
                                                   "store", "output_dir", "csv", "markdown", "overwrite"}


def test_one_spelling_everywhere_and_the_old_ones_still_taken(tmp_path: Path):
    canonical = options_from_args(parse(["run", "--modes", "throughput", "--params", "tsteps=3",
                                         "--variants", "t1:A=1"]))
    old = options_from_args(parse(["run", "--mode", "throughput", "--param", "tsteps=3", "--variant", "t1:A=1"]))
    assert canonical == old
    assert (canonical.modes, canonical.params, canonical.variants) == (["throughput"], {"tsteps": "3"},
                                                                       {"t1": {"A": "1"}})
    for key in ("modes", "mode"):
        path = tmp_path / f"{key}.toml"
        path.write_text(f'[tool.arraybench]\n{key} = ["throughput"]\nparam = ["tsteps=4"]\n')
        os.chmod(path, 0o600)
        defaults = config.load(_run_parser(), path)
        assert options_from_args(parse(["run"], defaults)).modes == ["throughput"]
        assert options_from_args(parse(["run"], defaults)).params == {"tsteps": "4"}


def test_the_old_spellings_of_the_code_a_file_chooses_are_kept_from_a_file_of_others(tmp_path: Path):
    assert {"workload-file", "workload-files", "python", "pythons", "variant", "variants"} <= set(OWN_KEYS)
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.arraybench]\npythons = ["x=/bin/sh"]\n')
    os.chmod(path, 0o666)
    with pytest.raises(UsageError, match="sets pythons, which would choose the code run"):
        config.load(_run_parser(), path)


def test_a_mistyped_keyword_or_key_gets_the_closest_one(tmp_path: Path):
    with pytest.raises(TypeError, match=r"^unknown option 'max_tme'; did you mean 'max_time'\?$"):
        arraybench.run(["sort"], max_tme=1)
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.arraybench]\nwarmpu = 0.1\n')
    os.chmod(path, 0o600)
    with pytest.raises(UsageError, match="unknown key 'warmpu' in \\[tool.arraybench\\]; did you mean 'warmup'"):
        config.load(_run_parser(), path)

"""Settings a workload takes: NumPy scalar defaults are settings like Python ones, and a
run's ``--param`` can be aimed at one workload (``WORKLOAD.NAME=VALUE``)."""

from __future__ import annotations

import numpy as np
import pytest

import arraybench
from arraybench import workload
from arraybench.model.options import RunOptions
from arraybench.plan import validate
from arraybench.plan import build_plan
from arraybench.worker.prepare import ReferenceCache
from arraybench.model.replicate import TimerSettings

from ..conftest import backend_or_skip, run_here
from ..measuring import measure_cell

QUICK = TimerSettings(min_samples=3, max_samples=3, budget_s=0.0, warmup_s=0.0, target_sample_s=1e-6)

pytestmark = pytest.mark.usefixtures("registry_restored")  # conftest.py


def _scaled():
    @workload(name="scaled", sizes={"small": 8}, inputs=lambda n, rng: rng.standard_normal(n).astype(np.float32))
    def scaled(xp, x, *, alpha=np.float64(1.5), steps=np.int64(2), on=np.bool_(True)):
        # NumPy 2 promotes float32 * np.float64 to float64 but float32 * 2.0 stays float32: the
        # function must get the very type its default has, whatever value the run gives.
        assert type(alpha) is np.float64 and type(steps) is np.int64 and type(on) is np.bool_
        for _ in range(steps):
            x = x * alpha if on else x
        return x

    return scaled


def _plan(workloads, **params):
    names = [wl.name for wl in workloads]
    opts = validate(RunOptions(workloads=names, backends=["numpy"], devices=["cpu"], params=params), names)
    return build_plan(opts, {wl.name: wl for wl in workloads})


def test_numpy_scalar_defaults_are_settings_recorded_as_plain_values():
    wl = _scaled()
    assert wl.params_for(8) == {"alpha": 1.5, "steps": 2, "on": True}
    assert [type(v) for v in wl.params_for(8).values()] == [float, int, bool]
    (cell,) = _plan([wl], alpha="2.0", steps="3")
    assert cell.params == {"alpha": 2.0, "steps": 3, "on": True} and type(cell.params["steps"]) is int
    assert cell.key.endswith("|alpha=2.0,steps=3,on=True")


def test_a_numpy_scalar_setting_reaches_the_function_in_its_own_type():
    wl = _scaled()
    (cell,) = _plan([wl], alpha="2.0", steps="3")
    rep = measure_cell(backend_or_skip("numpy"), wl, cell, QUICK, ReferenceCache())
    assert rep.status == "ok", rep.reason
    # The reference promotes everything to float64; the float32 input times np.float64 is float64
    # in NumPy 2, so the result is judged in its own (wider) precision and its value is 2**3 x.
    assert rep.max_rel_error == 0.0


def _two():
    @workload(name="jac.2d", sizes={"small": 4})
    def jac(xp, x, *, N=10, tsteps=5):
        return x * N * tsteps

    @workload(name="other", sizes={"small": 4})
    def other(xp, x, *, N=10):
        return x * N

    return jac, other


def test_param_aimed_at_one_workload_changes_only_that_one():
    jac, other = _two()
    by_name = {c.workload: c.params for c in _plan([jac, other], **{"jac.2d.N": "40"})}
    assert by_name == {"jac.2d": {"N": 40, "tsteps": 5}, "other": {"N": 10}}
    # A bare name keeps reaching every workload that has it; an aimed one wins over it.
    by_name = {c.workload: c.params for c in _plan([jac, other], N="7", **{"other.N": "3"})}
    assert by_name == {"jac.2d": {"N": 7, "tsteps": 5}, "other": {"N": 3}}


@pytest.mark.parametrize(("params", "message"), [
    ({"nope.N": "3"}, r"--params nope\.N: no selected workload is named 'nope' \(selected: jac\.2d, other\)"),
    ({"other.tsteps": "3"}, r"--params other\.tsteps: workload 'other' has no setting 'tsteps' \(its settings: N\)"),
    ({"other.N": "many"}, r"--params other\.N=many: setting N is a whole number"),
    ({".N": "3"}, r"params key '\.N' is not a parameter name \(NAME, or WORKLOAD\.NAME"),
])
def test_a_param_aimed_wrong_is_one_line(params, message):
    with pytest.raises(arraybench.UsageError, match=message):
        _plan(list(_two()), **params)


def test_param_aimed_at_a_workload_on_the_command_line_and_in_the_project_file(tmp_path):
    from ..conftest import ROOT

    common = ("--workload-file", str(ROOT / "examples" / "jacobi_2d.py"), "--backends", "numpy",
              "--devices", "cpu", "--sizes", "small", "--no-store", "--no-plots", "-q")
    done = run_here("run", *common, "--param", "jacobi_2d.tsteps=3", "--processes", "1",
                    "--max-time", "0.05", "--min-samples", "3", "-o", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (record,) = arraybench.load_results(tmp_path / "run").records
    assert record.status == "ok" and record.params == {"tsteps": 3}
    bad = run_here("run", *common, "--param", "jacobi2d.tsteps=3", "-o", str(tmp_path / "bad"), cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert "--params jacobi2d.tsteps: no selected workload is named 'jacobi2d'" in bad.stderr
    # [tool.arraybench] param = [...] goes through the same parser as --param.
    (tmp_path / "pyproject.toml").write_text('[tool.arraybench]\nparam = ["jacobi_2d.tstep=3"]\n')
    project = run_here("run", *common, "-o", str(tmp_path / "project"), cwd=tmp_path)
    assert project.returncode == 2 and "workload 'jacobi_2d' has no setting 'tstep'" in project.stderr


def test_include_transfer_plans_a_transfer_cell_beside_each_gpu_cell():
    from arraybench.workloads.registry import REGISTRY

    opts = validate(RunOptions(workloads=["elementwise"], backends=["torch"], devices=["cpu", "gpu"],
                               sizes=["small"], include_transfer=True), REGISTRY)
    cells = build_plan(opts, REGISTRY)
    assert sorted((c.device, c.transfer) for c in cells) == [("cpu", False), ("gpu", False), ("gpu", True)]

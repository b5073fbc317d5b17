from __future__ import annotations

import gc
import io
import json
from pathlib import Path

import pytest

from muster.cli import main
from muster.simulation.render import render_table
from muster.simulation.report import Report

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: gpu-1}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "10", nvidia.com/gpu: "2"}}
"""
JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  creationTimestamp: "2026-01-01T10:00:00Z"
  labels: {scheduling.muster.dev/policy: gang}
spec:
  parallelism: 2
  template:
    spec:
      containers:
        - name: w
          image: i
          resources: {requests: {cpu: "1", nvidia.com/gpu: "1"}}
"""


BUSY = """\
apiVersion: v1
kind: Pod
metadata: {name: busy}
spec:
  nodeName: gpu-1
  containers:
    - name: w
      image: i
      resources: {requests: {nvidia.com/gpu: "1"}}
"""


def write(tmp_path: Path, name: str, *documents: str) -> str:
    path = tmp_path / name
    path.write_text("---\n".join(documents))
    return str(path)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_table_shows_each_pod_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([write(tmp_path, "c.yaml", NODE, JOB)], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "NAMESPACE   PODGROUP   SCHEDULED   REASON      PLACED   MESSAGE",
        "default     train      True        Scheduled   2        2/2 pods placed",
    ]


def test_json_lists_the_placements(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([write(tmp_path, "c.yaml", NODE, JOB), "-o", "json"], capsys)
    assert code == 0
    report = json.loads(out)
    assert report["victims"] == []
    assert report["podGroups"][0]["placements"] == {"train-0": "gpu-1", "train-1": "gpu-1"}


def test_objects_may_come_from_several_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [write(tmp_path, "nodes.yaml", NODE), write(tmp_path, "jobs.yaml", JOB)]
    code, out, _ = run([*files, "-o", "json"], capsys)
    assert code == 0
    assert json.loads(out)["podGroups"][0]["scheduled"] is True


def test_stdin_is_read_for_a_dash(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(NODE + "---\n" + JOB))
    code, out, _ = run(["-"], capsys)
    assert code == 0
    assert "train" in out


def test_unknown_kinds_are_warned_about_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
    path = write(tmp_path, "c.yaml", NODE, JOB, service)
    code, out, err = run([path], capsys)
    assert code == 0
    assert err == f"{path}:3: kind Service is not simulated; ignored\n"
    assert "train" in out


@pytest.mark.parametrize(
    ("documents", "message"),
    [
        ((NODE, "kind: [unclosed\n"), ":2: invalid YAML: "),
        (("- just\n- a list\n",), ":1: expected a mapping, found list"),
        (("apiVersion: v1\nkind: Node\nmetadata: {}\n",), ":1: Node: metadata.name: required"),
        (
            ("kind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: lots}}\n",),
            ":1: Node n: status.allocatable: ",
        ),
        ((NODE, JOB.replace("gang}", "always}")), ":2: Job train: "),
        (
            (NODE, JOB.replace("10:00:00Z", "ten o'clock")),
            ":2: PodGroup train: metadata.creationTimestamp",
        ),
    ],
)
def test_invalid_input_is_one_line_per_problem_and_exit_code_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    documents: tuple[str, ...],
    message: str,
) -> None:
    path = write(tmp_path, "bad.yaml", *documents)
    code, out, err = run([path], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(path + message)
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1


def test_a_missing_file_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope.yaml")
    code, _, err = run([missing], capsys)
    assert code == 2
    assert err == f"{missing}: cannot read: No such file or directory\n"


def test_the_clock_is_now_unless_at_moves_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Job was made at 10:00 on 2026-01-01: by now it has waited past the
    starvation limit; at 10:00 it has just come, an hour later it has waited that long
    (`--now` is the older spelling of `--at`)."""
    path = write(tmp_path, "c.yaml", NODE, BUSY, JOB)
    _, today, _ = run([path], capsys)
    _, fresh, _ = run([path, "--at", "2026-01-01T10:00:00Z"], capsys)
    _, later, _ = run([path, "--now", "2026-01-01T11:00:00Z"], capsys)
    assert "closing nodes for it after" in today
    assert "closing nodes" not in fresh
    assert "closing nodes for it after 3600s" in later


def test_the_starvation_limit_is_a_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "c.yaml", NODE, BUSY, JOB)
    _, patient, _ = run([path, "--now", "2026-01-01T10:05:00Z"], capsys)
    _, impatient, _ = run(
        [path, "--now", "2026-01-01T10:05:00Z", "--starvation-seconds", "60"], capsys
    )
    assert "closing nodes" not in patient
    assert "closing nodes for it after 300s" in impatient
    with pytest.raises(SystemExit) as caught:
        main(["simulate", path, "--starvation-seconds", "-1"])
    assert caught.value.code == 2
    assert "--starvation-seconds" in capsys.readouterr().err


RACKED = """\
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{zone: a, rack: {rack}}}}}
status: {{allocatable: {{cpu: "{cpu}", memory: 32Gi, pods: "10"}}}}
"""
PREFERRING = (
    JOB.replace(
        "  labels: {scheduling.muster.dev/policy: gang}",
        "  labels: {scheduling.muster.dev/policy: gang}\n"
        "  annotations: {scheduling.muster.dev/topology-preferred: rack}",
    )
    .replace('nvidia.com/gpu: "1"', 'memory: "1Gi"')
    .replace("parallelism: 2", "parallelism: 3")
)


def test_a_preferred_level_keeps_a_gang_in_one_rack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes = (
        RACKED.format(name="n1", rack="r1", cpu="2"),
        RACKED.format(name="n2", rack="r2", cpu="4"),
    )
    path = write(tmp_path, "c.yaml", *nodes, PREFERRING)
    for levels in ([], ["--topology-levels", "zone,rack"]):
        code, out, _ = run([path, "-o", "json", *levels], capsys)
        (group,) = json.loads(out)["podGroups"]
        assert (code, set(group["placements"].values())) == (0, {"n2"})
    with pytest.raises(SystemExit) as caught:
        main(["simulate", path, "--topology-levels", "zone,not a key"])
    assert caught.value.code == 2
    assert "'not a key' is not a valid label key" in capsys.readouterr().err


SLICED = (
    JOB.replace(
        "  labels: {scheduling.muster.dev/policy: gang}",
        "  labels: {scheduling.muster.dev/policy: gang}\n"
        "  annotations: {scheduling.muster.dev/topology-slice: rack,"
        " scheduling.muster.dev/topology-slice-size: '2'}",
    )
    .replace('nvidia.com/gpu: "1"', 'memory: "1Gi"')
    .replace("parallelism: 2", "parallelism: 4\n  completionMode: Indexed")
)


def test_a_sliced_job_lands_a_slice_per_rack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes = (
        RACKED.format(name="n1", rack="r1", cpu="3"),
        RACKED.format(name="n2", rack="r2", cpu="1"),
        RACKED.format(name="n3", rack="r2", cpu="2"),
    )
    path = write(tmp_path, "c.yaml", *nodes, SLICED)
    code, out, _ = run([path, "-o", "json", "--topology-levels", "zone,rack"], capsys)
    (group,) = json.loads(out)["podGroups"]
    placements = group["placements"]
    assert code == 0 and len(placements) == 4
    assert {placements["train-0"], placements["train-1"]} == {"n1"}
    assert {placements["train-2"], placements["train-3"]} <= {"n2", "n3"}


@pytest.mark.parametrize("value", ["yesterday", "2026-01-01T10:00:00"])
def test_now_must_be_an_rfc3339_time_with_a_zone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["simulate", write(tmp_path, "c.yaml", NODE), "--now", value])
    assert caught.value.code == 2
    assert "--now" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_max_cycles_must_be_positive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["simulate", write(tmp_path, "c.yaml", NODE), "--max-cycles", value])
    assert caught.value.code == 2
    assert "--max-cycles" in capsys.readouterr().err


def test_too_few_cycles_is_an_error_not_a_wrong_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run([write(tmp_path, "c.yaml", NODE, JOB), "--max-cycles", "1"], capsys)
    assert (code, out) == (1, "")
    assert "still changed after 1 scheduling cycles" in err


def test_max_rollbacks_is_a_flag(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "c.yaml", NODE)
    with pytest.raises(SystemExit) as caught:
        main(["simulate", path, "--max-rollbacks", "-1"])
    assert caught.value.code == 2
    assert "--max-rollbacks" in capsys.readouterr().err


RUNNING = """\
apiVersion: scheduling.muster.dev/v1beta1
kind: PodGroup
metadata:
  name: first
  creationTimestamp: "2026-01-01T09:00:00Z"
  annotations: {scheduling.muster.dev/expected-runtime: 90m}
spec: {schedulingPolicy: {gang: {minCount: 2}}}
status:
  admittedAt: "2026-01-01T09:00:00Z"
  conditions:
    - {type: PodGroupScheduled, status: "True", reason: Scheduled}
  plan: {first-0: gpu-1, first-1: gpu-1}
"""


def _member(group: str, index: int, status: str) -> str:
    """Member pod `<group>-<index>` on gpu-1, with the given `status:` block."""
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {group}-{index}
  labels: {{scheduling.muster.dev/pod-group: {group}}}
spec:
  nodeName: gpu-1
  containers:
    - {{name: w, image: i, resources: {{requests: {{cpu: "1", nvidia.com/gpu: "1"}}}}}}
{status}
"""


def _first_pod(index: int) -> str:
    return _member("first", index, 'status: {phase: Running, startTime: "2026-01-01T09:00:00Z"}')


def test_the_timeline_shows_when_each_gang_starts_and_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = JOB.replace(
        "labels:", "annotations: {scheduling.muster.dev/expected-runtime: 1h}\n  labels:"
    )
    files = write(tmp_path, "c.yaml", NODE, RUNNING, _first_pod(0), _first_pod(1), job)
    code, out, err = run([files, "--timeline", "--at", "2026-01-01T10:00:00Z"], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[1].split()[:6] == [
        "default",
        "first",
        "09:00:00",
        "(running)",
        "10:30:00",
        "(+30m)",
    ]
    assert lines[2].split()[:6] == [
        "default",
        "train",
        "10:30:00",
        "(+30m)",
        "11:30:00",
        "(+90m)",
    ]
    assert "node gpu-1 frees them at ~10:30 UTC when default/first ends" in lines[2]
    clock = ["--at", "2026-01-01T10:00:00Z"]
    code, out, err = run([files, "--timeline", "-o", "json", "--horizon", "10m", *clock], capsys)
    entries = json.loads(out)["timeline"]
    assert [(e["name"], e["outcome"], e["start"]) for e in entries] == [
        ("first", None, "2026-01-01T09:00:00Z"),
        ("train", "beyond-horizon", None),
    ]


def test_a_horizon_must_be_a_duration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", write(tmp_path, "c.yaml", NODE), "--timeline", "--horizon", "soon"])
    assert "not a duration" in capsys.readouterr().err


def test_a_runtime_declared_on_the_pod_template_is_read_as_the_operator_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The operator reads a member pod's annotation (copied from the Job's template);
    the simulated pods carry it as well, and the timeline shows the gang's end."""
    job = JOB.replace(
        "  template:\n    spec:",
        "  template:\n    metadata:\n"
        "      annotations: {scheduling.muster.dev/expected-runtime: 45m}\n    spec:",
    )
    clock = ["--at", "2026-01-01T10:00:00Z"]
    code, out, err = run([write(tmp_path, "c.yaml", NODE, job), "--timeline", *clock], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[1].split()[:6] == [
        "default",
        "train",
        "10:00:00",
        "10:45:00",
        "(+45m)",
        "45m,",
    ]


FINISHED = (
    RUNNING.replace("name: first", "name: done")
    .replace("  annotations: {scheduling.muster.dev/expected-runtime: 90m}\n", "")
    .replace("  plan: {first-0: gpu-1, first-1: gpu-1}\n", "")
)


def _finished_pod(index: int, phase: str, end: str) -> str:
    status = f"""\
status:
  phase: {phase}
  startTime: "2026-01-01T09:00:00Z"
  containerStatuses:
    - {{name: w, state: {{terminated: {{finishedAt: "2026-01-01T{end}Z"}}}}}}"""
    return _member("done", index, status)


def test_a_finished_gang_is_shown_finished_with_its_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write(
        tmp_path,
        "c.yaml",
        NODE,
        FINISHED,
        _finished_pod(0, "Succeeded", "09:20:00"),
        _finished_pod(1, "Failed", "09:40:00"),
    )
    clock = ["--now", "2026-01-01T10:00:00Z"]
    code, out, err = run([files, "--timeline", *clock], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[1].split() == [
        "default",
        "done",
        "09:00:00",
        "09:40:00",
        "(finished)",
        "~30m,",
        "observed",
    ]
    code, out, _ = run([files, "--timeline", "-o", "json", *clock], capsys)
    [entry] = json.loads(out)["timeline"]
    assert (entry["running"], entry["finished"], entry["end"]) == (
        False,
        True,
        "2026-01-01T09:40:00Z",
    )
    code, out, _ = run([files, *clock], capsys)
    assert out.splitlines()[1].split(maxsplit=5)[5] == "finished: 1 of 2 pods succeeded"


def test_the_cycle_collector_is_paused_for_a_run_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []

    def render(report: Report) -> str:
        seen.append(gc.isenabled())
        return render_table(report)

    monkeypatch.setattr("muster.cli.simulate.render_table", render)
    assert gc.isenabled()
    code, _, _ = run([write(tmp_path, "c.yaml", NODE, JOB)], capsys)
    assert (code, seen, gc.isenabled()) == (0, [False], True)
    code, _, _ = run([write(tmp_path, "bad.yaml", "kind: [")], capsys)
    assert (code, gc.isenabled()) == (2, True)

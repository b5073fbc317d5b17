"""`muster validate` over the table of good and bad manifests, and its edge cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from muster.cli import main
from tests.validation_cases import Case, load_cases

CASES = load_cases()
EXAMPLES_DIR = Path(__file__).parents[3] / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.glob("*.yaml"))


def run_validate(capsys: pytest.CaptureFixture[str], *files: Path | str) -> tuple[int, list[str]]:
    """The exit code and the problem lines; a clean run's one summary line is checked
    and left out."""
    code = main(["validate", *(str(file) for file in files)])
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = captured.out.splitlines()
    if code == 0:
        assert len(lines) == 1 and lines[0].startswith("ok: "), lines
        return code, []
    return code, lines


def test_a_clean_run_says_what_it_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """So that an empty glob or the wrong file does not pass unseen."""
    pod_group = EXAMPLES_DIR / "podgroup-gang.yaml"
    other = tmp_path / "other.yaml"
    other.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n")
    assert main(["validate", str(pod_group), str(other)]) == 0
    assert capsys.readouterr().out == "ok: 2 files, 2 documents (1 PodGroup, 1 other)\n"


def test_a_preferred_level_is_checked_against_the_levels_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    group = yaml.safe_load((EXAMPLES_DIR / "podgroup-gang.yaml").read_text())
    group["metadata"]["annotations"] = {"scheduling.muster.dev/topology-preferred": "rak"}
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(group))
    assert main(["validate", str(path)]) == 0
    assert main(["validate", str(path), "--topology-levels", "zone,rack"]) == 1
    assert '"rak" is not a topology level: zone, rack' in capsys.readouterr().out


def test_slices_are_checked_against_the_levels_and_the_min_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    group = yaml.safe_load((EXAMPLES_DIR / "podgroup-gang.yaml").read_text())
    min_count = group["spec"]["schedulingPolicy"]["gang"]["minCount"]
    group["metadata"]["annotations"] = {
        "scheduling.muster.dev/topology-preferred": "rack",
        "scheduling.muster.dev/topology-slice": "zone",
        "scheduling.muster.dev/topology-slice-size": str(min_count + 1),
    }
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(group))
    assert main(["validate", str(path), "--topology-levels", "zone,rack"]) == 1
    out = capsys.readouterr().out
    assert (
        'metadata.annotations[scheduling.muster.dev/topology-slice]: "zone" is wider than '
        '"rack", the preferred level'
    ) in out
    assert (
        "metadata.annotations[scheduling.muster.dev/topology-slice-size]: "
        f"{min_count + 1} does not divide the minCount of the gang ({min_count})"
    ) in out


def test_the_table_is_big_and_has_every_kind_of_case() -> None:
    assert len(CASES) >= 25
    assert {case.layer for case in CASES} == {"valid", "schema", "webhook", "native-field"}
    assert len({case.name for case in CASES}) == len(CASES)
    for case in CASES:
        assert bool(case.problems) == (case.layer != "valid"), case.name


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / f"{case.name}.yaml"
    manifest.write_text(yaml.safe_dump_all(case.documents))
    code, lines = run_validate(capsys, manifest)
    expected = (f"{manifest}:{case.index}: {problem}" for problem in case.problems)
    assert sorted(lines) == sorted(expected)
    assert code == (1 if case.problems else 0)


def test_examples_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert len(EXAMPLES) >= 5
    assert run_validate(capsys, *EXAMPLES) == (0, [])


def test_documents_are_numbered_from_one_across_a_multi_document_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = (case.manifest for case in (CASES[0], next(c for c in CASES if c.problems)))
    manifest = tmp_path / "many.yaml"
    manifest.write_text(yaml.safe_dump_all([good, None, bad]))
    code, lines = run_validate(capsys, manifest)
    assert code == 1
    assert lines and all(line.startswith(f"{manifest}:3: ") for line in lines)


def test_bad_yaml_is_one_problem_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "broken.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\n---\nspec: [unclosed\n")
    assert run_validate(capsys, manifest) == (
        1,
        [f"{manifest}:2: invalid YAML: did not find expected ',' or ']' (line 5, column 1)"],
    )


def test_a_document_that_is_not_an_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "list.yaml"
    manifest.write_text("- a\n- b\n")
    assert run_validate(capsys, manifest) == (
        1,
        [f"{manifest}:1: not a Kubernetes object (a YAML mapping is expected)"],
    )


def test_a_document_without_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "kindless.yaml"
    manifest.write_text("apiVersion: v1\nmetadata: {name: x}\n")
    assert run_validate(capsys, manifest) == (1, [f"{manifest}:1: kind: Required value"])


def test_an_unknown_kind_in_our_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "gang.yaml"
    manifest.write_text("apiVersion: scheduling.muster.dev/v1beta1\nkind: Gang\n")
    assert run_validate(capsys, manifest) == (
        1,
        [f'{manifest}:1: kind: unknown kind "Gang" in scheduling.muster.dev'],
    )


def test_a_missing_file_is_a_problem_and_the_others_are_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "absent.yaml"
    code, lines = run_validate(capsys, missing, *EXAMPLES)
    assert (code, lines) == (1, [f"{missing}: cannot read: No such file or directory"])


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    bad = next(case for case in CASES if case.name == "min-count-zero")
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(yaml.safe_dump(bad.manifest)))
    assert run_validate(capsys, "-") == (1, [f"-:1: {bad.problems[0]}"])


def _job_with(annotations: dict[str, str]) -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load((EXAMPLES_DIR / "training-job.yaml").read_text())
    job["metadata"]["annotations"] = annotations
    return job


def test_a_typo_of_a_key_is_a_warning_naming_the_key_meant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(_job_with({"scheduling.muster.dev/topology-prefered": "r"})))
    assert main(["validate", str(path)]) == 0  # a warning fails nothing
    assert capsys.readouterr().out.splitlines() == [
        f"{path}:1: warning: unknown key scheduling.muster.dev/topology-prefered:"
        " did you mean scheduling.muster.dev/topology-preferred?",
        "ok: 1 file, 1 document (1 Job)",  # it names no level: nothing left unchecked
    ]


def test_topology_levels_are_checked_against_the_nodes_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        yaml.safe_dump(
            _job_with({"scheduling.muster.dev/topology-key": "topology.kubernetes.io/zon"})
        )
    )
    nodes = tmp_path / "nodes.yaml"  # as `kubectl get nodes -o yaml` prints them
    labels = {"topology.kubernetes.io/zone": "a"}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": labels}}
    nodes.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [node]}))
    assert main(["validate", str(job), str(nodes)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{job}:1: warning: no node carries the topology key topology.kubernetes.io/zon"
        " (did you mean topology.kubernetes.io/zone?)",
        "ok: 2 files, 2 documents (1 Job, 1 other)",
    ]

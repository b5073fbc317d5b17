"""The API on a real API server: the CRDs install, the examples apply, the server
rejects what `muster validate` rejects (the same fields, the same words), and
kubectl shows columns, descriptions and the `muster` category.

Admission requests go with ``--dry-run=server``: the API server runs every check
(schema, CEL, webhooks) and stores nothing, so no pod is ever created for a Job.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from devtools.builds import ROOT
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import install_crds
from tests.validation_cases import Case, load_cases

pytestmark = pytest.mark.e2e

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
CASES = load_cases()
NATIVE_FIELD_CASES = [case for case in CASES if case.layer == "native-field"]
GROUP = "scheduling.muster.dev"


@pytest.fixture(scope="module")
def crds(kubectl: Kubectl) -> None:
    install_crds(kubectl)


@pytest.fixture(scope="module")
def podgroups(kubectl: Kubectl, crds: None) -> str:
    """How to name our PodGroups to kubectl: plainly, unless the cluster also serves
    the native scheduling.k8s.io PodGroup (then kubectl would pick that one)."""
    native = kubectl("api-resources", "--api-group=scheduling.k8s.io", "-o", "name").stdout
    return f"podgroups.{GROUP}" if "podgroups" in native else "podgroups"


def dry_run(kubectl: Kubectl, namespace: str, manifest: Any) -> Any:
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    return kubectl("apply", "--dry-run=server", "-n", namespace, "-f", "-", input=text, check=False)


def pod_group(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


def table(kubectl: Kubectl, *args: str) -> list[dict[str, str]]:
    """`kubectl get` output as rows keyed by column header."""
    lines = kubectl("get", *args).stdout.splitlines()
    header = lines[0]
    starts = [
        i for i, char in enumerate(header) if char != " " and (i == 0 or header[i - 1] == " ")
    ]
    bounds = [*starts[1:], None]
    names = [header[start:end].strip() for start, end in zip(starts, bounds, strict=True)]
    return [
        {
            name: line[start:end].strip()
            for name, start, end in zip(names, starts, bounds, strict=True)
        }
        for line in lines[1:]
    ]


def test_crds_are_established_with_their_names(kubectl: Kubectl, crds: None) -> None:
    for plural, short in (("podgroups", "pg"), ("workloads", "wl")):
        crd = kubectl.json("get", "crd", f"{plural}.{GROUP}")
        names = crd["spec"]["names"]
        assert (names["shortNames"], names["categories"]) == ([short], ["muster"])
        established = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert established["Established"] == "True"


@pytest.mark.parametrize("example", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_every_example_applies(kubectl: Kubectl, crds: None, namespace: str, example: Path) -> None:
    """A server-side dry run of each example. The PriorityClasses an example defines are
    created first, for real, as `kubectl apply` of the file creates them before its Job:
    a dry run stores nothing, and a gang Job naming a class that does not exist is
    refused."""
    text = example.read_text()
    classes = [d for d in yaml.safe_load_all(text) if d and d.get("kind") == "PriorityClass"]
    try:
        for priority_class in classes:
            kubectl.apply(priority_class)
        result = dry_run(kubectl, namespace, text)
    finally:
        for priority_class in classes:
            name = priority_class["metadata"]["name"]
            kubectl("delete", "priorityclass", name, "--ignore-not-found")
    assert result.returncode == 0, result.stderr


def test_policy_kind_and_workload_ref_are_immutable(
    kubectl: Kubectl, crds: None, namespace: str, podgroups: str
) -> None:
    ref = {"workloadName": "mpi", "templateName": "workers"}
    templates = [
        {"name": name, "schedulingPolicy": {"gang": {"minCount": 2}}}
        for name in ("workers", "launcher")
    ]
    kubectl.apply(
        {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Workload",
            "metadata": {"name": "mpi"},
            "spec": {"podGroupTemplates": templates},
        },
        namespace,
    )
    kubectl.apply(
        pod_group("frozen", {"schedulingPolicy": {"gang": {"minCount": 2}}, "workloadRef": ref}),
        namespace,
    )

    grown = pod_group("frozen", {"schedulingPolicy": {"gang": {"minCount": 3}}, "workloadRef": ref})
    assert dry_run(kubectl, namespace, grown).returncode == 0

    to_basic = pod_group("frozen", {"schedulingPolicy": {"basic": {}}, "workloadRef": ref})
    result = dry_run(kubectl, namespace, to_basic)
    assert "schedulingPolicy kind (basic or gang) is immutable" in result.stderr

    moved = {**ref, "templateName": "launcher"}
    result = dry_run(
        kubectl,
        namespace,
        pod_group("frozen", {"schedulingPolicy": {"gang": {"minCount": 2}}, "workloadRef": moved}),
    )
    assert "spec.workloadRef: Invalid value" in result.stderr
    assert "workloadRef is immutable" in result.stderr


def test_a_workload_template_keeps_its_policy_kind(
    kubectl: Kubectl, crds: None, namespace: str
) -> None:
    def workload(policy: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Workload",
            "metadata": {"name": "steady"},
            "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": policy}]},
        }

    kubectl.apply(workload({"gang": {"minCount": 2}}), namespace)
    assert dry_run(kubectl, namespace, workload({"gang": {"minCount": 4}})).returncode == 0
    result = dry_run(kubectl, namespace, workload({"basic": {}}))
    assert "spec.podGroupTemplates[0].schedulingPolicy: Invalid value" in result.stderr
    assert "schedulingPolicy kind (basic or gang) is immutable" in result.stderr


def test_explain_shows_the_field_descriptions(kubectl: Kubectl, crds: None, podgroups: str) -> None:
    def explained() -> str:
        result = kubectl(
            "explain",
            "podgroup.spec.schedulingPolicy.gang.minCount",
            f"--api-version={GROUP}/v1beta1",
            check=False,
        )
        return result.stdout if result.returncode == 0 else ""

    wait_until("the CRD's schema to be published", lambda: "minCount" in explained())
    text = explained()
    assert "FIELD: minCount <integer>" in text
    assert "minimum number of pods that must be schedulable at the same time" in text


def test_get_muster_lists_both_kinds(kubectl: Kubectl, crds: None, namespace: str) -> None:
    for example in ("podgroup-gang.yaml", "workload.yaml"):
        kubectl("apply", "-n", namespace, "-f", str(ROOT / "examples" / example))
    names = kubectl("get", "muster", "-n", namespace, "-o", "name").stdout.split()
    # An operator left running by an earlier test may have expanded the Workload into
    # PodGroups of its own (mpi-launcher, mpi-workers): those are listed too.
    assert {f"podgroup.{GROUP}/allreduce", f"workload.{GROUP}/mpi"} <= set(names)
    assert kubectl("get", "wl", "-n", namespace, "-o", "name").stdout.split() == [
        f"workload.{GROUP}/mpi"
    ]


def test_workload_columns(kubectl: Kubectl, operator: OperatorProcess, namespace: str) -> None:
    """TEMPLATES lists every template's name, from the annotation the operator writes
    when it expands the Workload (a printer column's JSONPath shows one value only)."""
    workload = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "train"},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
            "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"basic": {}}}],
        },
    }
    kubectl.apply(workload, namespace)
    wait_until(
        "the Workload's TEMPLATES column",
        lambda: table(kubectl, "wl", "-n", namespace, "-o", "wide")[0]["TEMPLATES"] == "workers",
    )
    (row,) = table(kubectl, "wl", "-n", namespace, "-o", "wide")
    assert (row["NAME"], row["TEMPLATES"], row["CONTROLLER"], row["CONTROLLER-KIND"]) == (
        "train",
        "workers",
        "train",
        "Job",
    )


# ---- with the operator: its webhooks and its status ----------------------------------


ADMISSION_CASES = [case for case in CASES if case.layer in ("valid", "schema", "webhook")]


SERVER_NOTE = "<nil>: Invalid value: null: some validation rules were not checked"


def server_problems(stderr: str) -> list[str]:
    """The ``field: message`` problems of kubectl's error: the API server's causes
    (one, or a list of ``* `` lines; without its note that some rules were not
    run), a strict decoder's unknown fields, or a webhook's refusal (joined by ``; ``)."""
    if "strict decoding error: " in stderr:
        text = stderr.split("strict decoding error: ", 1)[1].strip()
        fields = [part.removeprefix("unknown field ").strip('"') for part in text.split(", ")]
        return [f"{field}: unknown field" for field in fields]
    for marker in (" is invalid: ", " denied the request: "):
        if marker in stderr:
            text = stderr.split(marker, 1)[1].strip()
            break
    else:
        raise AssertionError(f"not a refusal kubectl explains: {stderr}")
    if text.startswith("* ") or "\n* " in text:
        lines = [line.removeprefix("* ").strip() for line in text.splitlines()]
        return [line for line in lines if line and not line.startswith(SERVER_NOTE)]
    if text.startswith("[") and text.endswith("]"):
        return [part.strip() for part in text[1:-1].split(", spec.")]
    return text.split("; ") if marker.startswith(" denied") else [text]


def field_of(problem: str) -> str:
    return problem.split(": ", 1)[0]


@contextlib.contextmanager
def context_applied(
    kubectl: Kubectl, namespace: str, context: tuple[dict[str, Any], ...]
) -> Iterator[None]:
    """A case's context in the cluster; its PriorityClasses (cluster-scoped, so the
    namespace does not take them) known to admission, and removed afterwards."""
    classes = [obj["metadata"]["name"] for obj in context if obj["kind"] == "PriorityClass"]
    try:
        for existing in context:
            kubectl.apply(existing, namespace)
        for name in classes:
            # Admission resolves priorities from the operator's informer of classes.
            probe = pod_group(
                "probe", {"schedulingPolicy": {"basic": {}}, "priorityClassName": name}
            )

            def known(probe: dict[str, Any] = probe) -> bool:
                return bool(dry_run(kubectl, namespace, probe).returncode == 0)

            wait_until(f"admission to know the PriorityClass {name}", known)
        yield
    finally:
        for name in classes:
            kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)


@pytest.mark.parametrize("case", ADMISSION_CASES, ids=[case.name for case in ADMISSION_CASES])
def test_the_api_server_and_muster_validate_agree_field_by_field(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str, case: Case
) -> None:
    """Every case goes to the real API server (CRD schema, CEL, Muster's webhooks)
    after its context: the verdict, each problem's field, and its message (the
    server may add the offending value before it) are those of `muster validate`."""
    with context_applied(kubectl, namespace, case.context):
        result = dry_run(kubectl, namespace, case.manifest)
    if not case.problems:
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode != 0, f"admitted, but muster validate says {case.problems}"
    assert case.server_message in result.stderr
    said = sorted(server_problems(result.stderr), key=field_of)
    expected = sorted(case.problems, key=field_of)
    assert [field_of(problem) for problem in said] == [field_of(p) for p in expected], said
    for server, ours in zip(said, expected, strict=True):
        assert ours.split(": ", 1)[1] in server or case.server is not None, (server, ours)


def test_a_missing_priority_class_is_rejected(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str
) -> None:
    spec = {"schedulingPolicy": {"gang": {"minCount": 2}}, "priorityClassName": "no-such-class"}
    result = dry_run(kubectl, namespace, pod_group("orphan", spec))
    assert 'spec.priorityClassName: PriorityClass "no-such-class" not found' in result.stderr


@pytest.fixture(scope="module")
def job_scheduling_field(kubectl: Kubectl) -> None:
    """Skip unless the API server keeps Job spec.scheduling (1.37 with WorkloadWithJob)."""
    job = native_job("probe", labels={})
    created = kubectl(
        "create",
        "--dry-run=server",
        "-n",
        "default",
        "-o",
        "json",
        "-f",
        "-",
        input=json.dumps(job),
    )
    if "scheduling" not in json.loads(created.stdout)["spec"]:
        pytest.skip("this API server drops Job spec.scheduling (WorkloadWithJob is off)")


def native_job(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "parallelism": 2,
            "scheduling": {"schedulingPolicy": {"gang": {}}},
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "registry.example/c:1"}],
                }
            },
        },
    }


@pytest.mark.parametrize("case", NATIVE_FIELD_CASES, ids=[case.name for case in NATIVE_FIELD_CASES])
def test_the_api_server_validates_the_native_field(
    kubectl: Kubectl, job_scheduling_field: None, namespace: str, case: Case
) -> None:
    result = dry_run(kubectl, namespace, case.manifest)
    assert result.returncode != 0
    assert case.server_message in result.stderr


def test_native_field_over_label_is_admitted_with_a_warning(
    kubectl: Kubectl, operator: OperatorProcess, job_scheduling_field: None, namespace: str
) -> None:
    job = native_job("both", labels={f"{GROUP}/policy": "basic"})
    result = dry_run(kubectl, namespace, job)
    assert result.returncode == 0, result.stderr
    assert "spec.scheduling takes precedence" in result.stderr


def test_get_podgroups_shows_the_columns(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str, podgroups: str
) -> None:
    priority_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": f"{namespace}-high"},
        "value": 1000,
    }
    kubectl.apply(priority_class)
    try:
        gang = {
            "schedulingPolicy": {"gang": {"minCount": 4}},
            "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
            "priorityClassName": f"{namespace}-high",
        }
        kubectl.apply(pod_group("gang", gang), namespace)
        kubectl.apply(pod_group("solo", {"schedulingPolicy": {"basic": {}}}), namespace)

        def rows() -> dict[str, dict[str, str]]:
            return {
                row["NAME"]: row for row in table(kubectl, podgroups, "-n", namespace, "-o", "wide")
            }

        wait_until(
            "the operator's status on both groups",
            lambda: (
                rows().get("gang", {}).get("STATUS") not in (None, "<none>")
                and rows().get("solo", {}).get("MIN") not in (None, "")
            ),
        )
        found = rows()
        assert found["gang"] == {
            "NAME": "gang",
            "MIN": "4",
            "PODS": "0",
            "SCHEDULED": "0",
            "STATUS": "WaitingForPods",
            "AGE": found["gang"]["AGE"],
            "TOPOLOGY": "topology.kubernetes.io/zone",
            "PRIORITY": "1000",
            "START": found["gang"]["START"],
        }
        # No estimate is written while fewer than minCount pods exist: STATUS says why.
        assert found["gang"]["START"] in ("", "<none>")
        # The API server prints an empty cell for a column whose path finds nothing.
        assert (found["solo"]["MIN"], found["solo"]["TOPOLOGY"]) == ("basic", "")
        narrow = table(kubectl, podgroups, "-n", namespace)
        assert list(narrow[0]) == ["NAME", "MIN", "PODS", "SCHEDULED", "STATUS", "START", "AGE"]
    finally:
        kubectl("delete", "priorityclass", f"{namespace}-high", "--ignore-not-found", check=False)

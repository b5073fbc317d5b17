"""How podman runs the image: what it takes from the rendered Deployment, and what the
caller adds."""

from __future__ import annotations

from pathlib import Path

import yaml
from devtools import container, installed

RENDERED = installed.MANIFESTS / "base" / "muster.yaml"


def run() -> container.ImageRun:
    documents = [document for document in yaml.safe_load_all(RENDERED.read_text()) if document]
    return container.ImageRun(
        tag="localhost/muster:1",
        deployment=installed.deployment(documents),
        service_account=Path("/sa"),
    )


def test_the_container_runs_as_the_deployments_pod_with_its_token_mounted_read_only() -> None:
    command = run().command(name="muster-a", environment={"B": "2", "A": "1"})
    assert command[:3] == ["podman", "run", "--rm"]
    assert "--user=65532:65532" in command
    assert {"--read-only", "--read-only-tmpfs=false", "--cap-drop=ALL"} <= set(command)
    assert "--security-opt=no-new-privileges" in command
    assert f"--volume=/sa:{container.SERVICE_ACCOUNT_DIR}:ro" in command
    assert [arg for arg in command if arg.startswith("--tmpfs=")] == ["--tmpfs=/tmp:size=16m"]
    assert command[-3:] == ["--env=A=1", "--env=B=2", "localhost/muster:1"]


def test_writable_volumes_and_the_arguments_of_muster_run_come_last() -> None:
    command = run().command(
        name="muster-a",
        environment={},
        volumes={Path("/traces"): "/var/run/trace"},
        arguments=("--record-trace=/var/run/trace/t.jsonl",),
    )
    assert "--volume=/traces:/var/run/trace" in command
    assert command[-2:] == ["localhost/muster:1", "--record-trace=/var/run/trace/t.jsonl"]

"""What the local installation takes from the manifests, and what it changes."""

from __future__ import annotations

from typing import Any

import yaml
from devtools import installed

RENDERED = installed.MANIFESTS / "base" / "muster.yaml"


def documents(*kinds: str) -> list[dict[str, Any]]:
    return [
        document
        for document in yaml.safe_load_all(RENDERED.read_text())
        if document and document["kind"] in kinds
    ]


def test_the_operator_takes_the_deployments_settings_but_its_addresses_and_identity() -> None:
    settings = installed.operator_environment(documents("Deployment"))
    assert settings["MUSTER_LEADER_ELECTION"] == "true"
    assert settings["MUSTER_MANAGE_WEBHOOKS"] == "false"
    assert settings["MUSTER_WEBHOOK_SECRET"] == "muster-webhook-tls"
    # $(POD_NAMESPACE) is resolved as the kubelet resolves it, to the installation's.
    assert settings["MUSTER_WEBHOOK_SERVICE"] == "muster-system/muster-webhooks"
    assert settings["MUSTER_LEASE_NAMESPACE"] == "muster-system"
    for local in ("HOST", "PORT", "IDENTITY", "LOG_FORMAT"):
        assert not [name for name in settings if name.endswith(local)], local
    assert all(name.startswith("MUSTER_") for name in settings)


def test_the_webhooks_call_the_url_where_the_manifests_name_the_service() -> None:
    for document in documents(*installed.WEBHOOK_KINDS):
        paths = [webhook["clientConfig"]["service"]["path"] for webhook in document["webhooks"]]
        called = installed.called_at(document, "https://127.0.0.1:9443")
        assert [webhook["clientConfig"] for webhook in called["webhooks"]] == [
            {"url": f"https://127.0.0.1:9443{path}"} for path in paths
        ]

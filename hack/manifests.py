"""The generated parts of `manifests/`: the webhook configurations and the CRDs.

The installation ships its webhook configurations rather than letting the operator
create them, so the operator needs no right to create admission webhooks (a right
that could intercept any request in the cluster): it only patches the caBundle of
these two, by name. Like the CRDs they are generated, here from the kopf handlers,
so they never drift from what the operator serves; `make manifests` writes them and
a unit test fails when the files in the repository are stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

import kopf
import yaml

from muster.api.constants import GROUP
from muster.api.crdgen import rendered_files
from muster.operator.config import OperatorConfig
from muster.webhooks import server

NAMESPACE = "muster-system"
SERVICE = server.ServiceReference(namespace=NAMESPACE, name="muster-webhooks")
WEBHOOKS_FILE = Path("base") / "webhooks" / "webhook-configurations.yaml"
CRDS_DIRECTORY = Path("base") / "crds"
HEADER = (
    "# Generated from the operator's webhook handlers by `make manifests`; do not edit.\n"
    "# The operator patches in caBundle (see --webhook-secret), so it is left out here.\n"
)


def webhook_configurations_yaml() -> str:
    """Both configurations, calling the webhooks through the installation's Service."""
    configurations = server.webhook_configurations(
        server.webhook_handlers(kopf.get_default_registry()),
        name=OperatorConfig().webhook_configuration,
        url="",
        ca_bundle=b"",
        group=GROUP,
        service=SERVICE,
    )
    return HEADER + yaml.safe_dump_all(configurations, sort_keys=False, width=100)


def generated_files() -> dict[Path, str]:
    """Path under `manifests/` -> the text it must hold."""
    files = {WEBHOOKS_FILE: webhook_configurations_yaml()}
    files.update({CRDS_DIRECTORY / name: text for name, text in rendered_files().items()})
    return files


def main(argv: list[str]) -> int:
    """Write the generated files into the manifests directory given as the only argument."""
    if len(argv) != 1:
        print("usage: python -m hack.manifests MANIFESTS_DIR", file=sys.stderr)
        return 2
    root = Path(argv[0])
    for path, text in generated_files().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

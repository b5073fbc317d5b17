"""The generated parts of the chart, and manifests/ rendered from it.

charts/muster is the one place the installation is defined. Two of its parts are
generated: the CRDs (copies of crds/, since a chart is packaged from its own
directory), and the webhook configurations, from the kopf handlers, so they never
drift from what the operator serves. The installation ships the configurations
rather than letting the operator create them, so the operator needs no right to
create admission webhooks (a right that could intercept any request in the
cluster): it only patches the caBundle of these two, by name.

manifests/ holds the chart rendered by `helm template` for `kubectl apply -k`: with
the default values (base/) and with cert-manager (overlays/cert-manager/).
`make manifests` writes all of them, and a unit test fails when a file in the
repository is stale.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import kopf
import yaml
from devtools import helm
from devtools.builds import ROOT

from muster.api.adoption import Adoption
from muster.api.constants import GROUP
from muster.api.crdgen import rendered_files as crd_files
from muster.operator.config import OperatorConfig
from muster.webhooks import server

CHART = Path("charts") / "muster"
WEBHOOKS_FILE = CHART / "templates" / "webhook-configurations.yaml"
CRDS_DIRECTORY = CHART / "crds"
# Each rendered file of manifests/, and the values it is rendered with.
RENDERED = {
    Path("manifests") / "base" / "muster.yaml": (),
    Path("manifests") / "overlays" / "cert-manager" / "muster.yaml": helm.CERT_MANAGER,
}
# The operator's user in the generated configurations: a ServiceAccount's name, as
# only a ServiceAccount's writes are spared (`server.spared_user`).
OPERATOR_USER = "system:serviceaccount:OPERATOR-NAMESPACE:OPERATOR-ACCOUNT"
# Where the generated configurations name the release's namespace, Service and user.
_MARKS = {
    "RELEASE-NAMESPACE": "{{ .Release.Namespace }}",
    "WEBHOOK-SERVICE": '{{ include "muster.service" . }}',
    OPERATOR_USER: '{{ include "muster.user" . }}',
}
SERVICE = server.ServiceReference(namespace="RELEASE-NAMESPACE", name="WEBHOOK-SERVICE")
HEADER = (
    "# Generated from the operator's webhook handlers by `make manifests`; do not edit.\n"
    "# caBundle is left out: the operator patches it in (see --webhook-secret), or\n"
    "# cert-manager's cainjector does.\n"
)
METADATA = """metadata:
  name: {{ include "muster.webhookConfiguration" . }}
  labels:
    {{- include "muster.labels" . | nindent 4 }}
  {{- if .Values.certManager.enabled }}
  annotations:
    cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "muster.service" . }}
  {{- end }}
"""
RENDERED_HEADER = (
    "# Rendered from charts/muster by `make manifests` (helm template); do not edit:\n"
    "# change the chart. Values: {values}.\n"
)


# The webhook of adopted pods is there only while the chart adopts (`adoption.apis`),
# with the chart's namespace selector in place of this one.
_ADOPTION_MARK = "ADOPTION-NAMESPACE-SELECTOR"
_ADOPTION = Adoption(apis=(), scheduler_names=(), namespace_selector={_ADOPTION_MARK: {}})
_ADOPTION_SELECTOR = "  namespaceSelector:\n    ADOPTION-NAMESPACE-SELECTOR: {}\n"
_CHART_SELECTOR = (
    "  namespaceSelector:\n    {{- toYaml .Values.adoption.namespaceSelector | nindent 4 }}\n"
)
_ADOPT_WEBHOOK = re.compile(r"^- name: adopt-pods\..*?(?=^- name: )", re.MULTILINE | re.DOTALL)


def _only_while_adopting(text: str) -> str:
    """The adopted pods' webhook within `if .Values.adoption.apis`, with its selector."""
    found = _ADOPT_WEBHOOK.search(text)
    assert found is not None and _ADOPTION_SELECTOR in found.group(0), "adopt-pods webhook"
    webhook = found.group(0).replace(_ADOPTION_SELECTOR, _CHART_SELECTOR)
    wrapped = "{{- if .Values.adoption.apis }}\n" + webhook + "{{- end }}\n"
    return text[: found.start()] + wrapped + text[found.end() :]


def webhook_configurations_template() -> str:
    """Both configurations, calling the webhooks through the release's Service."""
    configurations = server.webhook_configurations(
        server.webhook_handlers(kopf.get_default_registry()),
        name=OperatorConfig().webhook_configuration,
        where=SERVICE,
        ca_bundle=b"",
        group=GROUP,
        adoption=_ADOPTION,
        operator_user=OPERATOR_USER,
    )
    documents = [
        f"apiVersion: {configuration['apiVersion']}\nkind: {configuration['kind']}\n"
        + METADATA
        + yaml.safe_dump({"webhooks": configuration["webhooks"]}, sort_keys=False, width=100)
        for configuration in configurations
    ]
    text = HEADER + "---\n".join(documents)
    text = _only_while_adopting(text)
    for mark, expression in _MARKS.items():
        text = text.replace(mark, expression)
    return text


def generated_files() -> dict[Path, str]:
    """Path in the repository -> the text the generator makes for it."""
    files = {WEBHOOKS_FILE: webhook_configurations_template()}
    files.update({CRDS_DIRECTORY / name: text for name, text in crd_files().items()})
    return files


def rendered_files() -> dict[Path, str]:
    """Path in the repository -> the chart in the repository, rendered."""
    return {
        path: RENDERED_HEADER.format(values=", ".join(values) or "the defaults")
        + helm.template(*values)
        for path, values in RENDERED.items()
    }


def main(argv: list[str]) -> int:
    """Write the generated parts of the chart, then the manifests rendered from it."""
    if argv:
        print("usage: python -m hack.manifests", file=sys.stderr)
        return 2
    for files in (generated_files, rendered_files):
        for path, text in files().items():
            (ROOT / path).parent.mkdir(parents=True, exist_ok=True)
            (ROOT / path).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

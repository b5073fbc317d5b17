"""PodGroup and Workload: models, CRD schemas, validation rules, Job opt-in. Pure.

- ``constants``: the fixed names of the contract (group, labels, gate, conditions).
- ``podgroup``, ``workload``, ``policy``, ``base``: the pydantic models, shaped as
  upstream ``scheduling.k8s.io/v1beta1``; their docstrings are the field docs.
- ``rules``: each CEL rule of the CRDs with its Python twin.
- ``schema``, ``crdgen``: the CRDs generated from the models
  (``python -m muster.api.crdgen crds/``, the only part that writes files).
- ``validation``: every problem of a manifest (schema, CEL rules, webhook-only
  rules), for `muster validate` and the admission webhooks.
- ``optin``: a Job's opt-in, from the label or the native ``spec.scheduling``.
- ``expand``: Job or Workload to Workload and PodGroups; gated pod templates.
- ``priority``: a PodGroup's priority, resolved as the Priority admission plugin does.
- ``manifests``, ``names``, ``problems``: YAML text, name syntaxes, problem values.
"""

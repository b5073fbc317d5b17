"""The generated CRDs: fresh in crds/, deterministic, structural, complete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from muster.api.constants import CONDITION_SCHEDULED
from muster.api.crdgen import custom_resource_definitions, main, rendered_files
from muster.api.rules import ALL_RULES, rule_for

CRDS = Path(__file__).parents[3] / "crds"


def nodes(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Every schema node, depth first."""
    found = [schema]
    for child in schema.get("properties", {}).values():
        found.extend(nodes(child))
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            found.extend(nodes(schema[key]))
    return found


def schema_of(kind: str) -> dict[str, Any]:
    crd = next(c for c in custom_resource_definitions() if c["spec"]["names"]["kind"] == kind)
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def test_crds_directory_is_up_to_date() -> None:
    expected = rendered_files()
    on_disk = {path.name: path.read_text() for path in CRDS.glob("*.yaml")}
    assert on_disk == expected, "crds/ is stale: run `make crds`"


def test_generation_is_deterministic() -> None:
    assert rendered_files() == rendered_files()


def test_main_writes_the_files(tmp_path: Path) -> None:
    assert main([str(tmp_path / "out")]) == 0
    written = {path.name: path.read_text() for path in (tmp_path / "out").iterdir()}
    assert written == rendered_files()


def test_main_wants_exactly_one_directory() -> None:
    assert main([]) == 2


def test_rendered_yaml_is_the_dicts() -> None:
    parsed = [yaml.safe_load(text) for text in rendered_files().values()]
    assert parsed == custom_resource_definitions()


def test_names_short_names_and_category() -> None:
    names = {
        crd["spec"]["names"]["plural"]: crd["spec"]["names"]
        for crd in custom_resource_definitions()
    }
    assert names["podgroups"]["shortNames"] == ["pg"]
    assert names["workloads"]["shortNames"] == ["wl"]
    assert all(entry["categories"] == ["muster"] for entry in names.values())
    for crd in custom_resource_definitions():
        assert crd["spec"]["group"] == "scheduling.muster.dev"
        assert crd["spec"]["scope"] == "Namespaced"
        (version,) = crd["spec"]["versions"]
        assert version["name"] == "v1beta1"
        assert version["subresources"] == {"status": {}}


def test_schemas_are_structural() -> None:
    for kind in ("PodGroup", "Workload"):
        for node in nodes(schema_of(kind)):
            assert not {"$ref", "anyOf", "oneOf", "allOf", "title", "default"} & node.keys()
            assert "type" in node or node.get("x-kubernetes-int-or-string"), node
            assert node.get("additionalProperties") is not False


def test_every_field_is_described() -> None:
    for kind in ("PodGroup", "Workload"):
        schema = schema_of(kind)
        for name, node in schema["properties"]["spec"]["properties"].items():
            assert node.get("description"), name
        for node in nodes(schema["properties"]["spec"]):
            if "description" in node:
                assert "\n" not in node["description"]


def test_min_count_is_explained() -> None:
    spec = schema_of("PodGroup")["properties"]["spec"]
    min_count = spec["properties"]["schedulingPolicy"]["properties"]["gang"]["properties"][
        "minCount"
    ]
    assert min_count["type"] == "integer"
    assert "minimum number of pods" in min_count["description"]


def test_every_cel_rule_has_a_python_twin_and_every_twin_is_used() -> None:
    used = set()
    for kind in ("PodGroup", "Workload"):
        for node in nodes(schema_of(kind)):
            for entry in node.get("x-kubernetes-validations", []):
                used.add(rule_for(entry))
    assert used == set(ALL_RULES)


def test_pod_group_printer_columns() -> None:
    crd = custom_resource_definitions()[0]
    columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [(c["name"], c.get("priority", 0)) for c in columns] == [
        ("Min", 0),
        ("Pods", 0),
        ("Scheduled", 0),
        ("Status", 0),
        ("Start", 0),
        ("Age", 0),
        ("Topology", 1),
        ("Priority", 1),
    ]
    assert CONDITION_SCHEDULED in columns[3]["jsonPath"]
    assert columns[4]["jsonPath"] == ".status.estimate.start"


def test_workload_printer_columns() -> None:
    crd = custom_resource_definitions()[1]
    columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [c["name"] for c in columns if not c.get("priority")] == [
        "Templates",
        "Controller",
        "Age",
    ]

"""kubernetes-asyncio deferred: the operator's command loads none of its API classes and
two of its models, and every name a caller reads is there as before (each check in a
fresh interpreter, as the library can be deferred only before its first import)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_command_loads_no_api_class_and_only_the_models_kopf_reads() -> None:
    loaded = run(
        """
        import sys
        import muster.cli
        muster.cli.build_parser()  # imports every subcommand, kopf and the operator
        prefix = "kubernetes_asyncio.client."
        print(sorted(m[len(prefix):] for m in sys.modules if m.startswith(prefix)))
        """
    )
    assert loaded == repr(
        sorted(
            [
                "api",
                "api_client",
                "configuration",
                "exceptions",
                "models",
                "models.v1_object_meta",
                "models.v1_owner_reference",
                "rest",
            ]
        )
    )


def test_every_name_resolves_as_the_library_defines_it() -> None:
    """Names found by their module's name, submodules, and names whose module the
    class name does not give (which load the package whole)."""
    said = run(
        """
        import muster.operator
        import kubernetes_asyncio
        from kubernetes_asyncio import client, config, watch
        from kubernetes_asyncio.client import ApiException, CoreV1Api, V1Pod
        from kubernetes_asyncio.client.models import V1ObjectMeta
        from kubernetes_asyncio.client.models.v1_object_meta import V1ObjectMeta as Meta
        assert V1ObjectMeta is Meta is client.V1ObjectMeta
        assert CoreV1Api.__module__ == "kubernetes_asyncio.client.api.core_v1_api"
        assert V1Pod.__module__ == "kubernetes_asyncio.client.models.v1_pod"
        assert issubclass(ApiException, client.OpenApiException)
        assert config.ConfigException is kubernetes_asyncio.config.ConfigException
        assert watch.Watch and kubernetes_asyncio.dynamic.DynamicClient
        print(client.V1APIResource.__module__, client.__version__)
        """
    )
    assert said.startswith("kubernetes_asyncio.client.models.v1_api_resource ")


def test_a_name_the_library_lacks_is_an_attribute_error() -> None:
    said = run(
        """
        import muster.operator
        import kubernetes_asyncio.client
        try:
            kubernetes_asyncio.client.V9Nothing
        except AttributeError as error:
            print("AttributeError", error)
        """
    )
    assert said.startswith("AttributeError")

"""The operator: informers feed the engine, plans become API writes, status follows."""

from muster.operator import lean_client

lean_client.install()  # before anything imports kubernetes-asyncio (kopf does)

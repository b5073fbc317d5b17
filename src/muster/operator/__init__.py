"""The operator: informers feed the engine, plans become API writes, status follows.

- intake: the watched objects, handed to the engine, and the copies writes need;
- execution: the engine's plan carried out in order, and what it reports back;
- webhook_feeds: the watches and the certificate the webhooks of every replica rely on;
- app, controller, leader: one process, its leader's work, and who leads.
"""

from muster.client import lean_client

lean_client.install()  # before anything imports kubernetes-asyncio (kopf does)

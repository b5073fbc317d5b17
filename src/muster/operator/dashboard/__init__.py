"""The dashboard: a read-only web page of the queue, the domains and the forecast.

Served by `muster dashboard` with the user's kubeconfig, and by the operator on a
port of its own when `--dashboard-port` is set. Both watch what `muster explain`
lists (`controller.scheduling_sources`) into a `LiveCache` and ask the same engine
(`forecast`, whose first cycle is `explain`'s verdict): the page tells what the
operator decides. Nothing here writes to the cluster.

- `domains`: capacity per topology domain, occupied, reserved and free (pure);
- `board`: everything the overview shows, from one engine run (pure);
- `pictures`: the domains and the forecast's timeline as SVG (pure);
- `feed`: the watches, and a board made afresh in a child process after changes;
- `pages`: the aiohttp routes and the templates.
"""

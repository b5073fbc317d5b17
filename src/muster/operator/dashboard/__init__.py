"""The dashboard: a read-only web page of the queue, the domains and the forecast.

Served by `muster dashboard` with the user's kubeconfig (to requests addressed to
it by its own address), and by the operator on a port of its own when
`--dashboard-port` is set (to bearer tokens whose user may `get` PodGroups in every
namespace). Both watch what `muster explain` lists (`controller.scheduling_sources`)
into a `LiveCache` and ask the same engine (`forecast`, whose first cycle is
`explain`'s verdict): the page tells what the operator decides. Nothing here writes to the cluster.

- `domains`: capacity per topology domain, occupied, reserved and free (pure);
- `board`: everything the overview shows, from one engine run (pure);
- `facts`: each gang's scarcest resource requested, priority and time waited (pure);
- `pictures`: the domains and the forecast's timeline as SVG (pure);
- `feed`: the watches, and a board made afresh in a child process after changes;
- `rendering`: the templates, and the overview rendered once per board;
- `pages`: the aiohttp routes;
- `access`: who may see the operator's page, from the API server's reviews (pure);
- `reviewer`: those reviews asked for and cached briefly;
- `hosts`: which Host headers `muster dashboard` answers (pure);
- `guards`: both checks as middlewares over every route;
- `serving`: the operator's page, guarded, on a client of its own.
"""

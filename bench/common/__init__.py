"""What several studies share: the API client, the machine's description, the timeline
and its figures, process usage, the audit log's counts, and the generated sections of
docs/performance.md."""

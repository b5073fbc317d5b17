"""The operator: informers feed the engine, plans become API writes, status follows."""

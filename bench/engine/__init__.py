"""The decision engine at cluster size, each figure beside a plain-Python loop
(`make bench-engine`)."""

"""The leader's intake: watched objects handed to the engine, and the copies writes need."""

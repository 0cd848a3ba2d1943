"""Where threads live: checkpointers, the one-writer lease and its fencing, the journal of
tool calls with effects, and the read-only view of threads."""

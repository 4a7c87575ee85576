"""The operators' dashboard: one server-rendered page of the queue, the library and recent throughput."""

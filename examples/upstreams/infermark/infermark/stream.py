"""Counts non-empty visible delta.content chunks over the concurrency-level wall."""

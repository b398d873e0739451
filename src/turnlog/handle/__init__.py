"""The writer handle: one session open for writing, through a store."""

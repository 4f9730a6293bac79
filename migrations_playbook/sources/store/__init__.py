"""The checkpointer store source (``--checkpointer URI``): a self-hosted PostgreSQL or SQLite store, read-only.

`tables` (what both stores share), `postgres` and `sqlite` (their tables), `open` (a store by its URI),
`reads` and `scan` (the threads), `attribution` (which graph a thread is), `standin` and `shape` (the live
graph as the lock or the rows show it), `source` (`StoreSource`, the Source protocol) with its `replay` and
`repair` parts.
"""

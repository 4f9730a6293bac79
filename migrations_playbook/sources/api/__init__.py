"""The Agent Server API source (``--live URL``): a live deployment read through langgraph-sdk.

`reads` (threads, states, history, assistants), `state` (what a thread's state and record say, pure),
`answers` (every answer checked before it is read), `shape` (snapshots in the API's JSON shape, shared
with the store source), `source` (`ApiSource`, the Source protocol), its `replay` and `repair` parts,
`views` (migrate's view of a thread) and `turns` (chat turns and rerun).
"""

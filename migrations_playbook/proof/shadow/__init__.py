"""The shadow proof: the deployed code and the candidate, side by side on copies of the live threads.

`run` (the proof over an Agent Server folder), `store` (over a checkpointer store), `live_code` (where side A's code
comes from), `classes` (which threads run), `drive` and `api` (driving a side through langgraph-sdk), `worker`
(a side on a store copy, in its own process), `relay` (side A's model calls replayed to side B), `traces` (what
a side did) and `compare` (where side B did worse).
"""

"""Staging servers: a local `langgraph dev` (`server`) and a copy of a live folder served with other code (`live_copy`).

Not a source of live threads: the replay, the shadow and migrate's proof start their throwaway servers here.
"""

"""The deployment's server layer: how the graphs are served and protected on Agent Server.

langgraph.json wires it in: custom auth (`auth`, with `access` and the run admission of `serving`), the custom
HTTP app (`webapp`, with the middlewares `route_access`, `request_limits`, `payload_middleware` and `webhooks`
over the checks of `payloads`), the checkpointer (`persistence`, and `postgres_checkpointer` for PostgreSQL),
the runtime guard (`guarding`, the one place that imports the playbook's guard), and `portcheck` for `make run`.
The graphs never import this package; it imports what the graphs share (`graphs.common`).
"""

"""Ticket triage: intake -> triage (approval interrupt) -> [policy_check] -> respond.

Seed 003's `flow_version` example made real, with seed 004's typed approvals.
"""

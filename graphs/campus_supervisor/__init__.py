"""Campus supervisor: a supervisor ReAct agent that answers the cafeteria
question itself and transfers library and LMS questions to domain agents.

Seed 000 made real: the supervisor's runnable is tagged `supervisor_llm`, the
visible-text stream keys on that tag (`graphs.common.visible`), and routing
narration is removed from stored history per user turn (`history`).
"""

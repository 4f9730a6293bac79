"""Rehearse migration 0010 (recycling_guide's output limited by an output schema) on real `langgraph dev` servers.

    .venv/bin/python docs/rehearsals/rehearse_0010.py [--live-commit REV] [--candidate-tree DIR] [WORKDIR]

Prints the transcript pasted into migrations_playbook/records/0010-recycling-output-schema.md: each
command as `$ playbook ...`, its output and exit code (server URLs shown as port 2024, WORKDIR as
$W). The live side is ``--live-commit`` (default: the commit before the one that made the change,
found by `git log`), the candidate this repo's HEAD (both through `git archive`), or
``--candidate-tree`` (a folder holding the candidate, before the change is committed). Live
recycling_guide threads at every position the deployed code leaves (created and never run, one
turn, seed 002's five turns in Korean, the English follow-up, eighteen turns: past a DeltaChannel
snapshot, more than 30 updates of `messages`) are created on the deployed code, the server is
stopped gracefully and started again. Then, on a copy of the candidate: `contract --write` (does
the lock change?) and `record new` (the skeleton); on the live server: what a run returns and
what the thread record holds, `inflight`, the gate (``--strict``) and the shadow proof (three
copies of the live folder: the deployed code twice, the candidate once; every thread's last turn
rerun and a next one, ``TURN_INPUT``, taken; compared). Takes about three minutes.
"""

import asyncio
import json
import os
import shutil
from pathlib import Path

import transcript  # docs/rehearsals/transcript.py, beside this script
from langgraph_sdk import get_client

from migrations_playbook.staging.server import DevServer

REPO = Path(__file__).resolve().parents[2]
GRAPH = "recycling_guide"
SUBJECT = "recycling_guide output schema"

SEED = [
    "페트병 어떻게 버려?",
    "라벨은 어떻게 해?",
    "뚜껑도 분리해야 해?",
    "유색 페트병은 다르게 버려?",
    "지금까지 알려준 거 정리해줘",
]
ENGLISH = ["How do I throw away a PET bottle?", "What about the label?"]
LONG = ["유리병은?", "캔은 어떻게 버려?", "스티로폼은?", "건전지는?", "비닐은?", "Hi, what can you do?"]
CONVERSATIONS: dict[str, list[str]] = {
    "fresh": [],
    "one-turn": SEED[:1],
    "seed-five-turns": SEED,
    "english-follow-up": ENGLISH,
    "eighteen-turns": [*SEED[:4], *LONG, *LONG, "지금까지 알려준 거 정리해줘", *SEED[:1]],
}
"""The turns each live thread had on the deployed code."""
TURN_INPUT = {"messages": [{"role": "user", "content": SEED[1]}]}
"""Every thread's next turn in the shadow (the "fresh" thread has no last turn to rerun)."""


URLS: list[str] = []


def playbook(root: Path, argv: list[str], cwd: Path | None = None) -> int:
    return transcript.playbook(root, URLS, argv, cwd=cwd).returncode


async def populate(url: str) -> dict[str, str]:
    client = get_client(url=url)
    threads = {}
    for name, turns in CONVERSATIONS.items():
        thread_id = (await client.threads.create(graph_id=GRAPH))["thread_id"]
        for text in turns:
            await client.runs.wait(thread_id, GRAPH, input={"messages": [{"role": "user", "content": text}]})
        threads[name] = thread_id
    await client.aclose()
    return threads


async def what_clients_get(url: str, label: str) -> None:
    """The keys of a run's output, of its last `values` event, of the thread record and of
    `get_state` (a scratch thread, deleted afterwards)."""
    client = get_client(url=url)
    thread_id = (await client.threads.create(graph_id=GRAPH))["thread_id"]
    out = await client.runs.wait(thread_id, GRAPH, input={"messages": [{"role": "user", "content": SEED[0]}]})
    last: dict = {}
    async for part in client.runs.stream(
        thread_id, GRAPH, input={"messages": [{"role": "user", "content": SEED[1]}]}, stream_mode="values"
    ):
        if part.event == "values":
            last = part.data
    record = await client.threads.get(thread_id)
    state = await client.threads.get_state(thread_id)
    print(f"\n{label}:")
    print("  runs.wait output keys:      ", sorted(out))
    print("  last values event keys:     ", sorted(last))
    print("  thread record values keys:  ", sorted(record["values"] or {}))
    print("  get_state values keys:      ", sorted(state["values"]))
    await client.threads.delete(thread_id)
    await client.aclose()


def main() -> int:
    args = transcript.parse_args(__doc__)
    root = transcript.fresh_workdir(args, "rehearse-0010-")
    live_rev = args.live_commit or transcript.commit_before(REPO, "graphs/recycling_guide/graph.py", SUBJECT)
    live = root / "live"
    transcript.archive(REPO, live_rev, live)
    cand = root / "candidate"
    if args.candidate_tree is not None:
        shutil.copytree(args.candidate_tree.resolve(), cand, ignore=shutil.ignore_patterns(".git", ".venv", ".langgraph_api"))
        shown = f"a copy of {args.candidate_tree.resolve()}"
    else:
        transcript.archive(REPO, "HEAD", cand)
        shown = transcript.git(REPO, "rev-parse", "--short", "HEAD")
    print(f"live code: {live_rev[:7]} (no output schema), candidate: {shown} (output_schema=GuideOutput)")
    env = {"MODEL": "offline", "OFFLINE_TOKEN_DELAY_MS": "0"}
    with DevServer(live / "langgraph.json", live, env=env) as server:
        threads = asyncio.run(populate(server.url))
    print("threads:", json.dumps(threads))
    print("\nThe candidate's lock (in the candidate's copy):")
    playbook(root, ["contract", "--write"], cwd=cand)
    playbook(root, ["record", "new", "--name", "recycling-output-schema"], cwd=cand)
    # Stopped gracefully above (every record on disk); the live server again, on the deployed code:
    server = DevServer(live / "langgraph.json", live, env=env).start()
    URLS.append(server.url)
    candidate = str(cand / "langgraph.json")
    try:
        asyncio.run(what_clients_get(server.url, "the deployed code"))
        playbook(root, ["inflight", "--live", server.url, "--graph", GRAPH])
        gate = playbook(root, transcript.gate_argv(server.url, candidate, GRAPH, "--strict"))
        turn_input = f"{GRAPH}={json.dumps(TURN_INPUT, ensure_ascii=False)}"
        shadow = playbook(root, transcript.shadow_argv(server.url, live, candidate, GRAPH, "--turn-input", turn_input))
    finally:
        server.stop()
    with DevServer(cand / "langgraph.json", cand, env=env) as candidate_server:
        asyncio.run(what_clients_get(candidate_server.url, "the candidate"))
    print(f"\ngate exit {gate}; shadow exit {shadow}")
    return 0 if gate == 0 and shadow == 0 else 1


if __name__ == "__main__":
    os.environ.pop("LANGGRAPH_CHECKPOINTER", None)
    raise SystemExit(main())

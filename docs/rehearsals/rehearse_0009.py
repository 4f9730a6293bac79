"""Rehearse migration 0009 (campus_supervisor's messages as a DeltaChannel) on real `langgraph dev` servers.

    .venv/bin/python docs/rehearsals/rehearse_0009.py [--live-commit REV] [--candidate-tree DIR] [WORKDIR]

Prints the transcript pasted into migrations_playbook/records/0009-campus-messages-delta.md: each
command as `$ playbook ...`, its output and exit code (server URLs shown as port 2024, WORKDIR as
$W). The live side is ``--live-commit`` (default: the commit before the one that made the change,
found by `git log`), the candidate this repo's HEAD (both through `git archive`), or
``--candidate-tree`` (a working tree, before the change is committed). Live threads of every shape
the deployed code leaves (idle after a direct answer and after transfers, waiting for the library's
floor question in Korean and English or the academic agent's course question, six and sixteen turns
long: past a DeltaChannel snapshot) are created on the deployed code, the server is stopped
gracefully and started again; then `inflight`, the gate, and the shadow proof twice: first with the
staging servers' runtime guard off (``PLAYBOOK_GUARD=off``: the behaviour itself, the proof the
record's ``accepts`` entry rests on), then as the deployment runs (guard on: it must admit the live
threads, by the record's acceptance). The shadow serves three copies of the live folder (the
deployed code twice, the candidate once), reruns every thread's last turn and takes a next one on
each, and compares. Takes about four minutes.
"""

import asyncio
import json
import os
from pathlib import Path

import transcript  # docs/rehearsals/transcript.py, beside this script
from langgraph_sdk import get_client

from migrations_playbook.staging.server import DevServer

REPO = Path(__file__).resolve().parents[2]
GRAPH = "campus_supervisor"
SUBJECT = "campus_supervisor messages as a DeltaChannel"

LONG = [
    "오늘 학식 메뉴 뭐야?",
    "3층 좌석 남았어?",
    "운영체제 강의자료 보여줘",
    "점심 메뉴는?",
    "4층 자리 있어?",
    "What's for dinner?",
]
CONVERSATIONS: dict[str, list[str]] = {
    "direct-answer": ["오늘 학식 메뉴 뭐야?"],
    "three-turns": ["오늘 학식 메뉴 뭐야?", "3층 좌석 남았어?", "자료구조 과제 마감 언제야?"],
    "floor-question-ko": ["도서관 좌석 남았어?"],
    "floor-question-en": ["Any free seats in the library?"],
    "course-question": ["과제 마감 언제야?"],
    "six-turns": LONG,
    "sixteen-turns": [*LONG, *LONG, *LONG[:4]],
}
"""The turns each live thread had on the deployed code."""


URLS: list[str] = []


def playbook(root: Path, argv: list[str]) -> int:
    return transcript.playbook(root, URLS, argv).returncode


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


def main() -> int:
    args = transcript.parse_args(__doc__)
    root = transcript.fresh_workdir(args, "rehearse-0009-")
    live_rev = args.live_commit or transcript.commit_before(REPO, "graphs/campus_supervisor/state.py", SUBJECT)
    live = root / "live"
    transcript.archive(REPO, live_rev, live)
    if args.candidate_tree is not None:
        cand = args.candidate_tree.resolve()
        shown = f"the working tree {cand}"
    else:
        cand = root / "candidate"
        transcript.archive(REPO, "HEAD", cand)
        shown = transcript.git(REPO, "rev-parse", "--short", "HEAD")
    print(f"live code: {live_rev[:7]} (messages: add_messages), candidate: {shown} (messages: DeltaChannel)")
    env = {"MODEL": "offline", "OFFLINE_TOKEN_DELAY_MS": "0"}
    with DevServer(live / "langgraph.json", live, env=env) as server:
        threads = asyncio.run(populate(server.url))
    print("threads:", json.dumps(threads))
    # Stopped gracefully above (every record on disk); the live server again, on the deployed code:
    server = DevServer(live / "langgraph.json", live, env=env).start()
    URLS.append(server.url)
    candidate = str(cand / "langgraph.json")
    try:
        playbook(root, ["inflight", "--live", server.url, "--graph", GRAPH])
        gate = playbook(
            root,
            transcript.gate_argv(server.url, candidate, GRAPH),
        )
        shadow_args = transcript.shadow_argv(server.url, live, candidate, GRAPH)
        print("\nThe behaviour itself (the staging servers' runtime guard off):")
        proof = transcript.playbook(root, URLS, shadow_args, env={"PLAYBOOK_GUARD": "off"}).returncode
        print("\nAs the deployment runs (runtime guard on):")
        shadow = playbook(root, shadow_args)
    finally:
        server.stop()
    print(f"\ngate exit {gate}; shadow exit {proof} (guard off), {shadow} (guard on)")
    return 0 if gate == 0 and proof == 0 and shadow == 0 else 1


if __name__ == "__main__":
    os.environ.pop("LANGGRAPH_CHECKPOINTER", None)
    raise SystemExit(main())

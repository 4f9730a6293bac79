"""Rehearse migration 0006 (ticket_triage: the node `triage` renamed `assess`) on real `langgraph dev` servers.

    .venv/bin/python docs/rehearsals/rehearse_0006.py [WORKDIR]

Prints the transcript pasted into migrations_playbook/records/0006-ticket-triage-assess.md:
each command as `$ playbook ...`, its output and exit code (server URLs shown as port 2024,
WORKDIR as $W). The live side is this repo's HEAD (`git archive`), the candidate HEAD with
records/0006-ticket-triage-assess.candidate.patch applied; the plan is
records/0006-ticket-triage-assess.plan.json. Needs `patch`; takes a few minutes.
"""

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import transcript  # docs/rehearsals/transcript.py, beside this script
from langgraph_sdk import get_client

from migrations_playbook.staging.server import DevServer

REPO = Path(__file__).resolve().parents[2]
RECORDS = REPO / "migrations_playbook" / "records"
ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="rehearse-0006-"))
shutil.rmtree(ROOT, ignore_errors=True)
ROOT.mkdir(parents=True)
PY = sys.executable
LIVE, CAND = ROOT / "live", ROOT / "candidate"
PLAN = RECORDS / "0006-ticket-triage-assess.plan.json"
CAND_PATCH = RECORDS / "0006-ticket-triage-assess.candidate.patch"

URLS = []


def archive(dest):
    transcript.archive(REPO, "HEAD", dest)


def sh(label, argv, cwd=None, env=None, show=True):
    """One transcript block (``label`` and ``show`` name the step for the reader only)."""
    return transcript.playbook(ROOT, URLS, argv, cwd=cwd, env=env)


archive(LIVE)
archive(CAND)
subprocess.run(["patch", "-p1", "-d", str(CAND), "-i", str(CAND_PATCH)], check=True, capture_output=True)
# The candidate's PR writes its lock (the live lock moves to history/).
r = subprocess.run(
    [
        PY,
        "-m",
        "migrations_playbook",
        "contract",
        "--config",
        str(CAND / "langgraph.json"),
        "--write",
        "--contracts-dir",
        str(CAND / "migrations_playbook/contracts"),
    ],
    capture_output=True,
    text=True,
    cwd=CAND,
)
print("candidate lock:", r.stdout.strip(), r.stderr.strip(), flush=True)
TEXTS = [
    "Please refund the double charge on my invoice, it is urgent",
    "I need a detailed report of last month's outages",
    "결제가 두 번 되었어요. 환불해 주세요",
    "Please change the email on my account to new@example.com",
]


async def populate(url):
    c = get_client(url=url)
    out = {"paused": [], "done": []}
    for t in TEXTS:
        th = await c.threads.create()
        await c.runs.wait(th["thread_id"], "ticket_triage", input={"messages": [{"role": "user", "content": t}]})
        out["paused"].append(th["thread_id"])
    th = await c.threads.create()
    await c.runs.wait(th["thread_id"], "ticket_triage", input={"messages": [{"role": "user", "content": TEXTS[0]}]})
    await c.runs.wait(th["thread_id"], "ticket_triage", command={"resume": {"kind": "plan_approval", "answer": "approve"}})
    out["done"].append(th["thread_id"])
    await c.aclose()
    return out


env = {"PLAYBOOK_GUARD": "on"}
with DevServer(LIVE / "langgraph.json", LIVE, env=env) as s:
    threads = asyncio.run(populate(s.url))
print("threads:", json.dumps(threads), flush=True)
# graceful stop above: every checkpoint is on disk. The live server again (the old code):
live = DevServer(LIVE / "langgraph.json", LIVE, env=env).start()
URLS.append(live.url)
try:
    sh("inflight", ["inflight", "--live", live.url, "--graph", "ticket_triage"])
    sh(
        "gate",
        [
            "gate",
            "--live",
            live.url,
            "--candidate",
            str(CAND / "langgraph.json"),
            "--graph",
            "ticket_triage",
            "--format",
            "markdown",
            "--no-progress",
        ],
    )
    sh("dry", ["migrate", "--live", live.url, "--candidate", str(CAND / "langgraph.json"), "--plan", str(PLAN)])
    sh(
        "replay-plain",
        [
            "replay",
            "--live",
            live.url,
            "--candidate",
            str(CAND / "langgraph.json"),
            "--graph",
            "ticket_triage",
            "--persistence",
            str(LIVE),
            "--auto-resume",
            "--format",
            "markdown",
        ],
    )
    sh(
        "replay-plan",
        [
            "replay",
            "--live",
            live.url,
            "--candidate",
            str(CAND / "langgraph.json"),
            "--persistence",
            str(LIVE),
            "--auto-resume",
            "--plan",
            str(PLAN),
            "--format",
            "markdown",
        ],
    )
finally:
    live.stop()
# Rollout: the same folder served with the candidate code.
ROLLED = ROOT / "rolled-out"
ROLLED.mkdir()
shutil.copytree(LIVE / ".langgraph_api", ROLLED / ".langgraph_api")
shutil.copy(CAND / "langgraph.json", ROLLED / "langgraph.json")
cfg = json.loads((ROLLED / "langgraph.json").read_text())
cfg["dependencies"] = [str(CAND)]
(ROLLED / "langgraph.json").write_text(json.dumps(cfg, indent=2))
cand = DevServer(ROLLED / "langgraph.json", ROLLED, env={**env, "PYTHONPATH": str(CAND)}).start()
URLS.append(cand.url)
try:

    async def user_resumes(url, thread_id):
        c = get_client(url=url)
        r = await c.runs.create(thread_id, "ticket_triage", command={"resume": {"kind": "plan_approval", "answer": "approve"}})
        await c.aclose()
        return r

    try:
        asyncio.run(user_resumes(cand.url, threads["paused"][0]))
        print("\nguard: the resume was ADMITTED (unexpected)")
    except httpx.HTTPStatusError as exc:  # the SDK's APIStatusError: the guard's 409
        paused = threads["paused"][0]
        print(f"\nA user resumes {paused} before the migration -> {exc.response.status_code}: {exc.response.text}", flush=True)
    live_locks = ROOT / "live-locks"
    shutil.copytree(LIVE / "migrations_playbook/contracts", live_locks)
    sh(
        "gate-rolled",
        [
            "gate",
            "--live",
            cand.url,
            "--candidate",
            str(CAND / "langgraph.json"),
            "--graph",
            "ticket_triage",
            "--live-contract",
            str(live_locks),
            "--format",
            "markdown",
            "--no-progress",
        ],
    )
    sh(
        "apply",
        [
            "migrate",
            "--live",
            cand.url,
            "--candidate",
            str(CAND / "langgraph.json"),
            "--plan",
            str(PLAN),
            "--live-contract",
            str(live_locks),
            "--apply",
        ],
    )
    sh(
        "apply2",
        [
            "migrate",
            "--live",
            cand.url,
            "--candidate",
            str(CAND / "langgraph.json"),
            "--plan",
            str(PLAN),
            "--live-contract",
            str(live_locks),
            "--apply",
        ],
    )
    sh(
        "gate-after",
        [
            "gate",
            "--live",
            cand.url,
            "--candidate",
            str(CAND / "langgraph.json"),
            "--graph",
            "ticket_triage",
            "--live-contract",
            str(live_locks),
            "--format",
            "markdown",
            "--no-progress",
        ],
    )

    async def user_flow(url, thread_id):
        c = get_client(url=url)
        first = await c.runs.wait(thread_id, "ticket_triage", input=None)
        asked = first.get("__interrupt__", [{}])[0].get("value")
        final = await c.runs.wait(thread_id, "ticket_triage", command={"resume": asked["resume_format"]})
        state = await c.threads.get_state(thread_id)
        await c.aclose()
        return asked, final, state

    asked, final, state = asyncio.run(user_flow(cand.url, threads["paused"][0]))
    print(f"\nThe user's client continues {threads['paused'][0]} (a run with no input), then answers:")
    print(
        "asked again:",
        json.dumps({k: asked[k] for k in ("kind", "question", "options", "resume_at", "requested_at")}, ensure_ascii=False),
    )
    print(
        "answered ->",
        json.dumps(
            {
                "approval": final.get("approval", {}).get("answer"),
                "current_step": final.get("current_step"),
                "response": final.get("response", "")[:160],
            },
            ensure_ascii=False,
        ),
    )
    print("status:", state.get("next"), flush=True)
finally:
    cand.stop()

"""The checks of ``benchmarks/chaos.py`` once its load is over (see that module's docstring)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from platform_core.wiring.deploy.services import postgres_query

if TYPE_CHECKING:
    from benchmarks.chaos import Chaos


async def verify(chaos: Chaos, erp: Any) -> tuple[list[str], dict[str, Any]]:
    """Every check of the module docstring; returns the problems found and the figures."""
    problems: list[str] = []
    world = chaos.world
    base = chaos.live()[0]
    api = f"{base}/api/v1/orgs/{world['org']}"
    headers = {"Authorization": f"Bearer {world['requester_token']}"}
    async with httpx.AsyncClient(trust_env=False, timeout=30, headers=headers) as http:
        for client in chaos.clients:
            problems += [f"{client.ref}: {v}" for v in client.violations]
            response = await http.get(
                f"{api}/conversations/{client.conversation}/events/", params={"after_seq": 0, "limit": 1000}
            )
            stored = response.json()["results"]
            if stored != client.frames:
                problems.append(f"{client.ref}: received {len(client.frames)} frames, {len(stored)} stored")
            if [f["event"] for f in stored].count("done") != 1:
                problems.append(f"{client.ref}: not exactly one done")
    runs = {
        str(run_id): (status, resumes)
        for run_id, status, resumes in postgres_query(
            chaos.bench.database_url, "SELECT id, status, resumes FROM agents_run"
        )
    }
    interrupted = _ids(
        chaos,
        "SELECT DISTINCT run_id FROM agents_runevent WHERE event = 'error' "
        "AND data->>'code' = 'run_interrupted'",
    )
    for client in chaos.clients:
        if not client.done:
            last = [
                (
                    f["seq"],
                    f["event"],
                    f["data"].get("type") or f["data"].get("code"),
                    f["data"].get("status"),
                )
                for f in client.frames[-4:]
            ]
            row = postgres_query(
                chaos.bench.database_url,
                "SELECT status, stop_reason, lease_owner, resumes FROM agents_run WHERE conversation_id = %s",
                (client.conversation,),
            )
            problems.append(
                f"{client.ref} unfinished: run {row}, last frames {last}, needs_resume {client.needs_resume}"
            )
    if any(status != "done" for status, _ in runs.values()):
        problems.append(f"runs not done: {[r for r, v in runs.items() if v[0] != 'done']}")
    killed = sorted(kill.what.split()[0] for kill in chaos.kills)
    if killed != ["celery", "daphne"]:  # else "nothing lost" proves nothing
        problems.append(f"the chaos did not happen: kills {[k.what for k in chaos.kills]}")
    affected = {run for kill in chaos.kills for run in kill.runs}
    for run in affected:
        status, resumes = runs[run]
        if run not in interrupted or resumes < 1 or status != "done":
            problems.append(f"run {run} lost its process but was not interrupted and resumed ({status})")
    delays = [
        min(t for t in client.interruptions if t >= kill.at) - kill.at
        for kill in chaos.kills
        for client in chaos.clients
        if client.frames
        and client.frames[0]["run_id"] in kill.runs
        and any(t >= kill.at for t in client.interruptions)
    ]
    if delays and max(delays) > chaos.args.interrupt_within:
        problems.append(f"an interruption took {max(delays):.1f} s")
    requests: dict[str, int] = {}
    for request in erp.requests_to("/payments"):
        ref = request.query.get("ref", [None])[0] if request.method == "GET" else request.json().get("ref")
        requests[ref] = requests.get(ref, 0) + 1
    # A call in flight when its process was killed is not made again: its ledger entry stays "started"
    # and the model is told its outcome is unknown. Such a call may or may not have reached the ERP.
    cut = _ids(
        chaos,
        "SELECT r.conversation_id FROM agents_toolcallentry e JOIN agents_run r ON r.id = e.run_id "
        "WHERE e.status = 'started'",
    )
    repeated = {ref: n for ref, n in requests.items() if n > 1}
    missing = [c.ref for c in chaos.clients if c.ref not in requests and c.conversation not in cut]
    if repeated or missing:
        problems.append(f"ERP requests not one per conversation: repeated {repeated}, missing {missing}")
    figures = {
        "conversations": len(chaos.clients),
        "events": sum(len(c.frames) for c in chaos.clients),
        "reconnects": chaos.reconnects,
        "forced reconnects": sum(c.reconnects for c in chaos.clients) - chaos.reconnects,
        "kills": [(k.what, len(k.runs)) for k in chaos.kills],
        "runs interrupted": len(interrupted),
        "runs resumed (parked or cut)": sum(1 for _, resumes in runs.values() if resumes),
        "interrupted within (max s)": round(max(delays), 1) if delays else None,
        "erp requests": sum(requests.values()),
        "calls cut by a kill (not repeated)": len(cut),
    }
    return problems, figures


def _ids(chaos: Chaos, sql: str) -> set[str]:
    """The first column of the rows ``sql`` selects in the benchmark's database, as text."""
    return {str(row[0]) for row in postgres_query(chaos.bench.database_url, sql)}

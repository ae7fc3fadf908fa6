"""Files in the chat (issue #35): the upload and the first answer for a 20-page PDF and a 5 MB
spreadsheet, and the memory of the worker doing both.

    .venv/bin/python benchmarks/attachments_first_answer.py            # 20-page PDF, 5 MB XLSX, 5 rounds
    .venv/bin/python benchmarks/attachments_first_answer.py --smoke    # 2 pages, a 50 KB sheet, 1 round

The files are made by the libraries that write them: the PDF by hand as the knowledge base tests make
theirs (``tests/fakes/documents.py``: a real text layer, about 450 words a page, varied), the XLSX with
openpyxl (three sheets of purchase orders: a header row, ten columns of text, dates and numbers, as many
rows as the size needs), then made what Excel saves: its strings in a shared-strings table, each sheet's
used range declared (``--openpyxl-sheet``: as openpyxl writes it, each string in its cell and no range,
which its reader parses more slowly).

Each file is measured in a worker of its own: a child process on a scratch SQLite database (all
migrations, migrated once and copied), media in a scratch folder, the in-memory channel layer, and the
platform's own model client talking to the scripted OpenAI-compatible server (``tests/fakes/openai_server.py``)
in a process of its own on loopback, so neither its CPU nor its memory is the worker's; it answers at
once (no latency, the answer in a few chunks). A round, in a new conversation:

1. *upload*: :func:`agents.attachments.services.attachment_upload` of the file's bytes (checked from its
   bytes, hashed, stored, its row committed), timed around that call;
2. *the question*: ``PostMessage(..., attachment_ids=(the upload,))`` recorded with ``command_record`` and
   handed to the process's run manager with ``command_deliver``, as the HTTP chat does
   (``agents/api/http_chat.py``); the clock starts before ``command_record``. "request" is when the model
   server took the run's first request (which carries the file's text: the run has read and parsed the
   file by then), on the machine's monotonic clock, which the two processes share; "answer" is the first
   ``answer`` delta event and "done" the ``done`` event, both received from the conversation's
   channel-layer group as a socket or an HTTP stream of the worker receives them;
3. *a later question* in the same conversation, without files: "later" is the time to its model request
   (its history carries the earlier question's file, read again).

Round 1 is a fresh worker (libraries imported on first use), reported apart as "cold"; the other rounds'
medians are "warm". While a question runs, a trivial call through ``database_sync_to_async`` is made
every 20 ms: "stall" is the longest one waited, what the worker's other runs and websocket consumers would
have waited for their database work (a run reads its files on the process's one thread for that work);
"loop" is the longest the event loop woke late from a 20 ms sleep.

Memory: the resident set of the worker (``VmRSS`` before the round, ``VmHWM`` after each step, the peak
reset before each step through ``/proc/self/clear_refs``), highest of the rounds; and, in one more round
that is not timed, the peak of what Python allocates during the upload and during the first question
(tracemalloc, as ``knowledge_parsing.py`` measures). What the model was sent: the characters of the
question's parts (the question and the file's text, cut past 60,000 characters) and the request's JSON
size; "text chars" is the whole text the parser made of the file, "read ms" the reading for the model
alone (``document_read``, part of the upload since the text is read once there; best of 3).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import io
import json
import os
import queue
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import machine_summary  # noqa: E402

QUESTION = "Summarise the attached file in three sentences."
LATER_QUESTION = "Which supplier comes up most often?"
ANSWER = "The file lists purchase orders by supplier; most are paid, a few are still open or cancelled."
PROBE_SECONDS = 0.02
WORDS = (
    "the supplier shall deliver goods within thirty days of the purchase order and the buyer may inspect "
    "them on arrival payments over fifty thousand yuan need the approval of the finance department "
    "before release invoices are checked against the order and the delivery note any difference is "
    "reported to the purchasing manager who decides whether the invoice is paid in part or returned "
    "prices agreed by phone are confirmed in writing within two working days warranty claims follow the "
    "terms of the framework agreement signed with each supplier for the year"
).split()
SUPPLIERS = [f"Supplier {n:03d} Ltd." for n in range(200)]
ITEMS = [f"Item {n:04d} {kind}" for n in range(60) for kind in ("bolt", "nut", "washer", "bracket", "cable")]
HEADER = [
    "order",
    "date",
    "supplier",
    "item",
    "quantity",
    "unit price",
    "amount",
    "currency",
    "status",
    "note",
]


# --- the files ---------------------------------------------------------------------------------------


def pdf_document(pages: int, words_per_page: int = 450) -> bytes:
    """A ``pages``-page PDF with a text layer: a heading and about ``words_per_page`` words a page,
    wrapped at 80 characters (an office document's page)."""
    from tests.fakes.documents import pdf_with_pages

    rng = random.Random(35)
    texts = []
    for page in range(1, pages + 1):
        words = [rng.choice(WORDS) for _ in range(words_per_page)]
        body = textwrap.wrap(f"Clause {page}.1 " + " ".join(words), 80)
        texts.append("\n".join([f"Section {page}: terms of purchase (page {page} of {pages})", *body]))
    return pdf_with_pages(texts)


def xlsx_document(rows_per_sheet: int, sheets: int = 3, *, excel: bool = True) -> bytes:
    """An XLSX of ``sheets`` sheets of purchase orders: a header row and ``rows_per_sheet`` rows of ten
    columns (text, dates, numbers). Written by openpyxl; with ``excel``, then made what Excel would have
    saved (:func:`as_excel_saves`)."""
    from openpyxl import Workbook

    rng = random.Random(35)
    workbook = Workbook(write_only=True)
    for number in range(sheets):
        year = 2024 + number
        sheet = workbook.create_sheet(f"Orders {year}")
        sheet.append(HEADER)
        for row in range(rows_per_sheet):
            quantity, price = rng.randint(1, 500), round(rng.uniform(0.5, 900), 2)
            sheet.append(
                [
                    f"PO-{year}-{row:06d}",
                    datetime.date(year, rng.randint(1, 12), rng.randint(1, 28)),
                    rng.choice(SUPPLIERS),
                    rng.choice(ITEMS),
                    quantity,
                    price,
                    round(quantity * price, 2),
                    "CNY",
                    rng.choice(("open", "received", "paid", "cancelled")),
                    rng.choice(("", "urgent", "split delivery", "price agreed by phone", "")),
                ]
            )
    buffer = io.BytesIO()
    workbook.save(buffer)
    return as_excel_saves(buffer.getvalue()) if excel else buffer.getvalue()


_INLINE = re.compile(rb't="inlineStr"><is><t(?: xml:space="preserve")?>(.*?)</t></is>')
_CELL = re.compile(rb'<c r="([A-Z]+)(\d+)"')
_SHARED_TYPE = (
    b'<Override PartName="/xl/sharedStrings.xml" '
    b'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
)
_SHARED_RELATION = (
    b'<Relationship Id="rIdSharedStrings" Target="sharedStrings.xml" '
    b'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings"/>'
)


def as_excel_saves(package: bytes) -> bytes:
    """The XLSX ``package`` as Excel saves it: its cells' inline strings moved to a shared-strings table
    (each distinct text once, a cell naming it by its index), and each sheet's dimension (its used range)
    written before its data (openpyxl's write-only sheets have none: a reader then reads a whole sheet to
    know its size)."""
    table: dict[bytes, int] = {}

    def shared(match: re.Match[bytes]) -> bytes:
        return b't="s"><v>%d</v>' % table.setdefault(match.group(1), len(table))

    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(package)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            body = source.read(info.filename)
            if info.filename.startswith("xl/worksheets/"):
                body = _INLINE.sub(shared, body)
                cells = _CELL.findall(body[: body.find(b"</row>")]) + _CELL.findall(body[-2000:])
                used = b'<dimension ref="%s%s:%s%s"/>' % (*cells[0], *cells[-1])
                body = body.replace(b"<sheetViews>", used + b"<sheetViews>", 1)
            elif info.filename == "[Content_Types].xml":
                body = body.replace(b"</Types>", _SHARED_TYPE + b"</Types>")
            elif info.filename == "xl/_rels/workbook.xml.rels":
                body = body.replace(b"</Relationships>", _SHARED_RELATION + b"</Relationships>")
            target.writestr(info, body)
        items = b"".join(b"<si><t>%s</t></si>" % text for text in table)
        target.writestr(
            "xl/sharedStrings.xml",
            b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
            b'count="%d" uniqueCount="%d">%s</sst>' % (len(table), len(table), items),
        )
    return out.getvalue()


def xlsx_of_size(megabytes: float, sheets: int = 3, *, excel: bool = True) -> tuple[bytes, int]:
    """An :func:`xlsx_document` of about ``megabytes`` MB, and its rows per sheet (from the size of a
    sample's rows, in hundreds)."""
    sample_rows = 2000
    sample = xlsx_document(sample_rows, sheets, excel=excel)
    per_row = len(sample) / (sample_rows * sheets)
    rows = max(10, round(megabytes * 2**20 / per_row / sheets / 100) * 100)  # the same rows every time
    return xlsx_document(rows, sheets, excel=excel), rows


# --- the model, in a process of its own ----------------------------------------------------------------


def question_figures(body: dict[str, Any]) -> dict[str, Any]:
    """What the model was asked: the characters of the question's parts (the last user message sent with
    parts), whether a file's text is in it and whether it was cut, and the request's JSON size."""
    parts: list[dict[str, Any]] = []
    for message in reversed(body.get("messages") or ()):
        if message.get("role") == "user" and isinstance(message.get("content"), list):
            parts = message["content"]
            break
    texts = [str(part.get("text") or "") for part in parts if part.get("type") == "text"]
    return {
        "t_ns": time.monotonic_ns(),
        "stream": bool(body.get("stream")),
        "question_chars": sum(len(text) for text in texts),
        "attached": any(text.startswith("[Attached file:") for text in texts),
        "cut": any("[The file is longer" in text for text in texts),
        "request_bytes": len(json.dumps(body, ensure_ascii=False).encode()),
    }


def serve() -> None:
    """The scripted model: answers every chat request with :data:`ANSWER` (streamed when asked), prints
    :func:`question_figures` of each as a JSON line; its base URL first; until stdin closes."""
    from tests.fakes.openai_server import ScriptedOpenAIServer, text

    class Forget(list[Any]):
        """What the server records of each request, forgotten (the figures are printed instead)."""

        def append(self, item: Any) -> None:
            pass

    lock = threading.Lock()

    def reply(body: dict[str, Any]) -> Any:
        figures = question_figures(body)
        with lock:
            print(json.dumps(figures), flush=True)
        return text(ANSWER, chunk_size=12)

    with ScriptedOpenAIServer() as server:
        server.requests, server.headers, server.peers = Forget(), Forget(), Forget()
        server.script(*([reply] * 100_000))
        print(server.base_url, flush=True)
        sys.stdin.read()


class ModelServer:
    """The scripted model's process, and the figures of the requests it took, in order."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()
        if not self.base_url.startswith("http://127.0.0.1:"):
            self.process.kill()
            raise SystemExit(f"the model server did not start: {self.base_url!r}")
        self.requests: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.requests.put(json.loads(line))

    def taken(self) -> list[dict[str, Any]]:
        """The requests taken since the last call."""
        taken = []
        while True:
            try:
                taken.append(self.requests.get_nowait())
            except queue.Empty:
                return taken

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


# --- the worker's memory ---------------------------------------------------------------------------------


class ResidentSet:
    """The process's resident memory now and its peak since :meth:`reset` (``VmHWM``, reset by writing 5
    to ``/proc/self/clear_refs``; where that is refused, the peak is the process's since it started)."""

    def __init__(self) -> None:
        self.resettable = True

    def reset(self) -> None:
        if self.resettable:
            try:
                Path("/proc/self/clear_refs").write_text("5")
            except OSError:
                self.resettable = False

    @staticmethod
    def kib(field: str) -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise RuntimeError(f"no {field} in /proc/self/status")

    def now(self) -> int:
        return self.kib("VmRSS")

    def peak(self) -> int:
        return self.kib("VmHWM")


# --- the worker ------------------------------------------------------------------------------------------


def child(options: argparse.Namespace) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")
    import django

    django.setup()
    asyncio.run(worker(options, Path(options.file).read_bytes()))


def world(base_url: str) -> tuple[Any, Any, Any]:
    """An organisation whose default model is the scripted server, a member, and an agent without tools or
    completion checklist (one loop turn, then the streamed answer)."""
    from platform_core.models import Role
    from tests import factories as _factories  # noqa: F401  (loads the factory modules in their order)
    from tests.agents.factories import AgentFactory, ModelConfigFactory
    from tests.factories import OrganizationFactory, member_of

    org: Any = OrganizationFactory(slug="files", name="Files")
    user = member_of(org, Role.MEMBER, username="files-user")
    ModelConfigFactory(organization=org, base_url=base_url, is_default=True, timeout=600)
    agent = AgentFactory(
        organization=org, name="Reader", instructions="Answer briefly.", completion_check=False
    )
    return org, user, agent


async def worker(options: argparse.Namespace, data: bytes) -> None:
    from channels.db import database_sync_to_async

    server = ModelServer()
    try:
        org, user, agent = await database_sync_to_async(world)(server.base_url)
        memory = ResidentSet()
        attachment = None
        for number in range(1, options.rounds + 1):
            figures, attachment = await one_round(options, data, org, user, agent, server, memory)
            print(json.dumps({"round": number, **figures}), flush=True)
        tracemalloc.start()
        try:
            figures, _ = await one_round(options, data, org, user, agent, server, memory, traced=True)
        finally:
            tracemalloc.stop()
        read = await database_sync_to_async(reading)(attachment)
        print(json.dumps({"traced": figures, **read, "rss_resettable": memory.resettable}), flush=True)
    finally:
        server.stop()


async def one_round(
    options: argparse.Namespace,
    data: bytes,
    org: Any,
    user: Any,
    agent: Any,
    server: ModelServer,
    memory: ResidentSet,
    *,
    traced: bool = False,
) -> tuple[dict[str, Any], Any]:
    """Upload the file, ask about it in a new conversation, wait for the run's end: the round's figures
    and the upload."""
    from channels.db import database_sync_to_async
    from channels.layers import get_channel_layer
    from django.core.files.base import ContentFile

    from agents.attachments.services import AttachmentStored, attachment_upload
    from agents.conversations.commands import PostMessage, Sender
    from agents.models import Conversation
    from agents.runs.events.store import conversation_group

    name = Path(options.file).name
    conversation = await database_sync_to_async(Conversation.objects.create)(
        organization=org, user=user, agent=agent, title=f"About {name}"
    )

    def upload() -> tuple[Any, float]:
        started = time.perf_counter()
        stored = attachment_upload(
            organization=org, user=user, name=name, content=ContentFile(data, name=name)
        )
        return stored, time.perf_counter() - started

    rss_before_upload = memory.now()
    memory.reset()
    traced_before = _traced_reset() if traced else 0
    stored, upload_seconds = await database_sync_to_async(upload)()
    figures: dict[str, Any] = {
        "upload_ms": upload_seconds * 1000,
        "rss_before_upload_kib": rss_before_upload,
        "rss_peak_upload_kib": memory.peak(),
    }
    if traced:
        figures["py_peak_upload_kib"] = (tracemalloc.get_traced_memory()[1] - traced_before) // 1024
    if not isinstance(stored, AttachmentStored):
        raise SystemExit(f"the upload of {name} was refused: {stored}")

    layer = get_channel_layer()
    channel = await layer.new_channel("bench.")
    await layer.group_add(conversation_group(conversation.pk), channel)
    sender = Sender(organization_id=org.pk, user=user, via="http")
    try:
        rss_before_answer = memory.now()
        memory.reset()
        traced_before = _traced_reset() if traced else 0
        question = PostMessage(sender, conversation, QUESTION, attachment_ids=(stored.attachment.pk,))
        async with asyncio.timeout(options.timeout):
            figures.update(await ask(question, layer, channel, server))
        if traced:
            figures["py_peak_answer_kib"] = (tracemalloc.get_traced_memory()[1] - traced_before) // 1024
        figures["rss_before_answer_kib"] = rss_before_answer
        figures["rss_peak_answer_kib"] = memory.peak()
        if not traced:  # a later question, without files, in the same conversation
            async with asyncio.timeout(options.timeout):
                later = await ask(PostMessage(sender, conversation, LATER_QUESTION), layer, channel, server)
            figures.update({"later_request_ms": later["request_ms"], "later_attached": later["attached"]})
    finally:
        await layer.group_discard(conversation_group(conversation.pk), channel)
    return figures, stored.attachment


async def ask(command: Any, layer: Any, channel: str, server: ModelServer) -> dict[str, Any]:
    """Post ``command`` as an entry point does and follow the run's events to its ``done``: the times
    from the start to the model's first request, the first answer delta and ``done``; the longest waits of
    the database thread and of the event loop meanwhile; what the model was asked."""
    from channels.db import database_sync_to_async

    from agents.conversations.commands import RunStarted
    from agents.conversations.handling import command_deliver, command_record
    from agents.runs.events.relay import EVENT_MESSAGE_TYPE, message_relayed
    from agents.runs.manager import run_manager

    server.taken()
    stalls: list[float] = []
    lags: list[float] = []
    probing = asyncio.create_task(_probe(stalls, lags))
    started = time.monotonic_ns()
    answer_ns = done_ns = 0
    try:
        recorded = await database_sync_to_async(command_record)(command)
        posted = await command_deliver(recorded)
        if not isinstance(posted, RunStarted):
            raise SystemExit(f"the question was not answered: {posted}")
        while not done_ns:
            message = await layer.receive(channel)
            if message.get("type") != EVENT_MESSAGE_TYPE:
                continue
            for _seq, _run, payload in message_relayed(message):
                frame = json.loads(payload) if isinstance(payload, str) else payload
                event, body = frame.get("event"), frame.get("data") or {}
                if event == "answer" and body.get("status") == "delta" and not answer_ns:
                    answer_ns = time.monotonic_ns()
                elif event == "error":
                    raise SystemExit(f"the run failed: {body}")
                elif event == "done":
                    done_ns = time.monotonic_ns()
        await run_manager.wait(posted.run_id)
    finally:
        probing.cancel()
    requests = server.taken()
    if not requests or not answer_ns:
        raise SystemExit(f"no model request or no answer delta: {requests}")
    first = requests[0]
    return {
        "request_ms": (first["t_ns"] - started) / 1e6,
        "answer_ms": (answer_ns - started) / 1e6,
        "done_ms": (done_ns - started) / 1e6,
        "stall_ms": max(stalls, default=0.0) * 1000,
        "loop_lag_ms": max(lags, default=0.0) * 1000,
        "model_requests": len(requests),
        "question_chars": first["question_chars"],
        "request_bytes": first["request_bytes"],
        "attached": first["attached"],
        "cut": first["cut"],
    }


def _traced_reset() -> int:
    """Forget tracemalloc's peak; what Python holds now."""
    tracemalloc.reset_peak()
    return tracemalloc.get_traced_memory()[0]


async def _probe(stalls: list[float], lags: list[float]) -> None:
    """Every :data:`PROBE_SECONDS`, a trivial call on the worker's database thread (how long each waited)
    and a sleep of the event loop (how late it woke)."""
    from channels.db import database_sync_to_async

    noop = database_sync_to_async(lambda: None)
    while True:
        began = time.perf_counter()
        await noop()
        stalls.append(time.perf_counter() - began)
        began = time.perf_counter()
        await asyncio.sleep(PROBE_SECONDS)
        lags.append(time.perf_counter() - began - PROBE_SECONDS)


def reading(attachment: Any) -> dict[str, Any]:
    """The file read for the model alone (``document_read``, which the upload does; best of 3), and its
    whole text's length."""
    from agents.attachments.reading import document_read
    from agents.knowledge.formats import DocumentFormat
    from agents.knowledge.parsing import Parsed, document_parsed

    best = float("inf")
    for _ in range(3):
        with attachment.file.open("rb") as file:
            started = time.perf_counter()
            document_read(DocumentFormat(attachment.format), file)
            best = min(best, time.perf_counter() - started)
    with attachment.file.open("rb") as file:
        parsed = document_parsed(DocumentFormat(attachment.format), file)
    chars = sum(len(page) for page in parsed.pages) if isinstance(parsed, Parsed) else 0
    return {"read_ms": best * 1000, "text_chars": chars}


# --- the parent: files, scratch databases, the table -------------------------------------------------------


def migrated_template(scratch: Path, env: dict[str, str]) -> Path:
    template = scratch / "template.sqlite3"
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env={**env, "DATABASE_URL": f"sqlite:///{template}"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"migrate failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return template


def measure_file(
    label: str, path: Path, template: Path, scratch: Path, env: dict[str, str], options: argparse.Namespace
) -> dict[str, Any]:
    database = scratch / f"{path.stem}.sqlite3"
    shutil.copy(template, database)
    media = scratch / f"media-{path.stem}"
    args = [sys.executable, __file__, "--child", "--file", str(path), "--rounds", str(options.rounds)]
    args += ["--timeout", str(options.timeout)]
    done = subprocess.run(
        args,
        cwd=ROOT,
        env={**env, "DATABASE_URL": f"sqlite:///{database}", "MEDIA_ROOT": str(media)},
        capture_output=True,
        text=True,
        timeout=options.timeout * (options.rounds + 2) + 120,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-5000:])
        raise SystemExit(f"the worker for {label} failed (exit status {done.returncode})")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    rounds = [line for line in lines if "round" in line]
    (summary,) = [line for line in lines if "traced" in line]
    return {"label": label, "kib": path.stat().st_size // 1024, "rounds": rounds, **summary}


def worker_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    env.pop("CELERY_RESULT_BACKEND", None)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "platform_core.settings",
            "DJANGO_DEBUG": "false",  # DEBUG keeps every SQL query in memory: measure what production runs
            "CELERY_BROKER_URL": "memory://",
            "MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
        }
    )
    return env


TIMINGS = ("upload_ms", "request_ms", "answer_ms", "done_ms", "stall_ms", "loop_lag_ms", "later_request_ms")


def print_table(results: list[dict[str, Any]]) -> None:
    """Times from the round's start of each step (ms; cold: round 1, warm: the median of the others),
    the worker's resident memory (MiB: before the round, its peak); then what the model was sent and the
    memory Python allocated."""
    print(
        f"{'file':<32}{'KiB':>6}  {'round':<9}{'upload':>8}{'request':>9}{'answer':>9}{'done':>9}"
        f"{'stall':>9}{'loop':>6}{'later':>9}{'RSS':>7}{'peak':>7}"
    )
    for result in results:
        rounds = result["rounds"]
        groups = [("cold", rounds[:1])]
        if len(rounds) > 1:
            groups.append((f"warm ({len(rounds) - 1})", rounds[1:]))
        for position, (name, group) in enumerate(groups):
            medians = {key: statistics.median(r[key] for r in group) for key in TIMINGS}
            before = min(r["rss_before_upload_kib"] for r in group) / 1024
            peak = max(max(r["rss_peak_upload_kib"], r["rss_peak_answer_kib"]) for r in group) / 1024
            head = f"{result['label']:<32}{result['kib']:>6}" if position == 0 else " " * 38
            print(
                f"{head}  {name:<9}{medians['upload_ms']:>8.0f}{medians['request_ms']:>9.0f}"
                f"{medians['answer_ms']:>9.0f}{medians['done_ms']:>9.0f}{medians['stall_ms']:>9.0f}"
                f"{medians['loop_lag_ms']:>6.0f}{medians['later_request_ms']:>9.0f}{before:>7.0f}{peak:>7.0f}"
            )
    print()
    print(
        f"{'file':<32}{'text chars':>12}{'sent chars':>11}{'request KiB':>12}  {'shown':<6}{'read ms':>8}"
        f"{'Python MiB: upload':>20}{'answer':>8}"
    )
    for result in results:
        last = result["rounds"][-1]
        traced = result["traced"]
        print(
            f"{result['label']:<32}{result['text_chars']:>12,}{last['question_chars']:>11,}"
            f"{last['request_bytes'] / 1024:>12.1f}  {'cut' if last['cut'] else 'whole':<6}"
            f"{result['read_ms']:>8.0f}{traced['py_peak_upload_kib'] / 1024:>20.1f}"
            f"{traced['py_peak_answer_kib'] / 1024:>8.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf-pages", type=int, default=20)
    parser.add_argument("--sheet-mb", type=float, default=5.0, help="the XLSX's size")
    parser.add_argument("--rounds", type=int, default=5, help="per file; the first is the cold one")
    parser.add_argument(
        "--openpyxl-sheet",
        action="store_true",
        help="the XLSX as openpyxl writes it (strings inline, no dimension), not as Excel saves it",
    )
    parser.add_argument("--smoke", action="store_true", help="a 2-page PDF, a 50 KB sheet, 1 round")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds for one question")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        serve()
        return
    if options.child:
        child(options)
        return
    if options.smoke:
        options.pdf_pages, options.sheet_mb, options.rounds = 2, 0.05, 1
    print(machine_summary())
    scratch = Path(tempfile.mkdtemp(prefix="attachments-bench-"))
    try:
        pdf = scratch / "report.pdf"
        pdf.write_bytes(pdf_document(options.pdf_pages))
        sheet, rows = xlsx_of_size(options.sheet_mb, excel=not options.openpyxl_sheet)
        xlsx = scratch / "orders.xlsx"
        xlsx.write_bytes(sheet)
        env = worker_env()
        template = migrated_template(scratch, env)
        results = [
            measure_file(f"PDF, {options.pdf_pages} pages", pdf, template, scratch, env, options),
            measure_file(f"XLSX, 3 sheets x {rows:,} rows", xlsx, template, scratch, env, options),
        ]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if options.json:
        print(json.dumps(results))
    else:
        print_table(results)
    unsent = [
        r["label"] for r in results if not all(x["attached"] and x["later_attached"] for x in r["rounds"])
    ]
    if unsent:
        raise SystemExit(f"the model did not get the text of: {', '.join(unsent)}")
    shown = ", ".join(f"{r['label']} {'cut' if r['rounds'][-1]['cut'] else 'whole'}" for r in results)
    print(f"OK: both files uploaded, read and answered in {options.rounds} round(s) each ({shown})")


if __name__ == "__main__":
    main()

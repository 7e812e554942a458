"""The in-process transport (tinykube/client/asgi.py) delivers a request to an ASGI application as uvicorn does:
held against uvicorn itself serving the same application on loopback (Hypothesis), and on the edges an HTTP
server has: a client that hangs up mid-stream, a slow reader, a handler that fails or never answers, a caller
cancelled mid-request."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import uvicorn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tinykube.api import errors
from tinykube.api.inprocess import EVENTS_MESSAGE, EXTENSION
from tinykube.api.resources import ResourceInfo
from tinykube.client import asgi
from tinykube.client.asgi import AsgiTransport
from tinykube.client.kubeconfig import Credentials
from tinykube.client.rest import HttpTransport, RestClient, TransportError

pytestmark = pytest.mark.anyio
TOKEN = "t0ken"


class Probe:
    """What the handlers saw: whether a stream's handler noticed its client had gone, and handlers still running."""

    def __init__(self) -> None:
        self.disconnected = asyncio.Event()
        self.finished = asyncio.Event()
        self.written = 0
        self.shared: list[dict[str, Any]] = [{"n": 0}, {"n": 1}]


def application(probe: Probe) -> Starlette:
    async def echo(request: Request) -> Response:
        body = await request.body()
        seen = {
            "method": request.method,
            "path": request.url.path,
            "query": sorted(request.query_params.multi_items()),
            "authorization": request.headers.get("authorization"),
            "user_agent": request.headers.get("user-agent"),
            "content_type": request.headers.get("content-type"),
            "body": body.decode("latin-1"),
            "status": int(request.query_params.get("status", "200")),
        }
        return Response(orjson.dumps(seen), status_code=seen["status"], media_type="application/json")

    async def stream(request: Request) -> StreamingResponse:
        count = int(request.query_params.get("count", "3"))

        async def lines() -> AsyncIterator[bytes]:
            try:
                for i in range(count):
                    probe.written = i + 1
                    yield orjson.dumps({"type": "ADDED", "object": {"n": i}}) + b"\n"
                if request.query_params.get("hold"):
                    while not await request.is_disconnected():
                        await asyncio.sleep(0.01)
                    probe.disconnected.set()
            finally:
                probe.finished.set()

        return StreamingResponse(lines(), media_type="application/json")

    async def fail(_request: Request) -> Response:
        raise RuntimeError("a handler's bug")

    async def slow(_request: Request) -> Response:
        await asyncio.sleep(float(_request.query_params.get("seconds", "0.3")))
        probe.finished.set()
        return Response(b'{"kind":"Done"}', media_type="application/json")

    class Shared:  # an ASGI application (a class): a watch as the apiserver answers a client offering the extension
        async def __call__(self, scope: Any, _receive: Any, send: Any) -> None:
            await shared(scope, send)

    async def shared(scope: Any, send: Any) -> None:
        assert EXTENSION in scope["extensions"]
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": EVENTS_MESSAGE, "events": [{"type": "ADDED", "object": o} for o in probe.shared]})
        await send({"type": "http.response.body", "body": b'{"type":"BOOKMARK","object":{"n":9}}\n', "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    routes = [Route("/api/v1/stream", stream), Route("/fail", fail), Route("/slow", slow)]
    routes.append(Route("/api/v1/shared", Shared()))
    routes.append(Route("/{rest:path}", echo, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]))
    return Starlette(routes=routes)


async def test_a_request_reaches_the_application_with_the_clients_token_body_and_query() -> None:
    rest = RestClient(CREDS, AsgiTransport(application(Probe()), CREDS))
    seen = await rest.request("PATCH", "/api/v1/namespaces/a/pods/p", {"x": 1}, content_type="x/y", dryRun="All")
    assert seen["method"] == "PATCH" and seen["path"] == "/api/v1/namespaces/a/pods/p"
    assert seen["query"] == [["dryRun", "All"]] and seen["body"] == '{"x":1}' and seen["content_type"] == "x/y"
    assert seen["authorization"] == f"Bearer {TOKEN}" and seen["user_agent"].startswith("tinykube/")


async def test_an_error_status_is_the_api_error_it_names() -> None:
    rest = RestClient(CREDS, AsgiTransport(application(Probe()), CREDS))
    with pytest.raises(errors.NotFound):
        await rest.request("GET", "/x", status=404)


async def test_a_failing_handler_is_a_500_as_uvicorn_answers_it(caplog: pytest.LogCaptureFixture) -> None:
    transport = AsgiTransport(application(Probe()), CREDS)
    answer = await transport.call("GET", "/fail", None, None, "application/json")
    assert (answer.status, answer.body) == (500, b"Internal Server Error")
    assert "a handler's bug" in caplog.text  # logged, as uvicorn logs it


async def test_watch_events_arrive_as_the_stream_is_written() -> None:
    rest = RestClient(CREDS, AsgiTransport(application(Probe()), CREDS))
    events = [event async for event in rest.watch(NAMED, "", count=5)]
    assert [e["object"]["n"] for e in events] == [0, 1, 2, 3, 4]


async def test_a_watch_of_the_shared_objects_hands_the_servers_own_objects_to_the_client() -> None:
    probe = Probe()
    rest = RestClient(CREDS, AsgiTransport(application(probe), CREDS))
    events = [event async for event in rest.watch(SHARED, "")]
    assert [e["object"] for e in events] == [{"n": 0}, {"n": 1}, {"n": 9}]
    assert all(e["object"] is o for e, o in zip(events, probe.shared, strict=False))  # not copies: one in memory


async def test_a_stream_the_client_leaves_is_seen_gone_by_its_handler() -> None:
    probe = Probe()
    rest = RestClient(CREDS, AsgiTransport(application(probe), CREDS))
    async for _event in rest.watch(NAMED, "", count=1, hold="1"):
        break  # the client hangs up after the first event
    async with asyncio.timeout(5):
        await probe.finished.wait()  # the handler was stopped (cancelled), its generator closed


async def test_a_slow_reader_holds_the_handlers_writes_back() -> None:
    probe = Probe()
    transport = AsgiTransport(application(probe), CREDS)
    async with transport.stream("/api/v1/stream", {"count": "1000"}) as (status, chunks):
        assert status == 200
        first = await anext(chunks)
        await asyncio.sleep(0.2)  # nothing read meanwhile
        assert first and probe.written <= asgi.STREAM_CHUNKS + 2  # not all 1,000 buffered
        rest = [chunk async for chunk in chunks]
    assert len(rest) == 999 and probe.written == 1000


async def test_a_caller_cancelled_mid_request_leaves_the_request_to_finish() -> None:
    probe = Probe()
    transport = AsgiTransport(application(probe), CREDS)
    call = asyncio.create_task(transport.call("GET", "/slow", None, None, "application/json"))
    await asyncio.sleep(0.05)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    async with asyncio.timeout(5):
        await probe.finished.wait()


async def test_no_answer_within_the_read_timeout_is_a_transport_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(asgi, "READ_TIMEOUT", 0.1)
    transport = AsgiTransport(application(Probe()), CREDS)
    with pytest.raises(TransportError):
        await transport.call("GET", "/slow", {"seconds": "5"}, None, "application/json")
    await transport.close()


async def test_closing_the_transport_ends_what_is_still_being_handled() -> None:
    transport = AsgiTransport(application(Probe()), CREDS)
    call = asyncio.create_task(transport.call("GET", "/slow", {"seconds": "30"}, None, "application/json"))
    await asyncio.sleep(0.05)
    await transport.close()
    with pytest.raises(TransportError):  # as a server closing its connections answers the client
        await call
    assert not transport.running


async def test_requests_at_once_are_bounded_as_the_http_transports_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond the pool's size they wait their turn: a process of many components once ran 250 node agents' writes
    at once and met the apiserver's in-flight limit (429) instead."""
    monkeypatch.setattr(asgi, "CONCURRENT_REQUESTS", 4)
    inside, most = 0, 0

    async def app(scope: Any, receive: Any, send: Any) -> None:
        nonlocal inside, most
        inside += 1
        most = max(most, inside)
        await asyncio.sleep(0.01)
        inside -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    transport = AsgiTransport(app, CREDS)
    answers = await asyncio.gather(*(transport.call("GET", "/", None, None, "") for _ in range(20)))
    assert [(a.status, a.body) for a in answers] == [(200, b"{}")] * 20 and most == 4


async def test_a_stream_whose_handler_is_cancelled_ends_for_its_reader() -> None:
    """The transport closed under a watch (the cluster stopping): the reader sees the stream end, not a hang."""
    transport = AsgiTransport(application(Probe()), CREDS)
    async with asyncio.timeout(5), transport.stream("/api/v1/stream", {"count": "1", "hold": "1"}) as (_, chunks):
        assert await anext(chunks)
        await transport.close()
        assert [chunk async for chunk in chunks] == []


async def test_a_429_with_retry_after_is_sent_again_as_client_go_does(monkeypatch: pytest.MonkeyPatch) -> None:
    refusals = 3
    calls = 0

    async def app(scope: Any, receive: Any, send: Any) -> None:
        nonlocal calls
        calls += 1
        status, headers = (429, [(b"retry-after", b"0")]) if calls <= refusals else (200, [])
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})

    rest = RestClient(CREDS, AsgiTransport(app, CREDS))
    assert await rest.request("POST", "/x", {}) == {} and calls == 4
    refusals, calls = 100, 0
    with pytest.raises(errors.TooManyRequests):  # client-go gives up after 10 retries
        await rest.request("POST", "/x", {})
    assert calls == 11


# ---- held against uvicorn -------------------------------------------------------------------------------------

CREDS = Credentials("https://127.0.0.1:6443", TOKEN, None)
NAMED = ResourceInfo("", "v1", "Stream", "stream", "stream", False)  # /api/v1/stream
SHARED = ResourceInfo("", "v1", "Shared", "shared", "shared", False)  # /api/v1/shared

# no segment of dots alone: aiohttp's URLs resolve them away, and no Kubernetes name may be "." or ".."
SEGMENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=12).filter(
    lambda segment: segment.strip(".") != ""
)
VALUE = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
BODY = st.binary(min_size=1, max_size=200)
# as RestClient sends them: a write always with a body (aiohttp gives a bodiless POST a content type of its own)
METHOD_AND_BODY = st.one_of(
    st.tuples(st.sampled_from(["GET", "DELETE"]), st.none()),
    st.tuples(st.sampled_from(["POST", "PUT", "PATCH", "DELETE"]), BODY),
)
REQUESTS = st.tuples(
    METHOD_AND_BODY,
    st.lists(SEGMENT, min_size=1, max_size=5).map(lambda parts: "/" + "/".join(parts)),
    st.dictionaries(st.sampled_from(["labelSelector", "fieldSelector", "limit", "continue", "dryRun"]), VALUE),
    st.sampled_from([200, 201, 404, 409, 422]),
)


@pytest.fixture
async def served() -> AsyncIterator[tuple[Starlette, Credentials]]:
    """The echo application, served by uvicorn on loopback."""
    app = application(Probe())
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", loop="none"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield app, Credentials(f"http://127.0.0.1:{port}", TOKEN, None)
    finally:
        server.should_exit = True
        await task


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=REQUESTS)
async def test_the_application_sees_what_uvicorn_would_hand_it(
    served: tuple[Starlette, Credentials], request: tuple[tuple[str, bytes | None], str, dict[str, str], int]
) -> None:
    app, creds = served
    (method, body), path, query, status = request
    query = {**query, "status": str(status)}
    over_http, in_process = HttpTransport(creds), AsgiTransport(app, creds)
    try:
        answers: list[tuple[int, Any]] = []
        for transport in (over_http, in_process):
            answer = await transport.call(method, path, query, body, "application/json")
            answers.append((answer.status, orjson.loads(answer.body)))
    finally:
        await over_http.close()
    assert answers[0] == answers[1]

"""The built-in `echoserver` image (`registry.k8s.io/echoserver:1.4`): on port 8080, every request is answered with
a plain-text description of itself, exactly as echoserver 1.4's nginx + Lua template writes it:

    CLIENT VALUES:
    client_address=10.244.1.5
    command=GET
    real path=/?a=1
    query=a=1
    request_version=1.1
    request_uri=http://10.96.0.20:8080/?a=1

    SERVER VALUES:
    server_version=nginx: 1.10.0 - lua: 10001

    HEADERS RECEIVED:
    accept=*/*
    host=10.96.0.20
    user-agent=curl/7.88.1
    BODY:
    -no body in request-

`client_address` is the TCP peer (what the source-IP tutorials look at); `query` is `nil` without a query string;
`request_uri` is built from the Host header's name (without its port) and the port the server listens on; headers
are lowercased and sorted; the body is echoed as received, with no newline after it. The image's TLS port (8443) is
not served. Its nginx flags are accepted and ignored.
"""

from __future__ import annotations

import sys

from tinykube.node.images._serve import NginxHandler, serve_until_sigterm

PORT = 8080
SERVER_VERSION = "nginx: 1.10.0 - lua: 10001"
NO_BODY = b"-no body in request-"


def http_version(request_version: str) -> str:
    """`ngx.req.http_version()` as Lua prints it: HTTP/1.1 is 1.1, HTTP/1.0 is 1."""
    number = request_version.removeprefix("HTTP/")
    return number.removesuffix(".0") if number.endswith(".0") else number


def host_name(host_header: str, fallback: str) -> str:
    """nginx's `$host`: the Host header's name, lowercased and without its port (else the server's address)."""
    if not host_header:
        return fallback
    if host_header.startswith("["):
        return host_header[: host_header.find("]") + 1].lower()
    return host_header.rsplit(":", 1)[0].lower() if host_header.count(":") == 1 else host_header.lower()


def headers_received(pairs: list[tuple[str, str]]) -> list[str]:
    """`key=value` lines sorted by lowercased key; a repeated header's values are concatenated, as `ngx.say`
    prints the table `ngx.req.get_headers()` gives for it."""
    merged: dict[str, str] = {}
    for name, value in pairs:
        merged[name.lower()] = merged.get(name.lower(), "") + value
    return [f"{name}={merged[name]}" for name in sorted(merged)]


def describe(
    *,
    client: str,
    method: str,
    target: str,
    version: str,
    host: str,
    port: int,
    headers: list[tuple[str, str]],
    body: bytes,
) -> bytes:
    """The response body for one request (pure)."""
    query = target.partition("?")[2] if "?" in target else "nil"
    lines = [
        "CLIENT VALUES:",
        f"client_address={client}",
        f"command={method}",
        f"real path={target}",
        f"query={query}",
        f"request_version={http_version(version)}",
        f"request_uri=http://{host}:{port}{target}",
        "",
        "SERVER VALUES:",
        f"server_version={SERVER_VERSION}",
        "",
        "HEADERS RECEIVED:",
        *headers_received(headers),
        "BODY:",
    ]
    return "\n".join(lines).encode() + b"\n" + (body or NO_BODY)


class Echo(NginxHandler):
    server_version = "nginx/1.10.0"

    def do_GET(self) -> None:
        local_ip, local_port = self.connection.getsockname()[:2]
        body = describe(
            client=self.client_address[0],
            method=self.command,
            target=self.path,
            version=self.request_version,
            host=host_name(self.headers.get("Host") or "", local_ip),
            port=local_port,
            headers=list(self.headers.items()),
            body=self.read_body(),
        )
        self.reply(200, body, "text/plain")

    do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET


def main(argv: list[str]) -> None:
    del argv  # nginx's flags: nothing to configure here
    serve_until_sigterm(PORT, Echo)


if __name__ == "__main__":
    main(sys.argv[1:])

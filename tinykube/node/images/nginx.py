"""The built-in `nginx` image: a static HTTP server on port 80 with a welcome page at `/` and `/index.html`, 404 for
any other path, 405 for methods other than GET and HEAD, and nginx's access log format on stdout. nginx's own
command-line flags (`-g 'daemon off;'`) are accepted and ignored."""

from __future__ import annotations

import sys
from urllib.parse import urlsplit

from tinykube.node.images._serve import NginxHandler, serve_until_sigterm

PORT = 80
VERSION = "1.27.0"
WELCOME = b"""<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>This web server is running. It is tinykube's built-in stand-in for the nginx image:
there are no images here, so it serves only this page.</p>
</body>
</html>
"""


def error_page(status: int, reason: str) -> bytes:
    title = f"{status} {reason}"
    return f"<html>\n<head><title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n</body>\n</html>\n".encode()


class Nginx(NginxHandler):
    server_version = f"nginx/{VERSION}"

    def do_GET(self) -> None:
        if urlsplit(self.path).path in ("/", "/index.html"):
            self.reply(200, WELCOME, "text/html")
        else:
            self.reply(404, error_page(404, "Not Found"), "text/html")

    do_HEAD = do_GET

    def do_POST(self) -> None:
        self.read_body()
        self.reply(405, error_page(405, "Not Allowed"), "text/html")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_POST


def main(argv: list[str]) -> None:
    del argv  # nginx's flags: nothing to configure here
    serve_until_sigterm(PORT, Nginx)


if __name__ == "__main__":
    main(sys.argv[1:])

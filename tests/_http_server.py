"""A local stand-in for the original data hosts: a threaded HTTP server on 127.0.0.1.

Files under ``root/HOST/PATH`` answer ``GET /HOST/PATH`` (the layout ``QT_HARD_MIRROR`` maps URLs
to). It honours ``Range: bytes=N-`` with 206 replies, logs every request, and can cut a reply
short once (``cut[path] = n``: send the full Content-Length, then close after n bytes), which is
how a download is interrupted in the tests. No real host is ever contacted.
"""

from __future__ import annotations

import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class LocalHosts:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.requests: list[tuple[str, str | None]] = []  # (path, Range header)
        self.cut: dict[str, int] = {}
        hosts = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_GET(self):
                path = urllib.parse.unquote(self.path.split("?", 1)[0])
                rng = self.headers.get("Range")
                hosts.requests.append((path, rng))
                file = (hosts.root / path.lstrip("/")).resolve()
                if hosts.root.resolve() not in file.parents or not file.is_file():
                    self.send_error(404)
                    return
                data = file.read_bytes()
                start = 0
                if rng and rng.startswith("bytes=") and rng.endswith("-"):
                    start = int(rng[len("bytes=") : -1])
                    if start >= len(data):
                        self.send_error(416)
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                n = hosts.cut.pop(path, None)
                if n is not None:
                    self.wfile.write(body[:n])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def put(self, url: str, data: bytes) -> Path:
        """Serve ``data`` as the file the original ``url`` names."""
        host_path = url.split("://", 1)[1]
        p = self.root / host_path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        return p

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

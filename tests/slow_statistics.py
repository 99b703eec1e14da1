"""Triton's HTTP endpoint behind a proxy that answers statistics requests late, as a busy
Triton does; everything else passes straight through.

    proxy = SlowStatisticsProxy(triton.http_address)                    # every one 2 s late
    proxy = SlowStatisticsProxy(address, delay=lambda n: 1.0 if n == 2 else 0.0)  # the 2nd only
    ... "--triton-http", proxy.address ...
    proxy.close()

`delay` holds a request back before Triton reads its counters (they are read late); `answer_delay`
holds back the answer to a request Triton has already answered (counters read at once, delivered
late, so a later request can overtake it). `proxy.read` counts the statistics Triton has answered.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import itertools
import threading
import time
from collections.abc import Callable

DELAY_S = 2.0


class SlowStatisticsProxy:
    def __init__(
        self,
        upstream: str,
        delay: Callable[[int], float] = lambda _n: DELAY_S,
        answer_delay: Callable[[int], float] = lambda _n: 0.0,
    ) -> None:
        numbers = itertools.count(1)  # the statistics requests, in order of arrival
        lock = threading.Lock()
        self.read = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                with contextlib.suppress(OSError):  # the client gave up (its timeout), or the run ended
                    self._pass_on()

            def _pass_on(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                statistics = self.path.split("?")[0].endswith("/stats")
                if statistics:
                    with lock:
                        number = next(numbers)
                    time.sleep(delay(number))
                connection = http.client.HTTPConnection(upstream, timeout=30)
                try:
                    connection.request(self.command, self.path, body or None, dict(self.headers))
                    answer = connection.getresponse()
                    data = answer.read()
                finally:
                    connection.close()
                if statistics:
                    with lock:
                        proxy.read += 1
                    time.sleep(answer_delay(number))
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _forward

            def log_message(self, *_args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = False  # close() waits for every handler, its sockets closed
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

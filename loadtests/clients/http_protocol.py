"""An HTTP/1.1 response, parsed from the bytes it is fed: no socket, clock or greenlet.

Only what a Triton inference response needs: the status code, Content-Length or chunked
framing, Triton's `Inference-Header-Content-Length`, and whether the connection stays open
(`Connection: close`, HTTP/1.0, a body that runs to the connection's end). Interim `1xx`
responses are skipped. `http_wire.read_response` is the socket loop around it: `feed` it what
was received (b"" when the server closed the connection) until it returns the response; a
large Content-Length body is read straight into the buffer `body_space` offers (`recv_into`,
then `filled`), so it is allocated once and never copied piece by piece.

    parser = ResponseParser()
    result = parser.feed(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok")
    # ((200, None, b"ok"), True): (status, Inference-Header-Content-Length, body), keep-alive
"""

from __future__ import annotations

from loadtests.clients.outcome import TimedChunks

# What the parser waits for.
HEAD, LENGTH, CHUNK_SIZE, CHUNK_DATA, TO_CLOSE = range(5)
Response = tuple[tuple[int, int | None, bytes], bool]  # (status, infer header length, body), keep-alive


class ResponseError(Exception):
    """The server's bytes are not a complete HTTP/1.1 response."""


class ConnectionClosed(ConnectionResetError):
    """The server closed the connection before the response was complete."""


CLOSED_WHERE = {
    HEAD: "before the response headers",
    LENGTH: "in the middle of the response body",
    CHUNK_SIZE: "in the middle of a chunked body",
    CHUNK_DATA: "in the middle of a chunked body",
}


class ResponseParser:
    """One response's parse. `timed` (a streamed answer, http_stream.py) gets each piece of a
    chunked body as it is parsed, with its time, and an empty piece at the body's end: what
    arrived before a failure stays there."""

    __slots__ = ("_body", "_chunk_size", "_got", "_length", "_pending", "_response", "_state", "_timed", "body_space")

    def __init__(self, timed: TimedChunks | None = None) -> None:
        # One parser per response, on every request's path: what only one framing uses is set
        # when the head says which (_head, _framed).
        self._timed = timed
        self._state = HEAD
        self._pending = b""  # received, not yet parsed (a bytearray once something is kept)
        self._response: tuple[int, int | None, bool] | None = None  # status, infer header, keep-alive
        self._length = 0  # Content-Length
        # Content-Length: where the rest of the body goes (recv_into it, then `filled`); else None.
        self.body_space: memoryview | None = None

    def feed(self, data: bytes) -> Response | None:
        """The response once `data` completes it, else None (feed more). b"": the server closed
        the connection. Raises ResponseError (malformed) or ConnectionClosed (cut short)."""
        if not data:
            return self._closed()
        state = self._state
        if state == LENGTH:
            size = min(len(data), len(self.body_space))
            self.body_space[:size] = data[:size]
            return self.filled(size)
        if self._pending:
            self._pending += data
            data = self._pending
        if state == HEAD:
            offset = self._head(data)
            if offset < 0:
                return None
            length = self._length
            if self._state == LENGTH and len(data) - offset >= length:  # the common case: all here
                status, infer_header, keep_alive = self._response
                return (status, infer_header, bytes(data[offset : offset + length])), keep_alive
            return self._framed(data, offset)
        if state == TO_CLOSE:
            return self._keep(data, 0)
        return self._chunks(data, 0)

    def filled(self, size: int) -> Response | None:
        """`size` bytes were written into `body_space` (0: the server closed the connection)."""
        if not size:
            return self._closed()
        self._got += size
        if self._got < self._length:
            self.body_space = self.body_space[size:]
            return None
        self.body_space.release()
        self.body_space = None
        status, infer_header, keep_alive = self._response
        return (status, infer_header, bytes(self._body)), keep_alive

    def _keep(self, data, offset: int) -> None:
        """Keep data[offset:] for the next feed."""
        if data is self._pending:
            del data[:offset]
        else:
            self._pending = bytearray(data[offset:])
        return None

    def _head(self, data) -> int:
        """Parse the final response's head: where its body starts, or -1 (kept) if not all here yet."""
        offset = 0
        while True:
            head_end = data.find(b"\r\n\r\n", offset)
            if head_end < 0:
                self._keep(data, offset)
                return -1
            status_line, _, header_text = bytes(data[offset:head_end]).decode("latin-1").partition("\r\n")
            try:
                status = int(status_line.split(" ", 2)[1])
            except (IndexError, ValueError):
                raise ResponseError(f"not an HTTP status line: {status_line[:80]!r}") from None
            offset = head_end + 4
            if status >= 200 or status == 101:
                break
            # An interim response (100 Continue, 103 Early Hints): the final one follows.
        content_length = infer_header = None
        chunked = False
        keep_alive = not status_line.startswith("HTTP/1.0")
        for line in header_text.split("\r\n"):
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                content_length = int(value)
            elif name == "inference-header-content-length":
                infer_header = int(value)
            elif name == "transfer-encoding":
                chunked = "chunked" in value.lower()
            elif name == "connection":
                keep_alive = value.strip().lower() != "close"
        if chunked:
            self._state, self._body, self._chunk_size = CHUNK_SIZE, bytearray(), 0
        elif content_length is not None:
            self._state = LENGTH
            self._length = content_length
        else:  # the body runs to the end of the connection
            self._state = TO_CLOSE
            keep_alive = False
        self._response = (status, infer_header, keep_alive)
        return offset

    def _framed(self, data, offset: int) -> Response | None:
        """The head is parsed; the body begins at data[offset] (a Content-Length body not all here)."""
        if self._state == LENGTH:
            available = len(data) - offset
            self._body = bytearray(self._length)
            self._body[:available] = data[offset:]
            self._got = available
            self.body_space = memoryview(self._body)[available:]
            self._pending = bytearray()
            return None
        if self._state == TO_CLOSE:
            return self._keep(data, offset)
        return self._chunks(data, offset)

    def _chunks(self, data, offset: int) -> Response | None:
        """Chunked framing: each chunk's size line, its data and CRLF; a zero size ends the body
        (trailers, if any, are not read)."""
        while True:
            if self._state == CHUNK_SIZE:
                line_end = data.find(b"\r\n", offset)
                if line_end < 0:
                    return self._keep(data, offset)
                try:
                    size = int(bytes(data[offset:line_end]).split(b";")[0], 16)
                except ValueError:
                    raise ResponseError("malformed chunk size") from None
                if size < 0:
                    raise ResponseError("malformed chunk size")
                self._chunk_size, self._state, offset = size, CHUNK_DATA, line_end + 2
            size = self._chunk_size
            if len(data) - offset < size + 2:
                return self._keep(data, offset)
            if size == 0:
                if self._timed is not None:
                    self._timed.append(b"")  # the body's end: a stream's final response
                status, infer_header, keep_alive = self._response
                return (status, infer_header, bytes(self._body)), keep_alive
            piece = bytes(data[offset : offset + size])
            if self._timed is not None:
                self._timed.append(piece)
            self._body += piece
            self._state, offset = CHUNK_SIZE, offset + size + 2

    def _closed(self) -> Response:
        if self._state != TO_CLOSE:
            raise ConnectionClosed(f"connection closed {CLOSED_WHERE[self._state]}")
        status, infer_header, _ = self._response
        return (status, infer_header, bytes(self._pending)), False

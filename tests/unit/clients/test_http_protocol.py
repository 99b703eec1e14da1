"""The HTTP/1.1 response parser (`http_protocol.ResponseParser`) fed bytes: no socket, thread or
clock. Every framing (Content-Length, chunked, to the connection's end), interim responses,
keep-alive, malformed input, and each response fed whole, split at every offset and a byte at a
time. The socket around it (deadlines, reconnects, TLS, a slow reader) is in
tests/unit/clients/test_http_wire.py."""

from __future__ import annotations

import pytest

from loadtests.clients.http_protocol import ConnectionClosed, ResponseError, ResponseParser
from loadtests.clients.outcome import TimedChunks

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nInference-Header-Content-Length: 2\r\n\r\n"
    b"4\r\n{}ab\r\n3;ext=1\r\ncde\r\n0\r\n\r\n"
)


def parse(*pieces: bytes, timed: TimedChunks | None = None):
    """Feed `pieces` in order (b"": the server closed): the response, or None if it needs more."""
    parser = ResponseParser(timed)
    result = None
    for piece in pieces:
        assert result is None, "bytes fed after the response was complete"
        result = parser.feed(piece)
    return result


def parse_through_body_space(data: bytes, read_size: int):
    """As http_wire.read_response reads: `feed` until the parser offers `body_space`, then write
    into it (`filled`), `read_size` bytes at a time."""
    parser = ResponseParser()
    offset, result = 0, None
    while result is None:
        piece = data[offset : offset + read_size]
        offset += len(piece)
        space = parser.body_space
        if space is None:
            result = parser.feed(piece)
        else:
            space[: len(piece)] = piece
            result = parser.filled(len(piece))
    return result


RESPONSES = [
    (OK, ((200, None, b"ok"), True)),
    (CHUNKED, ((200, 2, b"{}abcde"), True)),
    (
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 13\r\nConnection: close\r\n\r\n" + b'{"error":"x"}',
        ((400, None, b'{"error":"x"}'), False),
    ),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", ((200, None, b"ok"), False)),
    (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", ((200, None, b"ok"), True)),
    (b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", ((204, None, b""), True)),
    (
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + OK,
        ((200, None, b"ok"), True),
    ),
    (
        b"HTTP/1.1 200 OK\r\ncontent-length:  5\r\nINFERENCE-HEADER-CONTENT-LENGTH: 3\r\n\r\n{}\nxy",
        ((200, 3, b"{}\nxy"), True),
    ),
]


@pytest.mark.parametrize(("data", "expected"), RESPONSES)
def test_a_response_fed_whole_split_at_every_offset_and_a_byte_at_a_time(data, expected):
    assert parse(data) == expected
    for cut in range(1, len(data)):
        assert parse(data[:cut], data[cut:]) == expected, cut
    assert parse(*(data[i : i + 1] for i in range(len(data)))) == expected


@pytest.mark.parametrize("read_size", [1, 7, 64, 100_000])
def test_a_large_body_is_read_into_the_buffer_the_parser_offers(read_size):
    body = bytes(range(256)) * 40
    data = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    assert parse_through_body_space(data, read_size) == ((200, None, body), True)


def test_the_body_space_is_the_rest_of_the_body():
    parser = ResponseParser()
    assert parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc") is None
    assert len(parser.body_space) == 7
    parser.body_space[:4] = b"defg"
    assert parser.filled(4) is None and len(parser.body_space) == 3
    assert parser.feed(b"hijEXTRA") == ((200, None, b"abcdefghij"), True)  # what follows is not its body
    assert parser.body_space is None


def test_a_body_to_the_end_of_the_connection():
    head = b"HTTP/1.1 200 OK\r\nInference-Header-Content-Length: 1\r\n\r\n"
    assert parse(head + b"x", b"yz") is None
    assert parse(head + b"x", b"yz", b"") == ((200, 1, b"xyz"), False)
    assert parse(head, b"") == ((200, 1, b""), False)


def test_chunked_pieces_are_timed_as_each_is_parsed_and_the_end_is_an_empty_piece():
    timed = TimedChunks()
    head, body = CHUNKED.split(b"\r\n\r\n", 1)
    parser = ResponseParser(timed)
    assert parser.feed(head + b"\r\n\r\n" + body[:9]) is None
    assert list(timed) == [b"{}ab"]
    assert parser.feed(body[9:]) == ((200, 2, b"{}abcde"), True)
    assert list(timed) == [b"{}ab", b"cde", b""]
    assert len(timed.times) == 3 and timed.times == sorted(timed.times)


def test_a_chunk_is_given_whole_once_its_data_and_line_end_arrived():
    timed = TimedChunks()
    parser = ResponseParser(timed)
    parser.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\n01234")
    assert list(timed) == []
    parser.feed(b"56789")
    assert list(timed) == []  # not before its CRLF
    parser.feed(b"\r\n")
    assert list(timed) == [b"0123456789"]


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b"", "before the response headers"),
        (b"HTTP/1.1 200 OK\r\nContent-Len", "before the response headers"),
        (b"HTTP/1.1 100 Continue\r\n\r\n", "before the response headers"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", "in the middle of the response body"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nab", "in the middle of a chunked body"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n", "in the middle of a chunked body"),
    ],
)
def test_a_response_cut_short_is_a_closed_connection(data, where):
    with pytest.raises(ConnectionClosed, match=f"^connection closed {where}$"):
        parse(data, b"")


def test_a_chunked_body_keeps_what_arrived_before_it_was_cut():
    timed = TimedChunks()
    with pytest.raises(ConnectionClosed):
        parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n5\r\nab", b"", timed=timed)
    assert list(timed) == [b"ab"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP status line: 'SSH-2.0-OpenSSH'"),
        (b"HTTP/1.1 OK\r\n\r\n", "not an HTTP status line: 'HTTP/1.1 OK'"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n", "malformed chunk size"),
    ],
)
def test_malformed_responses_are_response_errors(data, message):
    with pytest.raises(ResponseError) as raised:
        parse(data)
    assert str(raised.value) == message


def test_a_malformed_content_length_is_a_value_error():
    # http.py counts ValueError as a bad response, as before the parser was split out.
    with pytest.raises(ValueError, match="invalid literal"):
        parse(b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n")


def test_a_status_line_split_across_the_interim_response_and_the_final_one():
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    parser = ResponseParser()
    assert parser.feed(interim + b"HTTP/1.1 2") is None
    assert parser.feed(b"00 OK\r\nContent-Length: 2\r\n\r\nok") == ((200, None, b"ok"), True)

"""Sends `GET /readyz` with many large headers over raw HTTP/1.1 or raw HTTP/2 frames (no HTTP library: curl and
the usual clients stop at their own limits first), then prints the answer's status on the first line and its body
after it; `0` and what happened when the server answered with no status (a reset stream, GOAWAY, a closed
connection).

Usage: raw_head.py HOST PORT h1|h2 COUNT SIZE   (COUNT headers `x-h<i>: <SIZE x's>`)
"""

import socket
import ssl
import struct
import sys

FRAME_SIZE = 16384
STATIC_STATUS = {8: "200", 9: "204", 10: "206", 11: "304", 12: "400", 13: "404", 14: "500"}
# RFC 7541 Appendix B, the digits only: a status is made of them.
HUFFMAN_DIGITS = {"00000": "0", "00001": "1", "00010": "2", "011001": "3", "011010": "4", "011011": "5",
                  "011100": "6", "011101": "7", "011110": "8", "011111": "9"}


def connect(host, port, protocol):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols([protocol])
    tls = context.wrap_socket(socket.create_connection((host, port), timeout=30), server_hostname=host)
    if tls.selected_alpn_protocol() != protocol:
        raise SystemExit(f"ALPN chose {tls.selected_alpn_protocol()!r}, not {protocol}")
    return tls


def send_all(tls, data):
    """Sends what the server reads; a server that answers and closes before the end is not an error here."""
    try:
        tls.sendall(data)
    except OSError as err:
        return str(err)
    return None


def http1(host, port, headers):
    tls = connect(host, port, "http/1.1")
    head = b"GET /readyz HTTP/1.1\r\nHost: " + host.encode() + b"\r\n"
    head += b"".join(name + b": " + value + b"\r\n" for name, value in headers) + b"\r\n"
    failed = send_all(tls, head)
    answer = b""
    try:
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < content_length(answer):
            chunk = tls.recv(65536)
            if not chunk:
                break
            answer += chunk
    except OSError as err:
        failed = failed or str(err)
    if not answer:
        print(f"0\nno answer: {failed}")
        return
    head, _, body = answer.partition(b"\r\n\r\n")
    print(head.split(b" ")[1].decode())
    print(body.decode(errors="replace"))


def content_length(answer):
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


def integer(value, prefix_bits, flags=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([flags | value])
    out = [flags | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def literal(name, value):
    """A literal header field without indexing, with a new name, neither string Huffman-coded."""
    return b"\x00" + integer(len(name), 7) + name + integer(len(value), 7) + value


def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def read_exactly(tls, count):
    data = b""
    while len(data) < count:
        chunk = tls.recv(count - len(data))
        if not chunk:
            raise EOFError("the server closed the connection")
        data += chunk
    return data


def read_integer(block, at, prefix_bits):
    limit = (1 << prefix_bits) - 1
    value = block[at] & limit
    at += 1
    if value < limit:
        return value, at
    shift = 0
    while True:
        byte = block[at]
        at += 1
        value += (byte & 127) << shift
        shift += 7
        if not byte & 128:
            return value, at


def status_of(block):
    """The `:status` an HPACK block starts with (servers send it first)."""
    first = block[0]
    if first & 0x80:
        return STATIC_STATUS.get(first & 0x7F, "?")
    index, at = read_integer(block, 0, 6 if first & 0x40 else 4)
    if index != 8:
        return "?"
    huffman = block[at] & 0x80
    length, at = read_integer(block, at, 7)
    raw = block[at:at + length]
    if not huffman:
        return raw.decode()
    bits, digits = "".join(f"{byte:08b}" for byte in raw), ""
    while len(bits) >= 5 and set(bits) != {"1"}:
        size = 5 if bits[:5] in HUFFMAN_DIGITS else 6
        digits += HUFFMAN_DIGITS.get(bits[:size], "?")
        bits = bits[size:]
    return digits


def http2(host, port, headers):
    tls = connect(host, port, "h2")
    fields = [(b":method", b"GET"), (b":scheme", b"https"), (b":path", b"/readyz"), (b":authority", host.encode())]
    block = b"".join(literal(name, value) for name, value in fields + headers)
    pieces = [block[at:at + FRAME_SIZE] for at in range(0, len(block), FRAME_SIZE)]
    frames = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"")
    for number, piece in enumerate(pieces):
        last = 0x4 if number == len(pieces) - 1 else 0
        frames += frame(1, 0x1 | last, 1, piece) if number == 0 else frame(9, last, 1, piece)
    failed = send_all(tls, frames)
    print_answer(*read_answer(tls, failed))


def read_answer(tls, failed=None):
    """Reads frames until stream 1's answer ends (or the stream or connection is refused): its status, its body and
    what went wrong, if anything did (`failed`: what already had)."""
    status, body = None, b""
    try:
        while True:
            header = read_exactly(tls, 9)
            length = int.from_bytes(header[:3], "big")
            kind, flags, stream = header[3], header[4], struct.unpack(">I", header[5:9])[0] & 0x7FFFFFFF
            payload = read_exactly(tls, length)
            if kind == 4 and not flags & 1:
                tls.sendall(frame(4, 1, 0, b""))
            elif kind == 1 and stream == 1:
                status = status_of(payload)
            elif kind == 0 and stream == 1:
                body += payload
            elif kind == 3 and stream == 1:
                failed = f"RST_STREAM {struct.unpack('>I', payload[:4])[0]}"
                break
            elif kind == 7:
                failed = f"GOAWAY {struct.unpack('>I', payload[4:8])[0]}"
                break
            if stream == 1 and kind in (0, 1) and flags & 1:
                break
    except (OSError, EOFError) as err:
        failed = failed or str(err)
    return status, body, failed


def print_answer(status, body, failed):
    """The status on the first line and the body after it; `0` and what happened when there was no status."""
    print(status or f"0\nno answer: {failed}")
    if status:
        print(body.decode(errors="replace"))


def main(host, port, protocol, count, size):
    headers = [(f"x-h{i}".encode(), b"x" * size) for i in range(count)]
    (http1 if protocol == "h1" else http2)(host, port, headers)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))

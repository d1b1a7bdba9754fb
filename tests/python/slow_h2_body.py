"""POSTs to PATH over raw HTTP/2 frames, sends the first byte of the body and nothing more, then prints the answer's
status on the first line and its body after it (`0` and what happened when there was no status), as
`raw_head.py` does.

Usage: slow_h2_body.py HOST PORT TOKEN PATH
"""

import struct
import sys

from raw_head import connect, frame, literal, read_exactly, status_of


def main(host, port, token, path):
    tls = connect(host, port, "h2")
    fields = [(b":method", b"POST"), (b":scheme", b"https"), (b":path", path.encode()), (b":authority", host.encode()),
              (b"authorization", f"Bearer {token}".encode()), (b"content-type", b"application/json")]
    block = b"".join(literal(name, value) for name, value in fields)
    tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + frame(1, 0x4, 1, block) + frame(0, 0, 1, b"{"))
    status, body, failed = None, b"", None
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
        failed = str(err)
    print(status or f"0\nno answer: {failed}")
    if status:
        print(body.decode(errors="replace"))


main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])

"""POSTs to PATH over raw HTTP/2 frames, sends the first byte of the body and nothing more, then prints the answer's
status on the first line and its body after it (`0` and what happened when there was no status), as
`raw_head.py` does.

Usage: slow_h2_body.py HOST PORT TOKEN PATH
"""

import sys

from raw_head import connect, frame, literal, print_answer, read_answer


def main(host, port, token, path):
    tls = connect(host, port, "h2")
    fields = [(b":method", b"POST"), (b":scheme", b"https"), (b":path", path.encode()), (b":authority", host.encode()),
              (b"authorization", f"Bearer {token}".encode()), (b"content-type", b"application/json")]
    block = b"".join(literal(name, value) for name, value in fields)
    tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + frame(1, 0x4, 1, block) + frame(0, 0, 1, b"{"))
    print_answer(*read_answer(tls))


main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])

"""Prints the SETTINGS an HTTP/2 server sends first, one `NAME=value` a line, from the raw frames (no HTTP/2
library): TLS with ALPN `h2`, the client preface and an empty SETTINGS frame, then the server's SETTINGS frame.

Usage: h2_settings.py HOST PORT
"""

import socket
import ssl
import struct
import sys

from raw_head import read_exactly

NAMES = {1: "HEADER_TABLE_SIZE", 2: "ENABLE_PUSH", 3: "MAX_CONCURRENT_STREAMS", 4: "INITIAL_WINDOW_SIZE",
         5: "MAX_FRAME_SIZE", 6: "MAX_HEADER_LIST_SIZE", 8: "ENABLE_CONNECT_PROTOCOL"}


def main(host, port):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    with socket.create_connection((host, port), timeout=10) as raw, context.wrap_socket(raw, server_hostname=host) as tls:
        if tls.selected_alpn_protocol() != "h2":
            raise SystemExit(f"ALPN chose {tls.selected_alpn_protocol()!r}, not h2")
        tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + struct.pack(">I", 0)[1:] + bytes([4, 0]) + struct.pack(">I", 0))
        while True:
            header = read_exactly(tls, 9)
            length = int.from_bytes(header[:3], "big")
            kind, flags = header[3], header[4]
            payload = read_exactly(tls, length)
            if kind == 4 and not flags & 1:
                for at in range(0, length, 6):
                    key, value = struct.unpack(">HI", payload[at:at + 6])
                    print(f"{NAMES.get(key, key)}={value}")
                return


main(sys.argv[1], int(sys.argv[2]))

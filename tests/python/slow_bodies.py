"""Opens COUNT HTTP/1.1 connections that each POST to PATH with a body of 1,000 bytes announced and sends it one
byte a second, as a slow or hostile client would. Prints `open` once every request head is sent, then, when every
request is answered (or after SECONDS), one JSON line a connection: the status, the Status' reason and message,
and the seconds from `open` to the answer (`code` 0: no answer).

Usage: slow_bodies.py HOST PORT TOKEN PATH COUNT SECONDS
"""

import json
import socket
import ssl
import sys
import time


def connect(host, port):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["http/1.1"])
    return context.wrap_socket(socket.create_connection((host, port), timeout=10), server_hostname=host)


def answer_of(data):
    """The status and Status body of a whole HTTP/1.1 answer in `data`, else None."""
    head, found, body = data.partition(b"\r\n\r\n")
    if not found:
        return None
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if len(body) < length:
        return None
    try:
        status = json.loads(body[:length])
    except ValueError:
        status = {}
    return int(head.split(b" ")[1]), status


def main(host, port, token, path, count, seconds):
    connections = []
    for _ in range(count):
        tls = connect(host, port)
        tls.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                    "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{".encode())
        tls.settimeout(0.01)
        connections.append({"tls": tls, "data": b"", "answer": None})
    print("open", flush=True)
    opened = time.monotonic()
    while time.monotonic() - opened < seconds and any(c["answer"] is None for c in connections):
        for connection in connections:
            if connection["answer"] is not None:
                continue
            try:
                chunk = connection["tls"].recv(65536)
                connection["data"] += chunk
                if not chunk:
                    connection["answer"] = (0, {"message": "closed without an answer"}, time.monotonic() - opened)
            except (socket.timeout, ssl.SSLWantReadError):
                pass
            except OSError as err:
                connection["answer"] = (0, {"message": str(err)}, time.monotonic() - opened)
            answered = answer_of(connection["data"])
            if answered:
                connection["answer"] = (*answered, time.monotonic() - opened)
            elif connection["answer"] is None:
                try:
                    connection["tls"].sendall(b" ")
                except OSError:
                    pass
        time.sleep(1)
    for connection in connections:
        code, status, after = connection["answer"] or (0, {"message": "no answer in time"}, seconds)
        print(json.dumps({"code": code, "reason": status.get("reason"), "message": status.get("message"), "after": after}))


main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))

"""Sends `GET /api` over raw HTTP/1.1 on TLS with `Authorization: Bearer <token>`, the token a JWT of the issuer
ISSUER padded to SIZE bytes (curl cannot send a header this big), and prints the answer's status on the first line
and its body after it; `0` and what happened when the server answered with no status.

Usage: huge_token.py HOST PORT ISSUER SIZE
"""

import base64
import json
import socket
import ssl
import sys


def b64(value):
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def main():
    host, port, issuer, size = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    head = b64({"alg": "RS256", "kid": "huge"})
    claims = {"iss": issuer, "sub": "huge", "aud": "kspaces", "exp": 4102444800, "pad": ""}
    bare = len(head) + len(b64(claims)) + len(".sig") + 1
    claims["pad"] = "x" * max(0, (size - bare) * 3 // 4)
    token = f"{head}.{b64(claims)}.sig"
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with context.wrap_socket(socket.create_connection((host, port), timeout=60), server_hostname=host) as tls:
        request = f"GET /api HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        answer = b""
        try:
            tls.sendall(request.encode())
            while chunk := tls.recv(65536):
                answer += chunk
        except OSError as error:
            if not answer:
                print(f"0\n{type(error).__name__}: {error}")
                return
        status_line, _, rest = answer.partition(b"\r\n")
        body = rest.partition(b"\r\n\r\n")[2].decode(errors="replace")
        print(f"{status_line.split()[1].decode()}\n{len(token)}\n{body}")


main()

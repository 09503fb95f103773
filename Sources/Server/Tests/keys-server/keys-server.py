#!/usr/bin/env python3
# A real HTTP server on loopback that serves a Google root keys document for the service tests
# (GooglePayRootKeysURLTests): GET /keys.json answers DIR/keys.json with "Cache-Control: max-age=N"
# (N from DIR/max-age, default 60), or 503 while DIR/fail exists; over TLS with CERT and KEY (PEM).
# Prints "port N" once listening.
#   keys-server.py DIR [CERT KEY]
import http.server
import os
import ssl
import sys

root = sys.argv[1]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/keys.json":
            self.send_error(404)
            return
        if os.path.exists(os.path.join(root, "fail")):
            self.send_error(503)
            return
        with open(os.path.join(root, "keys.json"), "rb") as f:
            body = f.read()
        try:
            with open(os.path.join(root, "max-age")) as f:
                max_age = f.read().strip()
        except FileNotFoundError:
            max_age = "60"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "public, max-age=" + max_age)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # one line per request on stderr, for a failing test's output
        sys.stderr.write("keys-server: " + (format % args) + "\n")


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
if len(sys.argv) == 4:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[2], sys.argv[3])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print("port", server.server_address[1], flush=True)
server.serve_forever()

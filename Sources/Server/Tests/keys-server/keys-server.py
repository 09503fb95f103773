#!/usr/bin/env python3
# A real HTTP server on loopback that serves a Google root keys document for the service tests
# (GooglePayRootKeysURLTests): GET /keys.json answers DIR/keys.json with "Cache-Control: max-age=N"
# (N from DIR/max-age, default 60), or 503 while DIR/fail exists, or 302 to the URL in DIR/redirect while it
# exists, or the head and then one byte of the body a second while DIR/trickle exists; over TLS with CERT
# and KEY (PEM).
# Prints "port N" once listening.
#   keys-server.py DIR [CERT KEY]
import http.server
import os
import ssl
import sys
import time

root = sys.argv[1]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/keys.json":
            self.send_error(404)
            return
        if os.path.exists(os.path.join(root, "fail")):
            self.send_error(503)
            return
        redirect = os.path.join(root, "redirect")
        if os.path.exists(redirect):
            with open(redirect) as f:
                location = f.read().strip()
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()
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
        if os.path.exists(os.path.join(root, "trickle")):
            self.wfile.flush()
            for byte in body:  # until the client gives up (a broken pipe ends this thread)
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(1)
            return
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

# schemathesis hooks for ci.sh: a serializer for the JSONL bodies of POST /v1/decrypt/batch, which
# schemathesis does not know how to send.
import json

import schemathesis


@schemathesis.serializer("application/jsonl", "application/x-ndjson")
def jsonl(ctx, value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        # Lone surrogates are what a broken client would send: as their raw bytes.
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, list):
        return "".join(json.dumps(item) + "\n" for item in value).encode()
    return (json.dumps(value) + "\n").encode()

# schemathesis hooks for ci.sh: a serializer for the JSONL bodies of POST /v1/decrypt/batch, which
# schemathesis does not know how to send: the text (TokenLines) as its bytes.
import schemathesis


@schemathesis.serializer("application/jsonl", "application/x-ndjson")
def jsonl(ctx, value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        # Lone surrogates are what a broken client would send: as their raw bytes.
        return value.encode("utf-8", "surrogatepass")
    # The body's schema is a string (TokenLines): a value of another type is a schema-violating one, which has
    # no JSONL form. Written as JSON lines it would be a well-formed batch (each line gets its verdict, 200), so
    # it is sent as what it is, no batch at all: an empty body, which the service refuses (400 missingBody).
    return b""

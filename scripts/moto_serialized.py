"""moto's S3 server with one request handled at a time.

moto checks `If-None-Match: *` and `If-Match` without a lock, so two racing creates of one
name can both succeed (seen in CI: two winners on 2 of 40 names, 32 writers each). Real
S3 decides each precondition atomically. This runs the same WSGI application as
`moto_server` under werkzeug's threaded server, behind one lock that covers the whole
request, response body included: connections stay concurrent, decisions are serial.

It also runs moto's clock, for tests of what happens with age (collection, the reload
rule): `POST /_slotlog/clock?advance_s=N` moves the time moto stamps on what it stores
(LastModified in listings, HEAD and GET) and the `Date` of every answer (which the driver
takes as the store's clock after a create) N seconds further ahead, for good; `GET
/_slotlog/clock` answers the offset so far. Objects already stored keep their stamps, so
after an advance they are N seconds older on the store's clock. Test-only: this server is
never anything but a test double.

usage: python moto_serialized.py HOST PORT
"""

import datetime
import email.utils
import json
import sys
import threading
import time
from urllib.parse import parse_qs

import moto.core.responses
import moto.core.utils
import moto.s3.models

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


CLOCK_PATH = "/_slotlog/clock"

# Seconds moto's clock runs ahead of this machine's; only moves forward.
clock_offset_s = 0.0
real_utcnow = moto.core.utils.utcnow


def shifted_utcnow() -> datetime.datetime:
    return real_utcnow() + datetime.timedelta(seconds=clock_offset_s)


# moto's S3 stamps objects through `utcnow` imported by name into each module.
for module in (moto.core.utils, moto.core.responses, moto.s3.models):
    module.utcnow = shifted_utcnow


class ClockedRequestHandler(MotoRequestHandler):
    """moto's handler, dating each answer on moto's clock rather than this machine's."""

    def date_time_string(self, timestamp=None):
        return email.utils.formatdate((timestamp or time.time()) + clock_offset_s, usegmt=True)


def clock(environ, start_response):
    """The clock control: advance (POST, advance_s >= 0) or read (GET) the offset."""
    global clock_offset_s
    query = parse_qs(environ.get("QUERY_STRING", ""))
    if environ["REQUEST_METHOD"] == "POST":
        try:
            advance_s = float(query["advance_s"][0])
        except (KeyError, ValueError):
            advance_s = -1.0
        if advance_s < 0:
            start_response("400 Bad Request", [("Content-Type", "text/plain")])
            return [b"advance_s: a number of seconds, at least 0\n"]
        clock_offset_s += advance_s
    body = json.dumps({"offset_s": clock_offset_s}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serialized(environ, start_response):
        with lock:
            if environ.get("PATH_INFO") == CLOCK_PATH:
                return clock(environ, start_response)
            # Drain the body inside the lock: moto may compute it lazily from its state.
            return [b"".join(app(environ, start_response))]

    run_simple(host, port, serialized, threaded=True, request_handler=ClockedRequestHandler)


if __name__ == "__main__":
    main()

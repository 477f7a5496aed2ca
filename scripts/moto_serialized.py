"""moto's S3 server with one request handled at a time.

moto checks `If-None-Match: *` and `If-Match` without a lock, so two racing creates of one
name can both succeed (seen in CI: two winners on 2 of 40 names, 32 writers each). Real
S3 decides each precondition atomically. This runs the same WSGI application as
`moto_server` under werkzeug's threaded server, behind one lock that covers the whole
request, response body included: connections stay concurrent, decisions are serial.

usage: python moto_serialized.py HOST PORT
"""

import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serialized(environ, start_response):
        with lock:
            # Drain the body inside the lock: moto may compute it lazily from its state.
            return [b"".join(app(environ, start_response))]

    run_simple(host, port, serialized, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()

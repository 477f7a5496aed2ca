#!/usr/bin/env bash
# moto's S3 server on loopback, for the real-S3 tests (conformance suite, crash test).
#
#   scripts/moto.sh start   virtualenv under target/moto-venv (made if missing), moto_server
#                           on a free loopback port, a bucket made with a SigV4-signed PUT;
#                           writes target/moto.env and prints it (SLOTLOG_MOTO_PYTHON names
#                           the virtualenv's python, for tests that start a moto of their own)
#   scripts/moto.sh install makes the virtualenv only (if missing), so it can overlap a build
#   scripts/moto.sh stop    stops the server started by `start` (by its pid file)
#   scripts/moto.sh env     prints target/moto.env
#
# Needs only python3 with venv and pip, and PyPI. moto checks S3 preconditions without a
# lock, so the server runs behind one (scripts/moto_serialized.py); the race test in
# tests/tests/cross/conformance.rs checks that no name gets two winners.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The virtualenv is shared; the server's state (env, pid, log) lives in SLOTLOG_MOTO_STATE
# (default target/), so concurrent runs (scripts/with-moto.sh gives each its own) never
# stop each other's server.
venv="$root/target/moto-venv"
state="${SLOTLOG_MOTO_STATE:-$root/target}"
env_file="$state/moto.env"
pid_file="$state/moto.pid"
log_file="$state/moto.log"
# Pinned to the series the project checked (If-None-Match creates, If-Match overwrites and
# deletes, start-after listing).
moto_spec="moto[server]==5.2.*"
bucket="${SLOTLOG_MOTO_BUCKET:-slotlog-test}"
# Fixed test credentials: moto accepts any, and signs nothing of value.
access_key="slotlog-test-key"
secret_key="slotlog-test-secret"
region="us-east-1"
wait_s_max=60

server=moto
# shellcheck source=scripts/server-lib.sh
source "$root/scripts/server-lib.sh"

install() {
    if [[ -x "$venv/bin/moto_server" ]]; then
        return
    fi
    local started=$SECONDS
    echo "moto: installing $moto_spec into $venv" >&2
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$moto_spec"
    echo "moto: installed in $((SECONDS - started)) s" >&2
}

free_port() {
    "$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
    if running; then
        echo "moto: already running (pid $(cat "$pid_file"))" >&2
        cat "$env_file"
        return
    fi
    install
    mkdir -p "$state"
    local port endpoint
    port="$(free_port)"
    endpoint="http://127.0.0.1:$port"
    # setsid: its own process group, so `stop` ends the server and nothing else.
    # moto_serialized.py: moto's application with one request at a time, so its
    # preconditions are atomic as S3's are (moto's own server checks them without a lock).
    setsid "$venv/bin/python" "$root/scripts/moto_serialized.py" 127.0.0.1 "$port" >"$log_file" 2>&1 < /dev/null &
    echo $! >"$pid_file"
    local waited=0
    until "$venv/bin/python" -c "import urllib.request, sys; urllib.request.urlopen('$endpoint/moto-api/', timeout=1)" 2>/dev/null; do
        if ! running; then
            echo "moto: server exited; log follows" >&2
            cat "$log_file" >&2
            rm -f "$pid_file"
            exit 1
        fi
        if (( waited >= wait_s_max * 4 )); then
            echo "moto: no answer on $endpoint after ${wait_s_max} s" >&2
            stop
            exit 1
        fi
        sleep 0.25
        waited=$((waited + 1))
    done
    # The bucket, through a SigV4-signed PUT (botocore comes with moto).
    "$venv/bin/python" - "$endpoint" "$bucket" "$access_key" "$secret_key" "$region" <<'PY'
import sys
import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
import urllib.request

endpoint, bucket, key, secret, region = sys.argv[1:]
request = AWSRequest(method="PUT", url=f"{endpoint}/{bucket}", data=b"")
SigV4Auth(Credentials(key, secret), "s3", region).add_auth(request)
prepared = request.prepare()
req = urllib.request.Request(prepared.url, data=b"", method="PUT", headers=dict(prepared.headers))
with urllib.request.urlopen(req, timeout=10) as response:
    if response.status != 200:
        sys.exit(f"bucket create answered {response.status}")
PY
    cat >"$env_file" <<ENV
SLOTLOG_S3_ENDPOINT=$endpoint
SLOTLOG_S3_BUCKET=$bucket
AWS_ACCESS_KEY_ID=$access_key
AWS_SECRET_ACCESS_KEY=$secret_key
AWS_REGION=$region
SLOTLOG_MOTO_PYTHON=$venv/bin/python
ENV
    echo "moto: running, pid $(cat "$pid_file"), log $log_file" >&2
    cat "$env_file"
}

case "${1:-}" in
    install) install ;;
    start) start ;;
    stop) stop ;;
    env) cat "$env_file" ;;
    *)
        echo "usage: $0 install|start|stop|env" >&2
        exit 2
        ;;
esac

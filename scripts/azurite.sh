#!/usr/bin/env bash
# Azurite's blob service on loopback, for the Azure tests (conformance suite, crash test).
#
#   scripts/azurite.sh start   Azurite under target/ci-tools/azurite (installed from npm if
#                              missing), azurite-blob on a free loopback port, in memory, the
#                              container made with a Shared Key signed PUT; writes
#                              $state/azurite.env and prints it
#   scripts/azurite.sh install installs Azurite only (if missing), so it can overlap a build
#   scripts/azurite.sh stop    stops the server started by `start` (by its pid file)
#
# Needs only Node (>= 18) with npm, and the npm registry.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$root/target/ci-tools/azurite"
bin="$prefix/node_modules/.bin/azurite-blob"
# Each run's state (env, pid, log) lives in SLOTLOG_AZURITE_STATE (default target/), so
# concurrent runs (scripts/with-azurite.sh gives each its own) never stop each other's.
state="${SLOTLOG_AZURITE_STATE:-$root/target}"
env_file="$state/azurite.env"
pid_file="$state/azurite.pid"
log_file="$state/azurite.log"
# Pinned to the version the project checked (409 on a create conflict, 412 on a stale
# If-Match, sorted listings).
azurite_spec="azurite@3.37.0"
container="${SLOTLOG_AZURITE_CONTAINER:-slotlog-test}"
# Azurite's well-known development account (published in Azure's docs; not a secret).
account="devstoreaccount1"
account_key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
wait_s_max=60

server=azurite
# shellcheck source=scripts/server-lib.sh
source "$root/scripts/server-lib.sh"

install() {
    if [[ -x "$bin" ]]; then
        return
    fi
    local started=$SECONDS
    echo "azurite: installing $azurite_spec into $prefix" >&2
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$azurite_spec" >&2
    echo "azurite: installed in $((SECONDS - started)) s" >&2
}

free_port() {
    node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# A Shared Key signed `PUT ?restype=container` (Azure's "Create Container").
make_container() {
    node - "$1" "$account" "$account_key" "$container" <<'JS'
const [endpoint, account, key, container] = process.argv.slice(2);
const crypto = require("crypto");
const http = require("http");
const date = new Date().toUTCString();
const version = "2021-08-06";
const path = `/${account}/${container}`;
// VERB, then eleven standard headers (all empty here), canonical x-ms headers, resource.
const toSign = ["PUT", "", "", "", "", "", "", "", "", "", "", "",
    `x-ms-date:${date}\nx-ms-version:${version}`,
    `/${account}${path}\nrestype:container`].join("\n");
const signature = crypto.createHmac("sha256", Buffer.from(key, "base64")).update(toSign, "utf8").digest("base64");
const url = new URL(`${endpoint}${path}?restype=container`);
const req = http.request(url, { method: "PUT", headers: {
    "x-ms-date": date, "x-ms-version": version, "Content-Length": "0",
    "Authorization": `SharedKey ${account}:${signature}`,
} }, (res) => {
    let body = "";
    res.on("data", (c) => body += c);
    res.on("end", () => {
        // 409: it exists already (a reused server).
        if (res.statusCode !== 201 && res.statusCode !== 409) {
            console.error(`container create answered ${res.statusCode}: ${body}`);
            process.exit(1);
        }
    });
});
req.on("error", (e) => { console.error(e.message); process.exit(1); });
req.end();
JS
}

start() {
    if running; then
        echo "azurite: already running (pid $(cat "$pid_file"))" >&2
        cat "$env_file"
        return
    fi
    install
    mkdir -p "$state"
    local port endpoint
    port="$(free_port)"
    endpoint="http://127.0.0.1:$port"
    # setsid: its own process group, so `stop` ends the server and nothing else. Run from
    # the state directory, so anything Azurite writes beside its in-memory data lands there.
    (cd "$state" && exec setsid "$bin" --blobHost 127.0.0.1 --blobPort "$port" \
        --inMemoryPersistence --disableTelemetry --skipApiVersionCheck --silent \
        >"$log_file" 2>&1 </dev/null) &
    echo $! >"$pid_file"
    local waited=0
    until node -e "require('net').connect($port, '127.0.0.1').on('connect', () => process.exit(0)).on('error', () => process.exit(1))" 2>/dev/null; do
        if ! running; then
            echo "azurite: server exited; log follows" >&2
            cat "$log_file" >&2
            rm -f "$pid_file"
            exit 1
        fi
        if (( waited >= wait_s_max * 4 )); then
            echo "azurite: no answer on $endpoint after ${wait_s_max} s" >&2
            stop
            exit 1
        fi
        sleep 0.25
        waited=$((waited + 1))
    done
    make_container "$endpoint"
    # object_store's emulator mode reads AZURITE_BLOB_STORAGE_URL for the endpoint and
    # uses the development account's key itself.
    cat >"$env_file" <<ENV
SLOTLOG_AZURE_CONTAINER=$container
AZURITE_BLOB_STORAGE_URL=$endpoint
AZURE_STORAGE_USE_EMULATOR=true
ENV
    echo "azurite: running, pid $(cat "$pid_file"), log $log_file" >&2
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

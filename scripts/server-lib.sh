# Sourced by scripts/moto.sh and scripts/azurite.sh, after they set `server` (its name),
# `pid_file` and `env_file`: whether the server is up, and how it stops.

running() {
    [[ -f "$pid_file" ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null
}

stop() {
    if [[ -f "$pid_file" ]]; then
        local pid
        pid="$(cat "$pid_file")"
        # The server leads its own process group (setsid at start): end that group only.
        kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 40); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.25
        done
        rm -f "$pid_file"
        echo "$server: stopped (pid $pid)" >&2
    fi
    rm -f "$env_file"
}

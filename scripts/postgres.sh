#!/usr/bin/env bash
# A throwaway PostgreSQL cluster with pgvector, for the tests and the
# benchmarks of the PostgreSQL backend.
#
#   scripts/postgres.sh install        # pgvector into the machine's PostgreSQL 15 (needs root, apt)
#   scripts/postgres.sh start [PORT]   # start a cluster on 127.0.0.1:PORT (default 54329); prints its URL
#   scripts/postgres.sh stop [PORT]
#
# Debian bookworm ships PostgreSQL 15 but no pgvector package: `install`
# builds pgvector 0.8.0 (HNSW included) from Debian trixie's source package.
# The cluster lives under /tmp (initdb must run as the `postgres` user, who
# cannot enter the checkout), trusts local connections, and is tuned for
# tests (no fsync). Safe to run again: an installed pgvector and a running
# cluster are left as they are.
set -euo pipefail

PG_VERSION=15
PG_BIN="/usr/lib/postgresql/$PG_VERSION/bin"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

as_postgres() {
    if [[ "$(id -un)" == postgres ]]; then
        "$@"
    elif command -v runuser >/dev/null; then
        runuser -u postgres -- "$@"
    else
        su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
}

install() {
    if [[ ! -x "$PG_BIN/postgres" ]]; then
        echo "PostgreSQL $PG_VERSION is not installed: apt-get install postgresql-$PG_VERSION" >&2
        exit 1
    fi
    local sharedir
    sharedir="$("$PG_BIN/pg_config" --sharedir 2>/dev/null || echo "/usr/share/postgresql/$PG_VERSION")"
    if [[ -f "$sharedir/extension/vector.control" ]]; then
        return 0
    fi
    echo "--- building pgvector for PostgreSQL $PG_VERSION" >&2
    if [[ ! -f /etc/apt/sources.list.d/mempalace-trixie-src.list ]]; then
        echo "deb-src http://deb.debian.org/debian trixie main" >/etc/apt/sources.list.d/mempalace-trixie-src.list
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "postgresql-server-dev-$PG_VERSION" dpkg-dev make gcc >/dev/null
    local build="$ROOT/target/pgvector-build"
    rm -rf "$build"
    mkdir -p "$build"
    (cd "$build" && apt-get source -qq pgvector >/dev/null 2>&1 || apt-get source pgvector)
    local source
    source="$(find "$build" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -1)"
    if [[ -z "$source" ]]; then
        echo "apt-get source pgvector gave no source tree" >&2
        exit 1
    fi
    make -s -C "$source" PG_CONFIG="$PG_BIN/pg_config" >/dev/null
    make -s -C "$source" PG_CONFIG="$PG_BIN/pg_config" install >/dev/null
    echo "pgvector installed from $(basename "$source")" >&2
}

start() {
    local port="${1:-54329}"
    local dir="/tmp/mempalace-pg-$port"
    if ! as_postgres "$PG_BIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        rm -rf "$dir"
        mkdir -p "$dir"
        chown postgres "$dir"
        as_postgres "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
        as_postgres "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 start -o \
            "-p $port -c listen_addresses=127.0.0.1 -k $dir -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=300 -c shared_buffers=256MB \
             -c maintenance_work_mem=512MB" >/dev/null
    fi
    local url="postgres://postgres@127.0.0.1:$port/mempalace_test"
    if ! "$PG_BIN/psql" -qAt "postgres://postgres@127.0.0.1:$port/postgres" \
        -c "SELECT 1 FROM pg_database WHERE datname = 'mempalace_test'" | grep -q 1; then
        "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U postgres mempalace_test
    fi
    "$PG_BIN/psql" -q "$url" -c "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
    echo "$url"
}

stop() {
    local port="${1:-54329}"
    local dir="/tmp/mempalace-pg-$port"
    if [[ -d "$dir/data" ]]; then
        as_postgres "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}

case "${1:-}" in
    install) install ;;
    start) start "${2:-}" ;;
    stop) stop "${2:-}" ;;
    *)
        echo "usage: $0 install | start [PORT] | stop [PORT]" >&2
        exit 2
        ;;
esac

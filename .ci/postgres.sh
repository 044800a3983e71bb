#!/usr/bin/env bash
# Start or stop a throwaway PostgreSQL server on 127.0.0.1 for the store tests.
#   .ci/postgres.sh start   -> prints the DSN to use (TRACKWAY_TEST_PG_DSN)
#   .ci/postgres.sh stop
set -euo pipefail
PORT="${TRACKWAY_PG_PORT:-54329}"
DATA="${TRACKWAY_PG_DATA:-/tmp/trackway-pg-$PORT}"

find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }

case "${1:-}" in
start)
  BIN="$(find_bin)"
  if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq postgresql >/dev/null
    BIN="$(find_bin)"
  fi
  as_pg "$BIN/pg_ctl -D $DATA -m immediate stop" >/dev/null 2>&1 || true
  rm -rf "$DATA" && mkdir -p "$DATA"
  [ "$(id -u)" = 0 ] && chown postgres "$DATA"
  as_pg "$BIN/initdb -D $DATA -A trust -U postgres" >/dev/null
  as_pg "$BIN/pg_ctl -D $DATA -l $DATA/server.log -w -o \"-p $PORT -k $DATA -c listen_addresses=127.0.0.1\" start" >/dev/null
  echo "postgresql://postgres@127.0.0.1:$PORT/postgres"
  ;;
stop)
  BIN="$(find_bin)"
  [ -n "$BIN" ] && as_pg "$BIN/pg_ctl -D $DATA -m fast stop" >/dev/null 2>&1 || true
  rm -rf "$DATA"
  ;;
*)
  echo "usage: $0 start|stop" >&2; exit 2 ;;
esac

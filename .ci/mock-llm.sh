#!/usr/bin/env bash
# Start or stop @dwmkerr/mock-llm, an independent OpenAI-compatible mock server, on 127.0.0.1
# for tests/agent/test_mock_llm_server.py (rules: tests/agent/mock_llm_config.yaml).
#   .ci/mock-llm.sh start   -> prints the base URL to use (TRACKWAY_TEST_MOCK_LLM_URL)
#   .ci/mock-llm.sh stop
# npm installs it into a cache directory (never globally); Node.js 18+ is needed.
set -euo pipefail
# shellcheck source=.ci/service.sh
. "$(dirname "$0")/service.sh"
VERSION="0.1.29"
PORT="${TRACKWAY_MOCK_LLM_PORT:-16556}"
CACHE="${TRACKWAY_MOCK_LLM_CACHE:-/tmp/trackway-mock-llm}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CONFIG="$ROOT/tests/agent/mock_llm_config.yaml"
PIDFILE="$CACHE/server-$PORT.pid"
LOG="$CACHE/server-$PORT.log"
URL="http://127.0.0.1:$PORT"
MAIN="$CACHE/node_modules/@dwmkerr/mock-llm/dist/main.js"

answers() { url_answers "$URL/health"; }

case "${1:-}" in
start)
  if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq >/dev/null && apt-get install -y -qq nodejs npm >/dev/null
    else
      echo "mock-llm needs Node.js 18+ and npm: install them (e.g. apt-get install nodejs npm)" >&2
      exit 1
    fi
  fi
  mkdir -p "$CACHE"
  installed="$(node -p "require('$CACHE/node_modules/@dwmkerr/mock-llm/package.json').version" 2>/dev/null || true)"
  if [ "$installed" != "$VERSION" ]; then
    npm install --prefix "$CACHE" --no-audit --no-fund --loglevel=error \
      "@dwmkerr/mock-llm@$VERSION" >&2
  fi
  stop_server  # a server this script left running: restart it with the current rules
  if answers; then
    echo "port $PORT on 127.0.0.1 is taken by another process; set TRACKWAY_MOCK_LLM_PORT" >&2
    exit 1
  fi
  # From the cache directory, so no stray ./mock-llm.yaml is picked up; stdin/stdout/stderr
  # detached, so `$(.ci/mock-llm.sh start)` returns while the server keeps running.
  (
    cd "$CACHE"
    HOST=127.0.0.1 PORT="$PORT" nohup node "$MAIN" --config "$CONFIG" </dev/null >"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
  ) </dev/null >/dev/null 2>&1
  for _ in $(seq 150); do
    if answers; then echo "$URL/v1"; exit 0; fi
    if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then break; fi
    sleep 0.2
  done
  echo "mock-llm did not answer at $URL/health; its log ($LOG):" >&2
  tail -n 40 "$LOG" >&2 || true
  stop_server
  exit 1
  ;;
stop)
  stop_server
  ;;
*)
  echo "usage: $0 start|stop" >&2; exit 2 ;;
esac

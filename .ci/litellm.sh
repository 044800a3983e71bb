#!/usr/bin/env bash
# Start or stop the litellm proxy on 127.0.0.1 in front of the llama server (.ci/llama.sh),
# for the Anthropic-format tests: it serves /v1/messages (and /v1/chat/completions) and
# forwards to llama's /v1/chat/completions. Offline: no cost map download, no telemetry.
#   .ci/litellm.sh start LLAMA_URL   -> prints the proxy's root URL (TRACKWAY_TEST_LITELLM_URL)
#   .ci/litellm.sh stop
# Its master key is TRACKWAY_TEST_LITELLM_KEY (default below); with no database, the proxy
# answers any other key with 400 "No connected db.".
set -euo pipefail
# shellcheck source=.ci/service.sh
. "$(dirname "$0")/service.sh"
# 1.107.0 was a compromised release; this one predates it.
LITELLM_VERSION="1.106.12"
PORT="${TRACKWAY_LITELLM_PORT:-18090}"
KEY="${TRACKWAY_TEST_LITELLM_KEY:-sk-trackway-test}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/trackway"
VENV="$CACHE/litellm-venv-$LITELLM_VERSION"
RUN="${TRACKWAY_LITELLM_RUN:-/tmp/trackway-litellm}"
PIDFILE="$RUN/proxy-$PORT.pid"
LOG="$RUN/proxy-$PORT.log"
URL="http://127.0.0.1:$PORT"
PY="${PY:-python3}"

answers() { url_answers "$URL/health/liveliness"; }

case "${1:-}" in
start)
  upstream="${2:?usage: $0 start LLAMA_URL (e.g. http://127.0.0.1:18080/v1)}"
  if [ ! -x "$VENV/bin/litellm" ] || [ ! -f "$VENV/.installed" ]; then
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q "litellm[proxy]==$LITELLM_VERSION" >&2
    touch "$VENV/.installed"
  fi
  mkdir -p "$RUN"
  stop_server
  if answers; then
    echo "port $PORT on 127.0.0.1 is taken by another process; set TRACKWAY_LITELLM_PORT" >&2
    exit 1
  fi
  cat >"$RUN/config.yaml" <<YAML
model_list:
  - model_name: smollm2
    litellm_params:
      model: openai/smollm2
      api_base: $upstream
      api_key: none
litellm_settings:
  use_chat_completions_url_for_anthropic_messages: true
  telemetry: false
general_settings:
  master_key: $KEY
YAML
  (
    cd "$RUN"
    LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_TELEMETRY=False \
      nohup "$VENV/bin/litellm" --config "$RUN/config.yaml" --host 127.0.0.1 --port "$PORT" \
      </dev/null >"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
  ) </dev/null >/dev/null 2>&1
  for _ in $(seq 600); do
    if answers; then echo "$URL"; exit 0; fi
    if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then break; fi
    sleep 0.2
  done
  echo "the litellm proxy did not answer at $URL/health/liveliness; its log ($LOG):" >&2
  tail -n 40 "$LOG" >&2 || true
  stop_server
  exit 1
  ;;
stop)
  stop_server
  ;;
*)
  echo "usage: $0 start LLAMA_URL | stop" >&2; exit 2 ;;
esac

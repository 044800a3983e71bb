#!/usr/bin/env bash
# Installs the reference MCP server (@modelcontextprotocol/server-everything, pinned) with npm
# into ~/.cache/trackway/npm and prints the path of its binary; the MCP tests run our client
# against it over stdio (each test starts its own server process, so nothing is left running).
# Prints nothing when npm is absent: those tests then skip and say why.
set -euo pipefail
VERSION="2026.8.31"
PREFIX="${HOME}/.cache/trackway/npm"
BIN="${PREFIX}/node_modules/.bin/mcp-server-everything"
if ! command -v npm >/dev/null 2>&1; then
    echo "npm is not installed: the tests against the reference MCP server will skip" >&2
    exit 0
fi
if [ ! -x "$BIN" ] || ! grep -q "\"version\": \"${VERSION}\"" \
        "${PREFIX}/node_modules/@modelcontextprotocol/server-everything/package.json" 2>/dev/null; then
    mkdir -p "$PREFIX"
    npm install --no-audit --no-fund --silent --prefix "$PREFIX" \
        "@modelcontextprotocol/server-everything@${VERSION}" >&2
fi
echo "$BIN"

#!/usr/bin/env bash
# Install Debian's Chromium for the trace viewer's browser tests (tests/test_viewer_browser.py,
# driven by Playwright for Python with executable_path; no browser download from a CDN).
# Prints the path of the browser to use (TRACKWAY_TEST_CHROMIUM).
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null
fi
command -v chromium

#!/usr/bin/env bash
# Install what the tests need outside PyPI (Debian's Chromium) and make sure PostgreSQL is up.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

if ! command -v chromium >/dev/null 2>&1; then
  echo "== installing Debian's chromium (browser tests)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

if command -v pg_isready >/dev/null 2>&1; then
  if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    echo "== starting PostgreSQL"
    $SUDO pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
else
  echo "== PostgreSQL client not found: PostgreSQL store tests will be skipped outside CI"
fi

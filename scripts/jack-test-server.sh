#!/usr/bin/env bash
# A private JACK server for tests, with no sound card (jackd2's dummy driver).
#
#   scripts/jack-test-server.sh start NAME [RATE] [PERIOD]   prints the server's pid once clients can connect
#   scripts/jack-test-server.sh stop PID                     SIGTERM, waits for it to end (SIGKILL after 5 s)
#
# Clients reach it with JACK_DEFAULT_SERVER=NAME. Reuse a few fixed names
# rather than a new one per run: jackd2 keeps at most 8 servers in its shared
# registry, and frees the entry of a server that was killed only when a
# server of the same name starts again. The server runs in
# synchronous mode (-S: in the default asynchronous mode a loaded 2-core
# machine misses cycles and notes land late) with a 5 s client timeout (a
# slow client is waited for, not thrown out) and no real-time scheduling.
# `jack_wait -c` exits 0 even when no server runs, so readiness is checked
# with jack_lsp; a server started right after another one stopped can fail
# with "server already active", so a failed start is retried.
set -euo pipefail
command -v jackd >/dev/null || { echo "jack-test-server: jackd is not installed (scripts/install-deps.sh installs jackd2)" >&2; exit 2; }

case "${1:-}" in
start)
  name=${2:?server name}; rate=${3:-48000}; period=${4:-128}
  log=${TMPDIR:-/tmp}/jack-test-server-$name.log
  for attempt in 1 2 3 4 5; do
    JACK_NO_AUDIO_RESERVATION=1 JACK_DEFAULT_SERVER=$name \
      jackd -n "$name" --no-realtime -S -t 5000 -d dummy -r "$rate" -p "$period" >"$log" 2>&1 </dev/null &
    pid=$!
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      if JACK_DEFAULT_SERVER=$name jack_lsp 2>/dev/null | grep -x 'system:playback_1' >/dev/null; then
        echo "$pid"
        exit 0
      fi
      sleep 0.05
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    sleep "0.$attempt"
  done
  echo "jack-test-server: jackd -n $name did not start; see $log" >&2
  exit 1
  ;;
stop)
  pid=${2:?pid}
  kill "$pid" 2>/dev/null || exit 0
  for _ in $(seq 500); do
    kill -0 "$pid" 2>/dev/null || exit 0
    sleep 0.01
  done
  kill -KILL "$pid" 2>/dev/null || true
  ;;
*)
  echo "usage: $0 start NAME [RATE] [PERIOD] | stop PID" >&2
  exit 2
  ;;
esac

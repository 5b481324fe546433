#!/usr/bin/env bash
# Runs the JACK suite (Tests/SpinetJACKTests) in a test process of its own,
# under a time limit, and once more if that run hangs.
#
# Why: libjack (jackd2 1.9.21) can be left with its global client-open mutex
# held by a thread of its own that has died (seen with gdb in CI: the
# mutex's owner no longer exists, and every later jack_client_open and
# jack_client_close in the process waits forever). It happens, rarely, in the
# tests that kill a server under a connected client. A hang is not a result:
# the suite normally takes under a minute; after LIMIT seconds its processes
# (and, through their watchdogs, their private servers) are stopped and it
# runs again, up to three runs. Three hangs, or any failure, fail the run.
#
# Arguments are passed on to `swift test` (scripts/sanitizers.sh runs the
# suite on its AddressSanitizer build this way).
set -uo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
LIMIT=${JACK_SUITE_LIMIT:-420}
for attempt in 1 2 3; do
  timeout --kill-after=15 "$LIMIT" "$SWIFT" test "$@" --filter SpinetJACKTests
  status=$?
  if [[ $status -ne 124 && $status -ne 137 ]]; then exit $status; fi
  echo "spinet: the JACK suite hung (run $attempt, stopped after ${LIMIT} s: libjack's open/close lock, see scripts/jack-suite.sh)" >&2
done
exit 1

#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Builds and runs Spinet's libFuzzer targets (Fuzz/<TARGET>/main.swift,
# compiled with the SpinetMIDI sources under -sanitize=fuzzer,address) for
# SECONDS each (default 60), one after the other. Targets (default: all):
#   MIDIFileFuzzer        the Standard MIDI File reader, the writer round trip, the schedule
#   MIDIByteParserFuzzer  the live MIDI byte parser (and that it never allocates)
#
# Limits, each a failure: a trap or sanitizer report; one input taking more
# than FUZZ_TIMEOUT seconds (default 10); one allocation above
# FUZZ_MALLOC_LIMIT_MB (default 64 -- a header that declares 2^31 events or
# a 4 GB track must not get it); a process above 2 GB resident.
#
# Seeds: Fuzz/corpus/<TARGET> (hand-made, see Fuzz/SeedGenerator), the
# regression inputs in Tests/SpinetMIDITests/Regressions/, demo/, and every
# directory in FUZZ_EXTRA_CORPUS (colon-separated, e.g. a MIDI collection:
# FUZZ_EXTRA_CORPUS=/usr/share/games/openttd/baseset/openmsx).
# Work files go to FUZZ_OUT (default .build-fuzz): the binaries, the growing
# corpus (kept between runs), logs, and crashers/<TARGET>/ -- an input that
# failed, with the command that replays it.
#
# Exits non-zero if any target failed (or did not build). Longer runs:
#   scripts/fuzz.sh 3600                    # an hour per target
#   scripts/fuzz.sh 600 MIDIByteParserFuzzer
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SECONDS_PER_TARGET=${1:-60}
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(MIDIFileFuzzer MIDIByteParserFuzzer)
OUT=${FUZZ_OUT:-$ROOT/.build-fuzz}
SWIFTC=${SWIFTC:-swiftc}
mkdir -p "$OUT"

# The Swift runtime's own crash backtracer would take over libFuzzer's crash
# handling (and can sit waiting for a long time); libFuzzer reports instead.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}

ld_flag=()
command -v "$(dirname "$(command -v "$SWIFTC")")/ld.lld" >/dev/null 2>&1 && ld_flag=(-use-ld=lld)

failed=0
summary=()
for t in "${TARGETS[@]}"; do
  src="Fuzz/$t/main.swift"
  if [[ ! -f $src ]]; then
    echo "fuzz: no target $t ($src)" >&2; failed=1; continue
  fi
  bin="$OUT/$t"
  echo "fuzz: building $t" >&2
  if ! "$SWIFTC" -sanitize=fuzzer,address -parse-as-library -swift-version 6 -O -g "${ld_flag[@]}" \
      -module-name SpinetMIDIFuzz "$src" Sources/SpinetMIDI/*.swift -o "$bin" >"$OUT/$t.build.log" 2>&1; then
    cat "$OUT/$t.build.log" >&2
    echo "fuzz: $t did not build" >&2; failed=1; summary+=("$t: did not build"); continue
  fi

  corpus="$OUT/corpus/$t"
  crashers="$OUT/crashers/$t"
  mkdir -p "$corpus" "$crashers"
  seeds=("Fuzz/corpus/$t")
  if [[ $t == MIDIFileFuzzer ]]; then
    [[ -d Tests/SpinetMIDITests/Regressions/midi-file ]] && seeds+=(Tests/SpinetMIDITests/Regressions/midi-file)
    seeds+=(demo)
    IFS=: read -r -a extra <<<"${FUZZ_EXTRA_CORPUS-}"
    for d in "${extra[@]}"; do [[ -n $d && -d $d ]] && seeds+=("$d"); done
  elif [[ $t == MIDIByteParserFuzzer && -d Tests/SpinetMIDITests/Regressions/byte-parser ]]; then
    seeds+=(Tests/SpinetMIDITests/Regressions/byte-parser)
  fi

  log="$OUT/$t.log"
  echo "fuzz: running $t for ${SECONDS_PER_TARGET}s (log: $log)" >&2
  "$bin" "$corpus" "${seeds[@]}" \
    -max_total_time="$SECONDS_PER_TARGET" -timeout="${FUZZ_TIMEOUT:-10}" \
    -malloc_limit_mb="${FUZZ_MALLOC_LIMIT_MB:-64}" -rss_limit_mb=2048 -max_len="${FUZZ_MAX_LEN:-16384}" \
    -artifact_prefix="$crashers/" -print_final_stats=1 -print_pcs=0 >"$log" 2>&1
  status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  size=$(find "$corpus" -type f | wc -l)
  if ((status != 0)); then
    failed=1
    grep -E "ERROR|Fatal error|SUMMARY|deadly signal|timeout|out-of-memory|malloc\(" "$log" | head -20 >&2
    for c in "$crashers"/*; do
      [[ -f $c ]] && echo "fuzz: $t failed on $c; replay: $bin $c" >&2
    done
    summary+=("$t: FAILED after ${runs:-?} inputs (exit $status); see $log")
  else
    summary+=("$t: ${runs:-?} inputs in ${SECONDS_PER_TARGET}s (${rate:-?}/s), no failure; corpus $size inputs")
  fi
done

for line in "${summary[@]}"; do echo "fuzz: $line"; done
if ((failed)); then
  echo "fuzz: FAILED. Once fixed, add each crasher to Tests/SpinetMIDITests/Regressions/ under a name that says what broke." >&2
fi
exit "$failed"

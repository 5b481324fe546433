#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Builds and runs Spinet's libFuzzer targets (Fuzz/<TARGET>/main.swift) for
# SECONDS each (default 60), one after the other. Targets (default: all):
#   MIDIFileFuzzer        the Standard MIDI File reader, the writer round trip, the schedule
#   MIDIByteParserFuzzer  the live MIDI byte parser (and that it never allocates)
#   PresetFileFuzzer      the JSON parser and the synth preset file reader (PresetBank)
#   ConfigFuzzer          the config file reader (SpinetConfig) and --channel/--mute specs (ChannelAssignment)
#   SoundFontFuzzer       the SoundFont preset data readers: VoiceCostModel, PresetSubset, FontFileView
#   PluginStateFuzzer     the plugins' saved state reader (PluginSettings(json:), as LV2 and CLAP restore it)
#
# How they are built: each target names the Spinet modules it uses
# (`target_modules` below). Each of those modules, with the modules it
# depends on (`module_deps`, as in Package.swift), is compiled once into
# FUZZ_OUT/modules/ as a module object (swiftc -c -wmo -emit-module
# -enable-testing) under -sanitize=fuzzer,address, and rebuilt only when its
# sources, its dependencies or the flags change. A target's main.swift
# imports them (`@testable import`) and is linked with their objects; the
# C libraries come in through the modules' own module maps.
#
# Limits, each a failure: a trap or sanitizer report; one input taking more
# than FUZZ_TIMEOUT seconds (default 10); one allocation above
# FUZZ_MALLOC_LIMIT_MB (default 64 -- a header that declares 2^31 events or
# a 4 GB track must not get it); a process above 2 GB resident.
#
# Seeds: Fuzz/corpus/<TARGET> (hand-made, see Fuzz/SeedGenerator), the
# regression inputs the suite replays (`target_seeds` below), demo/, and every
# directory in FUZZ_EXTRA_CORPUS (colon-separated, MIDIFileFuzzer only, e.g. a
# MIDI collection: FUZZ_EXTRA_CORPUS=/usr/share/games/openttd/baseset/openmsx).
# Work files go to FUZZ_OUT (default .build-fuzz): the binaries, the module
# objects, the growing corpus (kept between runs), logs, and
# crashers/<TARGET>/ -- an input that failed, with the command that replays it.
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
((${#TARGETS[@]})) || TARGETS=(MIDIFileFuzzer MIDIByteParserFuzzer PresetFileFuzzer ConfigFuzzer SoundFontFuzzer PluginStateFuzzer)
OUT=${FUZZ_OUT:-$ROOT/.build-fuzz}
SWIFTC=${SWIFTC:-swiftc}
TOOLCHAIN_BIN=$(dirname "$(command -v "$SWIFTC")")
CLANG=${CLANG:-$TOOLCHAIN_BIN/clang}
[[ -x $CLANG ]] || CLANG=clang
mkdir -p "$OUT/modules"

# The Swift runtime's own crash backtracer would take over libFuzzer's crash
# handling (and can sit waiting for a long time); libFuzzer reports instead.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}

ld_flag=()
[[ -x $TOOLCHAIN_BIN/ld.lld ]] && ld_flag=(-use-ld=lld)
SWIFT_FLAGS=(-sanitize=fuzzer,address -parse-as-library -swift-version 6 -O -g)

# The Spinet modules a target imports.
target_modules() {
  case $1 in
    MIDIFileFuzzer|MIDIByteParserFuzzer) echo SpinetMIDI ;;
    PresetFileFuzzer) echo SpinetSupport SpinetSynth ;;
    ConfigFuzzer) echo SpinetSupport SpinetSettings ;;
    SoundFontFuzzer) echo SpinetSoundFont ;;
    PluginStateFuzzer) echo SpinetSupport SpinetSoundFont SpinetPlugin ;;
  esac
}
# What each module depends on (Package.swift's graph, C shims aside: those
# come in through -I and their module maps, which name the system library).
module_deps() {
  case $1 in
    SpinetEffects) echo SpinetSupport ;;
    SpinetEngine) echo SpinetMIDI SpinetEffects ;;
    SpinetSynth) echo SpinetEngine SpinetMIDI SpinetSupport ;;
    SpinetSoundFont) echo SpinetEngine SpinetMIDI CFluidSynthRealtime ;;
    SpinetFile) echo SpinetEngine SpinetMIDI SpinetSoundFont SpinetSupport ;;
    SpinetSettings) echo SpinetSupport ;;
    SpinetHost) echo SpinetEngine SpinetMIDI ;;
    SpinetRig) echo SpinetEngine SpinetEffects SpinetMIDI SpinetSoundFont SpinetSynth SpinetFile SpinetHost SpinetSettings SpinetSupport ;;
    SpinetPlugin) echo CSpinetPlugin SpinetRig SpinetEngine SpinetEffects SpinetMIDI SpinetSoundFont SpinetSynth SpinetFile SpinetSettings SpinetSupport CFluidSynthRealtime ;;
  esac
}
# Extra seed directories (inputs the suite replays).
target_seeds() {
  case $1 in
    MIDIFileFuzzer)
      echo Tests/SpinetMIDITests/Regressions/midi-file demo
      IFS=: read -r -a extra <<<"${FUZZ_EXTRA_CORPUS-}"
      for d in "${extra[@]}"; do [[ -n $d ]] && echo "$d"; done ;;
    MIDIByteParserFuzzer) echo Tests/SpinetMIDITests/Regressions/byte-parser ;;
    PresetFileFuzzer) echo Tests/SpinetSynthTests/Regressions/presets ;;
    ConfigFuzzer) echo Tests/SpinetSoundFontTests/Regressions/config ;;
    SoundFontFuzzer) echo Tests/SpinetSoundFontTests/Regressions/soundfont ;;
  esac
}

MODULE_DIR=$OUT/modules
C_INCLUDES=(-I Sources/CFluidSynth -I Sources/CSndFile -I Sources/CEBUR128 -I "$MODULE_DIR/CFluidSynthRealtime" -I "$MODULE_DIR/CSpinetPlugin")
declare -A module_key=() module_failed=()
link_objects=()

# Builds module $1 (after its dependencies) unless it is up to date; appends
# its object, after theirs, to link_objects. Returns non-zero on failure.
build_module() {
  local m=$1 d key dep_keys=""
  [[ -z ${module_failed[$m]-} ]] || return 1
  for d in $(module_deps "$m"); do
    build_module "$d" || { module_failed[$m]=1; return 1; }
    dep_keys+="$d=${module_key[$d]} "
  done
  if [[ -n ${module_key[$m]-} ]]; then   # built earlier in this run
    [[ " ${link_objects[*]} " == *" $MODULE_DIR/$m.o "* ]] || link_objects+=("$MODULE_DIR/$m.o")
    return 0
  fi
  if [[ $m == C* ]]; then
    # A C target (Sources/C*/ with include/): its objects, and the module
    # map SwiftPM would make for it, over its headers.
    local dir=Sources/$m h
    key=$( (echo "$CLANG"; cat "$dir"/*.c "$dir"/include/*.h) | sha1sum | cut -c1-16)
    if [[ $(cat "$MODULE_DIR/$m.key" 2>/dev/null) != "$key" ]]; then
      echo "fuzz: building module $m" >&2
      mkdir -p "$MODULE_DIR/$m"
      { echo "module $m {"; for h in "$ROOT/$dir"/include/*.h; do echo "  header \"$h\""; done; echo "  export *"; echo "}"; } \
        >"$MODULE_DIR/$m/module.modulemap"
      # each C file to its own object, then one relocatable object for the module
      local c objects=()
      : >"$MODULE_DIR/$m.log"
      for c in "$dir"/*.c; do
        objects+=("$MODULE_DIR/$m/$(basename "$c" .c).o")
        if ! "$CLANG" -c -O2 -g -I "$dir/include" "$c" -o "${objects[-1]}" >>"$MODULE_DIR/$m.log" 2>&1; then
          cat "$MODULE_DIR/$m.log" >&2; module_failed[$m]=1; return 1
        fi
      done
      if ! ld -r -o "$MODULE_DIR/$m.o" "${objects[@]}" >>"$MODULE_DIR/$m.log" 2>&1; then
        cat "$MODULE_DIR/$m.log" >&2; module_failed[$m]=1; return 1
      fi
      echo "$key" >"$MODULE_DIR/$m.key"
    fi
  else
    key=$( (echo "$SWIFTC ${SWIFT_FLAGS[*]} $dep_keys"; cat Sources/"$m"/*.swift) | sha1sum | cut -c1-16)
    if [[ $(cat "$MODULE_DIR/$m.key" 2>/dev/null) != "$key" ]]; then
      echo "fuzz: building module $m" >&2
      rm -f "$MODULE_DIR/$m.key"
      if ! "$SWIFTC" "${SWIFT_FLAGS[@]}" -c -wmo -enable-testing -module-name "$m" \
          -emit-module -emit-module-path "$MODULE_DIR/$m.swiftmodule" -I "$MODULE_DIR" "${C_INCLUDES[@]}" \
          Sources/"$m"/*.swift -o "$MODULE_DIR/$m.o" >"$MODULE_DIR/$m.log" 2>&1; then
        cat "$MODULE_DIR/$m.log" >&2; module_failed[$m]=1; return 1
      fi
      echo "$key" >"$MODULE_DIR/$m.key"
    fi
  fi
  module_key[$m]=$key
  link_objects+=("$MODULE_DIR/$m.o")
}

failed=0
summary=()
for t in "${TARGETS[@]}"; do
  src="Fuzz/$t/main.swift"
  modules=$(target_modules "$t")
  if [[ ! -f $src || -z $modules ]]; then
    echo "fuzz: no target $t ($src)" >&2; failed=1; summary+=("$t: no such target"); continue
  fi
  bin="$OUT/$t"
  echo "fuzz: building $t" >&2
  link_objects=()
  built=1
  for m in $modules; do build_module "$m" || built=0; done
  if ((!built)) || ! "$SWIFTC" "${SWIFT_FLAGS[@]}" "${ld_flag[@]}" -module-name "${t}Main" \
      -I "$MODULE_DIR" "${C_INCLUDES[@]}" "$src" "${link_objects[@]}" -o "$bin" >"$OUT/$t.build.log" 2>&1; then
    cat "$OUT/$t.build.log" >&2
    echo "fuzz: $t did not build" >&2; failed=1; summary+=("$t: did not build"); continue
  fi

  corpus="$OUT/corpus/$t"
  crashers="$OUT/crashers/$t"
  mkdir -p "$corpus" "$crashers"
  seeds=("Fuzz/corpus/$t")
  for d in $(target_seeds "$t"); do [[ -d $d ]] && seeds+=("$d"); done

  dict=()
  [[ -f Fuzz/$t/fuzz.dict ]] && dict=(-dict="Fuzz/$t/fuzz.dict")

  log="$OUT/$t.log"
  echo "fuzz: running $t for ${SECONDS_PER_TARGET}s (log: $log)" >&2
  "$bin" "$corpus" "${seeds[@]}" "${dict[@]}" \
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
  echo "fuzz: FAILED. Once fixed, add each crasher to the target's regression folder (Fuzz/README.md) under a name that says what broke." >&2
fi
exit "$failed"

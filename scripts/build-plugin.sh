#!/usr/bin/env bash
# Builds one plugin format, with the same rules for both:
#   scripts/build-plugin.sh lv2    .build/plugins/spinet.lv2/ (manifest.ttl,
#                                  spinet.ttl, spinet_lv2.so, SoundFonts/) and
#                                  the headless test host .build/plugins/lv2-host
#   scripts/build-plugin.sh clap   .build/plugins/spinet.clap (+ SoundFonts/
#                                  beside it, where the plugin looks first) and
#                                  the test host .build/plugins/clap-host
#
# The library is a release build with the Swift runtime linked in
# (-static-stdlib: --static-swift-stdlib is ignored for dynamic libraries),
# in the plugins' own scratch path so that the main release build's flags
# stay as they are. Both formats are checked the same way: no Swift
# toolchain library needed at run time, nothing unresolved, exactly the
# entry point and GOMP_parallel exported (the format's .map file), and
# linked -z now (no lazy binding on the audio thread) -z nodelete (a host's
# dlclose must not unmap a library whose libgomp pool thread lives on).
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
format=${1:?usage: scripts/build-plugin.sh lv2|clap}
scratch=.build/plugin-build
out=.build/plugins
case "$format" in
  lv2)  product=spinet_lv2;  entry=lv2_descriptor ;;
  clap) product=spinet_clap; entry=clap_entry ;;
  *) echo "build-plugin: unknown format $format (lv2 or clap)" >&2; exit 2 ;;
esac

# The libraries are products only with SPINET_BUILD_PLUGINS set (Package.swift).
export SPINET_BUILD_PLUGINS=1
"$SWIFT" build -c release -Xswiftc -static-stdlib --scratch-path "$scratch" --product "$product" >&2
lib="$("$SWIFT" build -c release -Xswiftc -static-stdlib --scratch-path "$scratch" --show-bin-path)/lib$product.so"

# Every check, on the library as it is installed.
check() {
  local plugin=$1
  if ldd "$plugin" | grep -Ei 'swift|libFoundation|libdispatch|BlocksRuntime'; then
    echo "build-plugin: $plugin needs a Swift toolchain library (above)" >&2
    exit 1
  fi
  local undefined
  undefined=$(ldd -r "$plugin" 2>&1 | grep -i 'undefined symbol' || true)
  if [[ -n "$undefined" ]]; then
    echo "build-plugin: unresolved symbols in $plugin:" >&2
    echo "$undefined" | head -20 >&2
    exit 1
  fi
  local exported
  exported=$(nm -D --defined-only "$plugin" | awk '$2 ~ /^[TDBRVWi]$/ {print $3}' | sed 's/@.*//' | sort -u | tr '\n' ' ')
  if [[ "$exported" != "$(printf '%s\n' GOMP_parallel "$entry" | sort | tr '\n' ' ')" ]]; then
    echo "build-plugin: $plugin exports unexpected symbols: $exported" >&2
    exit 1
  fi
  if ! readelf -d "$plugin" | grep -q 'FLAGS_1.*NOW.*NODELETE'; then
    echo "build-plugin: $plugin is not linked with -z now -z nodelete" >&2
    exit 1
  fi
}

mkdir -p "$out"
case "$format" in
  lv2)
    bundle=$out/spinet.lv2
    rm -rf "$bundle.tmp"
    mkdir -p "$bundle.tmp/SoundFonts"
    cp Sources/SpinetLV2/bundle/manifest.ttl Sources/SpinetLV2/bundle/spinet.ttl "$bundle.tmp/"
    # Stripped of its local symbols (26 MB unstripped).
    strip --strip-unneeded -o "$bundle.tmp/spinet_lv2.so" "$lib"
    cp SoundFonts/sf_GMbank.sf2 SoundFonts/README.md "$bundle.tmp/SoundFonts/"
    check "$bundle.tmp/spinet_lv2.so"
    rm -rf "$bundle"
    mv "$bundle.tmp" "$bundle"
    cc -std=gnu11 -O2 -Wall -Wextra -o "$out/lv2-host" \
      -I Sources/SpinetLV2/include -I Tests/CRealtimeProbe/include \
      Tests/PluginHosts/lv2-host.c Tests/CRealtimeProbe/probe.c \
      $(pkg-config --cflags --libs lilv-0) -lpthread -ldl -lm
    echo "build-plugin: $bundle ($(du -h "$bundle/spinet_lv2.so" | cut -f1) library)" >&2
    ;;
  clap)
    mkdir -p "$out/SoundFonts"
    cp "$lib" "$out/spinet.clap.tmp"
    check "$out/spinet.clap.tmp"
    mv "$out/spinet.clap.tmp" "$out/spinet.clap"
    cp SoundFonts/sf_GMbank.sf2 "$out/SoundFonts/sf_GMbank.sf2.tmp"
    mv "$out/SoundFonts/sf_GMbank.sf2.tmp" "$out/SoundFonts/sf_GMbank.sf2"
    cc -std=gnu11 -O2 -Wall -Wextra -o "$out/clap-host" \
      -I Sources/CCLAP/include -I Sources/SpinetCLAP/include -I Tests/CRealtimeProbe/include \
      Tests/PluginHosts/clap-host.c Tests/CRealtimeProbe/probe.c -lpthread -ldl -lm
    echo "build-plugin: $out/spinet.clap ($(du -h "$out/spinet.clap" | cut -f1))" >&2
    ;;
esac

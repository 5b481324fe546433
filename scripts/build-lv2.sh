#!/usr/bin/env bash
# Builds the LV2 bundle .build/plugins/spinet.lv2/ (manifest.ttl, spinet.ttl,
# spinet_lv2.so, SoundFonts/sf_GMbank.sf2) and the headless test host
# .build/plugins/lv2-host (Tests/PluginHosts/lv2-host.c, on lilv).
#
# The library is a release build with the Swift runtime linked in
# (-static-stdlib: --static-swift-stdlib is ignored for dynamic libraries),
# in its own scratch path so that the main release build's flags stay as
# they are. Only lv2_descriptor and GOMP_parallel are exported
# (Sources/SpinetLV2/spinet_lv2.map).
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
scratch=.build/plugin-build
out=.build/plugins
bundle=$out/spinet.lv2

# The library is a product only with SPINET_BUILD_PLUGINS set (Package.swift).
export SPINET_BUILD_PLUGINS=1
"$SWIFT" build -c release -Xswiftc -static-stdlib --scratch-path "$scratch" --product spinet_lv2 >&2
lib="$("$SWIFT" build -c release -Xswiftc -static-stdlib --scratch-path "$scratch" --show-bin-path)/libspinet_lv2.so"

rm -rf "$bundle.tmp"
mkdir -p "$bundle.tmp/SoundFonts"
cp Sources/SpinetLV2/bundle/manifest.ttl Sources/SpinetLV2/bundle/spinet.ttl "$bundle.tmp/"
# Stripped of its local symbols (26 MB unstripped).
strip --strip-unneeded -o "$bundle.tmp/spinet_lv2.so" "$lib"
cp SoundFonts/sf_GMbank.sf2 SoundFonts/README.md "$bundle.tmp/SoundFonts/"
rm -rf "$bundle"
mv "$bundle.tmp" "$bundle"

# No library of the Swift toolchain may be needed at run time.
if ldd "$bundle/spinet_lv2.so" | grep -Ei 'swift|libFoundation|libdispatch|BlocksRuntime'; then
  echo "build-lv2: the plugin needs a Swift toolchain library (above)" >&2
  exit 1
fi
# Exactly the two symbols of spinet_lv2.map are exported.
exported=$(nm -D --defined-only "$bundle/spinet_lv2.so" | awk '$2 ~ /^[TDBVWi]$/ {print $3}' | sed 's/@.*//' | sort -u | tr '\n' ' ')
if [[ "$exported" != "GOMP_parallel lv2_descriptor " ]]; then
  echo "build-lv2: unexpected exported symbols: $exported" >&2
  exit 1
fi

# The headless host of the tests, with the real-time probe interposed.
cc -std=gnu11 -O2 -Wall -Wextra -o "$out/lv2-host" \
  -I Sources/SpinetLV2/include -I Tests/CRealtimeProbe/include \
  Tests/PluginHosts/lv2-host.c Tests/CRealtimeProbe/probe.c \
  $(pkg-config --cflags --libs lilv-0) -lpthread -ldl -lm

echo "build-lv2: $bundle ($(du -h "$bundle/spinet_lv2.so" | cut -f1) library)" >&2

#!/usr/bin/env bash
# scripts/ardour-test.sh   (run by `make ardour-test`, part of `make test`)
#
# Spinet's LV2 plugin in a DAW nobody here wrote: Ardour 7 (Debian's
# `ardour`), headless, on its "None (Dummy)" backend, in a private HOME and
# LV2_PATH. It installs `ardour` if missing (a line says so, and the test
# is skipped, when it cannot be installed: a mirror outage must not fail
# the other tests), then:
#   1. creates a session (ardour7-lua, scripts/ardour-test/create.lua): a
#      MIDI track with Spinet as its instrument, gain -6 dB and reverb 0.25
#      set through Ardour, holding one MIDI region with the test's music.
#      Headless Lua cannot create a MIDI source itself (no SourceFactory, no
#      import), but a track's bounce makes one: the track, switched off,
#      gets an event processor (scripts/ardour-test/events.lua: the
#      controller and program events at their samples), is bounced into a
#      region, and the region goes into its playlist; the notes are written
#      into the region with Ardour's MIDI model API (a note diff command).
#      The test checks the region's notes as Ardour reads them back;
#   2. bounces it with ardour7-export and checks (scripts/ardour-test/check.py)
#      that it sounds, that it is the project's own LV2 host's render of the
#      events each handed to Spinet its latency (72 frames) early, which is
#      Ardour's latency compensation, and every note's onset in the bounce:
#      a synth note's at its frame, a SoundFont note's on the 64-frame grid
#      of the plugin's time (8 frames late for these notes: the latency is
#      not a multiple of 64), the same frame as in the host's render; and
#      that the music ends;
#   3. checks the saved state holds Ardour's parameter values;
#   4. moves the font away (and gives channel 4 to Spinet's synth in the
#      saved state), reopens the session and checks that Spinet logged the
#      missing path, played the default font and kept every other setting;
#   5. checks the program and key names Ardour read from Spinet (its midnam
#      extension): Ardour's Lua cannot reach them, so both ardour7-lua runs
#      have scripts/ardour-test/midnam-spy.c preloaded, which records the
#      MIDNAM documents Ardour takes (scripts/ardour-test/midnam.py looks the
#      test's programs and a drum key up in them, as Ardour does).
# Prints the time it takes, the install apart.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PLUGINS=${SPINET_PLUGIN_DIR:-$ROOT/.build/plugins}
here=$ROOT/scripts/ardour-test

t0=$SECONDS
if ! command -v ardour7-lua >/dev/null || ! command -v ardour7-export >/dev/null; then
  if ! scripts/install-deps.sh ardour >/dev/null 2>&1 || ! command -v ardour7-lua >/dev/null; then
    echo "ardour-test: SKIPPED: Debian's ardour could not be installed here (apt-get install ardour failed); Spinet's Ardour test did not run"
    exit 0
  fi
  echo "ardour-test: installed ardour in $((SECONDS - t0)) s"
fi
[[ -f $PLUGINS/spinet.lv2/spinet_lv2.so && -x $PLUGINS/lv2-host ]] || { echo "ardour-test: no built plugin in $PLUGINS (make plugins-lv2)" >&2; exit 2; }
t1=$SECONDS

work=$(mktemp -d /tmp/spinet-ardour.XXXXXX)
[[ -n ${SPINET_ARDOUR_KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
export HOME=$work/home
mkdir -p "$HOME/.lv2" "$HOME/.config/ardour7/scripts"
# a copy of the bundle: the test moves its font later
cp -r "$PLUGINS/spinet.lv2" "$HOME/.lv2/spinet.lv2"
export LV2_PATH=$HOME/.lv2:/usr/lib/lv2
export SESSION_DIR=$work/session SESSION_NAME=spinet-test
fail=0

# The music (48 kHz frames; decimal bytes): channel 1 on Spinet's synth
# (Bank Select 126), channel 2 on Strings (program 48), drums on channel 10.
events="2400 176 0 126
2400 192 0 0
2400 193 48 0
9600 144 69 100
14400 145 60 100
19200 128 69 0
24000 153 38 110
28800 137 38 0
33600 144 72 100
43200 129 60 0
48000 128 72 0"
music_end=48000 frames=144000
# the event processor bounced into the region gets all but the notes
awk '$2 < 128 || $2 >= 160' <<<"$events" | sed -e "/@EVENTS@/{r /dev/stdin" -e "d}" "$here/events.lua" > "$HOME/.config/ardour7/scripts/spinet_test_events.lua"

cc -std=gnu11 -O2 -Wall -Wextra -shared -fPIC -o "$work/midnam-spy.so" "$here/midnam-spy.c" -ldl \
  || { echo "ardour-test: FAIL cannot build midnam-spy.c"; exit 1; }
spy() { SPINET_MIDNAM_SPY=$1 LD_PRELOAD=$work/midnam-spy.so "${@:2}"; }

log=$work/create.log
EVENTS=$events FRAMES=$frames spy "$work/midnam-create.log" timeout -k 10 300 ardour7-lua "$here/create.lua" > "$log" 2>&1
grep '^ardour-test:' "$log"
grep -q '^ardour-test: listed Spinet creator The Spinet developers' "$log" \
  && echo "ardour-test: ok   Ardour lists Spinet with its creator" \
  || { echo "ardour-test: FAIL Ardour lists Spinet with its creator"; fail=1; }
[[ -f $SESSION_DIR/$SESSION_NAME.ardour ]] || { echo "ardour-test: FAIL the session was not created:"; cat "$log"; exit 1; }
# the region's notes as Ardour's model reads them back: channel, key,
# velocity and frame of each note-on
expected_notes=$(awk '$2 >= 144 && $2 < 160 && $4 > 0 {print $2 - 143, $3, $4, $1}' <<<"$events")
region_notes=$(awk '$2 == "region" && $3 == "note" {print $4, $5, $6, $8}' "$log")
if [[ -n $region_notes && $region_notes == "$expected_notes" ]] && grep -q '^ardour-test: region .* regions in the playlist 1$' "$log"; then
  echo "ardour-test: ok   the track holds a MIDI region with the test's $(wc -l <<<"$region_notes") notes, at their frames"
else
  echo "ardour-test: FAIL the track's MIDI region holds the test's notes:"; echo "$region_notes"; fail=1
fi

# The session range (headless Lua has no Location constructor): 0 to 3 s,
# in Ardour 7's superclock (282240000 per second).
python3 - "$SESSION_DIR/$SESSION_NAME.ardour" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
loc = '<Location id="990001" name="session" start="a0" end="a846720000" flags="IsSessionRange" locked="0" timestamp="0" cue="0"/>'
s = s.replace("<Locations/>", "<Locations>\n    " + loc + "\n  </Locations>", 1)
open(p, "w").write(s)
PY

# 2. the bounce, against the project's own host. Ardour compensates
# Spinet's latency by handing each event to it that many frames before its
# frame: the host plays the events so (the latency is the one Ardour reports).
# ardour7-export itself dies now and then: about 1 export in 30 here (1 in 5
# under gdb), glibc reports heap corruption in Ardour's export teardown
# (PortExportChannel, ExportGraphBuilder, AudioGrapher's Limiter), and
# under AddressSanitizer its butler deadlocked in start_audio_export in 5
# exports of 60. valgrind (5 runs) and a sanitized build of the plugin found
# no bad access by Spinet; the cause is not found (docs/testing.md). So an export
# that dies by a signal or hangs (5 minutes) is tried once more, saying so;
# a second one fails the test.
export_session() {
  timeout -k 10 300 ardour7-export -b float -o "$work/ardour.wav" "$SESSION_DIR" "$SESSION_NAME" > "$work/export.log" 2>&1
}
export_session; rc=$?
if (( rc == 124 || rc > 128 )); then
  echo "ardour-test: ardour7-export $( ((rc == 124)) && echo "hung" || echo "died by signal $((rc - 128))"): $(grep -v '^\*' "$work/export.log" | grep -m1 . | cut -c1-200); once more"
  export_session; rc=$?
fi
(( rc == 0 )) || { echo "ardour-test: FAIL ardour7-export (exit $rc):"; cat "$work/export.log"; exit 1; }
latency=$(awk '$1 == "ardour-test:" && $2 == "latency:" {print $4}' "$log")
[[ $latency =~ ^[0-9]+$ ]] || { echo "ardour-test: FAIL Ardour reported no latency for Spinet:"; cat "$log"; exit 1; }
python3 "$here/check.py" "$work/ardour.wav" "$latency" "$music_end" "$PLUGINS/lv2-host" "$PLUGINS/spinet.lv2" "$work" \
  --param gain=-6 --param reverb=0.25 <<<"$events" || fail=1

# 3. the state holds Ardour's parameter values
state=$(ls -d "$SESSION_DIR"/plugins/*/state* 2>/dev/null | tail -1)
if [[ -n $state ]] && grep -q '"gain": -6,' "$state/state.ttl" && grep -q '"reverb": 0.25,' "$state/state.ttl"; then
  echo "ardour-test: ok   the saved state holds Ardour's values (gain -6, reverb 0.25)"
else
  echo "ardour-test: FAIL the saved state holds Ardour's values:"; grep -h parameters "$state/state.ttl"; fail=1
fi

# 4. the font moves; the state also gives channel 4 to the synth
saved_font=$(sed -n 's/.*"soundfont": "\(.*\)",/\1/p' "$state/state.ttl")
sed -i 's/"channels": \[\]/"channels": ["4=synth"]/' "$state/state.ttl"
mv "$HOME/.lv2/spinet.lv2/SoundFonts/sf_GMbank.sf2" "$HOME/.lv2/spinet.lv2/SoundFonts/moved.sf2"
rm -f "$SESSION_DIR"/externals/*/sf_GMbank.sf2 2>/dev/null
spy "$work/midnam-reopen.log" timeout -k 10 300 ardour7-lua "$here/reopen.lua" > "$work/reopen.log" 2>&1
grep '^ardour-test:' "$work/reopen.log"
if grep -q "$saved_font" "$work/reopen.log" && grep -q "other settings are restored" "$work/reopen.log"; then
  echo "ardour-test: ok   the host's log names the missing font: $(grep -m1 'not found' "$work/reopen.log" | cut -c1-300)"
else
  echo "ardour-test: FAIL the host's log names the missing font:"; cat "$work/reopen.log"; fail=1
fi
state2=$(ls -d "$SESSION_DIR"/plugins/*/state* | tail -1)
if grep -q '"channels": \["4=synth"\]' "$state2/state.ttl" && grep -q '"gain": -6,' "$state2/state.ttl" && ! grep -q "\"soundfont\": \"$saved_font\"" "$state2/state.ttl"; then
  echo "ardour-test: ok   after the move: channels, parameters kept; the font now $(sed -n 's/.*"soundfont": "\(.*\)",/\1/p' "$state2/state.ttl")"
else
  echo "ardour-test: FAIL after the move, the other settings survive:"; cat "$state2/state.ttl"; fail=1
fi

# 5. the names Ardour read from Spinet: the test's programs and a drum key,
# with the bundled font (a new instance) and with the default font (the
# reopened session's, whose font moved away)
names=(1 126/0 0 organ 2 0/0 48 Strings 10 1/0 0 38 "Acoustic Snare")
python3 "$here/midnam.py" "$work/midnam-create.log" "the new instance" "${names[@]}" || fail=1
python3 "$here/midnam.py" "$work/midnam-reopen.log" "the reopened session" "${names[@]}" || fail=1

echo "ardour-test: the test took $((SECONDS - t1)) s (the install apart)"
exit $fail

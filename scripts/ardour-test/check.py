#!/usr/bin/env python3
"""Checks Ardour's bounce of Spinet's test session against the project's own
LV2 host (scripts/ardour-test.sh). Standard library only.

  check.py EXPORT.wav LATENCY MUSIC_END LV2_HOST BUNDLE WORKDIR [HOST_ARG...] < EVENTS

EVENTS: the session's music, "FRAME STATUS DATA1 DATA2" a line (decimal).
Ardour compensates Spinet's latency (LATENCY frames, the limiter's
look-ahead) by handing it each event LATENCY frames before its frame, so
that what it plays sounds at the event's frame. The host (LV2_HOST with the
BUNDLE and HOST_ARGs) renders the events so, in blocks of 8192 frames, and
once more without each note in turn, which finds each note's onset in
either render (the first frame where the render departs from the one
without the note). Prints the figures; exits 1 when a check fails."""
import math
import os
import struct
import subprocess
import sys

BLOCK = 8192
GRID = 64              # FluidSynth's frames per control block: a SoundFont note starts on it
ONSET_THRESHOLD = 1e-6  # -99 dB below the music's peak
RESIDUAL_BOUND_DB = -80.0


def read_wav(path):
    data = open(path, "rb").read()
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE", path
    pos, fmt, samples = 12, None, None
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = data[pos + 8:pos + 8 + size]
        if cid == b"fmt ":
            tag, channels, rate = struct.unpack("<HHI", body[:8])
            bits = struct.unpack("<H", body[14:16])[0]
            if tag == 0xFFFE:
                tag = struct.unpack("<H", body[24:26])[0]
            fmt = (tag, channels, rate, bits)
        elif cid == b"data":
            samples = body
        pos += 8 + size + (size & 1)
    tag, channels, rate, bits = fmt
    assert tag == 3 and bits == 32, f"{path}: not 32-bit float ({fmt})"
    values = struct.unpack(f"<{len(samples) // 4}f", samples)
    return [values[c::channels] for c in range(channels)], rate


def db(v):
    return -math.inf if v == 0 else 20 * math.log10(v)


def synth_channels(events):
    """Yields (index, event, the channels on Spinet's synth before it): a
    channel is on the synth after Bank Select 126 and a program change."""
    bank, synth = {}, set()
    for k, e in enumerate(events):
        yield k, e, set(synth)
        status, d1, d2 = e[1], e[2], e[3]
        channel = status & 0x0F
        if status & 0xF0 == 0xB0 and d1 == 0:
            bank[channel] = d2
        elif status & 0xF0 == 0xC0:
            (synth.add if bank.get(channel) == 126 else synth.discard)(channel)


def first_synth_note_off(events):
    return next((e[0] for _, e, synth in synth_channels(events)
                 if e[1] & 0x0F in synth and (e[1] & 0xF0 == 0x80 or (e[1] & 0xF0 == 0x90 and e[3] == 0))), None)


def main():
    export_path, latency, music_end, host, bundle, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
    host_args = sys.argv[7:]
    events = [tuple(int(v) for v in line.split()) for line in sys.stdin if line.strip()]
    (el, er), rate = read_wav(export_path)
    failed = False

    def check(ok, what):
        nonlocal failed
        print(f"ardour-test: {'ok  ' if ok else 'FAIL'} {what}")
        failed |= not ok

    def render(name, evs):
        path = os.path.join(work, name)
        with open(path + ".events", "w") as f:
            for frame, a, b, c in evs:
                f.write(f"{frame - latency} {a:02x} {b:02x} {c:02x}\n")
        out = subprocess.run([host, "--bundle", bundle, "--block", str(BLOCK), "--frames", str(len(el) + BLOCK),
                              "--events", path + ".events", "--out", path + ".wav"] + host_args,
                             check=True, capture_output=True, text=True).stdout
        if f"instance1 latency {latency}\n" not in out:
            sys.exit(f"ardour-test: FAIL the host reports another latency than Ardour's {latency}:\n{out}")
        return read_wav(path + ".wav")[0]

    peak = max(max(abs(v) for v in el), max(abs(v) for v in er))
    check(peak > 0.01, f"Ardour's bounce sounds (peak {db(peak):.1f} dBFS, {len(el)} frames at {rate} Hz)")

    # The same music at the same frames: the bounce is the host's render,
    # bit for bit until the first note-off on Spinet's synth. After it, the
    # bytes differ a little (RESIDUAL_BOUND_DB): the synth's 16-frame control
    # blocks start again at each process call, so its release ramps follow
    # the host's calls, which are Ardour's there and fixed blocks here (the
    # same sound, not the same bytes: docs/daw.md).
    hl, hr = render("host", events)
    n = min(len(el), len(hl))
    synth_off = first_synth_note_off(events)

    def residual(shift):   # against the host's render `shift` frames later
        return max(max(abs(el[i] - hl[i - shift]) for i in range(shift, n)), max(abs(er[i] - hr[i - shift]) for i in range(shift, n)))

    exact_to = next((i for i in range(n) if el[i] != hl[i] or er[i] != hr[i]), n)
    diff, late = residual(0), residual(1)
    check(exact_to >= synth_off and db(diff / peak) < RESIDUAL_BOUND_DB,
          f"the bounce is the project's LV2 host's render at the same frames: bit for bit to frame {exact_to} "
          f"(the first synth note-off: {synth_off}), then a residual of {db(diff / peak):.1f} dB (bound {RESIDUAL_BOUND_DB:.0f} dB; "
          f"against the host's render one frame later: {db(late / peak):.1f} dB)")

    # Each note's onset. A channel is on Spinet's synth after Bank Select 126
    # and a program change (its notes start on their frame), else on the
    # SoundFont (its notes start on the 64-frame grid of the plugin's own
    # time, which runs LATENCY frames ahead of the session's).
    for k, (frame, status, d1, d2), synth in synth_channels(events):
        channel = status & 0x0F
        if status & 0xF0 == 0x90 and d2 > 0:
            off = next(j for j in range(k + 1, len(events))
                       if events[j][2] == d1 and (events[j][1] == status - 0x10 or (events[j][1] == status and events[j][3] == 0)))
            if channel in synth:
                expected, kind = frame, "synth"
            else:
                expected, kind = round((frame - latency) / GRID) * GRID + latency, "SoundFont"
            without = [e for j, e in enumerate(events) if j not in (k, off)]
            wl, _ = render(f"without{k}", without)

            def onset(x, threshold):
                return next((i for i in range(max(0, frame - 4 * GRID), n) if abs(x[i] - wl[i]) > threshold), None)

            def first_sound(x):
                return next(i for i in range(n) if x[i] != 0)

            # Where the note starts: alone in the host, at its frame, and
            # with its event on the expected frame itself (a SoundFont
            # sample may begin with silent frames: its lead-in). In the mix
            # a note's first tiny samples vanish in the float sum with
            # what else sounds, so the onsets in the mix are compared where
            # the note's contribution first exceeds ONSET_THRESHOLD: the
            # same frame in Ardour's bounce as in the host's render.
            others = [e for e in events if e[1] & 0xF0 not in (0x80, 0x90)]
            alone = first_sound(render(f"alone{k}", others + [events[k], events[off]])[0])
            on_grid = alone if expected == frame else \
                first_sound(render(f"grid{k}", others + [(expected,) + events[k][1:], events[off]])[0])
            hosts, ours = onset(hl, ONSET_THRESHOLD), onset(el, ONSET_THRESHOLD)
            grid = "" if expected == frame else f", {expected - frame:+d}: the grid"
            check(alone == on_grid and ours == hosts and ours is not None,
                  f"channel {channel + 1} note {d1} ({kind}) at frame {frame}: starts at {expected}{grid} "
                  f"(first sample at {alone}, {alone - expected} in, as with its event at {expected}); "
                  f"over {db(ONSET_THRESHOLD / peak):.0f} dB in the mix at {ours} in Ardour's bounce, {hosts} in the host's render")

    tail = max(abs(v) for v in el[music_end + rate * 3 // 2:])
    check(tail < peak * 0.01, f"the music ends: 1.5 s after the last note-off the level is {db(tail / peak):.1f} dB below the peak")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Capture checker for Spinet's system tests (python3 standard library only).

Subcommands (all print one line and exit 0 on success, 1 on failure):
  midi OUT.mid SPEC [--program P] [--pan P]
                                      write a Standard MIDI File (channel 1); SPEC is
                                      "start_ms:key:dur_ms[:vel],..." (1 tick = 1 ms)
  notes CAPTURE --expect "ms:key,..." [--reference REF.wav] [--tolerance-ms T] [--deviations]
        [--channel left|right]        (the channels mixed unless one is named)
                                      every note sounds once, in order, at its pitch
                                      (key -1: any), and the onsets keep the spacing
                                      of the file (or of REF, the same file rendered
                                      offline) +-T ms (ms -1: a note not timed, e.g.
                                      a keyboard's among a file's: the spacing runs
                                      from the timed note before it);
                                      --deviations lists each onset's offset
  level CAPTURE --from S --to S (--above DB | --below DB)
                                      the peak level in a time window
  fade CAPTURE                        the sound ends in a fade, not a step (no click)
  wav FILE --min-seconds S            FILE is a complete, readable WAV with sound
  continuous CAPTURE --seconds S      the first note sounds S seconds without a break
  gaps CAPTURE [--min-gaps N] [--max-gap-ms M] [--resume-seconds S]
                                      the silent gaps between the first and the last
                                      sound: at least N, none longer than M ms, and
                                      the sound after the last one lasts S seconds
  latency-run DIR --midi DEV --count N --interval S
                                      (in the guest) sends N notes to a raw MIDI
                                      device while capturing the loopback, stamping
                                      both with CLOCK_MONOTONIC
  latency DIR --period-ms P           note-to-sound latency and its jitter from a
                                      latency-run directory
CAPTURE is raw interleaved FLOAT_LE stereo (arecord -t raw -f FLOAT_LE),
or a .wav file (16/24/32-bit PCM). Raw captures are at $SPINET_TEST_RATE Hz (48000).
"""
import argparse
import math
import os
import struct
import subprocess
import sys
import threading
import time
import wave

RATE = int(os.environ.get("SPINET_TEST_RATE", "48000"))   # of raw captures


# --- reading ---------------------------------------------------------------
def read_capture(path, channel=None):
    """(mono float samples ((L+R)/2, or the left (channel 0) or right (1)
    alone), sample rate) of a raw FLOAT_LE stereo file at RATE, or of a WAV
    file at its own rate."""
    if path.endswith(".wav"):
        with wave.open(path, "rb") as w:
            ch, width, n, rate = w.getnchannels(), w.getsampwidth(), w.getnframes(), w.getframerate()
            data = w.readframes(n)
        if width == 2:
            vals = struct.unpack("<%dh" % (len(data) // 2), data)
            scale = 32768.0
        elif width == 3:
            vals = [int.from_bytes(data[i:i + 3], "little", signed=True) for i in range(0, len(data), 3)]
            scale = 8388608.0
        else:
            vals = struct.unpack("<%di" % (len(data) // 4), data)
            scale = 2147483648.0
        if channel is not None:
            return [vals[i + channel] / scale for i in range(0, len(vals), ch)], rate
        return [sum(vals[i:i + ch]) / (ch * scale) for i in range(0, len(vals), ch)], rate
    with open(path, "rb") as f:
        data = f.read()
    n = len(data) // 8
    vals = struct.unpack("<%df" % (2 * n), data[:8 * n])
    if channel is not None:
        return list(vals[channel::2]), RATE
    return [(vals[2 * i] + vals[2 * i + 1]) * 0.5 for i in range(n)], RATE


def db(x):
    return 20 * math.log10(x) if x > 0 else -999.0


# --- analysis ---------------------------------------------------------------
def block_peaks(x, block):
    return [max((abs(v) for v in x[i:i + block]), default=0.0) for i in range(0, len(x), block)]


def onsets(x, rate, threshold=0.004, rise=4.0, refractory_ms=120):
    """Sample indices where a note starts: within 30 ms the level of 1 ms
    blocks climbs above `threshold` and `rise` times the loudest of the 30
    blocks before; the exact sample is the first one above 10% of the peak of
    the next 20 ms."""
    block = rate // 1000
    peaks = block_peaks(x, block)
    found = []
    last = -10 ** 9
    for b in range(len(peaks)):
        if b - last <= refractory_ms or peaks[b] <= threshold / 2:
            continue
        before = max(peaks[max(0, b - 30):max(0, b - 1)], default=0.0)
        if peaks[b] <= 1.5 * before:
            continue
        ahead = max(peaks[b:b + 30])       # organ pipes take longer to speak than hammers
        if ahead > threshold and ahead > rise * before:
            last = b
            ahead20 = max(peaks[b:b + 20])
            start = max(0, (b - 2) * block)
            idx = next((i for i in range(start, min(len(x), (b + 20) * block)) if abs(x[i]) > 0.1 * ahead20), b * block)
            found.append(idx)
    return found


def goertzel_power(x, freq, rate):
    w = 2 * math.pi * freq / rate
    c = 2 * math.cos(w)
    s1 = s2 = 0.0
    for v in x:
        s0 = v + c * s1 - s2
        s2, s1 = s1, s0
    return s1 * s1 + s2 * s2 - c * s1 * s2


def pitch(x, start, rate, lo=40, hi=100):
    """The MIDI key whose harmonic series best explains 170 ms of sound
    starting 30 ms after `start` (2:1 decimated, Hann window)."""
    a = start + int(0.03 * rate)
    seg = x[a:a + int(0.17 * rate):2]
    r = rate / 2
    n = len(seg)
    if n < 512:
        return None
    win = [seg[i] * (0.5 - 0.5 * math.cos(2 * math.pi * i / (n - 1))) for i in range(n)]
    f = lambda k: 440.0 * 2 ** ((k - 69) / 12.0)
    p1 = {k: goertzel_power(win, f(k), r) for k in range(lo, hi + 1)}
    strongest = max(p1.values())
    best, best_score = None, -1.0
    for k in range(lo, hi + 1):
        if p1[k] < 0.02 * strongest:      # a fundamental must be present
            continue
        score = p1[k]
        for h in (2, 3):
            if f(k) * h < r / 2:
                score += goertzel_power(win, f(k) * h, r) / h
        if score > best_score:
            best, best_score = k, score
    return best


def spec_list(s):
    out = []
    for item in s.split(","):
        parts = [int(p) for p in item.split(":")]
        out.append(parts)
    return out


# --- subcommands --------------------------------------------------------------
def cmd_midi(a):
    notes = spec_list(a.spec)
    events = []   # (tick, order, bytes)
    if a.program is not None:
        events.append((0, 0, bytes([0xC0, a.program])))
    if a.pan is not None:
        events.append((0, 0, bytes([0xB0, 10, a.pan])))
    for n in notes:
        start, key, dur = n[0], n[1], n[2]
        vel = n[3] if len(n) > 3 else 100
        events.append((start, 2, bytes([0x90, key, vel])))
        events.append((start + dur, 1, bytes([0x80, key, 0])))
    events.sort()
    track = bytearray(b"\x00\xff\x51\x03\x0f\x42\x40")   # tempo 1 s per quarter
    now = 0
    for tick, _, data in events:
        d = tick - now
        now = tick
        vlq = [d & 0x7F]
        d >>= 7
        while d:
            vlq.insert(0, (d & 0x7F) | 0x80)
            d >>= 7
        track += bytes(vlq) + data
    track += b"\x00\xff\x2f\x00"
    with open(a.out, "wb") as f:
        f.write(b"MThd" + struct.pack(">IHHH", 6, 0, 1, 1000))   # 1000 ticks per quarter = 1 ms
        f.write(b"MTrk" + struct.pack(">I", len(track)) + track)
    return True, "wrote %s (%d notes)" % (a.out, len(notes))


def cmd_notes(a):
    x, rate = read_capture(a.capture, {"left": 0, "right": 1}.get(a.channel))
    expect = spec_list(a.expect)
    got = onsets(x, rate)
    if len(got) != len(expect):
        times = ", ".join("%.3f" % (i / rate) for i in got)
        return False, "expected %d notes, heard %d (onsets at %s s)" % (len(expect), len(got), times)
    # Where each note's sound starts depends on its sample's attack: with a
    # reference (the same file rendered offline, sample-exact), compare with
    # its onsets; else with the file's note times.
    if a.reference:
        rx, rrate = read_capture(a.reference)
        ref = onsets(rx, rrate)
        if len(ref) != len(expect):
            return False, "the reference render has %d onsets, %d expected" % (len(ref), len(expect))
        want_ms = [i * 1000.0 / rrate for i in ref]
    else:
        want_ms = [float(e[0]) for e in expect]
    problems = []
    worst = 0.0
    timed = None    # the last timed note before this one
    for i, ((ms, key), idx) in enumerate(zip(expect, got)):
        k = pitch(x, idx, rate) if key >= 0 else key   # a key of -1: any pitch
        if k != key:
            problems.append("note %d: key %s heard, %d expected" % (i + 1, k, key))
        if ms < 0 and not a.reference:
            continue
        if timed is not None:
            want = want_ms[i] - want_ms[timed]
            have = (idx - got[timed]) * 1000.0 / rate
            worst = max(worst, abs(have - want))
            if abs(have - want) > a.tolerance_ms:
                problems.append("note %d: %.1f ms after note %d, %.1f ms expected" % (i + 1, have, timed + 1, want))
        timed = i
    listed = ""
    if a.deviations:
        # Each note's onset minus its expected time, relative to the first
        # note: a constant latency gives all zeros.
        pairs = [(idx, w) for (ms, _), idx, w in zip(expect, got, want_ms) if ms >= 0 or a.reference]
        dev = [(idx - pairs[0][0]) * 1000.0 / rate - (w - pairs[0][1]) for idx, w in pairs]
        listed = "; onset minus expected, from the first note (ms): " + " ".join("%+.2f" % d for d in dev)
    if problems:
        return False, "; ".join(problems) + listed
    return True, "%d notes at the right pitch; spacing within %.2f ms of the %s (tolerance %.1f ms)%s" % (
        len(expect), worst, "offline render's" if a.reference else "file's", a.tolerance_ms, listed)


def cmd_level(a):
    x, rate = read_capture(a.capture)
    seg = x[int(a.start * rate):int(a.end * rate)]
    if not seg:
        return False, "the capture is shorter than %.2f s" % a.end
    peak = db(max(abs(v) for v in seg))
    if a.above is not None:
        return peak > a.above, "peak %.1f dBFS in %.2f-%.2f s (must be above %.1f)" % (peak, a.start, a.end, a.above)
    return peak < a.below, "peak %.1f dBFS in %.2f-%.2f s (must be below %.1f)" % (peak, a.start, a.end, a.below)


def cmd_fade(a):
    x, rate = read_capture(a.capture)
    last = max((i for i in range(len(x)) if abs(x[i]) > 1e-4), default=None)
    if last is None:
        return False, "the capture is silent"
    ms = rate // 1000
    before = x[max(0, last - 60 * ms):last - 40 * ms]
    end = x[last - 2 * ms:last + 1]
    lb = max((abs(v) for v in before), default=0.0)
    le = max((abs(v) for v in end), default=0.0)
    # (the capture may end right after the sound: a late start on a loaded host)
    step = max((abs(x[i] - x[i - 1]) for i in range(max(1, last - 30 * ms), min(len(x), last + 2 * ms))), default=0.0)
    ok = lb > 0.01 and le < 0.1 * lb
    return ok, "sound ends at %.3f s: %.1f dBFS 40-60 ms before the end, %.1f dBFS in the last 2 ms, largest step %.4f" % (
        last / rate, db(lb), db(le), step)


def cmd_continuous(a):
    """From the first sound, it lasts `seconds` (+- tolerance) without
    a break (no 10 ms block below -60 dBFS)."""
    x, rate = read_capture(a.capture)
    start = next((i for i, v in enumerate(x) if abs(v) > 0.001), None)
    if start is None:
        return False, "the capture is silent"
    block = rate // 100
    i = start
    while i + block <= len(x) and max(abs(v) for v in x[i:i + block]) > 0.001:
        i += block
    length = (i - start) / float(rate)
    ok = abs(length - a.seconds) <= a.tolerance
    return ok, "the first note sounds %.2f s without a break (held %.2f s, +- %.2f)" % (length, a.seconds, a.tolerance)


def cmd_gaps(a):
    """Sound and silence in 10 ms blocks (silent: below -60 dBFS), from the
    first sound to the last."""
    x, rate = read_capture(a.capture)
    block = rate // 100
    loud = [max((abs(v) for v in x[i:i + block]), default=0.0) > 0.001 for i in range(0, len(x), block)]
    if not any(loud):
        return False, "the capture is silent"
    first = loud.index(True)
    last = len(loud) - 1 - loud[::-1].index(True)
    segments = []   # (start block, end block) of sound
    i = first
    while i <= last:
        j = i
        while j <= last and loud[j]:
            j += 1
        segments.append((i, j))
        while j <= last and not loud[j]:
            j += 1
        i = j
    gaps = [(segments[k][1], segments[k + 1][0]) for k in range(len(segments) - 1)]
    longest = max(((e - s) * 10 for s, e in gaps), default=0)
    resumed = (segments[-1][1] - segments[-1][0]) / 100.0
    ok = len(gaps) >= a.min_gaps
    if a.max_gap_ms is not None:
        ok = ok and longest <= a.max_gap_ms
    if a.resume_seconds is not None:
        ok = ok and resumed >= a.resume_seconds
    shown = ", ".join("%.2f-%.2f s" % (s / 100.0, e / 100.0) for s, e in segments[:6])
    if len(segments) > 6:
        shown += ", ..."
    return ok, "%d gap%s (longest %d ms%s), at least %d expected; sound at %s; the last stretch lasts %.2f s%s" % (
        len(gaps), "" if len(gaps) == 1 else "s", longest,
        "" if a.max_gap_ms is None else ", limit %d" % a.max_gap_ms, a.min_gaps, shown, resumed,
        "" if a.resume_seconds is None else " (at least %.2f)" % a.resume_seconds)


def cmd_wav(a):
    try:
        with wave.open(a.file, "rb") as w:
            n, r, ch = w.getnframes(), w.getframerate(), w.getnchannels()
    except Exception as e:
        return False, "%s is not a readable WAV file: %s" % (a.file, e)
    secs = n / float(r)
    x, _ = read_capture(a.file)
    peak = db(max((abs(v) for v in x), default=0.0))
    ok = secs >= a.min_seconds and peak > -40
    return ok, "%s: %.2f s, %d Hz, %d channels, peak %.1f dBFS" % (a.file, secs, r, ch, peak)


def cmd_latency_run(a):
    """Guest side: capture and send, both stamped with CLOCK_MONOTONIC."""
    os.makedirs(a.dir, exist_ok=True)
    cap = open(os.path.join(a.dir, "capture.raw"), "wb")
    reads = []
    proc = subprocess.Popen(["arecord", "-q", "-D", a.device, "-f", "FLOAT_LE", "-r", str(RATE), "-c", "2",
                             "-t", "raw", "--period-size=256", "--buffer-size=8192"],
                            stdout=subprocess.PIPE, bufsize=0)
    total = [0]
    stop = [False]

    def reader():
        fd = proc.stdout.fileno()
        while not stop[0]:
            chunk = os.read(fd, 65536)
            t = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            if not chunk:
                break
            cap.write(chunk)
            total[0] += len(chunk)
            reads.append((t, total[0] // 8))

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    time.sleep(a.lead)
    sends = []
    fd = os.open(a.midi, os.O_WRONLY)
    nxt = time.monotonic() + 0.1
    for i in range(a.count):
        while time.monotonic() < nxt:
            time.sleep(min(0.005, max(0, nxt - time.monotonic())))
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        os.write(fd, bytes([0x90, a.key, 100]))
        t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        sends.append((t0, t1))
        time.sleep(a.length)
        os.write(fd, bytes([0x80, a.key, 0]))
        nxt += a.interval
    os.close(fd)
    time.sleep(a.tail)
    stop[0] = True
    proc.terminate()
    proc.wait()
    th.join(2)
    cap.close()
    with open(os.path.join(a.dir, "reads.txt"), "w") as f:
        f.writelines("%d %d\n" % r for r in reads)
    with open(os.path.join(a.dir, "sends.txt"), "w") as f:
        f.writelines("%d %d\n" % s for s in sends)
    return True, "sent %d notes, captured %.1f s" % (len(sends), total[0] / 8 / RATE)


def cmd_latency(a):
    reads = [tuple(map(int, l.split())) for l in open(os.path.join(a.dir, "reads.txt"))]
    sends = [tuple(map(int, l.split())) for l in open(os.path.join(a.dir, "sends.txt"))]
    x, rate = read_capture(os.path.join(a.dir, "capture.raw"))
    # Frame 0 of the capture was captured no later than (read time - frames read / rate):
    # the lower envelope over all reads is the capture clock.
    t0 = min(t - frames * 1e9 / rate for t, frames in reads)
    found = onsets(x, rate)
    lat = []      # (latency ms, send-stamp bracket ms)
    for s0, s1 in sends:
        sent = (s0 + s1) / 2.0
        cands = [t0 + i * 1e9 / rate - sent for i in found]
        cands = [c for c in cands if 0 < c < 1e9]
        if cands:
            lat.append((min(cands) / 1e6, (s1 - s0) / 1e6))
    if len(lat) < len(sends):
        return False, "heard %d of %d notes" % (len(lat), len(sends))

    def stats(v):
        m = sum(v) / len(v)
        return m, math.sqrt(sum((e - m) ** 2 for e in v) / len(v)), min(v), max(v)

    mean, sd, lo, hi = stats([l for l, _ in lat])
    # The sender stamps the clock around its write(); under emulation that
    # bracket is sometimes milliseconds wide, which is the sender's jitter,
    # not Spinet's: judge jitter on the notes stamped to within 0.5 ms.
    tight = [l for l, b in lat if b < 0.5]
    if len(tight) < len(lat) // 2:
        tight = sorted(lat, key=lambda e: e[1])[:len(lat) // 2]
        tight = [l for l, _ in tight]
    tmean, tsd, tlo, thi = stats(tight)
    ok = tsd < a.period_ms / 4 and thi - tlo < a.period_ms
    return ok, ("latency over %d notes: mean %.2f ms, jitter %.2f ms std dev (%.2f-%.2f ms); over the %d notes whose "
                "send time is known to 0.5 ms: mean %.2f ms, jitter %.2f ms std dev, spread %.2f ms (a period is %.2f ms)") % (
        len(lat), mean, sd, lo, hi, len(tight), tmean, tsd, thi - tlo, a.period_ms)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("midi"); s.add_argument("out"); s.add_argument("spec"); s.add_argument("--program", type=int)
    s.add_argument("--pan", type=int)
    s = sub.add_parser("notes"); s.add_argument("capture"); s.add_argument("--expect", required=True)
    s.add_argument("--tolerance-ms", type=float, default=5.0); s.add_argument("--reference")
    s.add_argument("--deviations", action="store_true"); s.add_argument("--channel", choices=["left", "right"])
    s = sub.add_parser("level"); s.add_argument("capture"); s.add_argument("--from", dest="start", type=float, required=True)
    s.add_argument("--to", dest="end", type=float, required=True)
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("--above", type=float); g.add_argument("--below", type=float)
    s = sub.add_parser("fade"); s.add_argument("capture")
    s = sub.add_parser("continuous"); s.add_argument("capture"); s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--tolerance", type=float, default=0.2)
    s = sub.add_parser("gaps"); s.add_argument("capture"); s.add_argument("--min-gaps", type=int, default=0)
    s.add_argument("--max-gap-ms", type=int); s.add_argument("--resume-seconds", type=float)
    s = sub.add_parser("wav"); s.add_argument("file"); s.add_argument("--min-seconds", type=float, default=0.5)
    s = sub.add_parser("latency-run"); s.add_argument("dir"); s.add_argument("--midi", required=True)
    s.add_argument("--device", default="hw:Loopback,1,0"); s.add_argument("--count", type=int, default=100)
    s.add_argument("--interval", type=float, default=0.3); s.add_argument("--length", type=float, default=0.08)
    s.add_argument("--key", type=int, default=72); s.add_argument("--lead", type=float, default=1.0)
    s.add_argument("--tail", type=float, default=1.0)
    s = sub.add_parser("latency"); s.add_argument("dir"); s.add_argument("--period-ms", type=float, required=True)
    a = p.parse_args()
    ok, line = {"midi": cmd_midi, "notes": cmd_notes, "level": cmd_level, "fade": cmd_fade, "wav": cmd_wav,
                "continuous": cmd_continuous, "gaps": cmd_gaps,
                "latency-run": cmd_latency_run, "latency": cmd_latency}[a.cmd](a)
    print(line)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes demo/spinet-demo.mid, Spinet's demo piece (made by the project,
same licence as Spinet). Regenerate with: python3 demo/make-demo.py

A short piece in C major, about 50 s: electric piano with sustain pedal,
bass, string pad, a flute lead with pitch bends, drums on channel 10, a
tempo change into the last section and a held final chord that decays.
Channel 5 plays Spinet's own oscillator synth, chosen from the file with
Bank Select 126 + Program Change (4 = "pluck"): a sixteenth-note arpeggio
in the second and third sections. The other channels play the SoundFont.
"""
import os
import struct

PPQ = 480


def vlq(n):
    out = [n & 0x7F]
    n >>= 7
    while n:
        out.insert(0, 0x80 | (n & 0x7F))
        n >>= 7
    return bytes(out)


class Track:
    def __init__(self):
        self.events = []  # (tick, order, bytes)
        self.n = 0

    def add(self, tick, data, order=1):
        self.events.append((tick, order, self.n, bytes(data)))
        self.n += 1

    def note(self, ch, tick, dur, key, vel):
        self.add(tick, [0x90 | ch, key, vel], order=2)
        self.add(tick + dur, [0x80 | ch, key, 0], order=0)

    def cc(self, ch, tick, num, val):
        self.add(tick, [0xB0 | ch, num, val])

    def program(self, ch, tick, prog):
        self.add(tick, [0xC0 | ch, prog])

    def bend(self, ch, tick, value):
        self.add(tick, [0xE0 | ch, value & 0x7F, (value >> 7) & 0x7F])

    def meta(self, tick, kind, data):
        self.add(tick, bytes([0xFF, kind]) + vlq(len(data)) + bytes(data))

    def chunk(self):
        body = b""
        last = 0
        for tick, _, _, data in sorted(self.events):
            body += vlq(tick - last) + data
            last = tick
        body += vlq(0) + b"\xFF\x2F\x00"
        return b"MTrk" + struct.pack(">I", len(body)) + body


BAR = 4 * PPQ
# C, Am, F, G, C, Em, F, G (root, third, fifth as MIDI keys around middle C)
CHORDS = [(48, [60, 64, 67]), (45, [57, 60, 64]), (41, [57, 60, 65]), (43, [55, 59, 62]),
          (48, [60, 64, 67]), (40, [55, 59, 64]), (41, [57, 60, 65]), (43, [55, 59, 62])]
MELODY = [  # (beat offset in eighths, length in eighths, key) per bar
    [(0, 3, 72), (3, 1, 74), (4, 4, 76)],
    [(0, 2, 76), (2, 2, 74), (4, 4, 72)],
    [(0, 3, 69), (3, 1, 72), (4, 2, 77), (6, 2, 76)],
    [(0, 6, 74), (6, 2, 71)],
    [(0, 2, 72), (2, 2, 76), (4, 2, 79), (6, 2, 76)],
    [(0, 4, 79), (4, 2, 76), (6, 2, 74)],
    [(0, 3, 72), (3, 1, 74), (4, 4, 77)],
    [(0, 8, 74)],
]

conductor = Track()
conductor.meta(0, 0x03, b"Spinet demo")
conductor.meta(0, 0x58, [4, 2, 24, 8])
conductor.meta(0, 0x59, [0, 0])
conductor.meta(0, 0x51, list(struct.pack(">I", 500000))[1:])          # 120 bpm
conductor.meta(16 * BAR, 0x51, list(struct.pack(">I", 461538))[1:])   # 130 bpm for the last section

piano, bass, pad, lead, drums, synth = Track(), Track(), Track(), Track(), Track(), Track()
synth.meta(0, 0x03, b"Spinet synth: pluck")
synth.cc(4, 0, 0, 126)      # Bank Select 126: Spinet's own presets
synth.program(4, 0, 4)      # "pluck"
synth.cc(4, 0, 7, 90)
synth.cc(4, 0, 10, 84)
setup = [(piano, 0, 4, 100, 50, 40), (bass, 1, 33, 105, 64, 10), (pad, 2, 48, 70, 78, 70),
         (lead, 3, 73, 100, 70, 50), (drums, 9, 0, 100, 64, 30)]
for trk, ch, prog, vol, pan, rev in setup:
    trk.meta(0, 0x03, ["E.Piano", "Bass", "Strings", "Flute", "Drums"][[0, 1, 2, 3, 9].index(ch)].encode())
    trk.program(ch, 0, prog)
    trk.cc(ch, 0, 7, vol)
    trk.cc(ch, 0, 10, pan)
    trk.cc(ch, 0, 91, rev)

bars = 24
for bar in range(bars):
    t = bar * BAR
    root, triad = CHORDS[bar % 8]
    section = bar // 8
    # piano: sustain pedal per bar, broken chord
    piano.cc(0, t, 64, 127)
    for i, k in enumerate(triad + [triad[0] + 12]):
        piano.note(0, t + i * PPQ // 2, PPQ * 2, k, 70 + 8 * (i == 0))
    for i, k in enumerate(triad):
        piano.note(0, t + 2 * PPQ + i * PPQ // 2, PPQ, k + 12 * (i == 2), 62)
    piano.cc(0, t + BAR - 10, 64, 0)
    # bass: root and fifth
    for beat, k in enumerate([root, root, root + 7, root + 12 if section else root]):
        bass.note(1, t + beat * PPQ, PPQ - 40, k - 12 if k - 12 >= 28 else k, 100 if beat == 0 else 85)
    # pad from the second section on, swelling with expression
    if section >= 1:
        for k in triad:
            pad.note(2, t, BAR - 20, k - 12 + 12 * (k < 57), 60)
        for step in range(8):
            pad.cc(2, t + step * BAR // 8, 11, 70 + 7 * (step if step < 4 else 8 - step))
    # lead from the second section, with a bend into the first note of every other bar
    if section >= 1:
        for off, length, k in MELODY[bar % 8]:
            start = t + off * PPQ // 2
            if off == 0 and bar % 2 == 1:
                lead.bend(3, start, 8192 - 1200)
                for s in range(1, 9):
                    lead.bend(3, start + s * 15, 8192 - 1200 + s * 150)
            lead.note(3, start, length * PPQ // 2 - 30, k + 12 * (section == 2), 96 if off == 0 else 84)
    # Spinet synth: sixteenth-note arpeggio over the chord, from the second section
    if section >= 1:
        pattern = triad + [triad[0] + 12]
        for step in range(16):
            k = pattern[[0, 1, 2, 3, 2, 1][step % 6]] + 12
            synth.note(4, t + step * PPQ // 4, PPQ // 4 - 20, k, 78 if step % 4 == 0 else 64)
    # drums: kick, snare, hats; a fill every 8th bar
    if bar >= 4:
        for beat in range(4):
            drums.note(9, t + beat * PPQ, 100, 36 if beat % 2 == 0 else 38, 110 if beat % 2 == 0 else 100)
            for e in range(2):
                drums.note(9, t + beat * PPQ + e * PPQ // 2, 60, 42, 80 if e == 0 else 60)
        if bar % 8 == 7:
            for s in range(4):
                drums.note(9, t + 3 * PPQ + s * PPQ // 4, 80, 47 - 2 * s, 90 + 5 * s)
        if bar % 8 == 0:
            drums.note(9, t, 200, 49, 100)

# final chord: held, then released to decay
end = bars * BAR
for k in [48, 60, 64, 67, 72]:
    piano.note(0, end, 3 * BAR // 2, k, 90)
bass.note(1, end, 3 * BAR // 2, 36, 100)
for k in [48, 55, 64]:
    pad.note(2, end, 3 * BAR // 2, k, 70)
lead.note(3, end, 3 * BAR // 2, 84, 90)
drums.note(9, end, 400, 49, 110)
drums.note(9, end, 200, 36, 110)
lead.bend(3, end, 8192)

tracks = [conductor, piano, bass, pad, lead, drums, synth]
header = b"MThd" + struct.pack(">IHHH", 6, 1, len(tracks), PPQ)
data = header + b"".join(t.chunk() for t in tracks)
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spinet-demo.mid")
with open(path, "wb") as f:
    f.write(data)
print(f"wrote {path} ({len(data)} bytes)")

"""scripts/player-jitter.sh's file and measure: `write OUT.mid`, `measure TAKE.wav`."""
import struct
import sys

SPACING = 0.25   # seconds between the claves
COUNT = 40


def write(path):
    events = []
    for i in range(COUNT):
        t = 2000 + int(i * SPACING * 1000)          # 1000 ticks a second
        events += [(t, bytes([0x99, 75, 110])), (t + 50, bytes([0x89, 75, 0]))]

    def vlq(v):
        out = [v & 0x7F]
        v >>= 7
        while v:
            out.insert(0, (v & 0x7F) | 0x80)
            v >>= 7
        return bytes(out)
    track = bytearray(b"\x00\xff\x51\x03\x0f\x42\x40\x00\xb9\x5b\x00\x00\xb9\x5d\x00")   # 1 s a quarter; no sends
    now = 0
    for t, data in sorted(events, key=lambda e: e[0]):
        track += vlq(t - now) + data
        now = t
    track += vlq(1000) + b"\xff\x2f\x00"
    with open(path, "wb") as f:
        f.write(b"MThd" + struct.pack(">IHHH", 6, 0, 1, 1000) + b"MTrk" + struct.pack(">I", len(track)) + track)


def left_channel(path):
    data = open(path, "rb").read()
    i, fmt = 12, None
    while i < len(data):
        cid, n = data[i:i + 4], int.from_bytes(data[i + 4:i + 8], "little")
        if cid == b"fmt ":
            tag, channels, rate, _, _, bits = struct.unpack("<HHIIHH", data[i + 8:i + 24])
            fmt = (tag, channels, rate, bits)
        elif cid == b"data":
            tag, channels, rate, bits = fmt
            raw = data[i + 8:i + 8 + n]
            if tag == 3:
                values = struct.unpack("<%df" % (len(raw) // 4), raw)
            elif bits == 32:
                values = [v / 2 ** 31 for v in struct.unpack("<%di" % (len(raw) // 4), raw)]
            else:
                values = [v / 2 ** 15 for v in struct.unpack("<%dh" % (len(raw) // 2), raw)]
            return [abs(v) for v in values[0::channels]], rate
        i += 8 + n + (n & 1)
    raise SystemExit("no audio in %s" % path)


def measure(path):
    x, rate = left_channel(path)
    threshold = 0.05 * max(x)
    onsets, i = [], 0
    while i < len(x):
        if x[i] > threshold:
            onsets.append(i)
            i += int(0.1 * rate)
        else:
            i += 1
    if len(onsets) != COUNT:
        return "%d onsets heard, %d expected" % (len(onsets), COUNT)
    dev = [(o - onsets[0]) - k * SPACING * rate for k, o in enumerate(onsets)]
    mean = sum(dev) / len(dev)
    ms = [(d - mean) * 1000 / rate for d in dev]
    std = (sum(m * m for m in ms) / len(ms)) ** 0.5
    return "onset minus the file's time (ms): standard deviation %.3f, spread %.3f, worst %.3f" % (
        std, max(ms) - min(ms), max(abs(m) for m in ms))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        print(measure(sys.argv[2]))

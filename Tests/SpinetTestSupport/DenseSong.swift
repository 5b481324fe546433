import SpinetMIDI

/// A Standard MIDI File dense enough to be split over several SoundFont
/// players: `channels` melodic channels (never the drums' 10), each with
/// its own program, striking a four-note chord every half second and
/// holding it for a second, so about eight notes sound on each channel at
/// any time, for `seconds` seconds at 120 bpm.
public func denseSong(seconds: Int = 6, channels: Int = 8) -> [UInt8] {
    var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
    var events: [(tick: Int64, event: TrackEvent.Kind)] = []
    let programs: [UInt8] = [0, 48, 19, 24, 52, 89, 40, 73, 16, 32, 56, 61, 68, 80, 88, 91]
    for n in 0..<channels {
        let channel = UInt8(n < 9 ? n : n + 1)
        events.append((0, .message(.programChange(channel: channel, program: programs[n % programs.count]))))
        for beat in 0..<(seconds * 2) {
            let t = Int64(beat * 480)
            let root = UInt8(48 + (n * 5 + beat * 7) % 24)
            for step: UInt8 in [0, 4, 7, 12] {
                events.append((t, .message(.noteOn(channel: channel, key: root + step, velocity: 90))))
                events.append((t + 960, .message(.noteOff(channel: channel, key: root + step, velocity: 0))))
            }
        }
    }
    w.addTrack(events.sorted { $0.tick < $1.tick })
    return w.bytes()
}

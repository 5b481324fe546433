// Writes the seed corpora of the MIDI and SoundFont targets in Fuzz/corpus/
// (checked in; rerun after changing this file; the JSON seeds are hand-written):
//   swiftc -parse-as-library -module-name Seeds Fuzz/SeedGenerator/main.swift Sources/SpinetMIDI/*.swift -o /tmp/spinet-seeds
//   /tmp/spinet-seeds Fuzz/corpus
//
// Seeds are small (a fuzzer mutates small inputs fastest): well-formed files
// of every shape the reader knows, the real-world oddities a forgiving reader must take, and
// hand-broken files that reach each error. Real files (demo/, a system's MIDI
// collection) are added by scripts/fuzz.sh at run time.

import Foundation

@main
struct SeedGenerator {
    static func main() throws {
        let root = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "Fuzz/corpus"
        try write(midiFileSeeds(), to: root + "/MIDIFileFuzzer")
        try write(byteParserSeeds(), to: root + "/MIDIByteParserFuzzer")
        try write(soundFontSeeds(), to: root + "/SoundFontFuzzer")
    }

    static func write(_ seeds: [(String, [UInt8])], to dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for (name, bytes) in seeds {
            try Data(bytes).write(to: URL(fileURLWithPath: dir + "/" + name))
        }
        print("\(seeds.count) seeds in \(dir)")
    }

    // MARK: Standard MIDI Files

    static func be32(_ v: Int) -> [UInt8] { [UInt8((v >> 24) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    static func le32(_ v: Int) -> [UInt8] { be32(v).reversed() }
    static func be16(_ v: Int) -> [UInt8] { [UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    static func header(format: Int = 0, tracks: Int = 1, division: Int = 480, length: Int = 6) -> [UInt8] {
        Array("MThd".utf8) + be32(length) + be16(format) + be16(tracks) + be16(division) + [UInt8](repeating: 0, count: max(0, length - 6))
    }
    static func chunk(_ tag: String, _ body: [UInt8], length: Int? = nil) -> [UInt8] {
        Array(tag.utf8) + be32(length ?? body.count) + body
    }
    static func track(_ body: [UInt8], length: Int? = nil) -> [UInt8] { chunk("MTrk", body, length: length) }
    static let eot: [UInt8] = [0x00, 0xFF, 0x2F, 0x00]

    static func arpeggio(channel: UInt8 = 0, notes: Int = 8) -> [(tick: Int64, event: TrackEvent.Kind)] {
        var events: [(tick: Int64, event: TrackEvent.Kind)] = [(0, .message(.programChange(channel: channel, program: 0)))]
        let keys: [UInt8] = [60, 64, 67, 72]
        for i in 0..<notes {
            let t = Int64(i * 240)
            events.append((t, .message(.noteOn(channel: channel, key: keys[i % 4], velocity: 100))))
            events.append((t + 200, .message(.noteOff(channel: channel, key: keys[i % 4], velocity: 0))))
        }
        return events
    }

    static func midiFileSeeds() -> [(String, [UInt8])] {
        var seeds: [(String, [UInt8])] = []

        // Well-formed, written by the writer.
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        w.addTrack(arpeggio())
        let simple = w.bytes()
        seeds.append(("format0-arpeggio.mid", simple))
        seeds.append(("format0-no-running-status.mid", w.bytes(runningStatus: false)))

        w = MIDIFileWriter(format: 1, ticksPerQuarter: 96)
        w.addTrack([(0, .tempo(microsecondsPerQuarter: 500_000)), (0, .timeSignature(numerator: 6, denominatorPower: 3, clocksPerClick: 24, thirtySecondsPerQuarter: 8)),
                    (0, .keySignature(sharps: -3, minor: true)), (192, .tempo(microsecondsPerQuarter: 300_000)), (384, .tempo(microsecondsPerQuarter: 0xFF_FFFF))])
        w.addTrack(arpeggio(channel: 0))
        w.addTrack(arpeggio(channel: 9) + [(10, .message(.pitchBend(channel: 9, value: 16383))), (20, .message(.polyPressure(channel: 9, key: 60, pressure: 5))),
                                            (30, .message(.channelPressure(channel: 9, pressure: 7))), (40, .message(.controlChange(channel: 9, controller: 64, value: 127)))])
        seeds.append(("format1-tempo-map.mid", w.bytes()))

        w = MIDIFileWriter(format: 2, ticksPerQuarter: 120)
        for ch in UInt8(0)..<3 { w.addTrack([(0, .tempo(microsecondsPerQuarter: 400_000 + Int(ch) * 100_000))] + arpeggio(channel: ch, notes: 3)) }
        seeds.append(("format2-three-sequences.mid", w.bytes()))

        w = MIDIFileWriter(format: 1, smpteFramesPerSecond: 25, ticksPerFrame: 40)
        w.addTrack(arpeggio())
        seeds.append(("smpte-25.mid", w.bytes()))
        w = MIDIFileWriter(format: 0, smpteFramesPerSecond: 29, ticksPerFrame: 80)
        w.addTrack(arpeggio())
        seeds.append(("smpte-29-drop-frame.mid", w.bytes()))

        // Ports: channels 16 and up.
        w = MIDIFileWriter(format: 0, ticksPerQuarter: 96)
        w.addTrack(arpeggio(channel: 17, notes: 2) + arpeggio(channel: 40, notes: 2) + [(5, .otherMeta(type: 0x21, bytes: [200]))])
        seeds.append(("ports.mid", w.bytes()))

        // Karaoke (.kar): a "@KMIDI KARAOKE FILE" track and lyrics as text events.
        w = MIDIFileWriter(format: 1, ticksPerQuarter: 96)
        w.addTrack([(0, .text(type: 0x01, bytes: Array("@KMIDI KARAOKE FILE".utf8)))])
        w.addTrack([(0, .text(type: 0x03, bytes: Array("Words".utf8))), (0, .text(type: 0x01, bytes: Array("@LENGLISH".utf8))),
                    (0, .text(type: 0x01, bytes: Array("@TSpinet".utf8))), (96, .text(type: 0x01, bytes: Array("\\Twin".utf8))),
                    (192, .text(type: 0x01, bytes: Array("kle ".utf8))), (288, .text(type: 0x05, bytes: Array("/lit".utf8)))])
        w.addTrack(arpeggio(channel: 0, notes: 4))
        seeds.append(("karaoke.kar", w.bytes()))

        // A file that is all SysEx: GM on, GS reset, XG on, master volume, and a
        // message split into an F0 packet and F7 continuations.
        seeds.append(("all-sysex.mid", header() + track([
            0x00, 0xF0, 0x05, 0x7E, 0x7F, 0x09, 0x01, 0xF7,
            0x00, 0xF0, 0x0A, 0x41, 0x10, 0x42, 0x12, 0x40, 0x00, 0x7F, 0x00, 0x41, 0xF7,
            0x00, 0xF0, 0x08, 0x43, 0x10, 0x4C, 0x00, 0x00, 0x7E, 0x00, 0xF7,
            0x00, 0xF0, 0x03, 0x7F, 0x7F, 0x04,
            0x10, 0xF7, 0x02, 0x01, 0x00,
            0x10, 0xF7, 0x02, 0x7F, 0xF7,
            0x00, 0xF7, 0x01, 0xFF,         // escape packet
        ] + eot)))

        // Oddities that must read (with warnings).
        seeds.append(("key-signature-8-sharps.mid", header() + track([0x00, 0xFF, 0x59, 0x02, 0x08, 0x00, 0x00, 0x90, 60, 100, 0x60, 0x80, 60, 0] + eot)))
        seeds.append(("velocity-255.mid", header() + track([0x00, 0x90, 60, 0xFF, 0x60, 0x80, 60, 0x00] + eot)))
        seeds.append(("zero-tracks.mid", header(format: 1, tracks: 0)))
        seeds.append(("declares-65535-tracks.mid", header(format: 1, tracks: 0xFFFF) + track([0x00, 0x90, 60, 100] + eot)))
        seeds.append(("unknown-format-long-header.mid", header(format: 7, length: 10) + track(eot)))
        seeds.append(("unknown-chunk.mid", header() + chunk("XFIH", [1, 2, 3, 4]) + track([0x00, 0x90, 60, 100] + eot)))
        seeds.append(("no-end-of-track.mid", header() + track([0x00, 0x90, 60, 100, 0x60, 0x80, 60, 0])))
        seeds.append(("bytes-after-end-of-track.mid", header() + track(eot + [0x00, 0x90, 60, 100])))
        seeds.append(("running-status-after-meta.mid", header() + track([0x00, 0x90, 60, 100, 0x00, 0xFF, 0x01, 0x01, 0x41, 0x10, 62, 100] + eot)))
        seeds.append(("tempo-zero.mid", header() + track([0x00, 0xFF, 0x51, 0x03, 0, 0, 0, 0x00, 0x90, 60, 100] + eot)))
        seeds.append(("malformed-metas.mid", header() + track([0x00, 0xFF, 0x51, 0x02, 1, 2, 0x00, 0xFF, 0x58, 0x01, 4, 0x00, 0xFF, 0x21, 0x00, 0x00, 0xFF, 0x59, 0x02, 0x80, 0x05] + eot)))
        seeds.append(("system-reset-escape.mid", header() + track([0x00, 0xF7, 0x01, 0xFF, 0x00, 0x90, 60, 100] + eot)))
        var many = header(format: 1, tracks: 40, division: 96)
        for i in 0..<40 { many += track([UInt8(i), 0x90 | UInt8(i % 16), UInt8(40 + i), 100, 0x30, 0x80 | UInt8(i % 16), UInt8(40 + i), 0] + eot) }
        seeds.append(("many-tracks.mid", many))
        // A long file in few bytes: maximal delta times at the slowest tempo.
        seeds.append(("long-silence.mid", header(division: 1) + track([0x00, 0xFF, 0x51, 0x03, 0xFF, 0xFF, 0xFF, 0x00, 0x90, 60, 100, 0xFF, 0xFF, 0xFF, 0x7F, 0x80, 60, 0, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0x2F, 0x00])))

        // RIFF MIDI.
        let body = simple
        seeds.append(("rmid.rmi", Array("RIFF".utf8) + le32(body.count + 12) + Array("RMID".utf8) + Array("data".utf8) + le32(body.count) + body))
        seeds.append(("rmid-data-length-huge.rmi", Array("RIFF".utf8) + le32(0xFFFF_FFFF) + Array("RMID".utf8) + Array("data".utf8) + le32(0xFFFF_FFFF) + body))
        seeds.append(("rmid-no-data.rmi", Array("RIFF".utf8) + le32(16) + Array("RMID".utf8) + Array("LIST".utf8) + le32(3) + [1, 2, 3, 0]))

        // Broken: each reaches an error.
        seeds.append(("empty.mid", []))
        seeds.append(("truncated-header.mid", Array("MThd".utf8) + [0, 0, 0, 6, 0, 1]))
        seeds.append(("header-length-4.mid", header(length: 4) + track(eot)))
        seeds.append(("division-zero.mid", header(division: 0) + track(eot)))
        seeds.append(("smpte-bad-rate.mid", header(division: 0xE628) + track(eot)))
        seeds.append(("track-length-4GB.mid", header() + track([0x00, 0x90, 60, 100], length: 0xFFFF_FFFF)))
        seeds.append(("track-length-2G.mid", header(format: 1, tracks: 0xFFFF) + track([0x00, 0x90, 60, 100], length: 0x7FFF_FFFF)))
        seeds.append(("sysex-length-huge.mid", header() + track([0x00, 0xF0, 0xFF, 0xFF, 0xFF, 0x7F, 0x01, 0xF7])))
        seeds.append(("meta-length-huge.mid", header() + track([0x00, 0xFF, 0x01, 0xFF, 0xFF, 0xFF, 0x7F, 0x41])))
        seeds.append(("vlq-5-bytes.mid", header() + track([0x81, 0x80, 0x80, 0x80, 0x00, 0x90, 60, 100] + eot)))
        seeds.append(("no-running-status.mid", header() + track([0x00, 60, 100] + eot)))
        seeds.append(("unexpected-status-f1.mid", header() + track([0x00, 0xF1, 0x00] + eot)))
        seeds.append(("truncated-event.mid", header() + track([0x00, 0x90, 60])))
        seeds.append(("delta-without-event.mid", header() + track([0x00])))
        seeds.append(("not-midi-wave.mid", Array("RIFF".utf8) + le32(36) + Array("WAVEfmt ".utf8) + [UInt8](repeating: 0, count: 16)))
        return seeds
    }

    // MARK: Byte streams (3 bytes of parameters: port, SysEx limit, packet size)

    static func byteParserSeeds() -> [(String, [UInt8])] {
        let p: [UInt8] = [0, 7, 0]           // port 0, limit 65536, one byte per packet
        let small: [UInt8] = [3, 4, 2]       // port 3, limit 5, packets of 3
        var seeds: [(String, [UInt8])] = []
        seeds.append(("running-status.bin", p + [0x90, 60, 100, 62, 100, 64, 0, 0x80, 60, 0, 62, 0]))
        seeds.append(("all-messages.bin", p + [0x80, 1, 2, 0x91, 3, 4, 0xA2, 5, 6, 0xB3, 7, 8, 0xC4, 9, 0xD5, 10, 0xE6, 0x7F, 0x7F, 0xFF]))
        seeds.append(("realtime-inside-messages.bin", p + [0x90, 0xF8, 60, 0xFA, 100, 0xFE, 0xF0, 0x7E, 0xF8, 0x7F, 0x09, 0x01, 0xFC, 0xF7]))
        seeds.append(("sysex.bin", p + [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x00, 0x7F, 0x00, 0x41, 0xF7, 0xF0, 0xF7]))
        seeds.append(("sysex-too-long.bin", small + [0xF0, 1, 2, 3, 4, 5, 6, 7, 0xF7, 0xF0, 1, 2, 3, 4, 5, 6, 0x90, 60, 100]))
        seeds.append(("sysex-interrupted.bin", p + [0xF0, 1, 2, 0x90, 60, 100, 0xF7, 0xF7]))
        seeds.append(("system-common.bin", p + [0x90, 60, 100, 0xF1, 0x10, 62, 0xF2, 0x01, 0x02, 0xF3, 0x05, 0xF6, 0xF4, 0xF5, 64, 100]))
        seeds.append(("status-inside-message.bin", p + [0x90, 60, 0x80, 60, 0, 0xC0, 0xB0, 7, 0xE0, 0x00]))
        seeds.append(("stray-data.bin", p + [1, 2, 3, 0x7F, 0xF7, 0x40]))
        seeds.append(("port-15-limit-0.bin", [20, 0, 16] + [0xF0, 1, 0xF7, 0x9F, 127, 127, 0xFF]))
        return seeds
    }

    // MARK: SoundFont 2 files (tiny samples; the preset data is what the readers read)

    struct Zone { var gens: [(UInt16, UInt16)]; var mods = 0 }
    struct Item { var name: String; var program = 0; var bank = 0; var zones: [Zone] }
    struct Sample { var name: String; var frames = 16; var loop = false; var root: UInt8 = 60; var type: UInt16 = 1; var link: UInt16 = 0 }

    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
    static func name20(_ s: String) -> [UInt8] { Array(Array(s.utf8).prefix(19)) + [UInt8](repeating: 0, count: 20 - min(s.utf8.count, 19)) }
    static func riffChunk(_ tag: String, _ body: [UInt8], size: Int? = nil) -> [UInt8] {
        Array(tag.utf8) + le32(size ?? body.count) + body + (body.count % 2 == 1 ? [0] : [])
    }
    static func list(_ tag: String, _ chunks: [UInt8], size: Int? = nil) -> [UInt8] {
        riffChunk("LIST", Array(tag.utf8) + chunks, size: size)
    }

    /// The body of a `pdta` list: the nine sub-chunks with their terminal records.
    static func pdta(presets: [Item], instruments: [Item], samples: [Sample]) -> [UInt8] {
        func level(_ items: [Item], headerSize: Int, extra: (Item) -> [UInt8], terminal: String) -> (h: [UInt8], b: [UInt8], m: [UInt8], g: [UInt8]) {
            var h: [UInt8] = [], b: [UInt8] = [], m: [UInt8] = [], g: [UInt8] = []
            var bags = 0, gens = 0, mods = 0
            for item in items {
                h += name20(item.name) + extra(item) + le16(bags)
                if headerSize == 38 { h += le32(0) + le32(0) + le32(0) }
                for z in item.zones {
                    b += le16(gens) + le16(mods)
                    for (op, amount) in z.gens { g += le16(Int(op)) + le16(Int(amount)) }
                    for k in 0..<z.mods {   // mod wheel to vibrato LFO pitch, a little more each time
                        m += le16(0x0081) + le16(6) + le16(10 * (k + 1)) + le16(0) + le16(0)
                    }
                    bags += 1; gens += z.gens.count; mods += z.mods
                }
            }
            h += name20(terminal) + (headerSize == 38 ? [0, 0, 0, 0] : []) + le16(bags) + (headerSize == 38 ? [UInt8](repeating: 0, count: 12) : [])
            b += le16(gens) + le16(mods)
            m += [UInt8](repeating: 0, count: 10)
            g += [0, 0, 0, 0]
            return (h, b, m, g)
        }
        let p = level(presets, headerSize: 38, extra: { le16($0.program) + le16($0.bank) }, terminal: "EOP")
        let i = level(instruments, headerSize: 22, extra: { _ in [] }, terminal: "EOI")
        var shdr: [UInt8] = []
        var start = 0
        for s in samples {
            let end = start + s.frames
            shdr += name20(s.name) + le32(start) + le32(end) + le32(start + (s.loop ? 2 : 0)) + le32(end - (s.loop ? 2 : 0))
            shdr += le32(44100) + [s.root, 0] + le16(Int(s.link)) + le16(Int(s.type))
            start = end + 46
        }
        shdr += name20("EOS") + [UInt8](repeating: 0, count: 26)
        var out: [UInt8] = []
        for (tag, body) in zip(["phdr", "pbag", "pmod", "pgen", "inst", "ibag", "imod", "igen", "shdr"],
                               [p.h, p.b, p.m, p.g, i.h, i.b, i.m, i.g, shdr]) {
            out += riffChunk(tag, body)
        }
        return out
    }

    static func soundFont(presets: [Item], instruments: [Item], samples: [Sample], pdtaFirst: Bool = false, tail: [UInt8] = [],
                          pdtaBody: [UInt8]? = nil, riffSize: Int? = nil) -> [UInt8] {
        let info = list("INFO", riffChunk("ifil", le16(2) + le16(1)) + riffChunk("isng", Array("EMU8000\0".utf8)) + riffChunk("INAM", Array("Spinet seed\0".utf8)))
        let frames = samples.map { $0.frames + 46 }.reduce(0, +)
        let wave = (0..<frames).flatMap { le16(Int(Int16(truncatingIfNeeded: ($0 % 16 - 8) * 2000))) }
        let sdta = list("sdta", riffChunk("smpl", wave))
        let hydra = list("pdta", pdtaBody ?? pdta(presets: presets, instruments: instruments, samples: samples))
        let body = Array("sfbk".utf8) + info + (pdtaFirst ? hydra + sdta : sdta + hydra) + tail
        return Array("RIFF".utf8) + le32(riffSize ?? body.count) + body
    }

    // Generator numbers (SoundFont 2.04, 8.1.2)
    static let decayVol: UInt16 = 36, sustainVol: UInt16 = 37, releaseVol: UInt16 = 38, instrument: UInt16 = 41
    static let keyRange: UInt16 = 43, velRange: UInt16 = 44, sampleID: UInt16 = 53, sampleModes: UInt16 = 54
    static let exclusiveClass: UInt16 = 57, overridingRootKey: UInt16 = 58
    static func range(_ lo: Int, _ hi: Int) -> UInt16 { UInt16(lo | hi << 8) }

    static func soundFontSeeds() -> [(String, [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        let piano = Item(name: "Piano", zones: [Zone(gens: [(sampleID, 0)])])
        let one = soundFont(presets: [Item(name: "Grand", zones: [Zone(gens: [(instrument, 0)])])], instruments: [piano],
                            samples: [Sample(name: "C4")])
        seeds.append(("one-preset.sf2", one))

        // Several programs and banks, global zones, layers, splits, loops,
        // envelopes, an exclusive class, modulators, a stereo pair, an SF3 sample.
        let instruments = [
            piano,
            Item(name: "Pad", zones: [
                Zone(gens: [(releaseVol, UInt16(bitPattern: 2400))], mods: 1),        // global zone
                Zone(gens: [(keyRange, range(0, 63)), (sampleModes, 1), (sampleID, 1)]),
                Zone(gens: [(keyRange, range(64, 127)), (velRange, range(0, 100)), (sampleModes, 3), (overridingRootKey, 72), (sampleID, 2)]),
            ]),
            Item(name: "Kit", zones: [
                Zone(gens: [(keyRange, range(42, 42)), (exclusiveClass, 1), (sampleID, 0)]),
                Zone(gens: [(keyRange, range(46, 46)), (exclusiveClass, 1), (decayVol, UInt16(bitPattern: -1200)), (sustainVol, 1000), (sampleID, 3)]),
                Zone(gens: [(keyRange, range(36, 36)), (sampleID, 4)]),
            ]),
        ]
        let presets = [
            Item(name: "Grand", program: 0, zones: [Zone(gens: [(instrument, 0)])]),
            Item(name: "Layered pad", program: 1, zones: [
                Zone(gens: [(releaseVol, 1200)], mods: 2),                                // global zone
                Zone(gens: [(instrument, 1)]),
                Zone(gens: [(velRange, range(80, 127)), (instrument, 0)]),
            ]),
            Item(name: "Split", program: 25, zones: [
                Zone(gens: [(keyRange, range(0, 59)), (instrument, 0)]),
                Zone(gens: [(keyRange, range(60, 127)), (instrument, 1)]),
            ]),
            Item(name: "Variation", program: 1, bank: 8, zones: [Zone(gens: [(instrument, 1)])]),
            Item(name: "Standard kit", program: 0, bank: 128, zones: [Zone(gens: [(instrument, 2)])]),
            Item(name: "Empty", program: 7, zones: []),
        ]
        let samples = [
            Sample(name: "C4"), Sample(name: "Pad L", frames: 32, loop: true, type: 4, link: 2), Sample(name: "Pad R", frames: 32, loop: true, type: 2, link: 1),
            Sample(name: "Hat", frames: 8, root: 46), Sample(name: "Kick ogg", frames: 8, root: 36, type: 0x11),
        ]
        seeds.append(("gm-like.sf2", soundFont(presets: presets, instruments: instruments, samples: samples)))
        // The subset keeps the program named by the last byte: here 25, behind a trailing chunk.
        seeds.append(("pdta-first-trailing-chunk-25.sf2", soundFont(presets: presets, instruments: instruments, samples: samples,
                                                                     pdtaFirst: true, tail: riffChunk("junk", [1, 2, 3, 25]))))
        seeds.append(("program-1-kept.sf2", soundFont(presets: presets, instruments: instruments, samples: samples, tail: riffChunk("pad ", [1]))))

        // Broken ones: FluidSynth loads them whole or refuses them; Spinet's readers must not trap.
        let body = pdta(presets: presets, instruments: instruments, samples: samples)
        seeds.append(("pdta-size-past-end.sf2", soundFont(presets: [], instruments: [], samples: samples, pdtaBody: body + [0, 0, 0, 0]).dropLast(4) + []))
        var outOfRange = presets
        outOfRange[2].zones[1].gens[1].1 = 9                                           // instrument 9 of 3
        seeds.append(("instrument-out-of-range.sf2", soundFont(presets: outOfRange, instruments: instruments, samples: samples)))
        var badBag = body
        badBag[8 + 24] = 0xFF                                                          // first preset's bag index
        seeds.append(("bag-index-backwards.sf2", soundFont(presets: [], instruments: [], samples: samples, pdtaBody: badBag)))
        var odd = body
        odd[4] = odd[4] &+ 1                                                           // phdr one byte longer
        seeds.append(("odd-sub-chunk.sf2", soundFont(presets: [], instruments: [], samples: samples, pdtaBody: odd)))
        seeds.append(("riff-size-zero.sf2", soundFont(presets: presets, instruments: instruments, samples: samples, riffSize: 0)))
        seeds.append(("header-only.sf2", Array(one.prefix(12))))
        return seeds
    }
}

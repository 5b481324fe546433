import SpinetEngine
import SpinetMIDI
import SpinetRig
import SpinetSoundFont
import SpinetTestSupport
import Testing

private let bundledFont = SpinetCommand.repositoryRoot.appendingPathComponent("SoundFonts/sf_GMbank.sf2").path

/// The file player driven as `LiveSession` drives it, on one thread: a step,
/// then a period rendered, again and again.
@Suite("FilePlayer")
struct FilePlayerTests {
    /// An organ note held for `seconds` (no decay: sound means the note is on).
    static func organ(key: UInt8, seconds: Int) throws -> MIDIFile {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        w.addTrack([(0, .message(.programChange(channel: 0, program: 19))),
                    (0, .message(.controlChange(channel: 0, controller: 91, value: 0))),
                    (0, .message(.controlChange(channel: 0, controller: 93, value: 0))),
                    (0, .message(.noteOn(channel: 0, key: key, velocity: 100))),
                    (Int64(960 * seconds), .message(.noteOff(channel: 0, key: key, velocity: 0)))])
        return try MIDIFile(bytes: w.bytes())
    }

    final class Rig {
        let graph: EngineGraph
        let player: FilePlayer
        let period = 256
        var notices: [String] = []
        private var left: [Float], right: [Float]

        init(_ files: [MIDIFile], loop: Bool = false) throws {
            var settings = GraphSettings()
            settings.soundFont.fluidEffects = false
            let unit = try SoundFontUnit(fonts: [bundledFont], sampleRate: 48000, channels: 16, options: settings.soundFont)
            graph = try GraphBuilder.live(settings, soundFont: unit, inputCapacities: [64, 64, 16384])
            graph.engine.prepare(sampleRate: 48000, maxFrames: period)
            player = FilePlayer(items: files.enumerated().map { FilePlayer.Item(name: "f\($0.offset).mid", file: $0.element) },
                                loop: loop, queueIndex: 2)
            left = Array(repeating: 0, count: period)
            right = left
        }

        /// Runs `seconds`; returns the peak of each 0.1 s, and whether the player is still going.
        @discardableResult
        func run(_ seconds: Double) -> (peaks: [Float], going: Bool) {
            var peaks: [Float] = []
            var peak: Float = 0, frames = 0
            for _ in 0..<Int(seconds * 48000) / period {
                if !player.step(graph: graph, now: graph.engine.frameTime, periodFrames: period) { return (peaks, false) }
                notices += player.takeNotices()
                left.withUnsafeMutableBufferPointer { l in
                    right.withUnsafeMutableBufferPointer { r in
                        graph.engine.render(frames: period, left: l.baseAddress!, right: r.baseAddress!, events: UnsafeBufferPointer(start: nil, count: 0))
                    }
                }
                peak = max(peak, left.reduce(0) { max($0, abs($1)) })
                frames += period
                if frames >= 4800 { peaks.append(peak); peak = 0; frames = 0 }
            }
            return (peaks, true)
        }
    }

    @Test func playsEachFileAfterTheOneBeforeAndEnds() throws {
        let rig = try Rig([Self.organ(key: 60, seconds: 1), Self.organ(key: 67, seconds: 1)])
        let r = rig.run(10)
        #expect(!r.going, "the player ends after its last file")
        #expect(rig.notices == ["playing f0.mid (0:01)", "playing f1.mid (0:01)"])
        // sound, silence (the first file's end), sound
        let loud = r.peaks.map { $0 > 0.01 }
        let changes = zip(loud, loud.dropFirst()).filter { $0 != $1 }.count
        #expect(changes >= 3, "\(loud)")
    }

    @Test func pauseReleasesTheNotesAndResumeGoesOnWithTheState() throws {
        let rig = try Rig([Self.organ(key: 60, seconds: 4)])
        rig.run(1)
        #expect(rig.player.status?.hasPrefix("f0.mid 0:0") == true)
        rig.player.perform(.togglePause)
        let paused = rig.run(1.5)
        #expect(rig.player.status?.hasPrefix("paused f0.mid") == true, "\(rig.player.status ?? "")")
        #expect((paused.peaks.last ?? 1) < 1e-4, "silent while paused: \(paused.peaks)")
        rig.player.perform(.togglePause)
        let resumed = rig.run(1)
        // the organ program is chased: the note is not struck again (it was
        // struck before the position), so it stays silent until the file ends
        #expect(resumed.peaks.allSatisfy { $0 < 1e-4 }, "\(resumed.peaks)")
        #expect(rig.player.status?.hasPrefix("f0.mid 0:0") == true)
    }

    @Test func nextPreviousSeekAndQuit() throws {
        let rig = try Rig([Self.organ(key: 60, seconds: 8), Self.organ(key: 67, seconds: 8)])
        rig.run(0.5)
        rig.player.perform(.next)
        rig.run(0.5)
        #expect(rig.notices.last == "playing f1.mid (0:08)")
        #expect(rig.player.currentIndex == 1)
        rig.player.perform(.seek(by: 5))
        rig.run(0.3)
        #expect(rig.player.positionSeconds(now: rig.graph.engine.frameTime) > 5)
        // more than 3 s in: previous starts the file again
        rig.player.perform(.previous)
        rig.run(0.3)
        #expect(rig.player.currentIndex == 1 && rig.player.positionSeconds(now: rig.graph.engine.frameTime) < 1)
        rig.player.perform(.previous)
        rig.run(0.3)
        #expect(rig.player.currentIndex == 0)
        rig.player.perform(.quit)
        #expect(!rig.run(0.1).going)
    }

    /// A `.kar` file's words show in the status line as they are sung.
    @Test func karaokeWordsShowAsSung() throws {
        var w = MIDIFileWriter(format: 1, ticksPerQuarter: 480)
        w.addTrack([(0, .message(.noteOn(channel: 0, key: 60, velocity: 90))), (1920, .message(.noteOn(channel: 0, key: 60, velocity: 0)))])
        w.addTrack([(0, .text(type: 1, bytes: Array("@TTitle".utf8))), (0, .text(type: 1, bytes: Array("\\Twin".utf8))),
                    (480, .text(type: 1, bytes: Array("kle ".utf8))), (960, .text(type: 1, bytes: Array("/Lit".utf8)))])
        let rig = try Rig([try MIDIFile(bytes: w.bytes())])
        let player = FilePlayer(items: [FilePlayer.Item(name: "song.kar", file: try MIDIFile(bytes: w.bytes()))], loop: false, queueIndex: 2)
        let graph = rig.graph
        func run(_ seconds: Double) {
            for _ in 0..<Int(seconds * 48000 / 256) {
                _ = player.step(graph: graph, now: graph.engine.frameTime, periodFrames: 256)
                var l = [Float](repeating: 0, count: 256), r = l
                graph.engine.render(frames: 256, left: &l, right: &r, events: UnsafeBufferPointer(start: nil, count: 0))
            }
        }
        run(0.4)
        #expect(player.status?.hasSuffix(" | Twin") == true, "\(player.status ?? "")")
        run(0.5)
        #expect(player.status?.hasSuffix(" | Twinkle ") == true, "\(player.status ?? "")")
        run(0.5)
        #expect(player.status?.hasSuffix(" | Lit") == true, "\(player.status ?? "")")
        #expect(Lyrics.append("a\u{1B}b\n", to: "x") == "")
        #expect(Lyrics.append("\u{1B}[2Jb", to: "x") == "x[2Jb")
    }

    @Test func keysDecodeToCommands() {
        var keys = TransportKeys()
        #expect(keys.decode(Array(" npq".utf8)) == [.togglePause, .next, .previous, .quit])
        #expect(keys.decode([0x1B, 0x5B, 0x43, 0x1B, 0x5B, 0x44]) == [.seek(by: 5), .seek(by: -5)])
        // Shift: ESC [ 1 ; 2 C, split over two reads
        #expect(keys.decode([0x1B, 0x5B, 0x31]) == [])
        #expect(keys.decode([0x3B, 0x32, 0x43]) == [.seek(by: 30)])
        #expect(keys.decode([0x1B, 0x4F, 0x44]) == [.seek(by: -5)])
        #expect(keys.decode(Array("x".utf8)) == [])
    }
}

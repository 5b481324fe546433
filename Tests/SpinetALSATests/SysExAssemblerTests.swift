import Testing
@testable import SpinetALSA
import SpinetMIDI

/// SysEx split by ALSA into pieces (as a raw MIDI port delivers it), put
/// back together per source, with a size bound.
@Suite("SysExAssembler")
struct SysExAssemblerTests {
    let keyboard = SequencerAddress(client: 20, port: 0)
    let other = SequencerAddress(client: 24, port: 0)

    private func feed(_ a: inout SysExAssembler, _ bytes: [UInt8], from s: SequencerAddress,
                      into out: inout [[UInt8]]) -> SysExAssembler.Outcome {
        var got: [[UInt8]] = []
        let r = bytes.withUnsafeBufferPointer { b in a.add(b, from: s) { got.append(Array($0)) } }
        out += got
        return r
    }

    @Test func wholeMessageInOnePiece() {
        var a = SysExAssembler(maxBytes: 64)
        defer { a.deallocate() }
        var out: [[UInt8]] = []
        #expect(feed(&a, [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7], from: keyboard, into: &out) == .incomplete)
        #expect(out == [[0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]])
    }

    @Test func messageInThreePiecesIsReassembled() {
        var a = SysExAssembler(maxBytes: 1024)
        defer { a.deallocate() }
        var out: [[UInt8]] = []
        let message: [UInt8] = [0xF0] + (0..<600).map { UInt8($0 % 128) } + [0xF7]
        _ = feed(&a, Array(message[0..<256]), from: keyboard, into: &out)
        #expect(a.isPending(keyboard))
        _ = feed(&a, Array(message[256..<512]), from: keyboard, into: &out)
        #expect(out.isEmpty)
        _ = feed(&a, Array(message[512...]), from: keyboard, into: &out)
        #expect(out == [message])
        #expect(!a.isPending(keyboard))
    }

    @Test func piecesFromTwoSourcesInterleave() {
        var a = SysExAssembler(maxBytes: 64)
        defer { a.deallocate() }
        var out: [[UInt8]] = []
        _ = feed(&a, [0xF0, 0x01, 0x02], from: keyboard, into: &out)
        _ = feed(&a, [0xF0, 0x11], from: other, into: &out)
        _ = feed(&a, [0x03, 0xF7], from: keyboard, into: &out)
        _ = feed(&a, [0x12, 0xF7], from: other, into: &out)
        #expect(out == [[0xF0, 0x01, 0x02, 0x03, 0xF7], [0xF0, 0x11, 0x12, 0xF7]])
    }

    @Test func messageOverTheBoundIsDroppedAndReportedOnceWithItsSize() {
        var a = SysExAssembler(maxBytes: 8)
        defer { a.deallocate() }
        var out: [[UInt8]] = []
        #expect(feed(&a, [0xF0, 1, 2, 3, 4, 5], from: keyboard, into: &out) == .incomplete)
        #expect(feed(&a, [6, 7, 8, 9], from: keyboard, into: &out) == .incomplete)
        #expect(feed(&a, [10, 0xF7], from: keyboard, into: &out) == .tooLong(totalBytes: 12))
        #expect(out.isEmpty)
        // The next message passes again.
        _ = feed(&a, [0xF0, 1, 0xF7], from: keyboard, into: &out)
        #expect(out == [[0xF0, 1, 0xF7]])
        // Exactly at the bound passes; a whole piece over the bound does not.
        #expect(feed(&a, [0xF0, 1, 2, 3, 4, 5, 6, 0xF7], from: keyboard, into: &out) == .incomplete)
        #expect(out.count == 2)
        #expect(feed(&a, [0xF0, 1, 2, 3, 4, 5, 6, 7, 0xF7], from: keyboard, into: &out) == .tooLong(totalBytes: 9))
    }

    /// Sample dumps are real: with the default bound (64 KB, what the
    /// engine passes on) messages of any size, in 256-byte pieces as a raw
    /// MIDI port delivers them or in one piece, are dropped with their size,
    /// the memory used stays the fixed buffers, and the next message passes.
    @Test func messagesOfAnySizeOverTheDefaultBoundAreDropped() {
        var a = SysExAssembler()
        defer { a.deallocate() }
        #expect(a.maxBytes == 65536)
        for size in [65537, 70_000, 300_000, 2_000_000] {
            var out: [[UInt8]] = []
            var message = [UInt8](repeating: 0x55, count: size)
            message[0] = 0xF0
            message[size - 1] = 0xF7
            var last = SysExAssembler.Outcome.incomplete
            var at = 0
            while at < size {
                let end = min(at + 256, size)
                last = feed(&a, Array(message[at..<end]), from: keyboard, into: &out)
                at = end
            }
            #expect(last == .tooLong(totalBytes: size), "\(size) bytes in pieces")
            #expect(out.isEmpty)
            #expect(!a.isPending(keyboard))
            #expect(feed(&a, message, from: keyboard, into: &out) == .tooLong(totalBytes: size), "\(size) bytes whole")
            #expect(out.isEmpty)
            _ = feed(&a, [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7], from: keyboard, into: &out)
            #expect(out == [[0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]])
        }
    }

    @Test func strayPieceAndRestartAndInterruption() {
        var a = SysExAssembler(maxBytes: 64)
        defer { a.deallocate() }
        var out: [[UInt8]] = []
        #expect(feed(&a, [0x01, 0x02, 0xF7], from: keyboard, into: &out) == .stray)
        // A new F0 before the old message ended: the old one is abandoned.
        _ = feed(&a, [0xF0, 0x01], from: keyboard, into: &out)
        _ = feed(&a, [0xF0, 0x05, 0xF7], from: keyboard, into: &out)
        #expect(out == [[0xF0, 0x05, 0xF7]])
        #expect(a.abandoned == 1)
        // A channel message from the same source interrupts a SysEx, as on the wire.
        _ = feed(&a, [0xF0, 0x01], from: keyboard, into: &out)
        a.interrupt(keyboard)
        #expect(feed(&a, [0x02, 0xF7], from: keyboard, into: &out) == .stray)
        #expect(a.abandoned == 2)
    }

    /// A sender stuck in a SysEx (no F7, hundreds of KB): the buffer stays at
    /// its bound, nothing is passed on, and when a status byte finally cuts
    /// the message off its source and full size are there to report.
    @Test func endlessMessageCutOffIsAbandonedWithItsSize() {
        var a = SysExAssembler(maxBytes: 1024)
        defer { a.deallocate() }
        var out: [[UInt8]] = []
        let piece = [UInt8](repeating: 0x11, count: 256)
        _ = feed(&a, [0xF0] + piece.dropFirst(), from: keyboard, into: &out)
        for _ in 1..<1200 {     // 300 KB of data bytes
            #expect(feed(&a, piece, from: keyboard, into: &out) == .incomplete)
        }
        #expect(out.isEmpty)
        #expect(a.lastAbandoned == nil)
        a.interrupt(keyboard)                  // the note-on that follows
        #expect(a.abandoned == 1)
        #expect(a.lastAbandoned?.source == keyboard)
        #expect(a.lastAbandoned?.totalBytes == 1200 * 256)
        #expect(!a.isPending(keyboard))
        // A new F0 cutting off an unfinished one reports the old one's size.
        _ = feed(&a, [0xF0, 1, 2], from: other, into: &out)
        _ = feed(&a, [0xF0, 3, 0xF7], from: other, into: &out)
        #expect(a.lastAbandoned?.source == other)
        #expect(a.lastAbandoned?.totalBytes == 3)
        #expect(out == [[0xF0, 3, 0xF7]])
        // Then messages pass again.
        _ = feed(&a, [0xF0, 0x7E, 0xF7], from: keyboard, into: &out)
        #expect(out.last == [0xF0, 0x7E, 0xF7])
    }

    @Test func moreSourcesThanBuffersStealsTheOldest() {
        var a = SysExAssembler(maxBytes: 16, sources: 2)
        defer { a.deallocate() }
        var out: [[UInt8]] = []
        let third = SequencerAddress(client: 30, port: 0)
        _ = feed(&a, [0xF0, 1], from: keyboard, into: &out)
        _ = feed(&a, [0xF0, 2], from: other, into: &out)
        _ = feed(&a, [0xF0, 3], from: third, into: &out)
        #expect(!a.isPending(keyboard))
        _ = feed(&a, [0xF7], from: third, into: &out)
        _ = feed(&a, [0xF7], from: other, into: &out)
        #expect(out == [[0xF0, 3, 0xF7], [0xF0, 2, 0xF7]])
    }
}

import Testing
@testable import SpinetMIDI
import SpinetTestSupport

/// The parser's output, copied so it outlives the callback (also used by RegressionTests).
enum Got: Equatable {
    case message(MIDIMessage)
    case sysEx([UInt8])
    case tooLong(Int)
    case realtime(UInt8)

    init(_ output: MIDIByteParser.Output) {
        switch output {
        case .message(let m): self = .message(m)
        case .sysEx(let buffer): self = .sysEx(Array(buffer))
        case .sysExTooLong(let n): self = .tooLong(n)
        case .realtime(let b): self = .realtime(b)
        }
    }
}

private func feed(_ parser: inout MIDIByteParser, _ bytes: [UInt8]) -> [Got] {
    var got: [Got] = []
    bytes.withUnsafeBufferPointer { buffer in parser.parse(buffer) { got.append(Got($0)) } }
    return got
}

private func parse(_ bytes: [UInt8], port: UInt8 = 0, maxSysExBytes: Int = 65536) -> [Got] {
    var parser = MIDIByteParser(port: port, maxSysExBytes: maxSysExBytes)
    return feed(&parser, bytes)
}

@Test func byteParserRunningStatus() {
    #expect(parse([0x90, 0x3C, 0x64, 0x3E, 0x50, 0x80, 0x3C, 0x40, 0x3E, 0x40, 0xC3, 0x05, 0x06, 0xE0, 0x00, 0x40]) == [
        .message(.noteOn(channel: 0, key: 60, velocity: 100)),
        .message(.noteOn(channel: 0, key: 62, velocity: 80)),
        .message(.noteOff(channel: 0, key: 60, velocity: 64)),
        .message(.noteOff(channel: 0, key: 62, velocity: 64)),
        .message(.programChange(channel: 3, program: 5)),
        .message(.programChange(channel: 3, program: 6)),
        .message(.pitchBend(channel: 0, value: 8192)),
    ])
}

@Test func byteParserPort() {
    #expect(parse([0x91, 0x3C, 0x64], port: 2) == [.message(.noteOn(channel: 33, key: 60, velocity: 100))])
    #expect(parse([0x9F, 0x3C, 0x64], port: 40) == [.message(.noteOn(channel: 255, key: 60, velocity: 100))])
}

@Test func byteParserInterleavedRealtime() {
    #expect(parse([0x90, 0xF8, 0x3C, 0xFE, 0x64, 0xF8, 0x3E, 0xFA, 0x50]) == [
        .realtime(0xF8), .realtime(0xFE),
        .message(.noteOn(channel: 0, key: 60, velocity: 100)),
        .realtime(0xF8), .realtime(0xFA),
        .message(.noteOn(channel: 0, key: 62, velocity: 80)),
    ])
    // Inside a SysEx, and System Reset (FF) in the middle of a message.
    #expect(parse([0xF0, 0x7E, 0xF8, 0x7F, 0x09, 0xFC, 0x01, 0xF7, 0xB0, 0x07, 0xFF, 0x64]) == [
        .realtime(0xF8), .realtime(0xFC),
        .sysEx([0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]),
        .message(.systemReset),
        .message(.controlChange(channel: 0, controller: 7, value: 100)),
    ])
}

@Test func byteParserSplitSysEx() {
    var parser = MIDIByteParser()
    let message: [UInt8] = [0xF0, 0x43, 0x10, 0x4C, 0x00, 0x00, 0x7E, 0x00, 0xF7]
    #expect(feed(&parser, Array(message[0..<2])).isEmpty)
    #expect(feed(&parser, Array(message[2..<5])).isEmpty)
    #expect(feed(&parser, [0xF8] + Array(message[5..<8])) == [.realtime(0xF8)])
    #expect(feed(&parser, Array(message[8...]) + [0x90, 0x3C]) == [.sysEx(message)])
    #expect(feed(&parser, [0x64]) == [.message(.noteOn(channel: 0, key: 60, velocity: 100))])
}

@Test func byteParserOversizeSysEx() {
    var parser = MIDIByteParser(maxSysExBytes: 8)
    // Exactly 8 bytes with F0 and F7: kept.
    #expect(feed(&parser, [0xF0, 1, 2, 3, 4, 5, 6, 0xF7]) == [.sysEx([0xF0, 1, 2, 3, 4, 5, 6, 0xF7])])
    // 9 bytes: dropped, reported once at its F7.
    #expect(feed(&parser, [0xF0, 1, 2, 3, 4, 5, 6, 7]).isEmpty)
    #expect(feed(&parser, [0xF7]) == [.tooLong(9)])
    // A long one interrupted by a status byte is reported then; the message after it is intact.
    #expect(feed(&parser, [0xF0] + [UInt8](repeating: 0x11, count: 10_000) + [0x90, 0x3C, 0x64]) == [
        .tooLong(10_001), .message(.noteOn(channel: 0, key: 60, velocity: 100)),
    ])
    // The buffer is still usable.
    #expect(feed(&parser, [0xF0, 0x01, 0xF7]) == [.sysEx([0xF0, 0x01, 0xF7])])
    // A short SysEx interrupted by a status byte is discarded without a report.
    #expect(feed(&parser, [0xF0, 0x01, 0xC0, 0x05]) == [.message(.programChange(channel: 0, program: 5))])
}

@Test func byteParserSystemCommonAndStrayBytes() {
    #expect(parse([
        0x90, 0x3C, 0x64,
        0xF2, 0x10, 0x20,    // song position: cancels running status, 2 data bytes skipped
        0x3C, 0x64,          // stray: no running status
        0xF1, 0x05,          // MTC quarter frame, 1 data byte
        0xF3, 0x01,          // song select
        0xF6, 0x01,          // tune request, no data: the 0x01 is stray
        0xF7, 0x01,          // stray EOX
        0xC0, 0x05,
    ]) == [
        .message(.noteOn(channel: 0, key: 60, velocity: 100)),
        .message(.programChange(channel: 0, program: 5)),
    ])
}

@Test func byteParserStatusInsideMessageDiscardsIt() {
    #expect(parse([0x90, 0x3C, 0xB0, 0x07, 0x64, 0xE0, 0xD0, 0x40]) == [
        .message(.controlChange(channel: 0, controller: 7, value: 100)),
        .message(.channelPressure(channel: 0, pressure: 64)),
    ])
}

/// Hundreds of thousands of seeded random bytes (biased towards status bytes so
/// every path is taken): nothing traps, the outputs are well formed, and
/// feeding the stream in random pieces gives the same outputs as byte by byte.
@Test func byteParserRandomBytes() {
    var rng = SplitMix64(seed: 0xB17E5)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(300_000)
    for _ in 0..<300_000 {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0: bytes.append(UInt8.random(in: 0x80...0xFF, using: &rng))
        case 1: bytes.append([0xF0, 0xF7, 0xF8, 0xFF].randomElement(using: &rng) ?? 0xF0)
        default: bytes.append(UInt8.random(in: 0...0x7F, using: &rng))
        }
    }
    let maxSysEx = 16
    var whole = MIDIByteParser(port: 3, maxSysExBytes: maxSysEx)
    var counts = [0, 0, 0, 0]
    var outputs: [Got] = []
    for b in bytes {
        whole.parse(b) { output in
            let got = Got(output)
            outputs.append(got)
            switch got {
            case .message(let m):
                counts[0] += 1
                if let c = m.channel { #expect(c >= 48 && c < 64) }
                #expect(m.bytes.dropFirst().allSatisfy { $0 < 0x80 })
            case .sysEx(let s):
                counts[1] += 1
                #expect(s.count >= 2 && s.count <= maxSysEx && s.first == 0xF0 && s.last == 0xF7)
                #expect(s.dropFirst().dropLast().allSatisfy { $0 < 0x80 })
            case .tooLong(let n):
                counts[2] += 1
                #expect(n > maxSysEx)
            case .realtime(let r):
                counts[3] += 1
                #expect(r >= 0xF8 && r < 0xFF)
            }
        }
    }
    #expect(counts.allSatisfy { $0 > 50 }, "\(counts)")

    var pieces = MIDIByteParser(port: 3, maxSysExBytes: maxSysEx)
    var piecewise: [Got] = []
    var i = 0
    while i < bytes.count {
        let n = min(Int.random(in: 1...700, using: &rng), bytes.count - i)
        piecewise += feed(&pieces, Array(bytes[i..<(i + n)]))
        i += n
    }
    #expect(piecewise == outputs)
}

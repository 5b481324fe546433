// libFuzzer target for the live MIDI byte parser (SpinetMIDI/MIDIByteParser.swift).
//
// Built by scripts/fuzz.sh against the SpinetMIDI module (compiled under
// -sanitize=fuzzer,address with -enable-testing, for its internals).
//
// Input layout: byte 0 picks the port, byte 1 the SysEx limit, byte 2 how the
// stream is cut into packets; the rest is the byte stream. Each input checks
// what the parser promises, and a failed promise is a crash:
// - `parse` allocates nothing (counted on this thread through the sanitizer's
//   malloc hook), whatever the bytes;
// - the output does not depend on how the stream is cut into packets
//   (all at once, byte by byte, and in the input's packet size agree);
// - messages are on the parser's port; SysEx is F0 ... F7 with 7-bit data in
//   between and fits the limit; a dropped SysEx was longer than the limit;
// - every real-time byte (F8...FF) comes out once, at once.

import Glibc
@testable import SpinetMIDI

// MARK: Counting allocations on this thread

nonisolated(unsafe) private var counting = false
nonisolated(unsafe) private var countingThread = pthread_t()
nonisolated(unsafe) private var allocations = 0

@_silgen_name("__sanitizer_install_malloc_and_free_hooks")
private func installMallocAndFreeHooks(
    _ malloc: @convention(c) (UnsafeRawPointer?, Int) -> Void,
    _ free: @convention(c) (UnsafeRawPointer?) -> Void) -> CInt

nonisolated(unsafe) private var hooksInstalled = false

private func countAllocations(_ body: () -> Void) -> Int {
    if !hooksInstalled {
        hooksInstalled = true
        _ = installMallocAndFreeHooks({ _, _ in
            if counting && pthread_equal(pthread_self(), countingThread) != 0 { allocations += 1 }
        }, { _ in })
    }
    allocations = 0
    countingThread = pthread_self()
    counting = true
    body()
    counting = false
    return allocations
}

// MARK: Recording output without allocating

/// One output of the parser, as plain numbers (SysEx by length and checksum).
private struct Record: Equatable {
    var kind: UInt8      // 1 message, 2 SysEx, 3 SysEx too long, 4 real-time
    var a: Int
    var b: Int
    var c: UInt64
}

private struct Recorder {
    /// The parser emits at most one output per byte.
    let capacity: Int
    let records: UnsafeMutablePointer<Record>
    var count = 0
    init(capacity: Int) {
        self.capacity = capacity
        records = .allocate(capacity: capacity)
    }
    var problem: StaticString? = nil

    mutating func add(_ output: MIDIByteParser.Output, port: Int, maxSysEx: Int) {
        var r = Record(kind: 0, a: 0, b: 0, c: 0)
        switch output {
        case .message(let m):
            r.kind = 1
            if let ch = m.channel, Int(ch) / 16 != port { problem = "message on another port" }
        case .sysEx(let s):
            r.kind = 2
            r.a = s.count
            if s.count < 2 || s.first != 0xF0 || s.last != 0xF7 { problem = "SysEx not F0 ... F7" }
            if s.count > maxSysEx { problem = "SysEx longer than the limit" }
            var h: UInt64 = 0xCBF2_9CE4_8422_2325
            for (i, x) in s.enumerated() {
                if i > 0 && i < s.count - 1 && x >= 0x80 { problem = "status byte inside a SysEx" }
                h = (h ^ UInt64(x)) &* 0x100_0000_01B3
            }
            r.c = h
        case .sysExTooLong(let total):
            r.kind = 3
            r.a = total
            if total <= maxSysEx { problem = "SysEx dropped though it fit the limit" }
        case .realtime(let byte):
            r.kind = 4
            r.a = Int(byte)
            if byte < 0xF8 || byte == 0xFF { problem = "real-time output for a byte that is not real-time" }
        }
        if case .message(let m) = output {
            switch m {
            case .noteOff(let c, let k, let v), .noteOn(let c, let k, let v), .polyPressure(let c, let k, let v),
                 .controlChange(let c, let k, let v):
                r.a = Int(c) << 16 | Int(k) << 8 | Int(v)
                if k > 127 || v > 127 { problem = "data byte above 127" }
            case .programChange(let c, let p), .channelPressure(let c, let p):
                r.a = Int(c) << 16 | Int(p)
                if p > 127 { problem = "data byte above 127" }
            case .pitchBend(let c, let v):
                r.a = Int(c) << 16 | Int(v)
                if v > 16383 { problem = "pitch bend above 16383" }
            case .systemReset:
                r.a = -1
            }
        }
        if count < capacity { records[count] = r }
        count += 1
    }

    func same(as other: Recorder) -> Bool {
        guard count == other.count else { return false }
        for i in 0..<min(count, capacity) where records[i] != other.records[i] { return false }
        return true
    }
}

// MARK: The target

@_cdecl("LLVMFuzzerTestOneInput")
public func byteParserFuzzInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 3 else { return 0 }
    let port = Int(min(data[0], 15))
    let limits = [0, 1, 2, 3, 5, 16, 64, 65536]
    let maxSysEx = limits[Int(data[1]) % limits.count]
    let packet = Int(data[2]) % 17 + 1
    let stream = UnsafeBufferPointer(start: data + 3, count: size - 3)

    // 1. All at once, counting allocations inside `parse` (recording allocates nothing).
    var checked = Recorder(capacity: stream.count + 1)
    defer { checked.records.deallocate() }
    var parser = MIDIByteParser(port: UInt8(data[0]), maxSysExBytes: maxSysEx)
    let counted = countAllocations {
        parser.parse(stream) { checked.add($0, port: port, maxSysEx: maxSysEx) }
    }
    if counted != 0 { fatalError("MIDIByteParser.parse allocated \(counted) times") }
    if let p = checked.problem { fatalError("\(p)") }

    // 2. Byte by byte.
    var single = Recorder(capacity: stream.count + 1)
    defer { single.records.deallocate() }
    var p2 = MIDIByteParser(port: UInt8(data[0]), maxSysExBytes: maxSysEx)
    for b in stream { p2.parse(b) { single.add($0, port: port, maxSysEx: maxSysEx) } }
    if !single.same(as: checked) { fatalError("byte-by-byte output differs from all-at-once output") }

    // 3. In packets of the input's size.
    var packets = Recorder(capacity: stream.count + 1)
    defer { packets.records.deallocate() }
    var p3 = MIDIByteParser(port: UInt8(data[0]), maxSysExBytes: maxSysEx)
    var start = 0
    while start < stream.count {
        let end = min(start + packet, stream.count)
        p3.parse(UnsafeBufferPointer(rebasing: stream[start..<end])) { packets.add($0, port: port, maxSysEx: maxSysEx) }
        start = end
    }
    if !packets.same(as: checked) { fatalError("packet output differs from all-at-once output") }

    // 4. Real-time bytes: each one out exactly once.
    var realtimeIn = 0, realtimeOut = 0
    for b in stream where b >= 0xF8 { realtimeIn += 1 }
    if checked.count > stream.count { fatalError("\(checked.count) outputs for \(stream.count) bytes") }
    for i in 0..<checked.count {
        let r = checked.records[i]
        if r.kind == 4 || (r.kind == 1 && r.a == -1) { realtimeOut += 1 }
    }
    if realtimeIn != realtimeOut {
        fatalError("\(realtimeIn) real-time bytes in, \(realtimeOut) out")
    }
    return 0
}

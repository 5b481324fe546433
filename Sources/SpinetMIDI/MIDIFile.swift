#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A Standard MIDI File (SMF), read completely into memory.
///
/// The reader is strict where a mistake would change the music (it throws a
/// `MIDIFileError` that names the byte offset) and tolerant where real files are
/// known to be sloppy but the intent is clear (it records a `MIDIFileWarning` and
/// goes on). It never traps and never hangs on any input, runs in time linear in
/// the file size, and never allocates from a count or length that the file merely
/// declares: capacity is reserved only for bytes that are actually present.
///
/// Tracks are numbered from 0 in messages, like `tracks[n]`.
public struct MIDIFile: Sendable {
    /// How ticks relate to time (the third word of the MThd header).
    public enum Division: Sendable, Equatable {
        /// Metrical time: ticks per quarter note (> 0); the tempo map gives seconds.
        case ticksPerQuarter(Int)
        /// Absolute time: `framesPerSecond` is 24, 25, 29 (meaning 29.97 drop-frame,
        /// 30000/1001) or 30; tempo events do not affect timing.
        case smpte(framesPerSecond: Int, ticksPerFrame: Int)
    }

    /// 0 (one track), 1 (simultaneous tracks) or 2 (independent sequences).
    /// Unknown formats in the file are read as 1, with a warning.
    public var format: Int
    public var division: Division
    public var tracks: [Track]
    /// Tolerated oddities, in file order. A damaged file can have one per event,
    /// so at most 1000 are kept; a last warning then says how many more there were.
    public var warnings: [MIDIFileWarning]

    /// A file built in memory (for example by a generator).
    public init(format: Int, division: Division, tracks: [Track], warnings: [MIDIFileWarning] = []) {
        self.format = format
        self.division = division
        self.tracks = tracks
        self.warnings = warnings
    }

    /// Parses the bytes of a Standard MIDI File, or of a RIFF MIDI (RMID) file
    /// that wraps one in its "data" chunk.
    public init(bytes: [UInt8]) throws(MIDIFileError) {
        var reader = MIDIFileReader(bytes: bytes)
        self = try reader.read()
    }

    /// The largest MIDI file Spinet reads: 256 MB. Real files are rarely over
    /// a few MB (a long sample dump a few dozen); a larger input is almost
    /// certainly not a MIDI file, and reading it whole would take its size in
    /// memory several times over.
    public static let maxFileBytes = 256 << 20

    /// Reads and parses the file at `path`. A file that cannot be read gives a
    /// `MIDIFileError` at offset 0 whose reason is "cannot read file: " and the
    /// system's explanation. At most `maxFileBytes` are read, from a regular
    /// file or from a pipe or device alike, and the first bytes are checked
    /// for a MIDI header before the rest is read.
    public init(path: String) throws(MIDIFileError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw MIDIFileError(offset: 0, reason: "cannot read file: " + String(cString: strerror(errno)))
        }
        defer { close(fd) }
        try self.init(fileDescriptor: fd)
    }

    /// Reads and parses a MIDI file from an open descriptor (a file, a pipe,
    /// standard input), with the bounds of `init(path:)`. The descriptor is
    /// left open.
    public init(fileDescriptor fd: Int32) throws(MIDIFileError) {
        let bytes = try Self.readBounded(fd, limit: Self.maxFileBytes)
        try self.init(bytes: bytes)
    }

    /// Reads with read(2) rather than Foundation so the error can carry the
    /// system's own words (errno), and so that pipes and devices work too.
    /// Refuses, before reading further, a start that is neither "MThd" nor
    /// "RIFF", and anything longer than `limit` bytes (a regular file by its
    /// size, a stream once it passes the limit), so /dev/zero, a 3 GB file
    /// or an endless pipe cost at most `limit` bytes and never hang.
    static func readBounded(_ fd: Int32, limit: Int) throws(MIDIFileError) -> [UInt8] {
        func failure() -> MIDIFileError {
            MIDIFileError(offset: 0, reason: "cannot read file: " + String(cString: strerror(errno)))
        }
        func tooLarge(_ size: Int?) -> MIDIFileError {
            let what = size.map { "\($0) bytes long" } ?? "longer than \(limit) bytes"
            return MIDIFileError(offset: limit, reason: "the input is \(what); Spinet reads MIDI files of at most \(limit >> 20) MB, so this is not one it can play")
        }
        var st = stat()
        var knownSize: Int?
        if fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG {
            knownSize = Int(st.st_size)
        }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var checkedHeader = false
        while true {
            // Read the header alone first, then in chunks up to one byte past the limit.
            let want = checkedHeader ? min(chunk.count, limit + 1 - result.count) : 4 - result.count
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, want) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure()
            }
            if n == 0 { break }
            // A stream grows the array by doubling; near the limit, grow it to
            // the limit at once rather than to twice the limit.
            if result.count + n > result.capacity && result.capacity >= limit / 2 { result.reserveCapacity(limit + 1) }
            result.append(contentsOf: chunk[0..<n])
            if !checkedHeader && result.count >= 4 {
                checkedHeader = true
                let tag = Array(result[0..<4])
                guard tag == Array("MThd".utf8) || tag == Array("RIFF".utf8) else {
                    // The reader words this error; the rest of the input is never read.
                    return result
                }
                if let knownSize, knownSize > limit { throw tooLarge(knownSize) }
                if let knownSize { result.reserveCapacity(knownSize) }
            }
            if result.count > limit { throw tooLarge(knownSize) }
        }
        return result
    }
}

/// One MTrk chunk: its events with absolute ticks, in file order (ticks never decrease).
public struct Track: Sendable, Equatable {
    public var events: [TrackEvent]
    public init(events: [TrackEvent]) { self.events = events }
}

/// One event of a track at an absolute tick.
public struct TrackEvent: Sendable, Equatable {
    public var tick: Int64
    public var kind: Kind

    public enum Kind: Sendable, Equatable {
        /// A channel message. Its channel is `port * 16 + channel`, where the port
        /// comes from the last MIDI Port meta event (FF 21 01 pp) earlier in the
        /// same track (0 if none). Note-on with velocity 0 is kept as it is in the
        /// file; consumers call `normalized`.
        case message(MIDIMessage)
        /// One complete SysEx message, F0 ... F7, reassembled from an F0 packet
        /// and its F7 continuation packets. Its tick is that of the packet that
        /// completed it, since a device acts on SysEx when the F7 arrives.
        case sysEx([UInt8])
        case tempo(microsecondsPerQuarter: Int)
        case timeSignature(numerator: Int, denominatorPower: Int, clocksPerClick: Int, thirtySecondsPerQuarter: Int)
        case keySignature(sharps: Int, minor: Bool)
        /// Meta events 01...0F (text, copyright, track name, lyric, marker, ...).
        case text(type: UInt8, bytes: [UInt8])
        case endOfTrack
        /// Every other meta event, including MIDI Port (21) and malformed tempo,
        /// time or key signatures (kept so nothing is lost; a warning says why).
        case otherMeta(type: UInt8, bytes: [UInt8])
    }

    public init(tick: Int64, kind: Kind) {
        self.tick = tick
        self.kind = kind
    }
}

/// Why a file could not be read, and where.
public struct MIDIFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset in the whole file of the offending byte (for truncation: the
    /// offset where the missing bytes should have been).
    public var offset: Int
    /// Lower-case plain words: what is wrong and, where it helps, what it means.
    public var reason: String
    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }
    public var description: String { "byte \(offset): \(reason)" }
}

/// A tolerated oddity: the file was read, but not exactly as written.
public struct MIDIFileWarning: Sendable, Equatable, CustomStringConvertible {
    public var offset: Int
    public var message: String
    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }
    public var description: String { "byte \(offset): \(message)" }
}

// MARK: - Reader

/// The parsing state for one file. Offsets are always offsets in the whole
/// byte array, also inside a RIFF wrapper, so every error points at a real byte.
struct MIDIFileReader {
    /// A damaged file could produce a warning per byte; past this many only a count is kept.
    static let maxWarnings = 1000

    let bytes: [UInt8]
    private var warnings: [MIDIFileWarning] = []
    private var suppressedWarnings = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    private mutating func warn(_ offset: Int, _ message: String) {
        if warnings.count < Self.maxWarnings {
            warnings.append(MIDIFileWarning(offset: offset, message: message))
        } else {
            suppressedWarnings &+= 1
        }
    }

    private func fail(_ offset: Int, _ reason: String) -> MIDIFileError {
        MIDIFileError(offset: offset, reason: reason)
    }

    private func u16(_ at: Int) -> Int { Int(bytes[at]) << 8 | Int(bytes[at + 1]) }
    private func u32(_ at: Int) -> Int {
        Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
    }
    private func u32le(_ at: Int) -> Int {
        Int(bytes[at + 3]) << 24 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at])
    }
    private func matches(_ at: Int, _ tag: String) -> Bool {
        let t = Array(tag.utf8)
        return at >= 0 && at + t.count <= bytes.count && bytes[at..<(at + t.count)].elementsEqual(t)
    }
    /// A chunk tag for messages: printable ASCII as is, anything else as hex.
    private func tagName(_ at: Int) -> String {
        let t = bytes[at..<(at + 4)]
        if t.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            return "\"" + String(decoding: t, as: UTF8.self) + "\""
        }
        return t.map { hex($0) }.joined(separator: " ")
    }

    mutating func read() throws(MIDIFileError) -> MIDIFile {
        let size = bytes.count
        guard size > 0 else { throw fail(0, "empty file (0 bytes)") }
        var file: MIDIFile
        if matches(0, "RIFF") {
            let (start, end) = try riffDataChunk()
            file = try readSMF(from: start, to: end)
        } else {
            file = try readSMF(from: 0, to: size)
        }
        if suppressedWarnings > 0 {
            warnings.append(MIDIFileWarning(offset: size, message: "\(counted(suppressedWarnings, "more warning")) not shown"))
        }
        file.warnings = warnings
        return file
    }

    /// RIFF MIDI: "RIFF" size "RMID", then chunks; the SMF is the "data" chunk.
    /// The RIFF size field is not trusted (it is often wrong); the chunks are
    /// walked up to the end of the file.
    private mutating func riffDataChunk() throws(MIDIFileError) -> (Int, Int) {
        let size = bytes.count
        guard size >= 12 else {
            throw fail(size, "the file ends inside the RIFF header (\(size) of 12 bytes): the file is truncated")
        }
        guard matches(8, "RMID") else {
            throw fail(8, "RIFF file of type \(tagName(8)), not RIFF MIDI (\"RMID\"): this is not a MIDI file")
        }
        var pos = 12
        while size - pos >= 8 {
            let length = u32le(pos + 4)
            if matches(pos, "data") {
                let start = pos + 8
                if length > size - start {
                    warn(pos + 4, "RMID data chunk length \(length) runs past the end of the file (size \(size)); reading what is there")
                    return (start, size)
                }
                return (start, start + length)
            }
            pos += 8 + length + (length & 1)  // RIFF chunks are padded to even length
        }
        throw fail(12, "RIFF MIDI (RMID) file without a \"data\" chunk: there is no MIDI data in it")
    }

    private mutating func readSMF(from base: Int, to end: Int) throws(MIDIFileError) -> MIDIFile {
        let size = bytes.count
        let mthd = Array("MThd".utf8)
        let present = min(4, end - base)
        guard bytes[base..<(base + present)].elementsEqual(mthd[0..<present]) else {
            throw fail(base, "not a Standard MIDI File (no MThd header)")
        }
        guard end - base >= 14 else {
            throw fail(end, "the file ends inside the MThd header (\(end - base) of 14 bytes): the file is truncated")
        }
        let headerLength = u32(base + 4)
        guard headerLength >= 6 else {
            throw fail(base + 4, "MThd header length \(headerLength) is less than 6: the header is damaged")
        }
        guard headerLength <= end - base - 8 else {
            throw fail(base + 4, "MThd header length \(headerLength) runs past the end of the file (size \(size)): the file is truncated")
        }
        var format = u16(base + 8)
        if format > 2 {
            warn(base + 8, "unknown format \(format); reading it as format 1 (simultaneous tracks)")
            format = 1
        }
        if headerLength > 6 {
            warn(base + 14, "MThd header is \(headerLength) bytes long; all but its first 6 are ignored")
        }
        let declaredTracks = u16(base + 10)

        let divisionWord = u16(base + 12)
        let division: MIDIFile.Division
        if divisionWord & 0x8000 != 0 {
            // SMPTE: the high byte is minus the frame rate, as a signed byte.
            let fps = -Int(Int8(bitPattern: UInt8(divisionWord >> 8)))
            guard [24, 25, 29, 30].contains(fps) else {
                throw fail(base + 12, "SMPTE division with frame rate byte \(hex(UInt8(divisionWord >> 8))): only -24, -25, -29 and -30 frames per second exist")
            }
            let ticksPerFrame = divisionWord & 0xFF
            guard ticksPerFrame > 0 else {
                throw fail(base + 13, "SMPTE division with 0 ticks per frame: timing is undefined")
            }
            division = .smpte(framesPerSecond: fps, ticksPerFrame: ticksPerFrame)
        } else {
            guard divisionWord > 0 else {
                throw fail(base + 12, "division is 0 ticks per quarter note: timing is undefined")
            }
            division = .ticksPerQuarter(divisionWord)
        }

        var tracks: [Track] = []
        var pos = base + 8 + headerLength
        while pos < end {
            guard end - pos >= 8 else {
                warn(pos, "\(counted(end - pos, "stray byte")) at the end of the file ignored (too few for a chunk)")
                break
            }
            let length = u32(pos + 4)
            let isTrack = matches(pos, "MTrk")
            guard length <= end - pos - 8 else {
                let what = isTrack ? "track \(tracks.count)" : "chunk \(tagName(pos))"
                throw fail(pos + 4, "\(what) length \(length) runs past the end of the file (size \(size)): the file is truncated")
            }
            if isTrack {
                var parser = TrackParser(index: tracks.count, start: pos + 8, end: pos + 8 + length)
                tracks.append(try parser.parse(&self))
            } else {
                warn(pos, "unknown chunk \(tagName(pos)) (\(counted(length, "byte"))) skipped")
            }
            pos += 8 + length
        }
        if tracks.count != declaredTracks {
            warn(base + 10, "the header declares \(declaredTracks) tracks but the file has \(tracks.count); using the \(tracks.count) found")
        }
        return MIDIFile(format: format, division: division, tracks: tracks)
    }

    /// Parses one MTrk chunk's data, `bytes[start..<end]`.
    private struct TrackParser {
        let index: Int
        let start: Int
        let end: Int
        var pos: Int
        var tick: Int64 = 0
        /// The status byte that running status reuses; 0 when none is in effect.
        var runningStatus: UInt8 = 0
        /// The last channel status, kept across meta and SysEx events (which cancel
        /// running status) so a file that reuses it anyway can be read with a warning.
        var lastChannelStatus: UInt8 = 0
        var port: UInt8 = 0
        var events: [TrackEvent] = []
        /// A SysEx message whose F0 packet did not end with F7: continuation
        /// packets (F7) are appended until one ends with F7.
        var pendingSysEx: [UInt8]? = nil
        var pendingSysExTick: Int64 = 0
        var pendingSysExOffset = 0

        init(index: Int, start: Int, end: Int) {
            self.index = index
            self.start = start
            self.end = end
            self.pos = start
            // Reserve only for bytes that are present: the smallest event is 2 bytes.
            events.reserveCapacity((end - start) / 4)
        }

        mutating func parse(_ r: inout MIDIFileReader) throws(MIDIFileError) -> Track {
            var sawEndOfTrack = false
            while pos < end {
                let delta = try readVLQ(r, what: "delta time")
                tick = tick &+ Int64(delta)
                guard pos < end else {
                    throw r.fail(end, "track \(index) ends after a delta time, with no event: the track is damaged")
                }
                let first = r.bytes[pos]
                if pendingSysEx != nil && first != 0xF7 {
                    r.warn(pos, "the SysEx message at byte \(pendingSysExOffset) has no F7 at its end and is followed by another event; sending it with F7 added")
                    flushPendingSysEx()
                }
                let status: UInt8
                if first >= 0x80 {
                    status = first
                    pos += 1
                } else if runningStatus != 0 {
                    status = runningStatus
                } else if lastChannelStatus != 0 {
                    r.warn(pos, "running status used after a meta or SysEx event, which cancels it; assuming the previous status \(hex(lastChannelStatus))")
                    status = lastChannelStatus
                } else {
                    throw r.fail(pos, "running status with no preceding status byte: data byte \(hex(first)) where an event should start")
                }

                switch status {
                case 0x80...0xEF:
                    try channelMessage(status, &r)
                case 0xF0, 0xF7:
                    runningStatus = 0
                    try sysExPacket(status, &r)
                case 0xFF:
                    runningStatus = 0
                    if try metaEvent(&r) {
                        sawEndOfTrack = true
                        if pos < end {
                            r.warn(pos, "\(counted(end - pos, "byte")) after the end of track \(index) ignored")
                        }
                        pos = end
                    }
                default:
                    throw r.fail(pos - 1, "unexpected status byte \(hex(status)): only channel messages, SysEx (F0, F7) and meta events (FF) belong in a track")
                }
            }
            if pendingSysEx != nil {
                r.warn(end, "track \(index) ends inside the SysEx message at byte \(pendingSysExOffset) (no F7); sending it with F7 added")
                flushPendingSysEx()
            }
            if !sawEndOfTrack {
                r.warn(end, "track \(index) has no end of track event; it ends at its last event")
            }
            return Track(events: events)
        }

        /// A variable-length quantity: 7 bits per byte, top bit set on all but the
        /// last, at most 4 bytes (so at most 0x0FFFFFFF).
        mutating func readVLQ(_ r: MIDIFileReader, what: String) throws(MIDIFileError) -> Int {
            let vlqStart = pos
            var value = 0
            for _ in 0..<4 {
                guard pos < end else {
                    throw r.fail(end, "track \(index) ends inside a \(what): the track is damaged")
                }
                let b = r.bytes[pos]
                pos += 1
                value = value << 7 | Int(b & 0x7F)
                if b & 0x80 == 0 { return value }
            }
            throw r.fail(vlqStart, "\(what) is a variable-length quantity of more than 4 bytes: the track is damaged")
        }

        mutating func channelMessage(_ status: UInt8, _ r: inout MIDIFileReader) throws(MIDIFileError) {
            let count = MIDIMessage.dataLength(status: status)
            guard end - pos >= count else {
                throw r.fail(end, "track \(index) ends inside a channel message: the track is damaged")
            }
            var data: (UInt8, UInt8) = (0, 0)
            for i in 0..<count {
                var b = r.bytes[pos + i]
                if b >= 0x80 {
                    r.warn(pos + i, "data byte \(hex(b)) of a \(messageName(status)) message has the top bit set; using \(hex(b & 0x7F))")
                    b &= 0x7F
                }
                if i == 0 { data.0 = b } else { data.1 = b }
            }
            pos += count
            runningStatus = status
            lastChannelStatus = status
            if let message = MIDIMessage(status: status, data1: data.0, data2: data.1, port: port) {
                events.append(TrackEvent(tick: tick, kind: .message(message)))
            }
        }

        mutating func sysExPacket(_ status: UInt8, _ r: inout MIDIFileReader) throws(MIDIFileError) {
            let statusOffset = pos - 1
            let lengthOffset = pos
            let length = try readVLQ(r, what: "SysEx length")
            guard length <= end - pos else {
                throw r.fail(lengthOffset, "SysEx length \(length) runs past the end of track \(index) (\(counted(end - pos, "byte")) left): the track is damaged")
            }
            let data = r.bytes[pos..<(pos + length)]
            pos += length
            let complete = data.last == 0xF7
            if status == 0xF0 {
                var message: [UInt8] = [0xF0]
                message.append(contentsOf: data)
                if complete {
                    events.append(TrackEvent(tick: tick, kind: .sysEx(message)))
                } else {
                    pendingSysEx = message
                    pendingSysExTick = tick
                    pendingSysExOffset = statusOffset
                }
            } else if pendingSysEx != nil {
                pendingSysEx?.append(contentsOf: data)
                pendingSysExTick = tick
                if complete {
                    flushPendingSysEx()
                }
            }
            // An F7 packet with no SysEx pending is an "escape": raw bytes to send
            // as they are (song position, real-time, ...). A synth has no use for
            // them, and they are legal, so they are skipped without a warning.
        }

        mutating func flushPendingSysEx() {
            guard var message = pendingSysEx else { return }
            if message.last != 0xF7 { message.append(0xF7) }
            events.append(TrackEvent(tick: pendingSysExTick, kind: .sysEx(message)))
            pendingSysEx = nil
        }

        /// Returns true for End of Track.
        mutating func metaEvent(_ r: inout MIDIFileReader) throws(MIDIFileError) -> Bool {
            let statusOffset = pos - 1
            guard pos < end else {
                throw r.fail(end, "track \(index) ends inside a meta event: the track is damaged")
            }
            let type = r.bytes[pos]
            pos += 1
            let lengthOffset = pos
            let length = try readVLQ(r, what: "meta event length")
            guard length <= end - pos else {
                throw r.fail(lengthOffset, "meta event \(hex(type)) length \(length) runs past the end of track \(index) (\(counted(end - pos, "byte")) left): the track is damaged")
            }
            let data = Array(r.bytes[pos..<(pos + length)])
            pos += length

            func add(_ kind: TrackEvent.Kind) { events.append(TrackEvent(tick: tick, kind: kind)) }
            func malformed(_ name: String, _ expected: Int) {
                r.warn(statusOffset, "\(name) meta event with \(counted(length, "data byte")) instead of \(expected) ignored")
                add(.otherMeta(type: type, bytes: data))
            }

            switch type {
            case 0x2F:
                add(.endOfTrack)
                return true
            case 0x51:
                guard length == 3 else { malformed("tempo", 3); break }
                let microseconds = Int(data[0]) << 16 | Int(data[1]) << 8 | Int(data[2])
                if microseconds == 0 {
                    r.warn(statusOffset, "tempo of 0 microseconds per quarter note ignored")
                    add(.otherMeta(type: type, bytes: data))
                } else {
                    add(.tempo(microsecondsPerQuarter: microseconds))
                }
            case 0x58:
                guard length == 4 else { malformed("time signature", 4); break }
                add(.timeSignature(numerator: Int(data[0]), denominatorPower: Int(data[1]),
                                   clocksPerClick: Int(data[2]), thirtySecondsPerQuarter: Int(data[3])))
            case 0x59:
                guard length == 2 else { malformed("key signature", 2); break }
                var sharps = Int(Int8(bitPattern: data[0]))
                if sharps < -7 || sharps > 7 {
                    let clamped = min(7, max(-7, sharps))
                    r.warn(pos - 2, "key signature with \(abs(sharps)) \(sharps < 0 ? "flats" : "sharps") (at most 7 exist); using \(abs(clamped))")
                    sharps = clamped
                }
                if data[1] > 1 {
                    r.warn(pos - 1, "key signature mode byte \(data[1]) is neither 0 (major) nor 1 (minor); using minor")
                }
                add(.keySignature(sharps: sharps, minor: data[1] != 0))
            case 0x01...0x0F:
                add(.text(type: type, bytes: data))
            case 0x21:
                guard length == 1 else { malformed("MIDI port", 1); break }
                if data[0] > 15 {
                    r.warn(pos - 1, "MIDI port \(data[0]) is beyond the 16 ports (0...15) Spinet has; using port 15")
                }
                port = min(data[0], 15)
                add(.otherMeta(type: type, bytes: data))
            default:
                add(.otherMeta(type: type, bytes: data))
            }
            return false
        }

        func messageName(_ status: UInt8) -> String {
            switch status >> 4 {
            case 0x8: return "note-off"
            case 0x9: return "note-on"
            case 0xA: return "poly pressure"
            case 0xB: return "control change"
            case 0xC: return "program change"
            case 0xD: return "channel pressure"
            case 0xE: return "pitch bend"
            default: return "channel"
            }
        }
    }
}

/// "0xNN" in upper-case hex, for messages.
fileprivate func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0F)])
}

/// "1 byte", "2 bytes": messages read better with the right number.
fileprivate func counted(_ n: Int, _ noun: String) -> String {
    n == 1 ? "1 \(noun)" : "\(n) \(noun)s"
}

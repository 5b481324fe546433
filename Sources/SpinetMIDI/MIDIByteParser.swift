/// Turns a raw MIDI 1.0 byte stream (a raw MIDI device, a serial port, fuzz
/// input) into messages, one byte at a time.
///
/// It is made for the real-time path: the SysEx buffer is allocated in `init`,
/// and `parse` never allocates, locks or traps, whatever the bytes. Keep the
/// parser in one place and mutate it there: a copy would share the SysEx buffer,
/// and the first write after copying would allocate a new one.
///
/// What it does with the stream, following the MIDI 1.0 specification:
/// - Running status: data bytes after a channel message reuse its status.
/// - Real-time bytes F8...FE may come anywhere, even inside a message or a SysEx;
///   they are reported at once as `.realtime` and change no state. FF (System
///   Reset) is real-time too: it is reported as `.message(.systemReset)` and
///   also changes no parser state; resetting the synth is the consumer's job.
/// - System common F1...F6 cancel running status; their data bytes (F1: 1,
///   F2: 2, F3: 1, F6: 0) are skipped. Spinet has no use for them.
/// - A status byte in the middle of a message discards the partial message.
/// - SysEx is reported complete (F0 ... F7). One that another status byte
///   interrupts is discarded: without its F7 it is probably cut short. One
///   longer than `maxSysExBytes` (counting F0 and F7) is dropped and reported
///   once, as `.sysExTooLong`, when its F7 or another status byte arrives; only
///   the first `maxSysExBytes` bytes are ever stored.
/// - Stray data bytes with no status to apply to are ignored.
public struct MIDIByteParser {
    public enum Output {
        case message(MIDIMessage)
        /// A complete SysEx message, F0 ... F7; the buffer is valid only during the callback.
        case sysEx(UnsafeBufferPointer<UInt8>)
        /// A SysEx message longer than `maxSysExBytes` was dropped; `totalBytes`
        /// counts F0 and, if it arrived, F7.
        case sysExTooLong(totalBytes: Int)
        /// A real-time byte, F8...FE (FF is reported as `.message(.systemReset)`).
        case realtime(UInt8)
    }

    private let port: UInt8
    private let maxSysExBytes: Int
    /// Holds at most `maxSysExBytes` bytes; its capacity is reserved in `init`.
    private var sysExBuffer: ContiguousArray<UInt8>
    private var inSysEx = false
    /// Every byte of the current SysEx, including those not stored.
    private var sysExTotal = 0
    /// The channel status that data bytes apply to; 0 when none (no running status).
    private var status: UInt8 = 0
    private var dataNeeded = 0
    private var dataCount = 0
    private var data1: UInt8 = 0
    /// Data bytes of a system common message still to skip.
    private var skip = 0

    /// `port` (0...15; larger values are clamped) puts the messages on global
    /// channels port * 16 + channel.
    public init(port: UInt8 = 0, maxSysExBytes: Int = 65536) {
        self.port = min(port, 15)
        self.maxSysExBytes = max(maxSysExBytes, 0)
        sysExBuffer = []
        sysExBuffer.reserveCapacity(self.maxSysExBytes)
    }

    public mutating func parse(_ bytes: UnsafeBufferPointer<UInt8>, _ emit: (Output) -> Void) {
        for byte in bytes { parse(byte, emit) }
    }

    public mutating func parse(_ byte: UInt8, _ emit: (Output) -> Void) {
        if byte >= 0xF8 {
            emit(byte == 0xFF ? .message(.systemReset) : .realtime(byte))
            return
        }
        if byte < 0x80 {
            dataByte(byte, emit)
            return
        }
        // A status byte (other than real-time) ends whatever was in progress.
        if inSysEx {
            if byte == 0xF7 {
                finishSysEx(emit)
                return
            }
            abandonSysEx(emit)
        }
        dataCount = 0
        skip = 0
        switch byte {
        case 0x80...0xEF:
            status = byte
            dataNeeded = MIDIMessage.dataLength(status: byte)
        case 0xF0:
            status = 0
            inSysEx = true
            sysExBuffer.removeAll(keepingCapacity: true)
            sysExTotal = 1
            if maxSysExBytes > 0 { sysExBuffer.append(0xF0) }
        case 0xF1, 0xF3:
            status = 0
            skip = 1
        case 0xF2:
            status = 0
            skip = 2
        default:
            // F4, F5 (undefined), F6 (tune request) and a stray F7 carry no data.
            status = 0
        }
    }

    private mutating func dataByte(_ byte: UInt8, _ emit: (Output) -> Void) {
        if inSysEx {
            sysExTotal &+= 1
            if sysExBuffer.count < maxSysExBytes { sysExBuffer.append(byte) }
            return
        }
        if skip > 0 {
            skip -= 1
            return
        }
        guard status != 0 else { return }
        if dataCount == 0 && dataNeeded == 2 {
            data1 = byte
            dataCount = 1
            return
        }
        let message = dataNeeded == 2
            ? MIDIMessage(status: status, data1: data1, data2: byte, port: port)
            : MIDIMessage(status: status, data1: byte, data2: 0, port: port)
        dataCount = 0
        if let message { emit(.message(message)) }
    }

    private mutating func finishSysEx(_ emit: (Output) -> Void) {
        inSysEx = false
        sysExTotal &+= 1
        if sysExTotal <= maxSysExBytes {
            sysExBuffer.append(0xF7)
            sysExBuffer.withUnsafeBufferPointer { emit(.sysEx($0)) }
        } else {
            emit(.sysExTooLong(totalBytes: sysExTotal))
        }
        sysExBuffer.removeAll(keepingCapacity: true)
    }

    private mutating func abandonSysEx(_ emit: (Output) -> Void) {
        inSysEx = false
        if sysExTotal > maxSysExBytes { emit(.sysExTooLong(totalBytes: sysExTotal)) }
        sysExBuffer.removeAll(keepingCapacity: true)
    }
}

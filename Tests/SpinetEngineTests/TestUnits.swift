import SpinetEngine
import SpinetMIDI

/// A sample-exact test instrument: each note-on writes one impulse of height
/// velocity/127 (left) and key/127 (right) at the frame the engine delivers
/// it, so onsets can be read off the output exactly. It records what it
/// receives in preallocated storage, so it stays allocation-free.
final class ImpulseUnit: InstrumentUnit {
    let name = "impulse"
    private var pendingLeft: Float = 0
    private var pendingRight: Float = 0
    private(set) var received: UnsafeMutablePointer<MIDIMessage>
    private(set) var receivedCount = 0
    private(set) var sysExBytesReceived = 0
    private(set) var lastSysExFirstByte: UInt8 = 0
    private(set) var lastSysExLastByte: UInt8 = 0
    let capacity: Int
    var prepared = false

    init(capacity: Int = 1 << 16) {
        self.capacity = capacity
        received = .allocate(capacity: capacity)
        received.initialize(repeating: .systemReset, count: capacity)
    }

    deinit { received.deallocate() }

    func prepare(sampleRate: Double, maxFrames: Int, channels: Int) { prepared = true }

    func receive(_ message: MIDIMessage) {
        if receivedCount < capacity { received[receivedCount] = message }
        receivedCount += 1
        if case .noteOn(_, let key, let velocity) = message, velocity > 0 {
            pendingLeft += Float(velocity) / 127
            pendingRight += Float(key) / 127
        }
    }

    func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>) {
        sysExBytesReceived += message.count
        lastSysExFirstByte = message.first ?? 0
        lastSysExLastByte = message.last ?? 0
    }

    func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        guard frames > 0 else { return }
        left.update(repeating: 0, count: frames)
        right.update(repeating: 0, count: frames)
        left[0] = pendingLeft
        right[0] = pendingRight
        pendingLeft = 0
        pendingRight = 0
    }

    var activeVoices: Int { 0 }

    var messages: [MIDIMessage] { (0..<min(receivedCount, capacity)).map { received[$0] } }
}

/// A constant-level unit (DC at `level` on both sides), for gain and limiter tests.
final class ConstantUnit: InstrumentUnit {
    let name = "constant"
    var level: Float
    init(level: Float) { self.level = level }
    func prepare(sampleRate: Double, maxFrames: Int, channels: Int) {}
    func receive(_ message: MIDIMessage) {}
    func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>) {}
    func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        left.update(repeating: level, count: frames)
        right.update(repeating: level, count: frames)
    }
    var activeVoices: Int { 1 }
}

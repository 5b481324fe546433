import Synchronization

/// Messages raised on the render thread, carried to a reporting thread.
///
/// The render thread may not log (printing allocates, locks and makes system
/// calls), so it copies each message into one of a fixed number of fixed-size
/// slots; a non-real-time thread drains and prints them. A full ring drops
/// the message and counts it. Single producer (the render thread), single
/// consumer (the reporter).
public final class RealtimeLog: @unchecked Sendable {
    public static let slotBytes = 160
    private let slotCount: Int
    private let storage: FixedBuffer<UInt8>
    private let lengths: FixedBuffer<Int>
    private let head = Atomic<Int>(0)
    private let tail = Atomic<Int>(0)
    private let droppedCount = Atomic<Int>(0)

    public init(slots: Int = 64) {
        slotCount = slots
        storage = FixedBuffer(repeating: 0, count: slots * Self.slotBytes)
        lengths = FixedBuffer(repeating: 0, count: slots)
    }

    public var dropped: Int { droppedCount.load(ordering: .relaxed) }

    /// Losses the posted messages reported (the producer counts each one it
    /// knows to mean lost work, whether or not the message found a slot).
    public let losses = Atomic<Int>(0)

    /// Producer (render thread). Copies a NUL-terminated C string, truncated to a slot.
    public func post(_ message: UnsafePointer<CChar>) {
        let t = tail.load(ordering: .relaxed)
        if t &- head.load(ordering: .acquiring) >= slotCount {
            droppedCount.add(1, ordering: .relaxed)
            return
        }
        let slot = t % slotCount
        let dst = storage.pointer + slot * Self.slotBytes
        var n = 0
        while n < Self.slotBytes {
            let c = UInt8(bitPattern: message[n])
            if c == 0 { break }
            dst[n] = c
            n += 1
        }
        lengths[slot] = n
        tail.store(t &+ 1, ordering: .releasing)
    }

    /// Consumer (not the render thread). Removes and returns the waiting messages.
    public func drain() -> [String] {
        var out: [String] = []
        var h = head.load(ordering: .relaxed)
        let t = tail.load(ordering: .acquiring)
        while h != t {
            let slot = h % slotCount
            let buf = UnsafeBufferPointer(start: storage.pointer + slot * Self.slotBytes, count: lengths[slot])
            out.append(String(decoding: buf, as: UTF8.self))
            h &+= 1
        }
        head.store(h, ordering: .releasing)
        return out
    }
}

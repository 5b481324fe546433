import Synchronization

/// A single-producer single-consumer ring of stereo frames, allocated once:
/// the render thread copies each block in, a writer thread takes it out.
///
/// A full ring never blocks the render thread: the frames that do not fit
/// are counted as lost. Memory ordering as in `EventQueue`: the producer
/// fills the frames, then publishes the new tail (release); the consumer
/// reads the tail (acquire) before the frames and publishes its head
/// (release) before the producer reuses them.
public final class RecordRing: @unchecked Sendable {
    public let capacity: Int
    private let mask: Int
    private let left: UnsafeMutablePointer<Float>
    private let right: UnsafeMutablePointer<Float>
    private let head = Atomic<Int>(0)
    private let tail = Atomic<Int>(0)
    private let lost = Atomic<Int>(0)

    /// - Parameter capacity: frames, rounded up to a power of two.
    public init(capacity: Int) {
        var c = 1
        while c < max(capacity, 2) { c <<= 1 }
        self.capacity = c
        mask = c - 1
        left = .allocate(capacity: c)
        left.initialize(repeating: 0, count: c)
        right = .allocate(capacity: c)
        right.initialize(repeating: 0, count: c)
    }

    deinit {
        left.deallocate()
        right.deallocate()
    }

    /// Frames that did not fit (the writer fell behind).
    public var lostFrames: Int { lost.load(ordering: .relaxed) }

    /// Frames waiting for the writer.
    public var available: Int { tail.load(ordering: .acquiring) &- head.load(ordering: .acquiring) }

    /// Render thread. Copies as many of `frames` frames as fit; counts the
    /// rest as lost. Returns the frames copied.
    @discardableResult
    public func write(left l: UnsafePointer<Float>, right r: UnsafePointer<Float>, frames: Int) -> Int {
        let t = tail.load(ordering: .relaxed)
        let free = capacity - (t &- head.load(ordering: .acquiring))
        let n = min(frames, free)
        if n < frames { lost.add(frames - n, ordering: .relaxed) }
        guard n > 0 else { return 0 }
        let start = t & mask
        let first = min(n, capacity - start)
        (left + start).update(from: l, count: first)
        (right + start).update(from: r, count: first)
        if n > first {
            left.update(from: l + first, count: n - first)
            right.update(from: r + first, count: n - first)
        }
        tail.store(t &+ n, ordering: .releasing)
        return n
    }

    /// Writer thread. Moves up to `maxFrames` frames out; returns how many.
    public func read(left l: UnsafeMutablePointer<Float>, right r: UnsafeMutablePointer<Float>, maxFrames: Int) -> Int {
        let h = head.load(ordering: .relaxed)
        let n = min(maxFrames, tail.load(ordering: .acquiring) &- h)
        guard n > 0 else { return 0 }
        let start = h & mask
        let first = min(n, capacity - start)
        l.update(from: left + start, count: first)
        r.update(from: right + start, count: first)
        if n > first {
            (l + first).update(from: left, count: n - first)
            (r + first).update(from: right, count: n - first)
        }
        head.store(h &+ n, ordering: .releasing)
        return n
    }
}

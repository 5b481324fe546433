import Synchronization

/// An object built off the render thread (a graph, an instrument) handed to
/// it without a lock or an allocation, and the object it replaces handed
/// back, so that nothing is freed on the render thread.
///
/// Two atomic slots, each empty or holding one retained reference:
/// `pending` (control thread to render thread) and `retired` (render thread
/// back to the control thread, which releases it in `collect`). The render
/// thread takes an offer only once the object it last retired has been
/// collected, so it never has two to hand back.
public final class HandOver<Object: AnyObject>: @unchecked Sendable {
    private let pendingSlot = Atomic<UInt>(0)
    private let retiredSlot = Atomic<UInt>(0)

    public init() {}

    deinit {
        Self.release(pendingSlot.exchange(0, ordering: .acquiring))
        Self.release(retiredSlot.exchange(0, ordering: .acquiring))
    }

    private static func release(_ bits: UInt) {
        if bits != 0 { Unmanaged<Object>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release() }
    }

    private static func retained(_ object: Object) -> UInt {
        UInt(bitPattern: Unmanaged.passRetained(object).toOpaque())
    }

    // MARK: control thread

    /// Offers `object`; an earlier offer the render thread has not taken is released here.
    public func offer(_ object: Object) {
        Self.release(pendingSlot.exchange(Self.retained(object), ordering: .acquiringAndReleasing))
    }

    /// Offers `object` only when no offer is waiting; false (and nothing kept) otherwise.
    public func offerIfEmpty(_ object: Object) -> Bool {
        let bits = Self.retained(object)
        guard pendingSlot.compareExchange(expected: 0, desired: bits, ordering: .acquiringAndReleasing).exchanged else {
            Self.release(bits)
            return false
        }
        return true
    }

    /// Takes back an offer the render thread has not taken (it stopped rendering).
    public func withdraw() -> Object? {
        let bits = pendingSlot.exchange(0, ordering: .acquiring)
        guard bits != 0 else { return nil }
        return Unmanaged<Object>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeRetainedValue()
    }

    /// Whether an offer waits for the render thread.
    public var isPending: Bool { pendingSlot.load(ordering: .acquiring) != 0 }

    /// What the render thread handed back, with its reference now the
    /// caller's (to release elsewhere), if anything.
    public func takeBack() -> Object? {
        let bits = retiredSlot.exchange(0, ordering: .acquiring)
        guard bits != 0 else { return nil }
        return Unmanaged<Object>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeRetainedValue()
    }

    /// Releases what the render thread handed back; true when there was something.
    @discardableResult
    public func collect() -> Bool {
        let bits = retiredSlot.exchange(0, ordering: .acquiring)
        Self.release(bits)
        return bits != 0
    }

    // MARK: render thread

    /// The object offered, with its reference now the caller's, when one
    /// waits and the last retired one has been collected. Lock- and allocation-free.
    @inline(__always)
    public func take() -> Unmanaged<Object>? {
        // (a plain load first: most calls find nothing offered, and pay no exchange)
        guard pendingSlot.load(ordering: .relaxed) != 0, retiredSlot.load(ordering: .acquiring) == 0 else { return nil }
        let bits = pendingSlot.exchange(0, ordering: .acquiringAndReleasing)
        guard bits != 0 else { return nil }
        return Unmanaged<Object>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)
    }

    /// Hands `object` (and the caller's reference to it) back, to be released
    /// by `collect` off this thread. Call once per object `take` gave, or
    /// while the retired slot is known to be empty.
    @inline(__always)
    public func retire(_ object: Unmanaged<Object>) {
        Self.release(retiredSlot.exchange(UInt(bitPattern: object.toOpaque()), ordering: .acquiringAndReleasing))
    }
}

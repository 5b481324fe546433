/// A fixed-size buffer that owns its memory: allocated and initialized once
/// (off the render thread), freed when its owner goes away. It cannot be
/// copied, so two owners never share one buffer or free it twice, and no
/// hand-paired `allocate`/`deallocate` is needed.
///
/// Element access (the subscript, `pointer`) is unchecked, as a raw
/// pointer's, and allocates nothing: render code may use it.
public struct FixedBuffer<Element>: ~Copyable {
    /// The first element (valid while the buffer lives).
    public let pointer: UnsafeMutablePointer<Element>
    public let count: Int

    /// `count` elements, each `value`. Allocates: not on the render thread.
    public init(repeating value: Element, count: Int) {
        precondition(count >= 0)
        pointer = .allocate(capacity: max(count, 1))
        pointer.initialize(repeating: value, count: count)
        self.count = count
    }

    deinit {
        pointer.deinitialize(count: count)
        pointer.deallocate()
    }

    @inlinable public subscript(index: Int) -> Element {
        get { pointer[index] }
        nonmutating set { pointer[index] = newValue }
    }
}

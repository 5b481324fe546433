/// A fixed-size buffer that owns its memory: allocated and initialized once
/// (off the render thread), freed when its owner goes away. It cannot be
/// copied, so two owners never share one buffer or free it twice, and no
/// hand-paired `allocate`/`deallocate` is needed.
///
/// Element access (the subscript, `pointer`) is unchecked, as a raw
/// pointer's, and allocates nothing: render code may use it. Render loops
/// keep `pointer` in a local, as they would a raw pointer.
///
/// An owner that is itself noncopyable can reach its members only once it
/// is whole: its `init` fills a buffer it needs before then as a local,
/// through `pointer`, and moves it in.
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

    /// `count` elements, element `i` being `element(i)`. Allocates: not on
    /// the render thread.
    public init(count: Int, _ element: (Int) -> Element) {
        precondition(count >= 0)
        pointer = .allocate(capacity: max(count, 1))
        for i in 0..<count { (pointer + i).initialize(to: element(i)) }
        self.count = count
    }

    /// No elements (a placeholder until the real buffer is made).
    public init() {
        pointer = .allocate(capacity: 1)
        count = 0
    }

    deinit {
        pointer.deinitialize(count: count)
        pointer.deallocate()
    }

    /// Addressors, as a raw pointer's subscript has: an element is read,
    /// written or mutated in place (`buffer[i].advance()`), with no accessor
    /// coroutine (which may allocate in unoptimized builds).
    @inlinable public subscript(index: Int) -> Element {
        unsafeAddress { UnsafePointer(pointer + index) }
        nonmutating unsafeMutableAddress { pointer + index }
    }
}

/// The TPDF dither of 16-bit output: the difference of two uniforms in
/// [0, 1) (so (-1, 1) LSB) per sample, from a fixed-seed xorshift64*
/// generator, so that two renders of the same input are byte-identical.
///
/// The generator is one serial chain of shifts and exclusive ors, about
/// 4 ns a sample, and every file of a render (the mix and each stem) starts
/// from the same seed and writes the same blocks: their writers share one
/// `DitherNoise`, which computes each block's values once. A writer takes
/// the values that follow its own state when the last block computed began
/// at that state and had its length, and has them computed otherwise, so
/// sharing never changes what a file gets. Not thread-safe: the writers
/// that share one are written from one thread (a render's sink).
public final class DitherNoise {
    /// Where every file's sequence begins.
    public static let seed: UInt64 = 0x9E37_79B9_7F4A_7C15

    private var values: UnsafeMutablePointer<Float>
    private var capacity = 0
    private var count = 0
    private var before: UInt64 = 0
    private var after: UInt64 = 0

    public init() {
        values = .allocate(capacity: 1)
    }

    deinit { values.deallocate() }

    /// The `n` dither values (in LSB) that follow `state`, which is advanced
    /// past them. The pointer is valid until the next call.
    func next(_ n: Int, after state: inout UInt64) -> UnsafePointer<Float> {
        if n == count && state == before { state = after; return UnsafePointer(values) }
        if n > capacity {
            values.deallocate()
            capacity = max(n, 2 * capacity)
            values = .allocate(capacity: capacity)
        }
        var s = state
        for i in 0..<n {
            let a = Self.uniform(&s)
            values[i] = a - Self.uniform(&s)
        }
        before = state
        after = s
        count = n
        state = s
        return UnsafePointer(values)
    }

    /// Uniform in [0, 1) from the xorshift64* generator.
    @inline(__always) static func uniform(_ state: inout UInt64) -> Float {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        let r = state &* 0x2545_F491_4F6C_DD1D
        return Float(r >> 40) * (1.0 / 16_777_216.0)
    }
}

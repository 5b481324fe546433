#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Small numeric helpers shared by the effects (free functions, inlined).
enum DSPMath {
    /// Values below this (-400 dBFS) are set to exactly 0 where they are
    /// stored in a feedback path (delay lines, filter states). A decaying
    /// tail would otherwise pass through the subnormal range, where x86
    /// arithmetic is 10-100x slower (and Swift does not set flush-to-zero).
    /// With the flush a tail ends in true zeros, long before subnormals.
    static let flushThreshold: Float = 1e-20
    static let flushThresholdDouble: Double = 1e-30

    @inline(__always) static func flush(_ x: Float) -> Float {
        abs(x) < flushThreshold ? 0 : x
    }

    @inline(__always) static func flush(_ x: Double) -> Double {
        abs(x) < flushThresholdDouble ? 0 : x
    }

    /// 4-point, 3rd-order Hermite (Catmull-Rom) interpolation between y0 and
    /// y1 at fraction t; ym1 and y2 are the outer neighbours. Used for
    /// modulated delay reads: far flatter than linear interpolation (-1 dB
    /// worst case at fs/4, where linear loses 3 dB), which matters inside a
    /// feedback loop where the loss repeats on every pass.
    @inline(__always) static func hermite(_ ym1: Float, _ y0: Float, _ y1: Float, _ y2: Float, _ t: Float) -> Float {
        let c1 = 0.5 * (y1 - ym1)
        let c2 = ym1 - 2.5 * y0 + 2 * y1 - 0.5 * y2
        let c3 = 0.5 * (y2 - ym1) + 1.5 * (y0 - y1)
        return ((c3 * t + c2) * t + c1) * t + y0
    }

    /// Reads a power-of-two ring `buffer` (mask = capacity - 1) `delay`
    /// samples behind `writeIndex` (the slot about to be written), with
    /// Hermite interpolation. `delay` must be at least 2.
    @inline(__always) static func readInterpolated(_ buffer: UnsafeMutablePointer<Float>, mask: Int, writeIndex: Int, delay: Float) -> Float {
        let whole = Int(delay)
        let t = delay - Float(whole)
        let j = writeIndex &- whole
        return hermite(buffer[(j &+ 1) & mask], buffer[j & mask], buffer[(j &- 1) & mask], buffer[(j &- 2) & mask], t)
    }

    /// Smallest power of two >= n (n >= 1).
    static func powerOfTwo(atLeast n: Int) -> Int {
        var c = 1
        while c < n { c <<= 1 }
        return c
    }

    static func decibelsToGain(_ dB: Double) -> Double { pow(10, dB / 20) }

    /// Number of stored values that are subnormal (diagnostics; not render).
    static func subnormalCount<Value: BinaryFloatingPoint>(_ p: UnsafeMutablePointer<Value>, _ count: Int) -> Int {
        var n = 0
        var i = 0
        while i < count {
            if p[i].isSubnormal { n += 1 }
            i += 1
        }
        return n
    }

    /// Smallest prime >= n (n >= 2) that is not among `used[0..<usedCount]`.
    /// Trial division: a few thousand operations, no allocation, so it may
    /// run when a parameter changes on the render thread.
    static func prime(atLeast n: Int, excluding used: UnsafeMutablePointer<Int>, count usedCount: Int) -> Int {
        var candidate = max(2, n)
        while true {
            if isPrime(candidate) {
                var taken = false
                var k = 0
                while k < usedCount {
                    if used[k] == candidate { taken = true; break }
                    k += 1
                }
                if !taken { return candidate }
            }
            candidate += 1
        }
    }

    static func isPrime(_ n: Int) -> Bool {
        if n < 2 { return false }
        if n < 4 { return true }
        if n % 2 == 0 { return false }
        var d = 3
        while d * d <= n {
            if n % d == 0 { return false }
            d += 2
        }
        return true
    }

    /// sin(2π·turns) for an LFO (control rate), |turns| < 2^53: reduced to a
    /// quarter period and a polynomial, within 1e-11 of libm's `sin` and
    /// several times cheaper (the chorus calls it for every tap every
    /// control period).
    @inline(__always) static func sine(turns: Double) -> Double {
        var x = turns - Double(Int64(turns))            // (-1, 1)
        if x > 0.5 { x -= 1 } else if x < -0.5 { x += 1 }
        if x > 0.25 { x = 0.5 - x } else if x < -0.25 { x = -0.5 - x }
        return sinCos(2 * Double.pi * x).sin
    }

    /// A vector of four floats from `p` (any alignment).
    @inline(__always) static func load4(_ p: UnsafePointer<Float>) -> SIMD4<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self)
    }

    /// sin and cos of |x| <= π/4 on every lane, by their Taylor series to
    /// x^9 and x^10 (error below 2e-9, well inside Float precision).
    @inline(__always) static func sinCosOfSmallAngle(_ x: SIMD8<Double>) -> (sin: SIMD8<Double>, cos: SIMD8<Double>) {
        let x2 = x * x
        var s = SIMD8<Double>(repeating: 1.0 / 362_880)
        s = 1.0 / 5040 - x2 * s
        s = 1.0 / 120 - x2 * s
        s = 1.0 / 6 - x2 * s
        s = x - x * x2 * s
        var c = SIMD8<Double>(repeating: 1.0 / 3_628_800)
        c = 1.0 / 40320 - x2 * c
        c = 1.0 / 720 - x2 * c
        c = 1.0 / 24 - x2 * c
        c = 0.5 - x2 * c
        c = 1 - x2 * c
        return (s, c)
    }

    /// sin and cos of |x| <= π/2 by their Taylor series (to x^15 and x^16:
    /// error below 1e-11).
    @inline(__always) static func sinCos(_ x: Double) -> (sin: Double, cos: Double) {
        let x2 = x * x
        var s = 1.0 / 1_307_674_368_000                 // 1/15!
        s = 1.0 / 6_227_020_800 - x2 * s                // 1/13!
        s = 1.0 / 39_916_800 - x2 * s
        s = 1.0 / 362_880 - x2 * s
        s = 1.0 / 5040 - x2 * s
        s = 1.0 / 120 - x2 * s
        s = 1.0 / 6 - x2 * s
        s = x - x * x2 * s
        var c = 1.0 / 20_922_789_888_000                // 1/16!
        c = 1.0 / 87_178_291_200 - x2 * c               // 1/14!
        c = 1.0 / 479_001_600 - x2 * c
        c = 1.0 / 3_628_800 - x2 * c
        c = 1.0 / 40320 - x2 * c
        c = 1.0 / 720 - x2 * c
        c = 1.0 / 24 - x2 * c
        c = 0.5 - x2 * c
        c = 1 - x2 * c
        return (s, c)
    }
}

extension DSPMath {
    /// `flush` on every lane, in integer arithmetic on the bit patterns
    /// (those of non-negative floats are ordered like their values): the
    /// sign of |x| - threshold selects the lanes to clear. NaN is kept, as
    /// by the scalar version. (Written without SIMD comparisons, which the
    /// compiler does not turn into vector instructions.)
    @inline(__always) static func flush(_ x: SIMD16<Float>) -> SIMD16<Float> {
        let bits = unsafeBitCast(x, to: SIMD16<Int32>.self)
        let below = ((bits & 0x7FFF_FFFF) &- Int32(bitPattern: flushThreshold.bitPattern)) &>> 31   // -1 where |x| < threshold
        return unsafeBitCast(bits & ~below, to: SIMD16<Float>.self)
    }

    /// `flush` on every lane (see the SIMD16 version).
    @inline(__always) static func flush(_ x: SIMD4<Float>) -> SIMD4<Float> {
        let bits = unsafeBitCast(x, to: SIMD4<Int32>.self)
        let below = ((bits & 0x7FFF_FFFF) &- Int32(bitPattern: flushThreshold.bitPattern)) &>> 31
        return unsafeBitCast(bits & ~below, to: SIMD4<Float>.self)
    }
}

/// `count` zeroed floats from `calloc` (16-byte aligned), for long delay
/// lines: a large block comes straight from the kernel, already zero, so
/// its pages take no resident memory until the effect writes them (a delay
/// no channel sends to costs nothing). Owns the memory, as `FixedBuffer`
/// does: it cannot be copied, and frees it when its owner goes away.
struct SilentLine: ~Copyable {
    let pointer: UnsafeMutablePointer<Float>

    /// Allocates: not on the render thread.
    init(count: Int) {
        guard let raw = calloc(max(count, 1), MemoryLayout<Float>.stride) else {
            fatalError("out of memory allocating a \(count)-frame delay line")
        }
        pointer = raw.bindMemory(to: Float.self, capacity: max(count, 1))
    }

    deinit { free(pointer) }
}

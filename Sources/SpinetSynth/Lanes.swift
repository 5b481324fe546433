// Voice lanes: the synth renders voices in groups that share one SIMD
// register per parameter, one voice per lane. Everything here is render-
// thread math with no allocation.
//
// Only operations that compile to plain SSE2 instructions are used. Swift's
// generic float<->int SIMD conversions (`init(_:rounding:)`) and
// `pointwiseMin/Max` are lowered to per-lane library calls or branches, so
// rounding is done with the 1.5·2^23 "magic number" and limits with
// `replacing(with:where:)`.

/// One value per voice of a group.
typealias Lanes = FloatLanes
/// Oscillator phases: 32-bit fixed point, one cycle = 2^32, so the phase
/// wraps by itself and the frequency resolution is fs / 2^32 (10 µHz at 48 kHz).
typealias LaneBits = BitLanes
typealias LaneInts = IntLanes
typealias LaneMask = MaskLanes

/// Voices per group (one per SIMD lane).
let laneCount = 4

// Why these are four plain fields and not `SIMD4<Float>`: Swift's SIMD4
// operators reach LLVM as per-lane scalar code that the SLP vectorizer then
// re-vectorizes, and on this renderer it did so only in part (two-lane
// operations and lane shuffles in the filter loop). The same arithmetic on
// four plain fields comes out as whole 4-lane SSE instructions, as long as
// each hot loop sits in a function of its own (see `FilterBlock`). The
// renderer went from 13 to under 5 ns per voice-sample with these changes
// and a shorter filter recursion. `@_transparent` also makes debug builds
// inline the operators, so the tests run about ten times faster than with
// SIMD4 in debug. The operator names follow Swift's SIMD API (`.<`, `&+`,
// `replacing(with:where:)`).

/// Four floats, one per voice lane.
struct FloatLanes: Equatable {
    var l0: Float, l1: Float, l2: Float, l3: Float

    @_transparent init(_ a: Float, _ b: Float, _ c: Float, _ d: Float) { l0 = a; l1 = b; l2 = c; l3 = d }
    @_transparent init(repeating v: Float) { l0 = v; l1 = v; l2 = v; l3 = v }
    @_transparent init() { l0 = 0; l1 = 0; l2 = 0; l3 = 0 }

    subscript(lane: Int) -> Float {
        @_transparent get {
            switch lane & 3 {
            case 0: return l0
            case 1: return l1
            case 2: return l2
            default: return l3
            }
        }
        @_transparent set {
            switch lane & 3 {
            case 0: l0 = newValue
            case 1: l1 = newValue
            case 2: l2 = newValue
            default: l3 = newValue
            }
        }
    }

    @_transparent static func + (a: FloatLanes, b: FloatLanes) -> FloatLanes { FloatLanes(a.l0 + b.l0, a.l1 + b.l1, a.l2 + b.l2, a.l3 + b.l3) }
    @_transparent static func - (a: FloatLanes, b: FloatLanes) -> FloatLanes { FloatLanes(a.l0 - b.l0, a.l1 - b.l1, a.l2 - b.l2, a.l3 - b.l3) }
    @_transparent static func * (a: FloatLanes, b: FloatLanes) -> FloatLanes { FloatLanes(a.l0 * b.l0, a.l1 * b.l1, a.l2 * b.l2, a.l3 * b.l3) }
    @_transparent static func / (a: FloatLanes, b: FloatLanes) -> FloatLanes { FloatLanes(a.l0 / b.l0, a.l1 / b.l1, a.l2 / b.l2, a.l3 / b.l3) }
    @_transparent static prefix func - (a: FloatLanes) -> FloatLanes { FloatLanes(-a.l0, -a.l1, -a.l2, -a.l3) }
    @_transparent static func + (a: FloatLanes, b: Float) -> FloatLanes { a + FloatLanes(repeating: b) }
    @_transparent static func - (a: FloatLanes, b: Float) -> FloatLanes { a - FloatLanes(repeating: b) }
    @_transparent static func * (a: FloatLanes, b: Float) -> FloatLanes { a * FloatLanes(repeating: b) }
    @_transparent static func + (a: Float, b: FloatLanes) -> FloatLanes { FloatLanes(repeating: a) + b }
    @_transparent static func - (a: Float, b: FloatLanes) -> FloatLanes { FloatLanes(repeating: a) - b }
    @_transparent static func * (a: Float, b: FloatLanes) -> FloatLanes { FloatLanes(repeating: a) * b }
    @_transparent static func / (a: Float, b: FloatLanes) -> FloatLanes { FloatLanes(repeating: a) / b }
    @_transparent static func += (a: inout FloatLanes, b: FloatLanes) { a = a + b }
    @_transparent static func -= (a: inout FloatLanes, b: FloatLanes) { a = a - b }
    @_transparent static func *= (a: inout FloatLanes, b: FloatLanes) { a = a * b }

    // Comparisons make their masks arithmetically: a < b exactly when a - b
    // is negative (gradual underflow keeps a - b away from 0 when a != b),
    // and the sign bit, shifted arithmetically, is the mask. Written with
    // Bool results the compiler turned some of them into scalar compares and
    // branches. (-0 compares below +0 here, which nothing relies on.)
    @_transparent static func .< (a: FloatLanes, b: FloatLanes) -> MaskLanes { (a - b).negativeMask }
    @_transparent static func .> (a: FloatLanes, b: FloatLanes) -> MaskLanes { (b - a).negativeMask }
    @_transparent static func .>= (a: FloatLanes, b: FloatLanes) -> MaskLanes { !(a - b).negativeMask }
    @_transparent static func .< (a: FloatLanes, b: Float) -> MaskLanes { a .< FloatLanes(repeating: b) }
    @_transparent static func .> (a: FloatLanes, b: Float) -> MaskLanes { FloatLanes(repeating: b) .< a }
    @_transparent static func .>= (a: FloatLanes, b: Float) -> MaskLanes { a .>= FloatLanes(repeating: b) }
    /// Lanes that are exactly zero (either sign).
    @_transparent func zeroMask() -> MaskLanes {
        let magnitude = unsafeBitCast(self, to: BitLanes.self) & BitLanes(repeating: 0x7FFF_FFFF)
        return unsafeBitCast(magnitude, to: IntLanes.self).minusOne.negativeMask
    }
    @_transparent static func .!= (a: FloatLanes, b: Float) -> MaskLanes { !(a - FloatLanes(repeating: b)).zeroMask() }
    /// Lanes holding NaN.
    @_transparent func nanMask() -> MaskLanes {
        let magnitude = unsafeBitCast(unsafeBitCast(self, to: BitLanes.self) & BitLanes(repeating: 0x7FFF_FFFF), to: IntLanes.self)
        return (IntLanes(repeating: 0x7F80_0000) &- magnitude).negativeMask
    }
    /// Lanes whose sign bit is set.
    @_transparent var negativeMask: MaskLanes { unsafeBitCast(self, to: IntLanes.self).negativeMask }

    /// Lanes of `other` where `mask` is set, of `self` elsewhere (a bitwise blend).
    @_transparent func replacing(with other: FloatLanes, where mask: MaskLanes) -> FloatLanes {
        unsafeBitCast(unsafeBitCast(self, to: BitLanes.self).replacing(with: unsafeBitCast(other, to: BitLanes.self), where: mask),
                      to: FloatLanes.self)
    }
    @_transparent func replacing(with value: Float, where mask: MaskLanes) -> FloatLanes {
        replacing(with: FloatLanes(repeating: value), where: mask)
    }

    @_transparent func sum() -> Float { (l0 + l1) + (l2 + l3) }

    /// Lane-wise limit to `lower...upper` (NaN stays NaN).
    @_transparent func limited(_ lower: Float, _ upper: Float) -> FloatLanes {
        let lo = FloatLanes(repeating: lower), hi = FloatLanes(repeating: upper)
        return replacing(with: lo, where: self .< lo).replacing(with: hi, where: hi .< self)
    }

    /// Lane-wise absolute value (clears the sign bit).
    var absolute: FloatLanes {
        @_transparent get { unsafeBitCast(unsafeBitCast(self, to: BitLanes.self) & BitLanes(repeating: 0x7FFF_FFFF), to: FloatLanes.self) }
    }

    /// Lane-wise larger value.
    @_transparent func atLeast(_ other: FloatLanes) -> FloatLanes { replacing(with: other, where: self .< other) }
}

/// Four 32-bit unsigned integers (phases, bit patterns), wrapping arithmetic.
struct BitLanes: Equatable {
    var l0: UInt32, l1: UInt32, l2: UInt32, l3: UInt32

    @_transparent init(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32) { l0 = a; l1 = b; l2 = c; l3 = d }
    @_transparent init(repeating v: UInt32) { l0 = v; l1 = v; l2 = v; l3 = v }
    @_transparent init() { l0 = 0; l1 = 0; l2 = 0; l3 = 0 }

    subscript(lane: Int) -> UInt32 {
        @_transparent get {
            switch lane & 3 {
            case 0: return l0
            case 1: return l1
            case 2: return l2
            default: return l3
            }
        }
        @_transparent set {
            switch lane & 3 {
            case 0: l0 = newValue
            case 1: l1 = newValue
            case 2: l2 = newValue
            default: l3 = newValue
            }
        }
    }

    @_transparent static func &+ (a: BitLanes, b: BitLanes) -> BitLanes { BitLanes(a.l0 &+ b.l0, a.l1 &+ b.l1, a.l2 &+ b.l2, a.l3 &+ b.l3) }
    @_transparent static func &+= (a: inout BitLanes, b: BitLanes) { a = a &+ b }
    @_transparent static func & (a: BitLanes, b: BitLanes) -> BitLanes { BitLanes(a.l0 & b.l0, a.l1 & b.l1, a.l2 & b.l2, a.l3 & b.l3) }
    @_transparent static func | (a: BitLanes, b: BitLanes) -> BitLanes { BitLanes(a.l0 | b.l0, a.l1 | b.l1, a.l2 | b.l2, a.l3 | b.l3) }
    @_transparent static func &>> (a: BitLanes, s: UInt32) -> BitLanes { BitLanes(a.l0 &>> s, a.l1 &>> s, a.l2 &>> s, a.l3 &>> s) }
    @_transparent static func &<< (a: BitLanes, s: UInt32) -> BitLanes { BitLanes(a.l0 &<< s, a.l1 &<< s, a.l2 &<< s, a.l3 &<< s) }
    /// Lanes that are not zero: x | -x has its sign bit set exactly when x != 0.
    @_transparent func nonzeroMask() -> MaskLanes {
        let x = unsafeBitCast(self, to: IntLanes.self)
        return unsafeBitCast(unsafeBitCast(self | unsafeBitCast(IntLanes() &- x, to: BitLanes.self), to: IntLanes.self) &>> 31,
                             to: MaskLanes.self)
    }

    @_transparent func replacing(with other: BitLanes, where mask: MaskLanes) -> BitLanes {
        let m = unsafeBitCast(mask, to: BitLanes.self)
        return BitLanes((other.l0 & m.l0) | (l0 & ~m.l0), (other.l1 & m.l1) | (l1 & ~m.l1),
                        (other.l2 & m.l2) | (l2 & ~m.l2), (other.l3 & m.l3) | (l3 & ~m.l3))
    }
}

/// Four 32-bit signed integers (table offsets, exponents).
struct IntLanes: Equatable {
    var l0: Int32, l1: Int32, l2: Int32, l3: Int32

    @_transparent init(_ a: Int32, _ b: Int32, _ c: Int32, _ d: Int32) { l0 = a; l1 = b; l2 = c; l3 = d }
    @_transparent init(repeating v: Int32) { l0 = v; l1 = v; l2 = v; l3 = v }
    @_transparent init() { l0 = 0; l1 = 0; l2 = 0; l3 = 0 }

    subscript(lane: Int) -> Int32 {
        @_transparent get {
            switch lane & 3 {
            case 0: return l0
            case 1: return l1
            case 2: return l2
            default: return l3
            }
        }
        @_transparent set {
            switch lane & 3 {
            case 0: l0 = newValue
            case 1: l1 = newValue
            case 2: l2 = newValue
            default: l3 = newValue
            }
        }
    }

    @_transparent static func &+ (a: IntLanes, b: IntLanes) -> IntLanes { IntLanes(a.l0 &+ b.l0, a.l1 &+ b.l1, a.l2 &+ b.l2, a.l3 &+ b.l3) }
    @_transparent static func &- (a: IntLanes, b: IntLanes) -> IntLanes { IntLanes(a.l0 &- b.l0, a.l1 &- b.l1, a.l2 &- b.l2, a.l3 &- b.l3) }
    @_transparent static func &<< (a: IntLanes, s: Int32) -> IntLanes { IntLanes(a.l0 &<< s, a.l1 &<< s, a.l2 &<< s, a.l3 &<< s) }
    @_transparent static func &>> (a: IntLanes, s: Int32) -> IntLanes { IntLanes(a.l0 &>> s, a.l1 &>> s, a.l2 &>> s, a.l3 &>> s) }
    @_transparent var minusOne: IntLanes { self &- IntLanes(repeating: 1) }
    /// All ones in lanes below zero: the sign bit shifted arithmetically.
    @_transparent var negativeMask: MaskLanes { unsafeBitCast(self &>> 31, to: MaskLanes.self) }

    @_transparent func replacing(with other: IntLanes, where mask: MaskLanes) -> IntLanes {
        unsafeBitCast(unsafeBitCast(self, to: BitLanes.self).replacing(with: unsafeBitCast(other, to: BitLanes.self), where: mask),
                      to: IntLanes.self)
    }
}

/// Four lane masks: all ones (true) or all zeros (false), as SSE compares make them.
struct MaskLanes: Equatable {
    var l0: UInt32, l1: UInt32, l2: UInt32, l3: UInt32

    @_transparent init(_ a: Bool, _ b: Bool, _ c: Bool, _ d: Bool) {
        l0 = a ? ~0 : 0; l1 = b ? ~0 : 0; l2 = c ? ~0 : 0; l3 = d ? ~0 : 0
    }
    @_transparent init(bits a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32) { l0 = a; l1 = b; l2 = c; l3 = d }

    subscript(lane: Int) -> Bool {
        @_transparent get {
            switch lane & 3 {
            case 0: return l0 != 0
            case 1: return l1 != 0
            case 2: return l2 != 0
            default: return l3 != 0
            }
        }
    }

    @_transparent static func .& (a: MaskLanes, b: MaskLanes) -> MaskLanes { MaskLanes(bits: a.l0 & b.l0, a.l1 & b.l1, a.l2 & b.l2, a.l3 & b.l3) }
    @_transparent static func .| (a: MaskLanes, b: MaskLanes) -> MaskLanes { MaskLanes(bits: a.l0 | b.l0, a.l1 | b.l1, a.l2 | b.l2, a.l3 | b.l3) }
    @_transparent static prefix func ! (a: MaskLanes) -> MaskLanes { MaskLanes(bits: ~a.l0, ~a.l1, ~a.l2, ~a.l3) }
}

/// True if any lane of the mask is set.
@_transparent
func any(_ mask: MaskLanes) -> Bool { (mask.l0 | mask.l1 | mask.l2 | mask.l3) != 0 }

/// 2^x per lane, relative error below 2e-7, and exactly 1 for x = 0 (so an
/// unmodulated pitch stays exact). Split into round(x) and a fraction in
/// [-0.5, 0.5]; the fraction goes through the degree-6 Taylor series of
/// e^(f·ln 2), the integer part straight into the exponent bits.
@_transparent
func fastExp2(_ x: Lanes) -> Lanes {
    let cx = x.limited(-126, 126)
    let magic = Lanes(repeating: 12_582_912)          // 1.5 · 2^23
    let t = cx + magic
    let whole = t - magic
    let f = cx - whole
    let exponent = unsafeBitCast(t, to: LaneInts.self) &- LaneInts(repeating: 0x4B40_0000)
    let scale = unsafeBitCast((exponent &+ LaneInts(repeating: 127)) &<< 23, to: Lanes.self)
    var p = Lanes(repeating: 1.540_353_0e-4)
    p = p * f + 1.333_355_8e-3
    p = p * f + 9.618_129_1e-3
    p = p * f + 5.550_410_9e-2
    p = p * f + 2.402_265_1e-1
    p = p * f + 6.931_471_8e-1
    p = p * f + 1
    return p * scale
}

/// sin(2π·phase) for phase in [0, 1), error below 0.001: a parabola with one
/// refinement step. Used for LFOs, where that is far below audibility.
@_transparent
func fastSine(cycles phase: Lanes) -> Lanes {
    let t = phase - 0.5
    let y = 8 * t - 16 * t * t.absolute
    return -(y + 0.225 * (y * y.absolute - y))
}

/// The 1.5·2^23 rounding constant: adding it leaves round(x) in the low
/// mantissa bits (for |x| < 2^22), subtracting it again gives round(x) as a float.
let roundingMagic: Float = 12_582_912
let roundingMagicBits: UInt32 = 0x4B40_0000

/// Round to nearest (ties to even), valid for |x| < 2^22.
@_transparent
func rounded(_ x: Lanes) -> Lanes { (x + roundingMagic) - roundingMagic }

/// round(x) as integers, valid for |x| < 2^22.
@_transparent
func roundedInts(_ x: Lanes) -> LaneInts {
    unsafeBitCast(unsafeBitCast(x + roundingMagic, to: LaneBits.self), to: LaneInts.self) &- LaneInts(repeating: Int32(bitPattern: roundingMagicBits))
}

/// NaN lanes become `value` (x == x is false only for NaN).
@_transparent
func replacingNaN(_ x: Lanes, with value: Float) -> Lanes { x.replacing(with: value, where: x.nanMask()) }

/// round(x) as 32-bit two's-complement bit patterns, for |x| < 2^33:
/// phase increments and their per-sample steps. Split in a part of 2^11
/// units and a remainder so that both fit the 2^22 rounding range; exact
/// because a float of that size has no bits below 2^9.
@_transparent
func fixedPoint(_ x: Lanes) -> LaneBits {
    let high = rounded(x * (1 / 2048))
    let low = x - high * 2048
    let highInts = roundedInts(high), lowInts = roundedInts(low)
    return unsafeBitCast((highInts &<< 11) &+ lowInts, to: LaneBits.self)
}

/// Reads a band-limited table at each lane's phase with linear
/// interpolation. `base` is each lane's table offset in `table`; the top
/// `tableBits` of the phase index the table, the rest is the fraction.
/// Render thread.
@_transparent
func lookup(_ table: UnsafePointer<Float>, _ phase: LaneBits, _ base: LaneInts) -> Lanes {
    let index = unsafeBitCast(phase &>> UInt32(SampleRateTables.fractionBits), to: LaneInts.self) &+ base
    // The fraction's top 23 bits become the mantissa of a float in [1, 2).
    let mantissa = ((phase &<< UInt32(SampleRateTables.tableBits)) &>> 9)
        | LaneBits(repeating: 0x3F80_0000)
    let fraction = unsafeBitCast(mantissa, to: Lanes.self) - 1
    let p0 = table + Int(index.l0), p1 = table + Int(index.l1)
    let p2 = table + Int(index.l2), p3 = table + Int(index.l3)
    let a = Lanes(p0[0], p1[0], p2[0], p3[0])
    let b = Lanes(p0[1], p1[1], p2[1], p3[1])
    return a + (b - a) * fraction
}

import Foundation
import Testing
@testable import SpinetALSA
import SpinetHost

/// The record ring (render thread -> writer thread) and the conversion to
/// device sample formats.
@Suite("RecordRing")
struct RecordRingTests {
    private func ramp(_ start: Int, _ n: Int) -> ([Float], [Float]) {
        ((0..<n).map { Float(start + $0) }, (0..<n).map { -Float(start + $0) })
    }

    @Test func framesComeOutInOrderAcrossTheWrap() {
        let ring = RecordRing(capacity: 8)
        #expect(ring.capacity == 8)
        var l = [Float](repeating: 0, count: 8), r = [Float](repeating: 0, count: 8)
        var next = 0
        var expected = 0
        for _ in 0..<10 {
            let (a, b) = ramp(next, 5)
            #expect(ring.write(left: a, right: b, frames: 5) == 5)
            next += 5
            let n = ring.read(left: &l, right: &r, maxFrames: 8)
            #expect(n == 5)
            for i in 0..<n {
                #expect(l[i] == Float(expected))
                #expect(r[i] == -Float(expected))
                expected += 1
            }
        }
        #expect(ring.lostFrames == 0)
    }

    @Test func aFullRingCountsLostFramesAndNeverOverwrites() {
        let ring = RecordRing(capacity: 8)
        let (a, b) = ramp(0, 6)
        #expect(ring.write(left: a, right: b, frames: 6) == 6)
        #expect(ring.write(left: a, right: b, frames: 6) == 2)
        #expect(ring.lostFrames == 4)
        var l = [Float](repeating: 0, count: 8), r = [Float](repeating: 0, count: 8)
        #expect(ring.read(left: &l, right: &r, maxFrames: 8) == 8)
        #expect(Array(l[0..<8]) == [0, 1, 2, 3, 4, 5, 0, 1])
    }

    @Test func concurrentWriterAndReaderKeepEveryFrame() {
        let ring = RecordRing(capacity: 1024)
        let total = 200_000
        let writer = Thread {
            var l = [Float](repeating: 0, count: 64), r = [Float](repeating: 0, count: 64)
            var n = 0
            while n < total {
                let k = min(64, total - n)
                for i in 0..<k { l[i] = Float(n + i); r[i] = -Float(n + i) }
                var done = 0
                while done < k {
                    // Retry what did not fit (the test writer may wait; the render thread does not).
                    let w = l.withUnsafeBufferPointer { lb in r.withUnsafeBufferPointer { rb in
                        ring.write(left: lb.baseAddress! + done, right: rb.baseAddress! + done, frames: min(k - done, ring.capacity - ring.available))
                    } }
                    done += w
                }
                n += k
            }
        }
        writer.start()
        var l = [Float](repeating: 0, count: 256), r = [Float](repeating: 0, count: 256)
        var expected = 0
        let deadline = Date().addingTimeInterval(30)
        while expected < total && Date() < deadline {
            let n = ring.read(left: &l, right: &r, maxFrames: 256)
            for i in 0..<n {
                if l[i] != Float(expected) || r[i] != -Float(expected) {
                    Issue.record("frame \(expected): got \(l[i]), \(r[i])")
                    return
                }
                expected += 1
            }
        }
        #expect(expected == total)
        #expect(ring.lostFrames == 0)
    }
}

@Suite("SampleConverter")
struct SampleConverterTests {
    private func convert(_ format: DeviceSampleFormat, channels: Int = 2, _ left: [Float], _ right: [Float]) -> [UInt8] {
        var c = SampleConverter(format: format, channels: channels)
        var out = [UInt8](repeating: 0xAA, count: left.count * c.bytesPerFrame)
        out.withUnsafeMutableBytes { c.convert(left: left, right: right, frames: left.count, into: $0.baseAddress!) }
        return out
    }

    private func ints<T: FixedWidthInteger>(_ bytes: [UInt8], _: T.Type) -> [T] {
        bytes.withUnsafeBytes { Array($0.bindMemory(to: T.self)) }
    }

    @Test func floatIsInterleavedAndClamped() {
        let out = convert(.float32, [0.5, 2], [-0.25, .nan])
        let f = out.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(f == [0.5, -0.25, 1, 0])
    }

    @Test func int32AndInt24() {
        #expect(ints(convert(.int32, [1, -1], [0, 0.5]), Int32.self) == [2_147_483_647, 0, -2_147_483_647, 1_073_741_824])
        #expect(ints(convert(.int24, [1, -1], [0, 0.5]), Int32.self) == [8_388_607, 0, -8_388_607, 4_194_304])
    }

    @Test func packedInt24IsThreeLittleEndianBytes() {
        let out = convert(.int24Packed, [1], [-1])
        #expect(out == [0xFF, 0xFF, 0x7F, 0x01, 0x00, 0x80])
    }

    @Test func int16IsDitheredWithinOneStep() {
        let n = 1000
        let out = ints(convert(.int16, [Float](repeating: 0.25, count: n), [Float](repeating: 0, count: n)), Int16.self)
        let left = stride(from: 0, to: 2 * n, by: 2).map { Int(out[$0]) }
        let right = stride(from: 1, to: 2 * n, by: 2).map { Int(out[$0]) }
        #expect(left.allSatisfy { abs($0 - 8192) <= 1 }, "\(left.prefix(10))")
        #expect(right.allSatisfy { abs($0) <= 1 })
        #expect(abs((Double(left.reduce(0, +)) / Double(n)) - 8191.75) <= 0.1)
    }

    @Test func monoGetsTheSumAndExtraChannelsSilence() {
        let mono = convert(.float32, channels: 1, [0.5], [0.25]).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(mono == [0.375])
        let quad = convert(.float32, channels: 4, [0.5], [0.25]).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(quad == [0.5, 0.25, 0, 0])
    }
}

import Testing
import SpinetEngine
import SpinetTestSupport
import SpinetTestTraits

@Suite("HandOver: built off the render thread, swapped in, released off it")
struct HandOverTests {
    final class Thing { let n: Int; init(_ n: Int) { self.n = n } }

    @Test func theRenderThreadTakesOneOfferAndHandsTheOldOneBack() {
        let slots = HandOver<Thing>()
        weak var first: Thing?, second: Thing?
        var current: Unmanaged<Thing>?
        do {
            let a = Thing(1), b = Thing(2)
            first = a; second = b
            slots.offer(a)
            #expect(slots.isPending)
            current = slots.take()
            #expect(current?.takeUnretainedValue().n == 1)
            #expect(slots.take() == nil)
            slots.offer(b)
        }
        // the render thread swaps: b in, a back
        let next = slots.take()
        #expect(next?.takeUnretainedValue().n == 2)
        slots.retire(current!)
        current = next
        #expect(first != nil, "a is released by collect, off the render thread, not by retire")
        slots.offer(Thing(3))
        #expect(slots.take() == nil, "no second swap before the retired one is collected")
        #expect(slots.collect())
        #expect(first == nil)
        #expect(!slots.collect())
        #expect(slots.take()?.takeRetainedValue().n == 3)
        current?.release()
        #expect(second == nil)
    }

    @Test func aNewerOfferReplacesAnUntakenOneAndWithdrawGivesItBack() {
        let slots = HandOver<Thing>()
        weak var old: Thing?
        do { let t = Thing(1); old = t; slots.offer(t) }
        slots.offer(Thing(2))
        #expect(old == nil, "the untaken offer is released by the control thread")
        #expect(!slots.offerIfEmpty(Thing(3)))
        #expect(slots.withdraw()?.n == 2)
        #expect(slots.offerIfEmpty(Thing(4)))
        weak var left: Thing?
        do {
            let s2 = HandOver<Thing>()
            let t = Thing(5); left = t
            s2.offer(t)
        }
        #expect(left == nil, "what is in the slots is released with them")
    }

    @Test(.realtimeProbe) func takeAndRetireAllocateNothingAndTakeNoLock() {
        let slots = HandOver<Thing>()
        slots.offer(Thing(1))
        var current = slots.take()!
        func swap() {
            if let next = slots.take() {
                slots.retire(current)
                current = next
            }
        }
        slots.offer(Thing(2))
        swap()       // once before counting: the generic code's first run instantiates metadata
        slots.collect()
        slots.offer(Thing(3))
        let counts = RealtimeProbe.counts { swap() }
        #expect(current.takeUnretainedValue().n == 3)
        #expect(counts.allocations == 0 && counts.frees == 0 && counts.locks == 0, "\(counts)")
        slots.collect()
        current.release()
    }
}

import Testing
@testable import SpinetALSA
import SpinetMIDI

/// The tempo of a MIDI clock (24 ticks per quarter note), which the live
/// delay follows: exact for a steady clock, steady under arrival jitter,
/// quick to follow a tempo change, and starting over when the clock stops.
@Suite("MIDIClockTempo")
struct MIDIClockTempoTests {
    /// Feeds `beats` beats of ticks at `bpm` from `start` (ns), each tick
    /// displaced by `jitter(i)` ns; returns every tempo reported and the
    /// time after the last tick.
    private func feed(_ clock: inout MIDIClockTempo, bpm: Double, beats: Int, from start: Int64 = 1_000_000_000,
                      jitter: (Int) -> Int64 = { _ in 0 }) -> (reports: [Double], end: Int64) {
        let interval = 60e9 / bpm / 24
        var reports: [Double] = []
        for i in 0..<(beats * 24) {
            let t = start + Int64((Double(i) * interval).rounded()) + jitter(i)
            if let r = clock.tick(at: t) { reports.append(r) }
        }
        return (reports, start + Int64((Double(beats * 24) * interval).rounded()))
    }

    @Test func aSteadyClockGivesItsTempoAfterOneBeatAndThenStaysQuiet() {
        var clock = MIDIClockTempo()
        // the first 24 ticks measure nothing yet: a beat needs 25
        var none = MIDIClockTempo()
        #expect(feed(&none, bpm: 128, beats: 1).reports == [])
        let (reports, _) = feed(&clock, bpm: 128, beats: 8)
        #expect(reports.count == 1)
        #expect(abs(reports[0] - 128) <= 0.01)
        #expect(abs((clock.tempo ?? 0) - 128) <= 0.01)
    }

    /// Up to ±1 ms of arrival jitter on every tick (a busy system, no
    /// kernel time stamps): one or two reports over 16 beats, not a new
    /// tempo every tick, each within 0.5% of the true tempo.
    @Test func arrivalJitterIsAveragedOverTheBeat() {
        var clock = MIDIClockTempo()
        var state: UInt64 = 0x2545_F491_4F6C_DD1D   // a fixed sequence: the test is repeatable
        let jitter = (0..<(16 * 24)).map { _ -> Int64 in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int64(state >> 33) % 2_000_001 - 1_000_000
        }
        let (reports, _) = feed(&clock, bpm: 140, beats: 16) { jitter[$0] }
        #expect(reports.count >= 1)
        #expect(reports.count <= 2, "\(reports)")
        for r in reports { #expect(abs(r - 140) <= 0.7) }
    }

    /// The DAW goes from 120 to 90 bpm: followed within a beat (to 3%),
    /// only downwards, and to 0.5% once the long measurement holds only the
    /// new tempo.
    @Test func aTempoChangeIsFollowedWithinABeat() {
        var clock = MIDIClockTempo()
        let first = feed(&clock, bpm: 120, beats: 6)
        #expect(first.reports == [first.reports[0]])
        #expect(abs(first.reports[0] - 120) <= 0.01)
        let second = feed(&clock, bpm: 90, beats: 1, from: first.end)
        #expect(!second.reports.isEmpty)
        #expect(second.reports.allSatisfy { $0 < 120 && $0 >= 89.99 }, "\(second.reports)")
        #expect(abs((clock.tempo ?? 0) - 90) <= 2.7)
        let third = feed(&clock, bpm: 90, beats: 4, from: second.end)
        let all = second.reports + third.reports
        #expect(all == all.sorted(by: >), "\(all)")
        #expect(abs((clock.tempo ?? 0) - 90) <= 0.45)
    }

    /// A clock that stops and starts again later at another tempo: the
    /// pause is not measured as one long beat, and a new beat is needed.
    @Test func aPauseStartsANewMeasurement() {
        var clock = MIDIClockTempo()
        let first = feed(&clock, bpm: 100, beats: 2)
        let later = first.end + 3_000_000_000
        var partial = clock
        #expect(feed(&partial, bpm: 150, beats: 1, from: later).reports == [])   // 24 ticks: not yet
        let second = feed(&clock, bpm: 150, beats: 2, from: later)
        #expect(second.reports.count == 1)
        #expect(abs(second.reports[0] - 150) <= 0.01)
        // Start/Continue/Stop: the same
        clock.restart()
        #expect(clock.tick(at: later + 5_000_000_000) == nil)
    }

    /// A clock far outside 20-400 bpm is taken for a broken one.
    @Test func implausibleTempiAreNotReported() {
        var fast = MIDIClockTempo()
        #expect(feed(&fast, bpm: 1000, beats: 4).reports == [])
        var slow = MIDIClockTempo()
        #expect(feed(&slow, bpm: 10, beats: 4).reports == [])   // 0.25 s between ticks: under the gap
        #expect(fast.tempo == nil)
    }
}

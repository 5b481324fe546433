import SpinetMIDI
import SpinetRig
import SpinetSoundFont
import SpinetTestSupport
import Testing

private let bundledFont = SpinetCommand.repositoryRoot.appendingPathComponent("SoundFonts/sf_GMbank.sf2").path

/// A C major arpeggio on the piano, one note at a time, `seconds` long.
private func lightSong(seconds: Int) throws -> MIDISchedule {
    var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
    var events: [(tick: Int64, event: TrackEvent.Kind)] = []
    for i in 0..<(seconds * 2) {
        events.append((Int64(i * 480), .message(.noteOn(channel: 0, key: UInt8(60 + 4 * (i % 3)), velocity: 100))))
        events.append((Int64(i * 480 + 400), .message(.noteOff(channel: 0, key: UInt8(60 + 4 * (i % 3)), velocity: 0))))
    }
    w.addTrack(events)
    return try MIDIFile(bytes: w.bytes()).schedule(sampleRate: 48000)
}

@Suite("Render plan")
struct RenderPlanTests {
    @Test func theCountFollowsTheAverageVoicesAndTheTotalWork() {
        let rate = 48000, minute = Int64(60 * rate)
        func count(voices: Double, seconds: Double) -> Int {
            RenderPlan.partitionCount(work: Int64(voices * seconds * Double(rate)), musicFrames: Int64(seconds * Double(rate)), sampleRate: rate)
        }
        #expect(count(voices: 0, seconds: 60) == 1)
        #expect(count(voices: 7.9, seconds: 600) == 1)          // light: one player
        #expect(count(voices: 16, seconds: 60) == 2)
        #expect(count(voices: 60, seconds: 120) == 7)
        #expect(count(voices: 500, seconds: 600) == 16)          // never more than 16
        #expect(count(voices: 500, seconds: 2) == 16)
        #expect(count(voices: 200, seconds: 1) == 10)           // 200 voice-seconds: 20 each
        #expect(count(voices: 10, seconds: 1) == 1)             // short: not worth a second player
        #expect(RenderPlan.partitionCount(work: 5, musicFrames: 0, sampleRate: rate) == 1)
        // more work never means fewer partitions
        var last = 1
        for v in stride(from: 0.0, through: 200, by: 0.5) {
            let c = RenderPlan.partitionCount(work: Int64(v * Double(minute)), musicFrames: minute, sampleRate: rate)
            #expect(c >= last && c <= RenderPlan.maxPartitions)
            last = c
        }
    }

    @Test func aLightFileIsOnePartition() throws {
        let plan = GraphBuilder.plan(fonts: [bundledFont], schedule: try lightSong(seconds: 30))
        #expect(plan.partitions == 1)
        #expect(plan.groups[0].contains(ChannelPartition.Portion(channel: 0)))
        #expect(plan.work.count == 1 && plan.work[0] == plan.totalWork && plan.totalWork > 0)
        #expect(plan.speedup(cores: 16) == 1)
    }

    @Test func aDenseFileIsSplitOverSeveralPartitionsAndEveryHeavyChannelTakesTurns() throws {
        let schedule = try MIDIFile(bytes: denseSong(seconds: 6, channels: 3)).schedule(sampleRate: 48000)
        let plan = GraphBuilder.plan(fonts: [bundledFont], schedule: schedule)
        #expect(plan.partitions > 2 && plan.partitions <= RenderPlan.maxPartitions, "\(plan.partitions) partitions, \(plan.averageVoices) voices")
        // the same plan every time, and on any machine: nothing else goes in
        #expect(GraphBuilder.plan(fonts: [bundledFont], schedule: schedule) == plan)
        // each of the 3 channels is more than 1/P of the work: each takes turns on every partition
        for channel in 0..<3 {
            let shares = plan.groups.map { g in g.filter { $0.channel == channel } }
            #expect(shares.allSatisfy { $0.count == 1 && $0[0].share != .whole }, "channel \(channel + 1)")
        }
        // balanced: no partition has more than 1.5 times its share (a split
        // channel's home partition also plays every note of the keys of
        // exclusive classes, read from the drum kit too)
        let share = Double(plan.totalWork) / Double(plan.partitions)
        #expect(plan.work.allSatisfy { Double($0) < 1.5 * share }, "\(plan.work)")
        // a forced count is kept, a polyphony too large for many players limits it
        #expect(GraphBuilder.plan(fonts: [bundledFont], schedule: schedule, partitions: 2).partitions == 2)
        #expect(GraphBuilder.plan(fonts: [bundledFont], schedule: schedule, polyphony: 65535).partitions
                == VoiceMemory.mostPlayers(polyphony: 65535))
    }

    @Test func theSpeedupGrowsWithTheCoresAndNeverPassesThem() throws {
        let schedule = try MIDIFile(bytes: denseSong(seconds: 6, channels: 3)).schedule(sampleRate: 48000)
        let plan = GraphBuilder.plan(fonts: [bundledFont], schedule: schedule)
        var last = 1.0
        for cores in [1, 2, 4, 8, 16, 32] {
            let s = plan.speedup(cores: cores)
            #expect(s >= last - 1e-9 && s <= Double(cores) + 1e-9, "\(cores) cores: \(s)")
            last = s
        }
        #expect(plan.speedup(cores: 2) > 1.5)
        #expect(plan.serialShare() > 0 && plan.serialShare() < 0.5)
    }

    @Test func aBatchStartsTheMostWorkFirstAndSharesIdleJobsAmongTheLastFiles() {
        #expect(RenderPlan.batchThreads(jobs: 16, remaining: 37) == 1)
        #expect(RenderPlan.batchThreads(jobs: 16, remaining: 16) == 1)
        #expect(RenderPlan.batchThreads(jobs: 16, remaining: 8) == 2)
        #expect(RenderPlan.batchThreads(jobs: 16, remaining: 1) == 16)
        #expect(RenderPlan.batchThreads(jobs: 1, remaining: 1) == 1)
        func plan(_ voices: Int64, seconds: Int64, parts: Int = 1) -> RenderPlan {
            RenderPlan(groups: Array(repeating: [], count: parts), work: Array(repeating: voices * seconds * 48000 / Int64(parts), count: parts),
                       musicFrames: seconds * 48000, sampleRate: 48000)
        }
        // a dense short file before a light long one; equal work keeps the given order
        let plans = [plan(2, seconds: 100), plan(40, seconds: 30, parts: 4), plan(2, seconds: 100), plan(1, seconds: 10)]
        #expect(RenderPlan.batchOrder(plans) == [1, 0, 2, 3])
        // the batch on more cores is never slower, and never more than the cores
        var last = 1.0
        for cores in [1, 2, 4, 8, 16, 32] {
            let s = RenderPlan.batchSpeedup(plans, cores: cores)
            #expect(s >= last - 1e-9 && s <= Double(cores) + 1e-9, "\(cores): \(s)")
            last = s
        }
    }
}

/// The render threads' cap: the CPUs a process may run on, read from the
/// kernel's list form ("0-3,6").
@Suite struct RenderCoresTests {
    @Test func aCPUListCountsItsCPUs() {
        #expect(RenderCores.cpuCount(list: " 0-3,6") == 5)
        #expect(RenderCores.cpuCount(list: "\t0") == 1)
        #expect(RenderCores.cpuCount(list: "2-2,4-5") == 3)
        #expect(RenderCores.cpuCount(list: "") == nil)
        #expect(RenderCores.cpuCount(list: "3-1") == nil)
        #expect(RenderCores.cpuCount(list: "0-1-2") == nil)
        #expect(RenderCores.cpuCount(list: "a") == nil)
    }

    /// Linux names this process's CPUs in /proc/self/status, and the cap
    /// is never above them.
    @Test func theCapIsThisProcessesCPUs() throws {
        let allowed = try #require(RenderCores.allowedCount)
        #expect(RenderCores.available >= 1 && RenderCores.available <= allowed)
    }
}

/// `bench --plan --measure` fits the cost model to its renders' CPU times.
@Suite("Render plan: the cost model fitted to measured times")
struct CostModelFitTests {
    /// Plans of `voices` voices sounding on average over `seconds`.
    static func plan(voices: Double, seconds: Double, rate: Int = 48000) -> RenderPlan {
        let frames = Int64(seconds * Double(rate))
        return RenderPlan(groups: [[]], work: [Int64(voices * Double(frames))], musicFrames: frames, sampleRate: rate)
    }

    /// Times made by a known model give that model back, and a little noise
    /// moves it little.
    @Test func timesMadeByAModelGiveItBack() throws {
        let k = 0.28e-3, partition = 1.9, serial = 7.5
        var rng = SplitMix64(seed: 5)
        func samples(noise: Double) -> [RenderPlan.CostModel.Sample] {
            var list: [RenderPlan.CostModel.Sample] = []
            for i in 0..<20 {
                let p = Self.plan(voices: 6 + Double(i * 3), seconds: 60 + Double(i % 7) * 25)
                let music = Double(p.musicFrames) / 48000
                for parts in [max(1, i / 3), 2] {
                    let exact = k * music * (p.averageVoices + Double(parts) * partition + serial)
                    let wobble = 1 + noise * (Double(rng.next() % 2001) / 1000 - 1)
                    list.append(.init(plan: p, partitions: parts, cpuSeconds: exact * wobble))
                }
            }
            return list
        }
        let exact = try #require(RenderPlan.CostModel.fitted(to: samples(noise: 0)))
        #expect(abs(exact.model.partitionCost - partition) < 1e-6 && abs(exact.model.serialCost - serial) < 1e-6, "\(exact)")
        #expect(abs(exact.secondsPerVoiceSecond - k) < 1e-12 && exact.rmsError < 1e-9)
        let noisy = try #require(RenderPlan.CostModel.fitted(to: samples(noise: 0.02)))
        #expect(abs(noisy.model.partitionCost - partition) < 0.6 && abs(noisy.model.serialCost - serial) < 2, "\(noisy)")
        #expect(noisy.rmsError > 0.002 && noisy.rmsError < 0.02)
    }

    /// Renders that cannot tell the constants apart give no fit.
    @Test func renderLikeRendersGiveNoFit() {
        let p = Self.plan(voices: 20, seconds: 100)
        #expect(RenderPlan.CostModel.fitted(to: []) == nil)
        // one file, one split: the three terms move together
        let same = [RenderPlan.CostModel.Sample](repeating: .init(plan: p, partitions: 3, cpuSeconds: 1), count: 4)
        #expect(RenderPlan.CostModel.fitted(to: same) == nil)
        // unusable times are left out
        #expect(RenderPlan.CostModel.fitted(to: [.init(plan: p, partitions: 1, cpuSeconds: 0), .init(plan: p, partitions: 2, cpuSeconds: -1),
                                                  .init(plan: p, partitions: 3, cpuSeconds: .nan)]) == nil)
    }
}

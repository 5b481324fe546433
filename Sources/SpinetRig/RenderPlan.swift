import SpinetMIDI

/// How one file's offline render is split, decided by the music alone: how
/// many partitions (each a SoundFont player of its own, rendered as one task
/// per block), which channels and key turns each plays, and the work each is
/// estimated to have. The render threads then take the partitions' tasks, so
/// the output has the same bytes on any number of threads and any machine:
/// nothing here reads the core count or `--threads`.
public struct RenderPlan: Sendable, Equatable {
    /// The most partitions a file is split into.
    public static let maxPartitions = 16
    /// Each partition gets at least this many voices sounding on average
    /// (the file's estimated work over its length). A partition costs a
    /// player's fixed work whether it plays or not (`CostModel.partitionCost`,
    /// about 1.7 voices as fitted; chosen when it was estimated at a third
    /// of a voice): over the 31 OpenMSX files the partitions this gives
    /// took 4.2 % more CPU on one thread than the fixed split in two that
    /// Spinet used before, up to 16 % on a file split 8 ways, while a file
    /// of 60 voices on average still splits over 7 players.
    public static let voicesPerPartition = 8.0
    /// ...and at least this much work in all, in voice-seconds: a short
    /// file's players would start (load their presets) for a few
    /// milliseconds of sound each.
    public static let secondsPerPartition = 20.0

    /// The partition count for a file whose notes are estimated to sound
    /// `work` voice-frames in all over `musicFrames` frames at `sampleRate`
    /// (`ChannelPartition.estimatedKeyLoad`): 1 for a light file (a second
    /// player would cost more than it saves), one more per
    /// `voicesPerPartition` voices sounding on average, at most
    /// `maxPartitions`, and no more than `secondsPerPartition` of work each.
    /// A pure function of the file (and of the SoundFont that prices its
    /// notes): never of the machine or the thread count.
    public static func partitionCount(work: Int64, musicFrames: Int64, sampleRate: Int) -> Int {
        guard work > 0, musicFrames > 0, sampleRate > 0 else { return 1 }
        let averageVoices = Double(work) / Double(musicFrames)
        let seconds = Double(work) / Double(sampleRate)
        let count = min(averageVoices / voicesPerPartition, seconds / secondsPerPartition)
        return Swift.max(1, Swift.min(maxPartitions, Int(count.rounded(.down))))
    }

    /// The partitions: channels and key turns (see `ChannelPartition.portions`).
    public var groups: [[ChannelPartition.Portion]]
    /// Each partition's estimated work, in voice-frames.
    public var work: [Int64]
    /// The file's length to its last event, in frames.
    public var musicFrames: Int64
    public var sampleRate: Int

    public var partitions: Int { groups.count }
    public var totalWork: Int64 { work.reduce(0, +) }
    /// Voices sounding on average over the file, by the estimate.
    public var averageVoices: Double { musicFrames > 0 ? Double(totalWork) / Double(musicFrames) : 0 }

    /// A plan made of its parts (`RenderPlan(groups: [[]], work: [0], ...)`:
    /// a file that cannot be read, which a batch starts last).
    public init(groups: [[ChannelPartition.Portion]], work: [Int64], musicFrames: Int64, sampleRate: Int) {
        self.groups = groups
        self.work = work
        self.musicFrames = musicFrames
        self.sampleRate = sampleRate
    }

    /// The plan for `schedule` over `channels` channels: `partitions` when
    /// given (a test, a forced split), else `partitionCount` of its
    /// estimated work, at most `limit`. Every channel heavier than half a
    /// partition's share is split by key turns where
    /// `ChannelPartition.splittable` allows it.
    public init(_ schedule: MIDISchedule, channels: Int, noteCost: ChannelPartition.NoteCost? = nil,
                exclusiveKeys: ChannelPartition.ExclusiveKeys? = nil, partitions: Int? = nil, limit: Int = maxPartitions) {
        let keyLoad = ChannelPartition.estimatedKeyLoad(schedule, channels: channels, noteCost: noteCost)
        let plays = ChannelPartition.playing(schedule, channels: channels)
        let sums = ChannelPartition.channelSums(keyLoad, channels: channels)
        let total = (0..<channels).filter { plays[$0] }.reduce(Int64(0)) { $0 + sums[$1] }
        musicFrames = Swift.max(schedule.endFrame, schedule.events.last?.frame ?? 0)
        sampleRate = schedule.sampleRate
        let parts = partitions
            ?? Swift.max(1, Swift.min(limit, Self.partitionCount(work: total, musicFrames: musicFrames, sampleRate: sampleRate)))
        (groups, work) = ChannelPartition.portions(schedule, channels: channels, parts: parts, keyLoad: keyLoad,
                                                   exclusiveKeys: exclusiveKeys)
    }

    /// What the CPU time of a render is made of, in voice-frames (one voice
    /// sounding for one frame, FluidSynth's unit of work). `measured` is
    /// fitted (`fitted(to:)`, printed by `spinet bench --plan --measure`)
    /// to the one-thread CPU times of the 31 OpenMSX files with the bundled
    /// font, each with its plan's split and with 2 partitions (x86-64,
    /// 48 kHz, FluidSynth 2.3.1, Spinet's default effects): two runs on a
    /// shared 2-core VM gave a partition 1.87 and 1.71 voices, the serial
    /// stage 7.53 and 7.74, 10 % rms error per render. It was 0.3 and 3.0,
    /// estimates from a profile, under which the 2-thread times came out
    /// 5.8 % short; with the fit, 4.6 %.
    public struct CostModel: Sendable, Equatable {
        /// One partition's fixed work per frame: its player's block loop,
        /// its channels' mix into the engine's buses, its events.
        public var partitionCost: Double
        /// The finishing step of a block, per frame (mix, Spinet's effects,
        /// limiter) and the writer: it runs once per block whatever the split.
        public var serialCost: Double
        public init(partitionCost: Double, serialCost: Double) {
            self.partitionCost = partitionCost
            self.serialCost = serialCost
        }
        public static let measured = CostModel(partitionCost: 1.7, serialCost: 7.7)
    }

    /// The tasks of every block, as the render threads take them: each
    /// partition's work (its voices and its fixed cost), then the
    /// finishing step. In voice-frames over the whole file.
    public func tasks(_ model: CostModel = .measured) -> [Double] {
        work.map { Double($0) + model.partitionCost * Double(musicFrames) } + [model.serialCost * Double(musicFrames)]
    }

    /// The CPU time of the render, in voice-frames.
    public func cpu(_ model: CostModel = .measured) -> Double { tasks(model).reduce(0, +) }

    /// The wall time of the render on `threads` threads, in voice-frames:
    /// the render threads (at most one per partition) take each block's
    /// tasks in order, each the next task when it is free. The blocks'
    /// shares are taken to be the file's (a model: a part that plays alone
    /// for a while makes the real time longer).
    public func wall(threads: Int, _ model: CostModel = .measured) -> Double {
        Self.listSchedule(tasks(model), threads: Swift.max(1, Swift.min(threads, partitions)))
    }

    /// The speedup this plan allows on `cores` cores against one thread
    /// (the default thread count: one per core, at most one per partition).
    public func speedup(cores: Int, _ model: CostModel = .measured) -> Double {
        wall(threads: 1, model) / wall(threads: cores, model)
    }

    /// The serial stage's share of the CPU time on one thread.
    public func serialShare(_ model: CostModel = .measured) -> Double {
        let c = cpu(model)
        return c > 0 ? model.serialCost * Double(musicFrames) / c : 0
    }

    /// The order a batch renders `plans` in: the most estimated work
    /// first (ties: in the order given), so that no long file starts last.
    public static func batchOrder(_ plans: [RenderPlan], _ model: CostModel = .measured) -> [Int] {
        plans.indices.sorted { (plans[$0].cpu(model), $1) > (plans[$1].cpu(model), $0) }
    }

    /// The render threads a batch of `jobs` jobs gives the file it starts
    /// when `remaining` files (this one included) are left to start: one
    /// while there are enough files for every job, and once fewer files
    /// remain than jobs, the jobs shared among them, so that the cores of
    /// jobs that find no file left work on the last files (at most one
    /// thread per partition is used).
    public static func batchThreads(jobs: Int, remaining: Int) -> Int {
        Swift.max(1, jobs / Swift.max(remaining, 1))
    }

    /// The speedup `plans` allow as a batch on `cores` cores (jobs),
    /// against rendering them one after another on one thread: the files
    /// taken in `batchOrder`, each by the first free job, with
    /// `batchThreads` threads (each file's time is its `wall` on them; the
    /// model lets a file's extra threads run on cores other files still
    /// hold, which makes it a little optimistic).
    public static func batchSpeedup(_ plans: [RenderPlan], cores: Int, _ model: CostModel = .measured) -> Double {
        let one = plans.map { $0.wall(threads: 1, model) }
        var free = [Double](repeating: 0, count: Swift.max(1, cores))
        for (n, i) in batchOrder(plans, model).enumerated() {
            let j = free.indices.min { free[$0] < free[$1] }!
            free[j] += plans[i].wall(threads: batchThreads(jobs: cores, remaining: plans.count - n), model)
        }
        let end = free.max()!
        return end > 0 ? one.reduce(0, +) / end : 1
    }

    /// The end of `tasks` taken in order by `threads` threads, each taking
    /// the next task when it is free.
    static func listSchedule(_ tasks: [Double], threads: Int) -> Double {
        var free = [Double](repeating: 0, count: Swift.max(1, threads))
        for t in tasks {
            let i = free.indices.min { free[$0] < free[$1] }!
            free[i] += t
        }
        return free.max()!
    }
}

extension RenderPlan.CostModel {
    /// One render's measured CPU time: the file's plan, the partitions it
    /// was rendered with (the plan's, or a forced split).
    public struct Sample: Sendable {
        public var plan: RenderPlan
        public var partitions: Int
        public var cpuSeconds: Double
        public init(plan: RenderPlan, partitions: Int, cpuSeconds: Double) {
            self.plan = plan
            self.partitions = partitions
            self.cpuSeconds = cpuSeconds
        }
    }

    /// The model fitted to measured renders by least squares: a render's
    /// CPU time is k · (voices + partitions · partitionCost + serialCost)
    /// per second of music (the plan's estimated voices), linear in k,
    /// k · partitionCost and k · serialCost, each render weighted by its
    /// own time (relative errors). Also k (CPU seconds per voice-second)
    /// and the rms relative error of a render. Nil when the samples cannot
    /// fix the three (fewer than 3, or no spread in voices or partitions).
    public static func fitted(to samples: [Sample]) -> (model: Self, secondsPerVoiceSecond: Double, rmsError: Double)? {
        var rows: [[Double]] = []
        for s in samples where s.cpuSeconds > 0 && s.plan.musicFrames > 0 && s.plan.sampleRate > 0 {
            let music = Double(s.plan.musicFrames) / Double(s.plan.sampleRate)
            rows.append([s.plan.averageVoices * music, Double(s.partitions) * music, music].map { $0 / s.cpuSeconds })
        }
        guard rows.count >= 3 else { return nil }
        // the normal equations (each row's target is 1: its time over itself)
        var m = [Double](repeating: 0, count: 9), b = [Double](repeating: 0, count: 3)
        for x in rows {
            for i in 0..<3 {
                b[i] += x[i]
                for j in 0..<3 { m[3 * i + j] += x[i] * x[j] }
            }
        }
        let scale = m.map(abs).max() ?? 0
        // Gaussian elimination with partial pivoting.
        for c in 0..<3 {
            let pivot = (c..<3).max { abs(m[3 * $0 + c]) < abs(m[3 * $1 + c]) }!
            guard abs(m[3 * pivot + c]) > 1e-9 * scale else { return nil }
            if pivot != c {
                for j in 0..<3 { m.swapAt(3 * c + j, 3 * pivot + j) }
                b.swapAt(c, pivot)
            }
            for r in (c + 1)..<3 {
                let f = m[3 * r + c] / m[3 * c + c]
                for j in c..<3 { m[3 * r + j] -= f * m[3 * c + j] }
                b[r] -= f * b[c]
            }
        }
        var k = [0.0, 0.0, 0.0]
        for r in stride(from: 2, through: 0, by: -1) {
            k[r] = (b[r] - ((r + 1)..<3).reduce(0.0) { $0 + m[3 * r + $1] * k[$1] }) / m[3 * r + r]
        }
        guard k[0] > 0 else { return nil }
        let squares = rows.reduce(0.0) { sum, x in
            let e = zip(x, k).reduce(0.0) { $0 + $1.0 * $1.1 } - 1
            return sum + e * e
        }
        return (Self(partitionCost: k[1] / k[0], serialCost: k[2] / k[0]), k[0], (squares / Double(rows.count)).squareRoot())
    }
}

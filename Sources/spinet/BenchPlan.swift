import FoundationEssentials
import Glibc
import SpinetFile
import SpinetMIDI
import SpinetRig
import SpinetSoundFont
import SpinetSupport

extension Bench {
    /// The core counts `--plan` predicts for.
    static let planCores = [2, 4, 8, 16, 32]

    /// `spinet bench --plan`: each file's render plan (`RenderPlan`) and
    /// the speedup it allows on `planCores` cores, by the plan's cost
    /// model; then the same for the files as a batch. With `--measure`,
    /// the model is checked on this machine: each file rendered with
    /// `--threads 1`, `2` and `16`, the bytes compared, and the wall time
    /// on two threads predicted from the time on one.
    func planReport(files: [String], font: String) throws {
        let model = RenderPlan.CostModel.measured
        let header = "file                              music  voices  parts  serial" + Self.planCores.map { "   \($0)".padded(to: 7) }.joined()
            + "  work per partition (voice-seconds)"
        Self.printTableHead(
            font: font,
            about: formatted("Cost model (fitted constants, in voices sounding): each partition %.2f, the serial stage (mix, effects, limiter, writer) %.2f;",
                             model.partitionCost, model.serialCost)
                + "\nspeedups against one thread, the threads taking each block's tasks in order (the serial stage overlaps the next block's partitions).",
            columns: header)
        var plans: [RenderPlan] = []
        for file in files {
            let schedule = try orFailure("\(file): ") { try MIDIFile(path: file) }.schedule(sampleRate: rate)
            let plan = GraphBuilder.plan(fonts: [font], schedule: schedule)
            plans.append(plan)
            let name = Self.rowName(file)
            let works = plan.work.map { formatted("%.0f", Double($0) / Double(rate)) }.joined(separator: " ")
            print(name + formatted(" %6.1fs %7.1f %6ld %6.1f%%", Double(plan.musicFrames) / Double(rate), plan.averageVoices,
                                   plan.partitions, 100 * plan.serialShare(model))
                  + Self.planCores.map { formatted(" %5.2fx", plan.speedup(cores: $0, model)) }.joined() + "  " + works)
        }
        print(String(repeating: "-", count: header.count))
        let music = plans.reduce(0.0) { $0 + Double($1.musicFrames) / Double(rate) }
        let voices = plans.reduce(0.0) { $0 + Double($1.totalWork) } / max(1, plans.reduce(0.0) { $0 + Double($1.musicFrames) })
        let parts = plans.reduce(0) { $0 + $1.partitions }
        let serial = plans.reduce(0.0) { $0 + $1.serialShare(model) * $1.cpu(model) } / max(1, plans.reduce(0.0) { $0 + $1.cpu(model) })
        let label = "batch (\(files.count) files)".padded(to: 32)
        print(label + formatted(" %6.0fs %7.1f %6ld %6.1f%%", music, voices, parts, 100 * serial)
              + Self.planCores.map { formatted(" %5.2fx", RenderPlan.batchSpeedup(plans, cores: $0, model)) }.joined()
              + "  (most work first; the last files take the jobs no file is left for)")
        let speedups = plans.map { $0.speedup(cores: 16, model) }.sorted()
        if !speedups.isEmpty {
            print(formatted("median file on 16 cores: %.2fx", speedups[speedups.count / 2]))
        }
        if measure { try measurePlans(files: files, plans: plans, font: font, model: model) }
    }

    /// Renders each file with `--threads 1`, `2` and `16` (`--runs` times,
    /// the medians count) and with the old fixed split of 2 partitions on
    /// one thread: wall and CPU times, the bytes compared, and the model's
    /// prediction of the 2-thread time from the 1-thread time.
    private func measurePlans(files: [String], plans: [RenderPlan], font: String, model: RenderPlan.CostModel) throws {
        let me = SoundFontLocator.executablePath()
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-bench-plan-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        print("\nMeasured here (median of \(runs) runs; wall s / CPU s, CPU = user + system):")
        let header = "file                              parts   1 thread      2 threads     16 threads    predicted 2  error   same bytes  2 parts, 1 thread  CPU vs 2 parts"
        print(header)
        print(String(repeating: "-", count: header.count))
        var totals = [Double](repeating: 0, count: 8)
        var samples: [RenderPlan.CostModel.Sample] = []
        var measured: [(plan: RenderPlan, wall1: Double, wall2: Double)] = []
        for (file, plan) in zip(files, plans) {
            var runsByKind: [[Measurement]] = Array(repeating: [], count: 4)
            let kinds: [[String]] = [["--threads", "1"], ["--threads", "2"], ["--threads", "16"], ["--threads", "1", "--partitions", "2"]]
            var outputs: [String] = []
            for _ in 0..<runs {
                for (k, extra) in kinds.enumerated() {
                    let out = scratch.appendingPathComponent("k\(k).wav").path
                    runsByKind[k].append(try Self.measure(me, ["render", file, "-o", out, "--force", "--quiet", "--soundfont", font,
                                                              "--rate", "\(rate)"] + extra))
                    if outputs.count < 3 && k < 3 { outputs.append(out) }
                }
            }
            let failed = runsByKind.joined().contains { $0.status != 0 }
            let bytes = outputs.map { FileManager.default.contents(atPath: $0) }
            let same = !failed && bytes.allSatisfy { $0 != nil && $0 == bytes[0] }
            let wall = runsByKind.map { Self.median($0.map(\.seconds)) }
            let cpu = runsByKind.map { Self.median($0.map(\.cpuSeconds)) }
            let predicted = wall[0] * plan.wall(threads: 2, model) / plan.wall(threads: 1, model)
            if !failed {
                samples.append(.init(plan: plan, partitions: plan.partitions, cpuSeconds: cpu[0]))
                samples.append(.init(plan: plan, partitions: 2, cpuSeconds: cpu[3]))
                measured.append((plan, wall[0], wall[1]))
            }
            for (i, v) in [wall[0], cpu[0], wall[1], cpu[1], wall[2], cpu[2], predicted, cpu[3]].enumerated() { totals[i] += v }
            let name = Self.rowName(file)
            print(name + formatted(" %5ld  %5.2f/%5.2f   %5.2f/%5.2f   %5.2f/%5.2f   %6.2f    %+5.1f%%   ",
                                   plan.partitions, wall[0], cpu[0], wall[1], cpu[1], wall[2], cpu[2], predicted,
                                   100 * (predicted / wall[1] - 1))
                  + (same ? "yes       " : (failed ? "FAILED    " : "NO        "))
                  + formatted("   %8.2f CPU         %+5.1f%%", cpu[3], 100 * (cpu[0] / cpu[3] - 1)))
        }
        print(String(repeating: "-", count: header.count))
        print("all".padded(to: 32) + formatted("        %5.2f/%5.2f   %5.2f/%5.2f   %5.2f/%5.2f   %6.2f    %+5.1f%%                %8.2f CPU         %+5.1f%%",
                                                totals[0], totals[1], totals[2], totals[3], totals[4], totals[5], totals[6],
                                                100 * (totals[6] / totals[2] - 1), totals[7], 100 * (totals[1] / totals[7] - 1)))
        print(formatted("16 threads against 2: CPU %+.1f%%, wall %+.1f%%", 100 * (totals[5] / totals[3] - 1), 100 * (totals[4] / totals[2] - 1)))
        guard let fitted = RenderPlan.CostModel.fitted(to: samples) else { return }
        let wall2 = measured.reduce(0.0) { $0 + $1.wall2 }
        let predicted2 = measured.reduce(0.0) { $0 + $1.wall1 * $1.plan.wall(threads: 2, fitted.model) / $1.plan.wall(threads: 1, fitted.model) }
        print(formatted("Fitted to these one-thread CPU times (%ld renders, the plan's split and 2 partitions): a partition %.2f, "
                        + "the serial stage %.2f voices sounding (the model: %.2f, %.2f); %.3f ms of CPU a voice-second; "
                        + "%.1f%% rms error per render. With them, 2 threads are predicted at %.2f s (%+.1f%%).",
                        samples.count, fitted.model.partitionCost, fitted.model.serialCost, model.partitionCost, model.serialCost,
                        1000 * fitted.secondsPerVoiceSecond, 100 * fitted.rmsError, predicted2, 100 * (predicted2 / wall2 - 1)))
    }
}

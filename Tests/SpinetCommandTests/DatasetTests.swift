import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport

// Batch rendering for datasets: lists of inputs (--from), shards for a
// scheduler's jobs (--shard K/N), resuming (--skip-existing) and a JSON
// Lines report (--report).

@Suite("spinet render: datasets")
struct DatasetTests {
    /// A short piece: `notes` notes of 0.2 s from key `key` up.
    static func piece(key: Int, notes: Int = 3) -> [UInt8] {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)   // 120 bpm: 960 ticks a second
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        for i in 0..<notes {
            let k = UInt8(40 + (key + i) % 48)
            events.append((Int64(i * 192), .message(.noteOn(channel: 0, key: k, velocity: 100))))
            events.append((Int64(i * 192 + 180), .message(.noteOff(channel: 0, key: k, velocity: 0))))
        }
        w.addTrack(events)
        return w.bytes()
    }

    /// `count` pieces in `dir`, by name.
    static func folder(_ dir: URL, count: Int, notes: Int = 3) throws -> [String] {
        try (0..<count).map { i in try write(piece(key: i * 5, notes: notes), to: dir, "piece\(i).mid") }
    }

    static func outputs(_ dir: URL) -> Set<String> {
        Set(listing(dir).filter { $0.hasSuffix(".wav") })
    }

    @Test func shardsAreDisjointAndCoverTheFolderWhateverTheListOrder() throws {
        let dir = try SpinetCommand.temporaryDirectory("shards")
        let inputs = try Self.folder(dir, count: 7)
        let list = dir.appendingPathComponent("list.txt")
        try Data(inputs.joined(separator: "\n").utf8).write(to: list)
        // the same set in another order, with a blank line and CRLF endings
        let reversed = dir.appendingPathComponent("reversed.txt")
        try Data((inputs.reversed().joined(separator: "\r\n") + "\r\n\r\n").utf8).write(to: reversed)
        var seen: [Set<String>] = []
        for k in 0..<3 {
            let out = dir.appendingPathComponent("shard\(k)")
            let r = try SpinetCommand.run(["render", "--from", list.path, "--shard", "\(k)/3", "-o", out.path + "/",
                                           "--soundfont", font, "--quiet"])
            #expect(r.status == 0, "\(r.stderr)")
            seen.append(Self.outputs(out))
            let again = dir.appendingPathComponent("again\(k)")
            let r2 = try SpinetCommand.run(["render", "--from", reversed.path, "--shard", "\(k)/3", "-o", again.path + "/",
                                            "--soundfont", font, "--quiet"])
            #expect(r2.status == 0, "\(r2.stderr)")
            #expect(Self.outputs(again) == seen[k], "a shard depends on the set of paths, not their order")
        }
        let all = seen.reduce(Set<String>()) { $0.union($1) }
        #expect(all == Set((0..<7).map { "piece\($0).wav" }))
        #expect(seen.map(\.count).reduce(0, +) == 7, "disjoint: \(seen)")
        #expect(seen.map(\.count).max()! - seen.map(\.count).min()! <= 1, "balanced: \(seen)")
    }

    @Test func aKilledBatchResumedWithSkipExistingEndsByteIdentical() throws {
        let dir = try SpinetCommand.temporaryDirectory("resume")
        let inputs = try Self.folder(dir, count: 6, notes: 12)
        let reference = dir.appendingPathComponent("reference")
        let r0 = try SpinetCommand.run(["render"] + inputs + ["-o", reference.path + "/", "--soundfont", font, "--quiet", "--jobs", "1"])
        #expect(r0.status == 0, "\(r0.stderr)")

        let out = dir.appendingPathComponent("out")
        let killed = try SpinetCommand.run(["render"] + inputs + ["-o", out.path + "/", "--soundfont", font, "--quiet", "--jobs", "1"],
                                           interruptAfter: 1.5)
        #expect(killed.status == 130 || killed.status == 0, "\(killed.stderr)")
        #expect(!listing(out).contains { $0.contains(".spinet-") }, "no temporary file left: \(listing(out))")
        let before = Self.outputs(out)

        let report = dir.appendingPathComponent("resume.jsonl")
        let resumed = try SpinetCommand.run(["render"] + inputs + ["-o", out.path + "/", "--soundfont", font, "--quiet",
                                                                  "--skip-existing", "--report", report.path])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(Self.outputs(out) == Self.outputs(reference))
        for name in Self.outputs(reference) {
            let a = try Data(contentsOf: reference.appendingPathComponent(name))
            let b = try Data(contentsOf: out.appendingPathComponent(name))
            #expect(a == b, "\(name) differs from a single run")
        }
        let rows = try Self.rows(report)
        #expect(rows.count == 6)
        #expect(rows.filter { $0["status"] as? String == "skipped" }.count == before.count)
        #expect(rows.filter { $0["status"] as? String == "rendered" }.count == 6 - before.count)
    }

    static func rows(_ report: URL) throws -> [[String: Any]] {
        let text = try String(contentsOf: report, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
        }
    }

    @Test func theReportHasOneObjectPerInput() throws {
        let dir = try SpinetCommand.temporaryDirectory("report")
        var inputs = try Self.folder(dir, count: 2)
        inputs.append(try write(Array("not a MIDI file".utf8), to: dir, "broken.mid"))
        let report = dir.appendingPathComponent("report.jsonl")
        let r = try SpinetCommand.run(["render"] + inputs + ["-o", dir.appendingPathComponent("out").path + "/",
                                                              "--soundfont", font, "--quiet", "--report", report.path])
        #expect(r.status == 1, "one input fails: \(r.stderr)")
        let rows = try Self.rows(report)
        #expect(rows.count == 3)
        for row in rows {
            let input = row["input"] as? String ?? ""
            if input.hasSuffix("broken.mid") {
                #expect(row["status"] as? String == "failed")
                #expect((row["error"] as? String ?? "").contains("MThd") || !(row["error"] as? String ?? "").isEmpty)
                #expect((row["outputs"] as? [Any])?.isEmpty == true)
            } else {
                #expect(row["status"] as? String == "rendered", "\(row)")
                #expect(row["error"] is NSNull)
                let outputs = row["outputs"] as? [String] ?? []
                #expect(outputs.count == 1 && FileManager.default.fileExists(atPath: outputs[0]))
                #expect((row["music_seconds"] as? Double ?? 0) > 0.5)
                #expect((row["peak_dbfs"] as? Double ?? 0) < 0)
                #expect((row["voices"] as? Int ?? 0) >= 1)
                #expect(row["render_seconds"] is Double)
            }
        }
    }

    @Test(arguments: [["--shard", "3/3"], ["--shard", "-1/2"], ["--shard", "x"], ["--skip-existing", "--force"],
                      ["--report", "r.jsonl", "-o", "single.wav"], ["--from", "/no/such/list"]])
    func badDatasetOptionsAreRefusedBeforeAnyWork(extra: [String]) throws {
        let dir = try SpinetCommand.temporaryDirectory("dataset-bad")
        let inputs = try Self.folder(dir, count: 2)
        let r = try SpinetCommand.run(["render"] + inputs + ["--soundfont", font] + extra, in: dir)
        #expect(r.status != 0)
        #expect(!r.stderr.isEmpty)
        #expect(Self.outputs(dir).isEmpty, "\(listing(dir))")
    }
}

/// The dataset page's scheduler examples, run as written (with `spinet` on the PATH,
/// the scheduler's variables set by hand, and /data/ a temporary directory).
@Suite("docs/datasets.md: Schedulers")
struct DatasetReadmeTests {
    /// The shell blocks of the "Schedulers" section of docs/datasets.md.
    static func blocks() throws -> [String] {
        let page = try String(contentsOf: SpinetCommand.repositoryRoot.appendingPathComponent("docs/datasets.md"), encoding: .utf8)
        guard let start = page.range(of: "\n## Schedulers\n") else { return [] }
        let section = page[start.upperBound...]
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        let parts = section[..<end].components(separatedBy: "```")
        // odd parts are inside fences: "sh\n...": drop the language tag
        return stride(from: 1, to: parts.count, by: 2).map { String(parts[$0].drop { $0 != "\n" }) }
    }

    /// Runs `script` with bash in `dir`, `spinet` on the PATH.
    static func bash(_ script: String, in dir: URL, environment: [String: String] = [:]) throws -> SpinetCommand.Result {
        let bin = dir.appendingPathComponent("bin")
        try? FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let link = bin.appendingPathComponent("spinet").path
        if !FileManager.default.fileExists(atPath: link) { symlink(SpinetCommand.executable, link) }
        var env = environment
        env["PATH"] = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        env["SPINET_SOUNDFONT"] = font
        return try SpinetCommand.run(["-euo", "pipefail", "-c", script], in: dir, environment: env, program: "/bin/bash")
    }

    static func setUp(_ name: String) throws -> (URL, Set<String>) {
        let dir = try SpinetCommand.temporaryDirectory(name)
        let midi = dir.appendingPathComponent("midi")
        try FileManager.default.createDirectory(at: midi, withIntermediateDirectories: true)
        _ = try DatasetTests.folder(midi, count: 5)
        // a fresh folder: no renders/ yet (-o creates it before the report is opened there)
        return (dir, Set((0..<5).map { "piece\($0).wav" }))
    }

    @Test func theExamplesRenderEveryFileOnce() throws {
        let blocks = try Self.blocks()
        try #require(blocks.count == 3, "the section's three examples: \(blocks)")

        // xargs: the list, then four shards side by side
        var (dir, all) = try Self.setUp("readme-xargs")
        var r = try Self.bash(blocks[0], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(DatasetTests.outputs(dir.appendingPathComponent("renders")) == all)
        let reports = listing(dir.appendingPathComponent("renders")).filter { $0.hasSuffix(".jsonl") }
        #expect(reports.count == 4)

        // Slurm: three array tasks, then one task again (a requeued job)
        (dir, all) = try Self.setUp("readme-slurm")
        let find = blocks[0].split(separator: "\n").first { $0.hasPrefix("find") }.map(String.init) ?? ""
        r = try Self.bash(find, in: dir)
        for k in 0..<3 {
            r = try Self.bash(blocks[1], in: dir, environment: ["SLURM_ARRAY_TASK_ID": "\(k)", "SLURM_ARRAY_TASK_COUNT": "3"])
            #expect(r.status == 0, "\(r.stderr)")
        }
        #expect(DatasetTests.outputs(dir.appendingPathComponent("renders")) == all)
        r = try Self.bash(blocks[1], in: dir, environment: ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3"])
        #expect(r.status == 0, "a requeued task skips what it rendered: \(r.stderr)")
        let rows = try DatasetTests.rows(dir.appendingPathComponent("renders/shard-1.jsonl"))
        #expect(!rows.isEmpty && rows.allSatisfy { $0["status"] as? String == "skipped" })

        // Kubernetes: the pods that get files among the 100 (5 files: indices 0-4), and an empty one;
        // the list's paths are relative to the directory the pods run in
        (dir, all) = try Self.setUp("readme-k8s")
        r = try Self.bash(find, in: dir)
        let script = blocks[2].replacingOccurrences(of: "/data/", with: dir.path + "/")
        for k in [0, 1, 2, 3, 4, 99] {
            r = try Self.bash(script, in: dir, environment: ["JOB_COMPLETION_INDEX": "\(k)"])
            #expect(r.status == 0, "pod \(k): \(r.stderr)")
        }
        #expect(DatasetTests.outputs(dir.appendingPathComponent("renders")) == all)
    }
}

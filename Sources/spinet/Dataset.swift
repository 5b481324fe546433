import ArgumentParser
import FoundationEssentials
import Glibc
import SpinetSupport
import SpinetEngine
import SpinetRig

/// `spinet render` for datasets: input lists too long for a command line, a
/// shard of them per job of a scheduler (Slurm job arrays, Kubernetes
/// indexed Jobs, GNU parallel), resuming a batch, and a machine-readable
/// report. Spinet needs no scheduler of its own: every job is given the same
/// list and its own shard.
struct DatasetOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Read input paths from LIST, one per line (- for standard input); added to those named.", valueName: "list"))
    var from: String?

    @Option(help: ArgumentHelp("Render only the K-th of N disjoint parts of the inputs (K from 0 to N-1); the parts depend only on the set of input paths, so N jobs given the same list cover every file once.", valueName: "K/N"))
    var shard: Shard?

    @Flag(name: .customLong("skip-existing"), help: "Skip an input whose output exists (the mix is renamed into place last, after its stems and notes, so an existing output is complete): resumes a batch. An input without its mix is rendered again, replacing the stems and notes a stopped run left; the report is written anew.")
    var skipExisting = false

    @Option(help: ArgumentHelp("Write one JSON object per input (JSON Lines), as each file ends: input, outputs, status, error, music length, render time, peak, voices, stems (their file names). - writes standard output.", valueName: "file.jsonl"))
    var report: String?

    @Option(help: ArgumentHelp("Write one row per note: where it sounds in the output (frames and seconds), channel, key, velocity, program, bank, instrument; CSV, or JSON when FILE ends in .json; - writes CSV to standard output. In batch mode, a directory: DIR/NAME.csv per input.", valueName: "file"))
    var notes: String?

    @Option(help: ArgumentHelp("Also write one file per channel that plays notes into DIR (created if missing): NN-Instrument.EXT (two-digit channel, 2.NN- on port 2, the channel's first instrument), in the format of the mix, and together they add up to the mix: each carries its own share of reverb, chorus and delay, and the limiter's gain on the mix. Muted channels get none. In batch mode, DIR/NAME/ per input. Needs Spinet's effects (not --effects fluidsynth).", valueName: "dir"))
    var stems: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Bring the output to this integrated loudness (EBU R128, e.g. -23 or -14), keeping the limiter's ceiling; the summary shows what was measured and the gain applied.", valueName: "lufs"))
    var normalize: Double?

    /// Options that only make sense for a batch.
    var asksForBatch: Bool { from != nil || shard != nil || skipExisting || report != nil }

    /// The first of them given, for an error that names it.
    var batchOptionGiven: String {
        if from != nil { return "--from" }
        if shard != nil { return "--shard" }
        if skipExisting { return "--skip-existing" }
        return "--report"
    }

    /// The longest input list read (a million paths of 256 bytes).
    static let maxListBytes = 256 << 20

    /// `named`, then the paths of --from; a path given twice is taken once,
    /// however it is spelled (`a.mid`, `./a.mid`, `x/../a.mid`, its absolute
    /// path): the first spelling is kept. A directory among them is an
    /// error (naming its line in the list), before any work.
    func inputs(named: [String]) throws -> [String] {
        var all = named.map { (path: $0, line: 0) }
        if let from {
            let text = try Self.readList(from)
            // by bytes: "\r\n" is one Character, which a split on "\n" would miss
            var number = 0
            for line in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
                number += 1
                var bytes = Substring(line).utf8[...]
                if bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
                let path = String(decoding: bytes, as: UTF8.self)
                if path.trimmingSpaces.isEmpty { continue }
                all.append((path, number))
            }
            if all.isEmpty { throw Failure("--from \(from) lists no input; write one path per line") }
        }
        for (path, line) in all where isDirectory(path) == true {
            if let from, line > 0 {
                throw Failure("--from \(from): line \(line): \(path) is a directory, not a MIDI file; list the files in it (find \(path) -name '*.mid' >> \(from))")
            }
            throw Failure("\(path) is a directory, not a MIDI file; name the files in it (\(path.hasSuffix("/") ? path : path + "/")*.mid)")
        }
        var seen = Set<String>()
        return all.map(\.path).filter { seen.insert(Self.entryKey($0)).inserted }
    }

    /// The directory entry `path` names, whatever its spelling: the real
    /// path of its directory (symbolic links, `.` and `..` resolved) and its
    /// last name. A symbolic link to a file is an entry of its own (it gets
    /// an output of its own name). `-` is itself.
    static func entryKey(_ path: String) -> String {
        if path == "-" { return path }
        let name = URL(fileURLWithPath: path).lastPathComponent
        let parent = parentPath(path)
        if name != "." && name != ".." && name != "/", let real = realpath(parent.isEmpty ? "." : parent, nil) {
            defer { free(real) }
            let dir = String(cString: real)
            return (dir == "/" ? "" : dir) + "/" + name
        }
        return URL(fileURLWithPath: path).standardizedFileURL.path   // no such directory: as written, made absolute
    }

    /// The whole list, read with a bound (a list may be a FIFO or standard
    /// input); a UTF-8 byte order mark at its start is dropped.
    static func readList(_ path: String) throws -> String {
        let bytes: [UInt8]
        do { bytes = try RegularFile.read(path, limit: maxListBytes, streams: true) } catch {
            switch error {
            case .system(let text, _): throw Failure("--from \(path): \(text); name a file with one input path per line")
            case .notRegular(let kind): throw Failure("--from \(path) is \(kind); name a file with one input path per line")
            case .tooLarge(let limit): throw Failure("--from \(path) is over \(megabytes(limit)); split the list")
            }
        }
        return String(decoding: droppingByteOrderMark(bytes), as: UTF8.self)
    }
}

/// `--shard K/N`: K counts from 0, as Slurm's array index (with
/// `--array=0-N-1`) and Kubernetes' JOB_COMPLETION_INDEX do.
struct Shard: ExpressibleByArgument, Equatable, Sendable {
    var index: Int
    var count: Int

    init?(argument: String) {
        let parts = argument.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let k = Int(parts[0].trimmingSpaces), let n = Int(parts[1].trimmingSpaces),
              n >= 1, n <= 1_000_000, k >= 0, k < n else { return nil }
        index = k
        count = n
    }

    init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    static var defaultValueDescription: String { "K/N" }

    /// This shard's inputs. The paths are sorted (by their bytes) and dealt
    /// out in turn, so the parts are disjoint, cover every path, differ in
    /// size by at most one, and do not depend on the order of the list.
    func pick(_ paths: [String]) throws -> [String] {
        let sorted = Set(paths).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        return sorted.enumerated().compactMap { $0.offset % count == index ? $0.element : nil }
    }
}

/// The JSON Lines report of a batch: one object per input, appended (and
/// written out) as each file ends, so a batch that is killed leaves the
/// lines of the files it finished. Its target is checked before any work
/// with the batch's other outputs (`OutputTransaction.plan`); it is opened
/// once the output folders exist. `-` is standard output. A write error
/// (a full disk, /dev/full) is kept and reported by `finish`, which makes
/// the batch's exit status non-zero. Thread-safe.
final class BatchReport: Sendable {
    let path: String
    private struct State {
        var fd: Int32
        /// The errno of the first write that failed, 0 for none.
        var error: Int32 = 0
        /// Lines not written after it.
        var lost = 0
        var closed = false
    }
    private let state: Locked<State>

    /// Opens the report: a new file (an existing one only where `replace`:
    /// --force, or --skip-existing, whose run writes its report anew), a
    /// device or FIFO written through, or standard output.
    init(path: String, replace: Bool) throws {
        self.path = path
        var st = stat()
        let device = stat(path, &st) == 0 && (st.st_mode & S_IFMT) != S_IFREG   // checked: a device or FIFO
        let fd = path == "-" ? STDOUT_FILENO
            : device ? open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC)
            : open(path, O_WRONLY | O_CREAT | O_NOCTTY | O_CLOEXEC | (replace ? O_TRUNC : O_EXCL), 0o666)
        guard fd >= 0 else {
            throw Failure("--report \(path): \(String(cString: strerror(errno)))")
        }
        self.state = Locked(State(fd: fd))
    }

    deinit {
        state.withLock { s in if !s.closed && s.fd != STDOUT_FILENO { _ = close(s.fd) } }
    }

    /// Flushes and closes the report; the error to report (nil: every line written).
    func finish() -> String? {
        state.withLock { s in
            guard !s.closed else { return nil }
            s.closed = true
            var st = stat()
            if s.error == 0 && fstat(s.fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG && fsync(s.fd) != 0 { s.error = errno }
            if s.fd != STDOUT_FILENO && close(s.fd) != 0 && s.error == 0 { s.error = errno }
            guard s.error != 0 else { return nil }
            let name = path == "-" ? "standard output" : path
            let lost = s.lost > 0 ? " (\(s.lost) more \(s.lost == 1 ? "line" : "lines") not written)" : ""
            return "--report \(name): writing failed: \(String(cString: strerror(s.error)))\(lost); the report is incomplete"
        }
    }

    func add(input: String, outputs: [String], status: String, error: String? = nil, render: FileRender? = nil, stems: [String] = []) {
        var fields = [
            "\"input\": " + jsonQuoted(input),
            "\"outputs\": [" + outputs.map(jsonQuoted).joined(separator: ", ") + "]",
            "\"status\": " + jsonQuoted(status),
            "\"error\": " + (error.map(jsonQuoted) ?? "null"),
        ]
        if let r = render?.report {
            let rate = Double(r.sampleRate)
            fields.append("\"music_seconds\": " + formatted("%.3f", Double(r.musicFrames) / rate))
            fields.append("\"audio_seconds\": " + formatted("%.3f", Double(r.outputFrames) / rate))
            fields.append("\"render_seconds\": " + formatted("%.3f", render!.seconds))
            fields.append("\"peak_dbfs\": " + (r.peak > 0 ? formatted("%.2f", r.peakDBFS) : "null"))
            fields.append("\"voices\": \(r.peakVoices)")
            fields.append("\"events_dropped\": \(r.droppedEvents)")
        } else {
            fields += ["\"music_seconds\": null", "\"audio_seconds\": null", "\"render_seconds\": null",
                       "\"peak_dbfs\": null", "\"voices\": null", "\"events_dropped\": null"]
        }
        fields.append("\"stems\": [" + stems.map(jsonQuoted).joined(separator: ", ") + "]")
        let line = Array(("{" + fields.joined(separator: ", ") + "}\n").utf8)
        state.withLock { s in
            guard s.error == 0 else { s.lost += 1; return }
            s.error = writeFully(s.fd, line)
        }
    }
}

import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport

// Every shell example of the README and of docs/ runs as written, in a fresh
// temporary folder, with the built spinet on PATH (and as
// .build/release/spinet), against small MIDI files made here. A fenced
// block is an example to run when its info string starts with `sh`:
//
//     ```sh                      run it; it must exit 0
//     ```sh creates=a.wav,out/   ... and leave these files (non-empty) or folders
//     ```sh needs=jack           needs what the test folder does not have: listed, not run
//     ```console                 a transcript or a sketch: never run
//
// The needs a page may name are `DocExamples.knownNeeds`. Relative links
// between the pages must lead to a file that exists.

/// One fenced shell block of a page.
struct DocExample: Sendable, CustomTestStringConvertible {
    var page: String
    var line: Int
    var code: String
    var needs: [String]
    var creates: [String]
    var testDescription: String { "\(page):\(line)" }
}

enum DocExamples {
    /// What an example may need that a test folder lacks, and why it is not run there.
    static let knownNeeds: [String: String] = [
        "network": "fetches from the network",
        "audio": "plays to a sound card",
        "alsa": "a live ALSA sequencer (the VM scenarios run play)",
        "jack": "a JACK or PipeWire server (the JACK suite runs play under one)",
        "root": "installs into the system",
        "systemd": "a user session of systemd",
        "repo": "runs make in the source tree (make demo and make test are what CI runs)",
        "daw": "a DAW",
        "cluster": "the paths of a cluster's shared volume (/data)",
    ]

    /// README.md and every page under docs/, relative to the repository.
    static var pages: [String] {
        let root = SpinetCommand.repositoryRoot
        var pages = ["README.md"]
        let docs = root.appendingPathComponent("docs")
        if let walker = FileManager.default.enumerator(atPath: docs.path) {
            for case let path as String in walker where path.hasSuffix(".md") { pages.append("docs/" + path) }
        }
        for extra in ["SoundFonts/README.md", "Fuzz/README.md", "Sources/SpinetSynth/PRESETS.md"]
        where FileManager.default.fileExists(atPath: root.appendingPathComponent(extra).path) {
            pages.append(extra)
        }
        return pages.sorted()
    }

    static func text(_ page: String) -> String {
        (try? String(contentsOf: SpinetCommand.repositoryRoot.appendingPathComponent(page), encoding: .utf8)) ?? ""
    }

    /// The fenced blocks of one page whose info string starts with `sh`.
    static func examples(in page: String, text: String) -> [DocExample] {
        var found: [DocExample] = []
        var open: (line: Int, info: String)?
        var body: [Substring] = []
        for (i, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.drop { $0 == " " }
            guard trimmed.hasPrefix("```") else {
                if open != nil { body.append(line) }
                continue
            }
            if let block = open {
                let words = block.info.split(separator: " ")
                if words.first == "sh" {
                    var needs: [String] = [], creates: [String] = []
                    for word in words.dropFirst() {
                        if word.hasPrefix("needs=") { needs += word.dropFirst(6).split(separator: ",").map(String.init) }
                        if word.hasPrefix("creates=") { creates += word.dropFirst(8).split(separator: ",").map(String.init) }
                    }
                    found.append(DocExample(page: page, line: block.line, code: body.joined(separator: "\n"),
                                            needs: needs, creates: creates))
                }
                open = nil
                body = []
            } else {
                open = (i + 1, String(trimmed.dropFirst(3)).trimmingCharacters(in: .whitespaces))
            }
        }
        return found
    }

    static var all: [DocExample] { pages.flatMap { examples(in: $0, text: text($0)) } }
    static var runnable: [DocExample] { all.filter { $0.needs.isEmpty } }

    /// A short piece: three notes from `key` up, 0.2 s each.
    static func piece(key: Int) -> [UInt8] {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        for i in 0..<3 {
            let k = UInt8(48 + key + i * 4)
            events.append((Int64(i * 192), .message(.noteOn(channel: 0, key: k, velocity: 100))))
            events.append((Int64(i * 192 + 180), .message(.noteOff(channel: 0, key: k, velocity: 0))))
        }
        w.addTrack(events)
        return w.bytes()
    }

    /// The folder an example runs in: song.mid, a.mid, b.mid, midi/ with
    /// three pieces and list.txt naming them (and ~/midi/, HOME being home/
    /// here), spinet on PATH and at .build/release/spinet, as the README
    /// calls it from a checkout, and the bundled SoundFonts/.
    static func folder() throws -> URL {
        let dir = try SpinetCommand.temporaryDirectory("doc-example")
        let fm = FileManager.default
        for sub in ["midi", "home/midi", ".build/release", "bin"] {
            try fm.createDirectory(at: dir.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        for (i, name) in ["song.mid", "a.mid", "b.mid"].enumerated() {
            try Data(piece(key: i * 2)).write(to: dir.appendingPathComponent(name))
        }
        for i in 0..<3 {
            try Data(piece(key: 5 + i)).write(to: dir.appendingPathComponent("midi/piece\(i).mid"))
            try Data(piece(key: 9 + i)).write(to: dir.appendingPathComponent("home/midi/take\(i).mid"))
        }
        let list = (0..<3).map { "midi/piece\($0).mid" }.joined(separator: "\n") + "\n"
        try Data(list.utf8).write(to: dir.appendingPathComponent("list.txt"))
        try fm.createSymbolicLink(atPath: dir.appendingPathComponent("SoundFonts").path,
                                  withDestinationPath: SpinetCommand.repositoryRoot.appendingPathComponent("SoundFonts").path)
        let binary = URL(fileURLWithPath: SpinetCommand.executable)
        for tool in ["spinet", "spinet-rtcheck"] {
            let built = binary.deletingLastPathComponent().appendingPathComponent(tool).path
            try fm.createSymbolicLink(atPath: dir.appendingPathComponent("bin/\(tool)").path, withDestinationPath: built)
            try fm.createSymbolicLink(atPath: dir.appendingPathComponent(".build/release/\(tool)").path, withDestinationPath: built)
        }
        return dir
    }

    /// The relative links of a page (`[text](target)`), without their #fragment.
    static func relativeLinks(_ text: String) -> [String] {
        var links: [String] = []
        var rest = Substring(text)
        while let open = rest.range(of: "](") {
            rest = rest[open.upperBound...]
            guard let close = rest.firstIndex(of: ")") else { break }
            let target = String(rest[..<close]).split(separator: " ").first.map(String.init) ?? ""
            rest = rest[close...]
            if target.isEmpty || target.hasPrefix("#") || target.contains("://") || target.hasPrefix("mailto:") { continue }
            links.append(String(target.split(separator: "#", maxSplits: 1).first ?? ""))
        }
        return links
    }
}

@Suite("Documentation: every example runs, every link leads somewhere")
struct DocExamplesTests {
    @Test("a shell example runs as written", arguments: DocExamples.runnable)
    func exampleRuns(_ example: DocExample) throws {
        let dir = try DocExamples.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = "set -e -o pipefail\n" + example.code + "\n"
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let r = try SpinetCommand.run(["-c", script], in: dir, timeout: 300, environment: [
            "PATH": dir.appendingPathComponent("bin").path + ":" + path,
            "HOME": dir.appendingPathComponent("home").path,
            // what a scheduler sets for the job-array examples
            "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "JOB_COMPLETION_INDEX": "1",
            "XDG_CONFIG_HOME": dir.appendingPathComponent("home/.config").path,
        ], program: "/bin/bash")
        #expect(!r.timedOut, "\(example.testDescription) did not finish")
        #expect(r.status == 0, "\(example.testDescription) exited \(r.status):\n\(example.code)\n\(r.stderr)")
        for name in example.creates {
            let target = dir.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: target.path, isDirectory: &isDirectory),
                    "\(example.testDescription) should create \(name)")
            if !name.hasSuffix("/") {
                let size = (try? FileManager.default.attributesOfItem(atPath: target.path)[.size] as? Int) ?? 0
                #expect(size > 0, "\(example.testDescription): \(name) is empty")
            } else {
                #expect(isDirectory.boolValue, "\(example.testDescription): \(name) is no folder")
            }
        }
    }

    @Test func everyShellExampleIsRunOrSaysWhatItNeeds() {
        let all = DocExamples.all
        #expect(all.count >= 10, "the pages have shell examples (\(all.count) found)")
        #expect(!DocExamples.runnable.isEmpty)
        for example in all {
            for need in example.needs {
                #expect(DocExamples.knownNeeds[need] != nil,
                        "\(example.testDescription): needs=\(need) is not one of \(DocExamples.knownNeeds.keys.sorted())")
            }
        }
    }

    @Test func theParserFindsBlocksAndTheirMarks() {
        let page = """
        text
        ```sh creates=x.wav,out/
        spinet render a.mid -o x.wav
        ```
        ```console
        $ not run
        ```
        ```sh needs=jack,root
        spinet play --driver jack
        ```
        """
        let found = DocExamples.examples(in: "p.md", text: page)
        #expect(found.count == 2)
        #expect(found.first?.code == "spinet render a.mid -o x.wav")
        #expect(found.first?.creates == ["x.wav", "out/"])
        #expect(found.first?.line == 2)
        #expect(found.last?.needs == ["jack", "root"])
        #expect(DocExamples.relativeLinks("see [a](docs/a.md#x), [b](https://x.org) and [c](#here)") == ["docs/a.md"])
    }

    @Test func everyRelativeLinkLeadsToAFile() {
        let root = SpinetCommand.repositoryRoot
        for page in DocExamples.pages {
            let base = root.appendingPathComponent(page).deletingLastPathComponent()
            for link in DocExamples.relativeLinks(DocExamples.text(page)) {
                let target = link.hasPrefix("/") ? root.appendingPathComponent(String(link.dropFirst()))
                    : base.appendingPathComponent(link)
                #expect(FileManager.default.fileExists(atPath: target.standardizedFileURL.path), "\(page): dead link \(link)")
            }
        }
    }
}

/// The design page's module table is Package.swift's: every folder of
/// Sources/ has a row, and its "builds on" column lists exactly the
/// target's dependencies (`Spinet` dropped from the names; the command
/// line's swift-argument-parser aside).
@Suite("Documentation: the module table is the package's")
struct ModuleTableTests {
    /// `SpinetEngine` and `Engine` are one name here, as the page writes them.
    static func short<S: StringProtocol>(_ name: S) -> String {
        name.hasPrefix("Spinet") ? String(name.dropFirst(6)) : String(name)
    }

    /// name -> dependencies, for every target of Package.swift (plugins included).
    static func targets() throws -> [String: Set<String>] {
        let text = try String(contentsOf: SpinetCommand.repositoryRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        var found: [String: Set<String>] = [:]
        let pattern = #/\.(?:target|executableTarget|systemLibrary)\(name: "([^"]+)"(?:, dependencies: \[([^\]]*)\])?/#
        for m in text.matches(of: pattern) {
            let deps = (m.output.2.map(String.init) ?? "").matches(of: #/"([^"]+)"/#).map { String($0.output.1) }
            found[String(m.output.1)] = Set(deps.filter { $0 != "ArgumentParser" && $0 != "swift-argument-parser" })
        }
        return found
    }

    @Test func everyModuleHasARowWithItsDependencies() throws {
        let page = DocExamples.text("docs/design.md")
        var rows: [String: Set<String>] = [:]
        for line in page.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            let names = cells[1].matches(of: #/`([^`]+)`/#).map { String($0.output.1) }
            let deps = cells[3] == "-" ? Set<String>() : Set(cells[3].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            for name in names { rows[name] = Set(deps.map { Self.short($0) }) }
        }
        let targets = try Self.targets()
        let folders = try FileManager.default.contentsOfDirectory(atPath: SpinetCommand.repositoryRoot.appendingPathComponent("Sources").path)
        for folder in folders.sorted() {
            guard let deps = targets[folder] else { Issue.record("Sources/\(folder) is no target of Package.swift"); continue }
            guard let row = rows[folder] else { Issue.record("docs/design.md has no row for \(folder)"); continue }
            #expect(row == Set(deps.map(Self.short)), "\(folder): the page says \(row.sorted()), Package.swift \(deps.map(Self.short).sorted())")
        }
    }
}

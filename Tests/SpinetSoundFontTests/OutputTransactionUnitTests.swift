import Foundation
import Glibc
import Testing
import SpinetFile
import SpinetSupport

// The output transaction without a render: its checks, its commit order and
// what a stop does at each step of the commit, the temporary names, the
// signal handler's list of temporary files, and the text escaping every
// writer shares.
@Suite("OutputTransaction", .serialized)
struct OutputTransactionUnitTests {
    static func directory(_ name: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-tx-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    static func listing(_ dir: URL) -> [String] {
        let all = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String } ?? []
        return all.filter { !(isDirectory(dir.appendingPathComponent($0).path) ?? false) }.sorted()
    }

    /// Two stems, notes and a mix, each with some bytes in its temporary file.
    static func transaction(in dir: URL) throws -> OutputTransaction {
        let tx = OutputTransaction(force: false, inUse: [FileInUse]())
        try tx.plan(dir.appendingPathComponent("mix.wav").path, option: "-o", role: .mix, format: .wav)
        try tx.plan(dir.appendingPathComponent("notes.csv").path, option: "--notes", role: .notes)
        try tx.plan(dir.appendingPathComponent("stems/01.wav").path, option: "--stems", role: .stem, format: .wav)
        try tx.plan(dir.appendingPathComponent("stems/02.wav").path, option: "--stems", role: .stem, format: .wav)
        try tx.begin()
        for f in tx.files(.stem) + [tx.file(.mix)!] { try f.writeText("audio") }
        try tx.file(.notes)!.writeText("notes")
        return tx
    }

    /// The commit renames the stems, then the notes, the mix last: a stop
    /// asked before any rename leaves nothing committed and no temporary file.
    @Test(arguments: 0...4)
    func aStopAtAnyStepOfTheCommitLeavesNothing(_ step: Int) throws {
        let dir = try Self.directory("stop-\(step)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let tx = try Self.transaction(in: dir)
        var asked = 0
        var seen: [[String]] = []
        do {
            try tx.commit(shouldStop: {
                seen.append(Self.listing(dir).filter { !$0.contains(".spinet-") })
                asked += 1
                return asked > step
            })
            #expect(step == 4, "committed although asked to stop")
            #expect(Self.listing(dir) == ["mix.wav", "notes.csv", "stems/01.wav", "stems/02.wav"])
        } catch is OutputTransaction.Interrupted {
            #expect(step < 4)
            #expect(Self.listing(dir).isEmpty, "left \(Self.listing(dir))")
        }
        // the order: each question comes before one more rename
        let order = [[], ["stems/01.wav"], ["stems/01.wav", "stems/02.wav"], ["notes.csv", "stems/01.wav", "stems/02.wav"]]
        #expect(Array(seen.prefix(4)) == Array(order.prefix(seen.count)))
    }

    /// Two targets that are one file (one name, or two names of it) are
    /// refused when planned, before anything is made.
    @Test func twoTargetsThatAreOneFileAreRefused() throws {
        let dir = try Self.directory("same")
        defer { try? FileManager.default.removeItem(at: dir) }
        let tx = OutputTransaction(force: true, inUse: [FileInUse]())
        try tx.plan(dir.appendingPathComponent("a/x.wav").path, option: "-o", role: .mix)
        #expect(throws: AudioFileError.self) {
            try tx.plan(dir.appendingPathComponent("a/./b/../x.wav").path, option: "--notes", role: .notes)
        }
        try Data("x".utf8).write(to: dir.appendingPathComponent("y.wav"))
        #expect(link(dir.appendingPathComponent("y.wav").path, dir.appendingPathComponent("z.csv").path) == 0)
        try tx.plan(dir.appendingPathComponent("y.wav").path, option: "--stems", role: .stem)
        #expect(throws: AudioFileError.self) { try tx.plan(dir.appendingPathComponent("z.csv").path, option: "--notes", role: .notes) }
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("a").path))
    }

    /// The temporary name fits in a file name whatever the final name's length.
    @Test(arguments: [1, 200, 240, 241, 250, 255])
    func temporaryNamesNeverPassNameMax(_ length: Int) {
        let ascii = String(repeating: "a", count: length)
        let wide = String(repeating: "€", count: length / 3)
        for base in [ascii, wide] {
            let name = OutputFile.temporaryName(base)
            #expect(name.utf8.count <= 255, "\(name.utf8.count) bytes")
            #expect(name.hasPrefix(".") && name.hasSuffix(".spinet-XXXXXX"))
        }
        #expect(OutputFile.temporaryName("long.wav") == ".long.wav.spinet-XXXXXX")
    }

    /// The signal handler's list has no fixed size: 200 temporary files at
    /// once are all removed by it.
    @Test func theSignalHandlerRemovesEveryPendingFile() throws {
        let dir = try Self.directory("pending")
        defer { try? FileManager.default.removeItem(at: dir) }
        let files = try (0..<200).map { try OutputFile(target: dir.appendingPathComponent("f\($0).wav").path, force: false) }
        #expect(OutputFile.pendingCount >= 200)
        #expect(Self.listing(dir).count == 200)
        OutputFile.unlinkPendingFromSignalHandler()
        #expect(Self.listing(dir).isEmpty, "left \(Self.listing(dir).count)")
        for f in files { f.discard() }
        // released entries are reused, not added to
        let again = try (0..<10).map { try OutputFile(target: dir.appendingPathComponent("g\($0).wav").path, force: false) }
        #expect(OutputFile.pendingCount >= 10)
        for f in again { f.discard() }
    }

    /// "\r\n" is one Character: the CSV quoting looks at scalars.
    @Test func csvAndJSONEscapeEveryControlCharacter() {
        #expect("\r\n".count == 1)
        #expect(NoteLabeler.csvField("a\r\nb") == "\"a\r\nb\"")
        #expect(NoteLabeler.csvField("a\u{1}b") == "\"a\u{1}b\"")
        #expect(NoteLabeler.csvField("a\u{2028}b") == "\"a\u{2028}b\"")
        #expect(NoteLabeler.csvField("plain name") == "plain name")
        #expect(jsonQuoted("a\r\nb\u{1}\u{7F}\u{85}\u{2028}\u{2029}") == #""a\r\nb\u0001\u007f\u0085\u2028\u2029""#)
    }
}

import Foundation
import Glibc
import SpinetSupport
import Testing

/// The JSON reader behind the config file, preset files and the plugins'
/// saved state: linear in its input, bounded in depth, a BOM accepted, and
/// whole numbers read without a trap.
@Suite("JSON reader")
struct JSONTests {
    static func object(keys: Int) -> String {
        "{" + (0..<keys).map { "\"k\($0)\": \($0)" }.joined(separator: ",") + "}"
    }

    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// The duplicate-key check was a search of the keys read so far: 160k
    /// keys (2 MB) took 40 s. Linear now: ten times the keys take about ten
    /// times as long (a quadratic reader takes a hundred), and 160k keys
    /// parse well under the time the old reader spent.
    @Test func aLargeObjectParsesInLinearTime() throws {
        let small = Self.object(keys: 16_000), large = Self.object(keys: 160_000)
        _ = try JSONParser.parse(small)   // warm up
        let tSmall = try (0..<3).map { _ in try Self.seconds { _ = try JSONParser.parse(small) } }.min()!
        var parsed: JSONValue = .null
        let tLarge = try Self.seconds { parsed = try JSONParser.parse(large) }
        guard case .object(let members) = parsed else { Issue.record("not an object"); return }
        #expect(members.count == 160_000 && members.last?.key == "k159999")
        print("JSON: 16k keys \(tSmall) s, 160k keys \(tLarge) s (ratio \(tLarge / tSmall))")
        #expect(tLarge < 10, "160k keys took \(tLarge) s")
        #expect(tLarge / tSmall < 40, "10x the keys took \(tLarge / tSmall)x the time")
    }

    @Test(arguments: [2, 1000, 100_000])
    func aDuplicateKeyIsFoundWhereverItIs(keys: Int) throws {
        var text = String(Self.object(keys: keys).dropLast())
        text += ",\n\"k\(keys / 2)\": 1}"
        do {
            _ = try JSONParser.parse(text)
            Issue.record("a duplicate key passed")
        } catch {
            #expect(error.reason == "duplicate key \"k\(keys / 2)\"" && error.line == 2 && error.column == 1, "\(error.description)")
        }
        // the same name in two objects is no duplicate
        #expect(throws: Never.self) { try JSONParser.parse(#"{"a": {"a": 1}, "b": {"a": 2}}"#) }
    }

    /// Nesting is bounded (so it cannot exhaust the stack), for lists,
    /// objects and both, whatever the depth offered.
    @Test(arguments: [65, 1000, 1_000_000])
    func deepNestingIsRefusedWithoutExhaustingTheStack(depth: Int) throws {
        let shapes = [String(repeating: "[", count: depth),
                      String(repeating: "{\"a\":", count: depth),
                      String(repeating: "[{\"a\":", count: depth / 2 + 1),
                      String(repeating: "[", count: depth) + String(repeating: "]", count: depth)]
        for text in shapes {
            do {
                _ = try JSONParser.parse(text)
                Issue.record("\(depth) deep passed")
            } catch {
                #expect(error.reason == "nested more than \(JSONParser.maxDepth) deep", "\(error.description)")
            }
        }
        let deepest = String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        #expect(throws: Never.self) { try JSONParser.parse(deepest) }
    }

    @Test func aByteOrderMarkAtTheStartIsSkipped() throws {
        #expect(try JSONParser.parse("\u{FEFF}{\"a\": 1}") == .object([("a", .number(1))]))
        #expect(try JSONParser.parse("\u{FEFF} [1]") == .array([.number(1)]))
        // only at the start, and an error's column does not count it
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse("[\u{FEFF}1]") }
        do { _ = try JSONParser.parse("\u{FEFF}{x") } catch { #expect(error.column == 2, "\(error.description)") }
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse("\u{FEFF}") }
    }

    /// Any number where a whole number is expected: only one in the range
    /// comes out; 1e300 (which traps `Int(_:)`), fractions and other types do not.
    @Test func wholeNumbersAreReadWithoutATrap() throws {
        func value(_ text: String) throws -> JSONValue { try JSONParser.parse(text) }
        #expect(try value("5").integer(in: 0...127) == 5)
        #expect(try value("-0").integer(in: 0...127) == 0)
        #expect(try value("127.0").integer(in: 0...127) == 127)
        #expect(try value("1e2").integer(in: 0...127) == 100)
        for text in ["1e300", "-1e300", "128", "-1", "1.5", "0.999", "9223372036854775807", "9223372036854775808",
                     "-9223372036854775809", "1e19", "\"5\"", "true", "null", "[5]", "{}"] {
            #expect(try value(text).integer(in: 0...127) == nil, "\(text)")
        }
        #expect(try value("4611686018427387904").integer(in: Int.min...Int.max) == nil)   // 2^62: beyond what a setting holds
        #expect(try value("1000000").integer(in: Int.min...Int.max) == 1_000_000)
    }
}

/// The bounded reader every settings file goes through.
@Suite("Bounded file reader")
struct BoundedFileReaderTests {
    static func scratch(_ name: String) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-read-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.appendingPathComponent(name).path
    }

    /// A 1 GB sparse file is refused from its size: nothing of it is read
    /// (the old reader took all of it, 3 GB of memory, before failing).
    @Test func aHugeFileIsRefusedBeforeItIsRead() throws {
        let path = try Self.scratch("huge.json")
        defer { unlink(path) }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        #expect(ftruncate(fd, 1 << 30) == 0)
        close(fd)
        let start = Date()
        #expect(throws: RegularFile.ReadError.tooLarge(limit: 4096)) { try RegularFile.read(path, limit: 4096) }
        do { _ = try SettingsText.readFile(path, what: "config \(path)", hint: "") } catch {
            #expect(error.description == "config \(path): larger than 4 MB, the limit for a settings file", "\(error.description)")
        }
        #expect(Date().timeIntervalSince(start) < 2)
        // within the limit: read whole
        let small = try Self.scratch("small.json")
        defer { unlink(small) }
        try Data("{}".utf8).write(to: URL(fileURLWithPath: small))
        #expect(try RegularFile.read(small, limit: 2) == Array("{}".utf8))
        #expect(throws: RegularFile.ReadError.tooLarge(limit: 1)) { try RegularFile.read(small, limit: 1) }
    }

    /// A stream has no size: it is read up to the limit and one byte, no more.
    @Test func aDeviceThatNeverEndsIsReadUpToTheLimit() throws {
        #expect(throws: RegularFile.ReadError.tooLarge(limit: 1 << 20)) { try RegularFile.read("/dev/zero", limit: 1 << 20, streams: true) }
        #expect(throws: RegularFile.ReadError.notRegular("a character device")) { try RegularFile.read("/dev/zero", limit: 1 << 20) }
        #expect(try RegularFile.read("/dev/null", limit: 10, streams: true) == [])
    }

    @Test func aFIFOIsRefusedWithoutBlockingUnlessStreamsAreRead() throws {
        let fifo = try Self.scratch("list.fifo")
        defer { unlink(fifo) }
        unlink(fifo)
        #expect(mkfifo(fifo, 0o600) == 0)
        let start = Date()
        #expect(throws: RegularFile.ReadError.notRegular("a FIFO")) { try RegularFile.read(fifo, limit: 100) }
        #expect(Date().timeIntervalSince(start) < 2)
        #expect(throws: RegularFile.ReadError.notRegular("a directory")) { try RegularFile.read("/tmp", limit: 100, streams: true) }
        #expect(throws: RegularFile.ReadError.self) { try RegularFile.read("/no/such/file", limit: 100) }
    }
}

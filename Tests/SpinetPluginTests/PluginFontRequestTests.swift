import CSpinetPlugin
import Foundation
import Testing
import SpinetTestSupport
import SpinetTestTraits

/// Fonts asked of the core's loader through the C API (what the CLAP glue
/// and the LV2 glue without a host worker do): loaded off the caller's
/// thread, reported back, the newest request winning.
@Suite struct PluginFontRequestTests {
    static let other = SpinetCommand.repositoryRoot.appendingPathComponent("Fuzz/corpus/SoundFontFuzzer/gm-like.sf2").path

    /// Counts the listener's calls (the loader's thread) and their statuses.
    final class Listener: @unchecked Sendable {
        let lock = NSLock()
        var statuses: [Int32] = []
        func add(_ s: Int32) { lock.lock(); statuses.append(s); lock.unlock() }
        var calls: [Int32] { lock.lock(); defer { lock.unlock() }; return statuses }
    }

    struct Result: Equatable { var status: Int32; var requested: String; var inUse: String }

    static func request(_ d: PluginDriver, _ path: String) -> Int32 {
        spinet_plugin_request_soundfont(d.plugin, path, path.utf8.count)
    }

    static func take(_ d: PluginDriver) -> Result? {
        var status: Int32 = 99
        var a = [CChar](repeating: 0, count: 4096), b = [CChar](repeating: 0, count: 4096)
        guard spinet_plugin_take_soundfont_result(d.plugin, &status, &a, a.count, &b, b.count) == 1 else { return nil }
        return Result(status: status, requested: String(cString: a), inUse: String(cString: b))
    }

    /// Renders blocks (the host keeps processing) until the loader reports a
    /// load whose request is `path`; nil after 60 s.
    static func renderUntilLoaded(_ d: PluginDriver, _ path: String, seen: inout [Result]) -> Result? {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            _ = d.render(frames: 256, block: 256, events: [])
            if let r = take(d) {
                seen.append(r)
                if r.requested == path { return r }
            }
        }
        return nil
    }

    static func listen(_ d: PluginDriver) -> Listener {
        let listener = Listener()
        spinet_plugin_set_soundfont_listener(d.plugin, { context, status in
            Unmanaged<Listener>.fromOpaque(context!).takeUnretainedValue().add(status)
        }, Unmanaged.passUnretained(listener).toOpaque())
        return listener
    }

    @Test func aRequestIsLoadedByTheCoreAndReportedBack() throws {
        let d = try PluginDriver(rate: 48000)
        let listener = Self.listen(d)
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        let before = fontPath(d)
        #expect(Self.take(d) == nil, "nothing loaded yet")
        #expect(Self.request(d, Self.other) == 0)
        var seen: [Result] = []
        let r = try #require(Self.renderUntilLoaded(d, Self.other, seen: &seen), "no result within 60 s")
        #expect(r == Result(status: 0, requested: Self.other, inUse: Self.other))
        #expect(fontPath(d) == Self.other)
        #expect(Self.take(d) == nil, "a result is given once")
        #expect(listener.calls == [0])
        // a new note plays the new font
        let after = d.render(frames: 9600, block: 256, events: [(200, [0x90, 72, 110]), (9000, [0x80, 72, 0])])
        let first = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_activate(first.plugin, 256) == 0)
        let reference = first.render(frames: 9600, block: 256, events: [(200, [0x90, 72, 110]), (9000, [0x80, 72, 0])])
        #expect(fontPath(first) == before)
        // (gm-like.sf2's note is short: its first 2000 frames)
        #expect(after.left[200..<2000].map { abs($0) }.max()! > 1e-4)
        #expect(reference.left[200..<2000].map { abs($0) }.max()! > 1e-4)
        #expect(Array(after.left[200..<2000]) != Array(reference.left[200..<2000]))
    }

    @Test func aFailedRequestIsReportedAndTheOldFontPlaysOn() throws {
        let d = try PluginDriver(rate: 48000)
        #expect(spinet_plugin_activate(d.plugin, 256) == 0)
        let before = fontPath(d)
        #expect(Self.request(d, "/nonexistent/font.sf2") == 0)
        var seen: [Result] = []
        let r = try #require(Self.renderUntilLoaded(d, "/nonexistent/font.sf2", seen: &seen), "no result within 60 s")
        #expect(r == Result(status: -1, requested: "/nonexistent/font.sf2", inUse: before))
        #expect(d.lines.contains { $0.contains("/nonexistent/font.sf2") }, "the host's log says why: \(d.lines)")
        #expect(fontPath(d) == before)
    }

    /// Two requests in a row (the second while the first loads, or before
    /// it started): the instance ends with the second font, and the last
    /// result reported is the second's.
    @Test func twoRequestsInARowEndWithTheLastFont() throws {
        let dir = try SpinetCommand.temporaryDirectory("font-requests")
        defer { try? FileManager.default.removeItem(at: dir) }
        let second = dir.appendingPathComponent("second.sf2").path
        try FileManager.default.copyItem(atPath: Self.other, toPath: second)
        for active in [true, false] {
            let d = try PluginDriver(rate: 48000)
            if active { #expect(spinet_plugin_activate(d.plugin, 256) == 0) }
            #expect(Self.request(d, Self.other) == 0)
            #expect(Self.request(d, second) == 0)
            var seen: [Result] = []
            let r = try #require(Self.renderUntilLoaded(d, second, seen: &seen), "no result within 60 s (active: \(active))")
            #expect(r == Result(status: 0, requested: second, inUse: second), "active: \(active)")
            #expect(fontPath(d) == second, "active: \(active)")
            #expect(seen.allSatisfy { $0.status == 0 } && seen.count <= 2, "\(seen)")
        }
    }

    /// A state saved right after a request has the requested font: the save
    /// waits for the loads asked for before it.
    @Test func aSaveAfterARequestHasTheRequestedFont() throws {
        let d = try PluginDriver(rate: 48000)
        #expect(Self.request(d, Self.other) == 0)
        let json = String(cString: spinet_plugin_save_state(d.plugin))
        #expect(json.contains(Self.other.replacingOccurrences(of: "/", with: "\\/")) || json.contains(Self.other), "\(json)")
        #expect(fontPath(d) == Self.other)
    }

    @Test func requestsThatCannotBeMadeAreRefused() throws {
        let d = try PluginDriver(rate: 48000)
        #expect(Self.request(d, "") == -1)
        #expect(Self.request(d, "/" + String(repeating: "a", count: 4095)) == -1)
        #expect(spinet_plugin_request_soundfont(d.plugin, nil, 3) == -1)
        #expect(spinet_plugin_request_soundfont(nil, "/x.sf2", 6) == -1)
    }

    /// Asking and polling on the audio thread, as the LV2 glue does without a
    /// host worker: no allocation, no lock.
    @Test(.realtimeProbe, .enabled(if: RealtimeProbe.isActive, "the allocation probe is not active in this process"))
    func askingAndPollingAllocateNothingAndTakeNoLock() throws {
        let d = try PluginDriver(rate: 48000)
        let path = Self.other.utf8CString
        var status: Int32 = 0
        let inUse = UnsafeMutablePointer<CChar>.allocate(capacity: 4096)
        defer { inUse.deallocate() }
        _ = spinet_plugin_take_soundfont_result(d.plugin, &status, nil, 0, inUse, 4096)
        let counts = path.withUnsafeBufferPointer { p in
            RealtimeProbe.counts {
                var asked: Int32 = 0
                for _ in 0..<50 {
                    asked += spinet_plugin_request_soundfont(d.plugin, p.baseAddress, p.count - 1)
                    asked += spinet_plugin_take_soundfont_result(d.plugin, &status, nil, 0, inUse, 4096)
                }
                return asked
            }
        }
        #expect(counts.allocations == 0)
        #expect(counts.frees == 0)
        #expect(counts.locks == 0)
        // the save waits for the loader: the font asked for is the one in use
        let json = String(cString: spinet_plugin_save_state(d.plugin))
        #expect(json.contains(Self.other.replacingOccurrences(of: "/", with: "\\/")) || json.contains(Self.other))
        #expect(fontPath(d) == Self.other)
    }
}

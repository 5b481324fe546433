import FoundationEssentials
import Glibc
import SpinetEngine
import SpinetHost
import SpinetJACK
import SpinetMIDI
import SpinetRig
import SpinetSupport

/// `spinet play FILE...`: the files, read before any device is opened.
enum PlayFiles {
    /// Reads `paths` (`-`: standard input) in order. A file that cannot be
    /// read, or has nothing to play, is named in one line (`log`) and left
    /// out; the second value says whether any was.
    static func load(_ paths: [String], log: (String) -> Void) -> (items: [FilePlayer.Item], skipped: Bool) {
        var items: [FilePlayer.Item] = []
        var skipped = false
        var readStandardInput = false
        for path in paths {
            let name = path == "-" ? "standard input" : path
            do {
                if path == "-" && readStandardInput {
                    throw Failure("standard input (-) is named more than once; it can be read once")
                }
                let file = try orFailure("\(name): ") {
                    if path == "-" { readStandardInput = true; return try MIDIFile(fileDescriptor: STDIN_FILENO) }
                    return try MIDIFile(path: path)
                }
                // What `spinet render` refuses, play skips: nothing to play, or longer than a day.
                let schedule = file.schedule(sampleRate: 1000)
                let hasNotes = schedule.events.contains { if case .message(let m) = $0.kind { return m.isNoteOn } else { return false } }
                guard hasNotes else { throw Failure("\(name) has no notes to play (\(schedule.events.count) events, none a note-on)") }
                guard schedule.endFrame <= 24 * 3600 * 1000 else {
                    throw Failure("\(name) lasts over 24 hours (a damaged delta time or End of Track?)")
                }
                items.append(FilePlayer.Item(name: name, file: file))
            } catch let failure as Failure {
                log("spinet: \(failure.message); skipped")
                skipped = true
            } catch {
                log("spinet: \(name): \(error); skipped")
                skipped = true
            }
        }
        return (items, skipped)
    }

    /// Seconds from `90`, `1:30`, `1:02:03` or `12.5`; nil if it is none of these.
    static func seconds(_ text: String) -> Double? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var total = 0.0
        for (i, part) in parts.enumerated() {
            guard let v = Double(part), v >= 0, v.isFinite else { return nil }
            // every field but the first is under 60
            if i > 0 && (v >= 60 || part.contains(".") && i < parts.count - 1) { return nil }
            total = total * 60 + v
        }
        return total
    }
}

/// The player `spinet play FILE...` drives, and what it needs around it.
final class FilePlayerSetup {
    /// Events the player may have queued at once (its look-ahead's worth, with room to spare).
    static let queueCapacity = 16384
    let player: FilePlayer
    /// A file could not be read (exit status 1 at the end).
    let skipped: Bool

    init(player: FilePlayer, skipped: Bool) {
        self.player = player
        self.skipped = skipped
    }

    /// The keys, when standard input is this process's terminal.
    private(set) var keys: TerminalKeys?

    /// Hooks the player to what the output offers (the JACK transport, with
    /// `transport`) and to the terminal's keys (unless standard input
    /// carries a file).
    func attach(to output: any AudioDevice, transport: Bool, keys wanted: Bool) {
        if transport, let jack = output as? JACKClient {
            player.startsPaused = true
            player.transport = {
                jack.transportState().map { ($0.rolling, Double($0.frame) / Double(max(jack.sampleRate, 1))) }
            }
        }
        if wanted { keys = TerminalKeys(player) }
    }

    /// Gives the terminal back as it was.
    func finish() { keys?.restore() }
}

/// The player's keys on a terminal: raw input (no echo, a key at a time;
/// Ctrl-C still a signal), read by a thread of its own, decoded by
/// `TransportKeys`. Only when standard input is a terminal and play runs in
/// its foreground (a background job would be stopped by changing it).
final class TerminalKeys: @unchecked Sendable {
    private var saved = termios()

    init?(_ player: FilePlayer) {
        guard isatty(STDIN_FILENO) == 1, tcgetpgrp(STDIN_FILENO) == getpgrp(),
              tcgetattr(STDIN_FILENO, &saved) == 0 else { return nil }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return nil }
        // Never joined: it waits in read() until the program ends.
        _ = NativeThread(name: "spinet-keys") {
            var decoder = TransportKeys()
            var buffer = [UInt8](repeating: 0, count: 64)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
                if n == 0 { return }
                if n < 0 { if errno == EINTR { continue }; return }
                for command in decoder.decode(Array(buffer[0..<n])) { player.perform(command) }
            }
        }
    }

    func restore() { tcsetattr(STDIN_FILENO, TCSANOW, &saved) }
}

extension Play {
    /// The file player, if files were named (read here, before any device is opened).
    func filePlayer() throws -> FilePlayerSetup? {
        guard !files.isEmpty else {
            if loop { throw Failure("--loop repeats MIDI files; name some (spinet play song.mid --loop)") }
            if start != nil { throw Failure("--start begins a MIDI file; name one (spinet play song.mid --start 1:30)") }
            if transport { throw Failure("--transport makes the file player follow JACK; name a MIDI file") }
            return nil
        }
        if transport && driver != "jack" { throw Failure("--transport follows the JACK transport; add --driver jack") }
        var startSeconds = 0.0
        if let start {
            guard let s = PlayFiles.seconds(start) else {
                throw Failure("--start \(start) is not a time; use seconds (90, 12.5) or minutes:seconds (1:30)")
            }
            startSeconds = s
        }
        let (items, skipped) = PlayFiles.load(files, log: printError)
        guard !items.isEmpty else { throw Failure("", status: 1) }
        let player = FilePlayer(items: items, loop: loop, queueIndex: 2)
        player.startSeconds = startSeconds
        return FilePlayerSetup(player: player, skipped: skipped)
    }
}

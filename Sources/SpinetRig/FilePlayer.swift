import SpinetEngine
import SpinetMIDI
import SpinetSupport

/// Something `LiveSession`'s control thread drives on each turn of its loop
/// (every 20 ms or so): the MIDI file player.
public protocol LivePlayer: AnyObject {
    /// Control thread. `graph` is the graph playing now (a new one after a
    /// rate change), `now` the engine frame the render thread renders next
    /// (the latest timeline anchor). Returns false once there is nothing
    /// more to play: the session then ends as after Ctrl-C.
    func step(graph: EngineGraph, now: Int64, periodFrames: Int) -> Bool
    /// What the status line shows first (the file, where it is), if anything.
    var status: String? { get }
    /// Lines to print since the last call.
    func takeNotices() -> [String]
}

/// Plays MIDI files into a live engine, sample-exact.
///
/// Each file's schedule (`MIDISchedule`, the one `spinet render` plays) is
/// put on the engine's own timeline: the file's frame f is played at engine
/// frame `origin + f`, where `origin` is on the SoundFont unit's 64-frame
/// grid, so that a file played live is its offline render, sample for
/// sample. The control thread pushes the events into the player's own
/// input queue ahead of time (a look-ahead window of `lookAheadSeconds`),
/// stamped with their absolute frames; the engine keeps an event in the
/// queue until the block it falls in. No timer decides when a note sounds.
///
/// - **A file** starts `leadSeconds` (at least two periods) after the frame
///   being rendered, after a System Reset (every channel back to where a
///   fresh synthesizer starts, as for its render; live notes still sounding
///   then are cut). It ends when its music ends (End of Track) and nothing
///   sounds any more (no voice), at most `tailCap` seconds after: then the
///   next file starts.
/// - **Loop:** the next file (the first again after the last) follows at the
///   end of the music, on the next grid frame (at most 63 frames later):
///   no gap, no reset (which would cut the tails), but every value the
///   file left behind goes back to its initial value
///   (`ChannelState.replayInitialValues`).
/// - **A start other than 0** (`--start`, a seek) replays the state the
///   music has there (`MIDIChase`): notes struck before it are not struck
///   again, so a seek into a held chord is silent until the next note.
/// - **Transport** (`perform`): pause releases every note (pedals up, All
///   Notes Off on every channel) and resume goes on with a chase at the
///   position; a seek or another file does the same at the new place. Each
///   takes effect `leadSeconds` from now: what was queued for later is taken
///   back (`EventQueue.retract`).
public final class FilePlayer: LivePlayer {
    /// A file to play.
    public struct Item: Sendable {
        public var name: String
        public var file: MIDIFile
        public init(name: String, file: MIDIFile) {
            self.name = name
            self.file = file
        }
    }

    /// What the keys (or a JACK transport) ask.
    public enum Command: Sendable, Equatable {
        case togglePause
        case pause
        /// Play on (from the position, or from `seconds` if given).
        case resume(at: Double?)
        case seek(by: Double)
        case locate(seconds: Double)
        case next
        case previous
        case quit
    }

    public let items: [Item]
    public let loop: Bool
    /// Which of the graph's inputs the player pushes to (no other thread may).
    public let queueIndex: Int
    public var lookAheadSeconds = 0.5
    /// How far ahead of the frame being rendered a file (or a jump) starts.
    public var leadSeconds = 0.15
    /// The longest a file's sound may ring on after its music before the next one starts.
    public var tailCap = 10.0
    /// Where the first file starts, in seconds.
    public var startSeconds = 0.0
    /// Starts paused (JACK transport: until it rolls).
    public var startsPaused = false
    /// An outside transport to follow (JACK's): whether it rolls and where
    /// it is in seconds, polled each step; nil: none, or not known now.
    public var transport: (() -> (rolling: Bool, seconds: Double)?)?
    private var transportWasRolling = false
    private var transportLast: (seconds: Double, now: Int64)?

    private enum Phase {
        /// To start `index` at frame `position` of its schedule; `fresh`: after a System Reset.
        case starting(position: Int64, fresh: Bool)
        case playing
        /// The music has ended at engine frame `end`; `released`: notes were let go at the cap.
        case ringing(end: Int64, released: Bool)
        case paused(position: Int64)
        case done
    }

    private var phase: Phase = .starting(position: 0, fresh: true)
    private var index = 0
    private var engine: Engine?
    private var queue: EventQueue?
    private var schedule: MIDISchedule?
    private var musicEnd: Int64 = 0
    private var origin: Int64 = 0
    private var next = 0
    private var nextTempo = 0
    /// The latest frame pushed (a jump starts after it: queued events stay).
    private var lastPushed: Int64 = 0
    private var lastNow: Int64 = 0
    private var rate = 0
    private var started = false
    private var notices: [String] = []
    private let commands = Locked<[Command]>([])
    private var statusText: String?
    /// The current file's lyrics (`Lyrics`), the next one to show, and the line being sung.
    private var lyrics: [(frame: Int64, text: String)] = []
    private var nextLyric = 0
    private var lyricLine = ""
    /// The tempo last given to the engine (µs per quarter), for the status line.
    private var tempo = MIDIFile.defaultMicrosecondsPerQuarter

    public init(items: [Item], loop: Bool, queueIndex: Int) {
        self.items = items
        self.loop = loop
        self.queueIndex = queueIndex
    }

    /// Any thread: asks for a transport action, taken on the next step.
    public func perform(_ command: Command) {
        commands.withLock { $0.append(command) }
    }

    public var status: String? { statusText }

    public func takeNotices() -> [String] {
        defer { notices.removeAll() }
        return notices
    }

    /// Whether the player has ended (its last file done, or quit).
    public var isDone: Bool { if case .done = phase { return true } else { return false } }

    /// The file playing now (its index in `items`).
    public var currentIndex: Int { index }

    public func step(graph: EngineGraph, now: Int64, periodFrames: Int) -> Bool {
        defer { lastNow = now }
        if graph.engine !== engine {
            // First step, or a graph built again at a new rate: go on from
            // the position in the new one (chased), where the old one was
            // at the last step (`now` is the new engine's frame).
            let position = engine == nil ? nil : positionSeconds(now: lastNow)
            engine = graph.engine
            queue = graph.inputs[queueIndex]
            rate = Int(graph.engine.sampleRate)
            lastPushed = now
            if !started {
                started = true
                load(0)
                let p = Int64((startSeconds * Double(rate)).rounded())
                phase = startsPaused ? .paused(position: p) : .starting(position: p, fresh: true)
            } else if let position {
                load(index)
                let p = Int64((position * Double(rate)).rounded())
                if case .paused = phase { phase = .paused(position: p) } else if !isDone { phase = .starting(position: p, fresh: true) }
            }
        }
        guard let engine, let queue else { return true }
        followTransport(now: now)
        for c in commands.withLock({ q -> [Command] in defer { q.removeAll() }; return q }) {
            apply(c, now: now)
        }
        let lead = max(Int64(2 * periodFrames), Int64(leadSeconds * Double(rate)))
        let horizon = now + max(lead, Int64(lookAheadSeconds * Double(rate)))

        switch phase {
        case .starting(let position, let fresh):
            begin(at: position, fresh: fresh, notBefore: max(now + lead, lastPushed), engine: engine, queue: queue)
        case .ringing(let end, let released):
            let decayed = now >= end + Int64(engine.latencyFrames) && engine.statistics.activeVoices == 0
            let capped = now >= end + Int64(tailCap * Double(rate))
            if decayed || (released && now >= end + Int64((tailCap + 1) * Double(rate))) {
                advance(by: 1, fresh: true)
            } else if capped && !released {
                releaseNotes(at: max(now + lead, lastPushed), queue: queue, channels: engine.channelCount)
                phase = .ringing(end: end, released: true)
            }
        case .playing, .paused, .done:
            break
        }
        if case .playing = phase {
            followLyrics(now: now)
            feed(until: horizon, now: now, engine: engine, queue: queue)
        }
        updateStatus(now: now)
        if case .done = phase { return false }
        return true
    }

    // MARK: - Files

    /// Makes `items[i]`'s schedule at the current rate.
    private func load(_ i: Int) {
        index = i
        let s = items[i].file.schedule(sampleRate: max(rate, 1))
        schedule = s
        musicEnd = max(s.endFrame, s.events.last?.frame ?? 0)
        lyrics = Lyrics.syllables(of: items[i].file, karaoke: items[i].name.lowercased().hasSuffix(".kar")).map {
            (s.frame(forTick: $0.tick, track: $0.track), $0.text)
        }
        nextLyric = 0
        lyricLine = ""
    }

    /// Shows the syllables sung by engine frame `now`: "/" or "\\" (KAR) or
    /// a line break starts a new line.
    private func followLyrics(now: Int64) {
        while nextLyric < lyrics.count && origin + lyrics[nextLyric].frame <= now {
            lyricLine = Lyrics.append(lyrics[nextLyric].text, to: lyricLine)
            nextLyric += 1
        }
    }

    /// Starts the current file at `position` of its schedule, at the first
    /// frame at or after `notBefore` that puts its origin on the grid.
    private func begin(at position: Int64, fresh: Bool, notBefore: Int64, engine: Engine, queue: EventQueue) {
        guard let schedule else { return }
        let position = min(max(position, 0), musicEnd)
        origin = Self.grid(notBefore - position)
        let at = origin + position
        if fresh {
            queue.push(EngineEvent(frame: at, .systemReset), countingDrop: false)
            notices.append("playing \(items[index].name) (\(Self.clock(Double(musicEnd) / Double(rate))))"
                           + (position > 0 ? " from \(Self.clock(Double(position) / Double(rate)))" : ""))
        }
        next = 0
        if position > 0 {
            let chase = MIDIChase(schedule, at: position, channels: engine.channelCount)
            for bytes in chase.sysEx { queue.pushSysEx(frame: at, bytes, countingDrop: false) }
            for m in chase.messages { queue.push(EngineEvent(frame: at, m), countingDrop: false) }
            next = chase.nextEvent
        }
        nextLyric = 0
        lyricLine = ""
        while nextLyric < lyrics.count && lyrics[nextLyric].frame < position {
            lyricLine = Lyrics.append(lyrics[nextLyric].text, to: lyricLine)
            nextLyric += 1
        }
        nextTempo = 0
        while nextTempo + 1 < schedule.tempoChanges.count && schedule.tempoChanges[nextTempo + 1].frame <= position { nextTempo += 1 }
        lastPushed = at
        phase = .playing
    }

    /// Pushes the events due before `horizon`; at the end of the music,
    /// follows with the next file (loop) or waits for the sound to decay.
    private func feed(until horizon: Int64, now: Int64, engine: Engine, queue: EventQueue) {
        guard let s = schedule else { return }
        let tempos = s.tempoChanges
        // Tempo-synced effects follow the file's tempo, from the block its change falls in.
        while nextTempo < tempos.count && origin + tempos[nextTempo].frame <= now {
            tempo = tempos[nextTempo].microsecondsPerQuarter
            engine.setTempo(beatsPerMinute: 60_000_000 / Double(max(tempo, 1)))
            nextTempo += 1
        }
        let longest = min(engine.configuration.maxSysExBytes, queue.byteCapacity)
        while next < s.events.count && origin + s.events[next].frame < horizon {
            let e = s.events[next]
            let frame = origin + e.frame
            let ok: Bool
            switch e.kind {
            // a refusal is no drop: the event is offered again next turn
            case .message(let m): ok = queue.push(EngineEvent(frame: frame, m), countingDrop: false)
            case .sysEx(let i):
                let bytes = s.sysEx[i]
                ok = bytes.isEmpty || bytes.count > longest ? true : queue.pushSysEx(frame: frame, bytes, countingDrop: false)
            }
            if !ok { return }
            lastPushed = frame
            next += 1
        }
        guard next >= s.events.count else { return }
        let end = origin + musicEnd
        if loop {
            // Seamless: the next file's origin is the end of this one's music (on the grid).
            guard end < horizon else { return }
            var state = ChannelState(channels: engine.channelCount)
            for e in s.events { if case .message(let m) = e.kind { state.remember(m) } }
            let seam = Self.grid(end)
            state.replayInitialValues { m in queue.push(EngineEvent(frame: seam, m), countingDrop: false) }
            index = (index + 1) % items.count
            load(index)
            notices.append("playing \(items[index].name) (\(Self.clock(Double(musicEnd) / Double(rate)))), looped")
            origin = seam
            next = 0
            nextTempo = 0
            lastPushed = seam
            feed(until: horizon, now: now, engine: engine, queue: queue)
        } else {
            phase = .ringing(end: end, released: false)
        }
    }

    /// Goes `by` files on (or back); past the last, ends (or wraps, with a loop).
    private func advance(by step: Int, fresh: Bool) {
        var i = index + step
        if i >= items.count {
            // following a transport, the player waits at the end for the next locate
            if transport != nil && !loop { phase = .paused(position: musicEnd); return }
            guard loop else { phase = .done; return }
            i = 0
        }
        load(max(i, 0))
        phase = .starting(position: 0, fresh: fresh)
    }

    /// Changes course at `frame`: takes back what was queued from there
    /// and releases every note then. Returns `frame`.
    @discardableResult
    private func cut(at frame: Int64, queue: EventQueue, channels: Int) -> Int64 {
        queue.retract(from: frame)
        releaseNotes(at: frame, queue: queue, channels: channels)
        return frame
    }

    /// Pedals up and All Notes Off on every channel, at `frame`.
    private func releaseNotes(at frame: Int64, queue: EventQueue, channels: Int) {
        for c in 0..<channels {
            let ch = UInt8(truncatingIfNeeded: c)
            for n in [MIDIController.sustain, MIDIController.sostenuto, 69, MIDIController.allNotesOff] as [UInt8] {
                queue.push(EngineEvent(frame: frame, .controlChange(channel: ch, controller: n, value: 0)))
            }
        }
        lastPushed = frame
    }

    // MARK: - Transport

    /// Seconds into the current file at engine frame `now` (what is heard,
    /// but for the output latency).
    public func positionSeconds(now: Int64) -> Double {
        guard rate > 0 else { return 0 }
        switch phase {
        case .paused(let p), .starting(let p, _): return Double(p) / Double(rate)
        case .done: return Double(musicEnd) / Double(rate)
        default: return Double(min(max(now - origin, 0), musicEnd)) / Double(rate)
        }
    }

    private func apply(_ command: Command, now: Int64) {
        guard let engine, let queue, rate > 0 else { return }
        let position = Int64((positionSeconds(now: now) * Double(rate)).rounded())
        let lead = Int64(leadSeconds * Double(rate))
        func jump(to p: Int64) {
            switch phase {
            case .paused: phase = .paused(position: min(max(p, 0), musicEnd))
            case .done: return
            default:
                cut(at: now + lead, queue: queue, channels: engine.channelCount)
                phase = .starting(position: min(max(p, 0), musicEnd), fresh: false)
            }
        }
        switch command {
        case .togglePause:
            if case .paused = phase { apply(.resume(at: nil), now: now) } else { apply(.pause, now: now) }
        case .pause:
            switch phase {
            case .playing, .ringing, .starting:
                // the music stops `lead` from now: what was queued after that is taken back
                let stop = cut(at: now + lead, queue: queue, channels: engine.channelCount)
                if case .playing = phase {
                    phase = .paused(position: min(max(stop - origin, 0), musicEnd))
                } else {
                    phase = .paused(position: position)
                }
            default: break
            }
        case .resume(let seconds):
            if case .paused(let p) = phase {
                let at = seconds.map { Int64(($0 * Double(rate)).rounded()) } ?? p
                phase = .starting(position: min(max(at, 0), musicEnd), fresh: false)
            }
        case .seek(let by):
            jump(to: position + Int64((by * Double(rate)).rounded()))
        case .locate(let seconds):
            jump(to: Int64((seconds * Double(rate)).rounded()))
        case .next, .previous:
            if case .done = phase { return }
            let paused: Bool = { if case .paused = phase { return true } else { return false } }()
            cut(at: now + lead, queue: queue, channels: engine.channelCount)
            // "previous" more than 3 s into a file starts it again, as players do
            let step = command == .next ? 1 : (position > 3 * Int64(rate) ? 0 : -1)
            if index + step >= items.count && !loop { phase = .done; return }
            load((index + step + items.count) % items.count)
            phase = paused ? .paused(position: 0) : .starting(position: 0, fresh: true)
        case .quit:
            phase = .done
        }
    }

    /// Follows the outside transport: it starts rolling (play from its
    /// position), stops (pause), or jumps while rolling or stopped (locate).
    private func followTransport(now: Int64) {
        guard let transport, let t = transport(), rate > 0 else { return }
        defer {
            transportWasRolling = t.rolling
            transportLast = (t.seconds, now)
        }
        // The music starts `leadSeconds` from now: there the transport is that much further.
        if t.rolling && !transportWasRolling {
            perform(.resume(at: t.seconds + leadSeconds))
        } else if !t.rolling && transportWasRolling {
            perform(.pause)
            perform(.locate(seconds: t.seconds))
        } else if let last = transportLast {
            // where it would be had it not jumped
            let expected = last.seconds + (t.rolling ? Double(now - last.now) / Double(rate) : 0)
            if abs(t.seconds - expected) > 0.25 { perform(.locate(seconds: t.seconds + (t.rolling ? leadSeconds : 0))) }
        }
    }

    private func updateStatus(now: Int64) {
        guard rate > 0, index < items.count else { statusText = nil; return }
        let paused: Bool = { if case .paused = phase { return true } else { return false } }()
        statusText = "\(paused ? "paused " : "")\(items[index].name) \(Self.clock(positionSeconds(now: now)))/\(Self.clock(Double(musicEnd) / Double(rate)))"
            + formatted(" | %.0f bpm", 60_000_000 / Double(max(tempo, 1)))
            + (lyricLine.isEmpty ? "" : " | \(lyricLine)")
    }

    /// The first multiple of 64 at or after `frame`.
    static func grid(_ frame: Int64) -> Int64 {
        let g: Int64 = 64
        return frame >= 0 ? (frame + g - 1) / g * g : -((-frame) / g * g)
    }

    static func clock(_ seconds: Double) -> String {
        let s = Int(max(seconds, 0))
        return formatted("%ld:%02ld", s / 60, s % 60)
    }
}

/// A MIDI file's lyrics: Lyric meta events (FF 05); in a `.kar` file
/// without them, the Text events (FF 01) but the `@` headers, as KAR
/// players show them: "/" starts a new line, "\\" a new paragraph.
public enum Lyrics {
    public static func syllables(of file: MIDIFile, karaoke: Bool) -> [(tick: Int64, track: Int, text: String)] {
        func collect(_ type: UInt8) -> [(tick: Int64, track: Int, text: String)] {
            var out: [(tick: Int64, track: Int, text: String)] = []
            for (t, track) in file.tracks.enumerated() {
                for e in track.events {
                    if case .text(let kind, let bytes) = e.kind, kind == type {
                        let text = String(decoding: bytes, as: UTF8.self)
                        if type == 1 && text.hasPrefix("@") { continue }
                        out.append((e.tick, t, text))
                    }
                }
            }
            return out
        }
        let sung = collect(5)
        return !sung.isEmpty || !karaoke ? sung : collect(1)
    }

    /// `line` with `syllable` sung: a leading "/" or "\\", or a line break,
    /// starts a new line. Control characters are dropped (the status line is one line).
    public static func append(_ syllable: String, to line: String) -> String {
        var line = line
        var text = Substring(syllable)
        if text.first == "/" || text.first == "\\" { line = ""; text = text.dropFirst() }
        for ch in text {
            if ch == "\n" || ch == "\r" { line = ""; continue }
            if ch.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) { line.append(ch) }
        }
        // keep the last 60 characters: the status line is short
        return line.count > 60 ? String(line.suffix(60)) : line
    }
}

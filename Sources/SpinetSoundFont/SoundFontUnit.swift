import CFluidSynth
import CFluidSynthRealtime
import Glibc
import Synchronization
import SpinetEngine
import SpinetMIDI

/// A SoundFont could not be used. `description` is one line naming the file
/// and what to do about it.
public struct SoundFontError: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var reason: String
    public var description: String { "SoundFont \(path): \(reason)" }
}

/// Options for the SoundFont player.
public struct SoundFontOptions: Sendable {
    /// Voices FluidSynth may sound at once (it steals beyond that).
    public var polyphony: Int = 256
    /// FluidSynth's own reverb and chorus (on by default here, for a unit
    /// used alone). Off: the unit gives Spinet's shared effects stage
    /// per-channel sends instead (CC 91/93/94); `spinet render` and
    /// `spinet play` do that unless given `--effects fluidsynth`.
    public var fluidEffects: Bool = true
    /// FluidSynth's output gain; 0.2 is its own default, so levels match its renders.
    public var gain: Double = 0.2
    /// The channels (global numbers) that will play notes through this unit,
    /// when known in advance (an offline render reads them from the file);
    /// nil: any channel may. Without its own effects FluidSynth gives each
    /// channel an output of its own, and it clears and mixes every output
    /// each block whether a voice plays into it or not: sixteen outputs on
    /// each of an offline render's two synths cost about 9 % of the render
    /// on one core. Naming the channels lets the unit ask for only as many
    /// outputs as it needs (see `outputCount`).
    public var soundingChannels: [Int]? = nil
    /// The program numbers (0-127) Program Change will ask for, when known
    /// in advance (an offline render reads them from the file); nil: any.
    /// The unit then loads only the presets with those numbers, in every
    /// bank, and program 0 (see `PresetSubset`): FluidSynth keeps every
    /// preset it loads in each synthesizer (~13 MB for FluidR3_GM), and
    /// what it finds for these programs is what the whole font gives. A
    /// program outside the set finds no preset and falls back to program 0.
    public var programs: Set<Int>? = nil
    public init() {}
}

/// Spinet's SoundFont instrument: FluidSynth used as a synthesis library.
///
/// Loading happens in `init`, off the render thread. Every `fluid_synth_*`
/// call after that comes from the render thread only, so FluidSynth's API
/// mutex is off (`synth.threadsafe-api = 0`); FluidSynth's own audio and MIDI
/// drivers are not used.
///
/// Timing: FluidSynth applies events at the start of its next internal block
/// of 64 frames. Spinet asks the engine to deliver each event at the 64-frame
/// boundary nearest its exact frame, so onsets land within 32 frames of the
/// exact time (early or late), and exactly on time when the event falls on
/// a boundary.
///
/// The soft pedal (CC 67) goes to FluidSynth like any controller: it acts
/// through the modulators the font defines for it, and does nothing in a
/// font that defines none (FluidSynth's default modulators include none).
///
/// Floods: FluidSynth queues the voice updates of each call (a note-on
/// about 50 per voice, a note-off one per voice, a controller one or two
/// per voice it modulates) in a ring of 64 x polyphony entries that it
/// empties only at the start of its next 64-frame block, and a full ring
/// drops updates -- note-offs among them, leaving notes hanging. So the unit
/// (1) coalesces controller values (and pitch bends, channel pressures)
/// that a later value of the same controller on the same channel
/// supersedes before anything else reaches FluidSynth (never pedals 64-69,
/// data entry and (N)RPN 6, 38, 96-101, or the channel mode messages
/// 120-127; any other message is a barrier, and so is rendering), and
/// (2) keeps an estimate of the updates it handed FluidSynth since its last
/// block and holds what would exceed seven eighths of the ring (31/32 for
/// releases) in a preallocated backlog, in order, handed over at the
/// following blocks: a flood is delayed, never dropped (a release whose
/// channel has nothing in the backlog goes ahead of it, so a flood never
/// holds back the note-offs of another channel). The engine gathers
/// no more events than the backlog has room for (`eventRoom`), so offline
/// nothing is lost; live, a full backlog drops what comes, except releases,
/// which have a reserve of their own.
public final class SoundFontUnit: PartedUnit {
    public let name = "soundfont"
    public let fonts: [String]
    /// What of each font can sound (fonts the checker could read).
    public let diagnoses: [SoundFontDiagnosis]
    /// One line per damaged font (unusable samples and the presets they
    /// silence, repaired loops), to print once where the fonts are announced.
    public var fontWarnings: [String] { diagnoses.compactMap(\.warning) }
    /// What FluidSynth said while it loaded the fonts.
    let loadMessages: [String]
    public let sampleRate: Double
    public let channels: Int
    private let settings: OpaquePointer
    private let synth: OpaquePointer
    private let polyphony: Int
    private let fluidEffects: Bool
    /// FluidSynth output groups: channel c renders into group c % groups.
    private let groups: Int
    private var maxFrames = 0
    private var channelBuffers: UnsafeMutablePointer<Float>?
    /// Per group, its left and right buffer, or nil until a note plays into
    /// the group (FluidSynth skips nil outputs, and so does the mix).
    private var outPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
    private var groupActive: UnsafeMutablePointer<Bool>
    /// Per group and send (3 per group): whether anything besides this unit
    /// reads the send from the group's part (`readSends`).
    private let partSendRead: UnsafeMutablePointer<Bool>
    /// Per group: the channel whose send levels the group's output takes.
    /// A channel named in `soundingChannels` owns its group for good; any
    /// other group follows the channel of its latest note-on.
    private var groupOwner: UnsafeMutablePointer<Int>
    private var ownerFixed: UnsafeMutablePointer<Bool>
    /// Send levels (0...1) per channel, from CC 91/93/94.
    private var sendTarget: UnsafeMutablePointer<Float>
    /// Send levels per group as last applied, for ramping.
    private var sendCurrent: UnsafeMutablePointer<Float>
    /// Per group send: the level its ramp moves to, the step per frame and
    /// the frames of the ramp left. A ramp lasts `sendRampFrames` however
    /// the host splits its blocks, so the output does not depend on them.
    private var sendAim: UnsafeMutablePointer<Float>
    private var sendStep: UnsafeMutablePointer<Float>
    private var sendRampLeft: UnsafeMutablePointer<Int>
    /// About 5 ms at 48 kHz: no zipper noise on CC 91/93/94 changes.
    public static let sendRampFrames = 256
    private var voices = 0
    /// What FluidSynth says while this unit works on the render path.
    private let renderLog = RealtimeLog(slots: 64)
    /// Flood control (see the type's documentation).
    private let flood: FloodControl
    /// Frames this unit has rendered: FluidSynth's blocks start at multiples of 64.
    private var position: Int64 = 0

    /// Serializes synth creation and font loading. A `PThreadLock`, not
    /// Synchronization's Mutex: ThreadSanitizer sees the ordering a pthread
    /// mutex gives, and reported the futex-based Mutex's as a data race.
    private static let creation = PThreadLock()

    private static func whileCreating<T>(_ body: () -> T) -> T {
        creation.withLock {
            spinet_hold_instpatch()
            return body()
        }
    }

    /// FluidSynth's block: events take effect on its boundaries.
    public static let grid: Int64 = 64

    /// Loads `fonts` (later fonts stacked over earlier ones: a preset is looked
    /// up in the last font first). Not on the render thread.
    public init(fonts: [String], sampleRate: Double, channels: Int = 16, options: SoundFontOptions = SoundFontOptions()) throws(SoundFontError) {
        precondition(channels > 0 && channels % 16 == 0)
        FluidLog.install()
        var diagnoses: [SoundFontDiagnosis] = []
        for path in fonts {
            try Self.check(path)
            guard !diagnoses.contains(where: { $0.path == path }),
                  let diagnosis = SoundFontDiagnosis(path: path, undecodable: Self.undecodable(path)) else { continue }
            if diagnosis.nothingUsable { throw SoundFontError(path: path, reason: diagnosis.refusal) }
            diagnoses.append(diagnosis)
        }
        guard let settings = new_fluid_settings() else {
            throw SoundFontError(path: fonts.first ?? "-", reason: "FluidSynth could not create its settings (out of memory?)")
        }
        fluid_settings_setnum(settings, "synth.sample-rate", sampleRate)
        fluid_settings_setint(settings, "synth.threadsafe-api", 0)
        fluid_settings_setint(settings, "synth.midi-channels", Int32(channels))
        fluid_settings_setint(settings, "synth.polyphony", Int32(max(1, min(options.polyphony, 65535))))
        fluid_settings_setint(settings, "synth.reverb.active", options.fluidEffects ? 1 : 0)
        fluid_settings_setint(settings, "synth.chorus.active", options.fluidEffects ? 1 : 0)
        fluid_settings_setint(settings, "synth.dynamic-sample-loading", 0)
        fluid_settings_setint(settings, "synth.cpu-cores", 1)
        fluid_settings_setint(settings, "synth.verbose", 0)
        fluid_settings_setnum(settings, "synth.gain", options.gain)
        // Without its own effects FluidSynth hands Spinet one stereo output
        // per MIDI channel, from which the unit makes the effect sends.
        let limit = min(channels, 128)
        let sounding = options.soundingChannels.map { $0.filter { (0..<channels).contains($0) } }
        let groups = options.fluidEffects ? 1 : sounding.map { Self.outputCount(for: $0, limit: limit) } ?? limit
        fluid_settings_setint(settings, "synth.audio-groups", Int32(groups))
        fluid_settings_setint(settings, "synth.audio-channels", Int32(groups))
        // FluidSynth fills process-wide tables the first time a synth is
        // created, without guarding against a second thread doing the same;
        // Spinet creates and loads synths one at a time (never on the render thread).
        let created = Self.whileCreating { new_fluid_synth(settings) }
        guard let synth = created else {
            delete_fluid_settings(settings)
            throw SoundFontError(path: fonts.first ?? "-", reason: "FluidSynth could not create a synthesizer: \(FluidLog.takeCollected().last ?? "unknown reason")")
        }
        _ = FluidLog.takeCollected()
        // Spinet's loader also drops the samples FluidSynth would take but cannot play.
        var disabled = Dictionary(diagnoses.map { ($0.path, $0.disabled) }) { a, _ in a }
        var viewLoader = false
        var loadMessages: [String] = []
        func useViewLoader() {
            guard !viewLoader, let loader = new_fluid_defsfloader(settings) else { return }
            FontFileView.install(on: loader)
            fluid_synth_add_sfloader(synth, loader)     // tried first; the synth owns it
            viewLoader = true
        }
        if options.programs != nil || disabled.values.contains(where: { !$0.isEmpty }) { useViewLoader() }
        for path in fonts {
            var (id, messages) = Self.load(path, into: synth, programs: options.programs, disabled: disabled[path] ?? [])
            let failedSamples = Self.failedSamples(messages)
            // An SF3 sample whose data does not decode fails the whole font in
            // FluidSynth, which names it: load once more without it.
            if id == FLUID_FAILED, !failedSamples.isEmpty, let index = diagnoses.firstIndex(where: { $0.path == path }),
               let again = SoundFontDiagnosis(path: path, undecodable: failedSamples), again.disabled != disabled[path] {
                if again.nothingUsable {
                    delete_fluid_synth(synth)
                    delete_fluid_settings(settings)
                    throw SoundFontError(path: path, reason: again.refusal)
                }
                diagnoses[index] = again
                Self.remember(path, undecodable: failedSamples)
                disabled[path] = again.disabled
                useViewLoader()
                (id, messages) = Self.load(path, into: synth, programs: options.programs, disabled: again.disabled)
            }
            loadMessages += messages
            if id == FLUID_FAILED {
                let why = messages.last.map { " (\($0))" } ?? ""
                delete_fluid_synth(synth)
                delete_fluid_settings(settings)
                throw SoundFontError(path: path, reason: "could not be loaded\(why): the file is damaged or not a SoundFont 2 file; pass another with --soundfont")
            }
        }
        // Channel 10 of every port plays drums, as in General MIDI.
        for ch in stride(from: 9, to: channels, by: 16) {
            fluid_synth_set_channel_type(synth, Int32(ch), Int32(CHANNEL_TYPE_DRUM.rawValue))
        }
        fluid_synth_program_reset(synth)
        self.settings = settings
        self.synth = synth
        self.fonts = fonts
        self.diagnoses = diagnoses
        self.loadMessages = loadMessages
        self.sampleRate = sampleRate
        self.channels = channels
        polyphony = max(1, min(options.polyphony, 65535))
        flood = FloodControl(channels: channels, polyphony: polyphony)
        fluidEffects = options.fluidEffects
        self.groups = groups
        defer { FluidLog.register(renderLog, owner: self) }
        sendTarget = .allocate(capacity: 3 * channels)
        sendCurrent = .allocate(capacity: 3 * groups)
        Self.resetSends(sendTarget, count: channels)
        Self.resetSends(sendCurrent, count: groups)
        sendAim = .allocate(capacity: 3 * groups)
        Self.resetSends(sendAim, count: groups)
        sendStep = .allocate(capacity: 3 * groups)
        sendStep.initialize(repeating: 0, count: 3 * groups)
        sendRampLeft = .allocate(capacity: 3 * groups)
        sendRampLeft.initialize(repeating: 0, count: 3 * groups)
        groupActive = .allocate(capacity: groups)
        groupActive.initialize(repeating: false, count: groups)
        partSendRead = .allocate(capacity: 3 * groups)
        partSendRead.initialize(repeating: true, count: 3 * groups)
        groupOwner = .allocate(capacity: groups)
        ownerFixed = .allocate(capacity: groups)
        for g in 0..<groups {
            groupOwner[g] = g
            ownerFixed[g] = sounding == nil
        }
        for c in sounding ?? [] where !ownerFixed[c % groups] {
            groupOwner[c % groups] = c
            ownerFixed[c % groups] = true
        }
    }

    /// Per font (path, size and modification time): the samples FluidSynth
    /// could not decode when it last loaded it, so that the next synth loads
    /// it without them at once. Under `creation`.
    nonisolated(unsafe) private static var undecodableSamples: [String: Set<String>] = [:]

    private static func fileKey(_ path: String) -> String {
        var st = stat()
        guard stat(path, &st) == 0 else { return path }
        return "\(path)\u{0}\(st.st_size)\u{0}\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
    }

    private static func undecodable(_ path: String) -> Set<String> {
        let key = fileKey(path)
        return whileCreating { undecodableSamples[key] ?? [] }
    }

    private static func remember(_ path: String, undecodable: Set<String>) {
        let key = fileKey(path)
        whileCreating { undecodableSamples[key] = undecodable }
    }

    /// Loads one font into `synth`: its id (or FLUID_FAILED) and what
    /// FluidSynth said meanwhile (warnings and errors).
    /// Libraries print to standard error on their own while FluidSynth loads
    /// a damaged font; the diagnosis (or the error) says it once, so their
    /// lines are held back.
    private static func load(_ path: String, into synth: OpaquePointer, programs: Set<Int>?, disabled: Set<Int>) -> (Int32, [String]) {
        let (id, others, messages) = whileCreating {
            _ = FluidLog.takeCollected()
            FontFileView.pendingPrograms = programs
            FontFileView.pendingDisabled = disabled
            defer { FontFileView.pendingPrograms = nil; FontFileView.pendingDisabled = [] }
            FluidLog.markLoadingThread()
            defer { FluidLog.markLoadingThread(false) }
            let (id, others) = LibraryNoise.capturing { fluid_synth_sfload(synth, path, 1) }
            return (id, others, FluidLog.takeCollected())
        }
        LibraryNoise.pass(others)
        return (id, messages)
    }

    /// The samples FluidSynth could not load (SF3 data that does not decode,
    /// which fails the whole font), named in its messages.
    static func failedSamples(_ messages: [String]) -> Set<String> {
        // fluid_defsfont_load_all_sampledata: "Failed to load sample '%s'"
        let prefix = "Failed to load sample '"
        return Set(messages.compactMap { line -> String? in
            guard line.hasPrefix(prefix), line.hasSuffix("'") else { return nil }
            return String(line.dropFirst(prefix.count).dropLast())
        })
    }

    /// The FluidSynth outputs a unit needs so that each of `channels` has
    /// its own (channel c plays into output c % count): the smallest count,
    /// from one per channel up to `limit`, that gives no two of them the
    /// same output. At most `limit`; at least 1.
    public static func outputCount(for channels: [Int], limit: Int) -> Int {
        let distinct = Set(channels)
        guard !distinct.isEmpty else { return 1 }
        var count = distinct.count
        while count < limit && Set(distinct.map { $0 % count }).count < distinct.count { count += 1 }
        return min(count, limit)
    }

    /// FluidSynth outputs this unit renders into (1 with its own effects).
    public var outputGroups: Int { groups }

    /// The presets FluidSynth holds, over all the unit's fonts (fewer than
    /// the fonts have when `SoundFontOptions.programs` is set). Not on the
    /// render thread.
    public var loadedPresets: Int {
        var count = 0
        for f in 0..<fluid_synth_sfcount(synth) {
            guard let font = fluid_synth_get_sfont(synth, UInt32(f)) else { continue }
            fluid_sfont_iteration_start(font)
            while fluid_sfont_iteration_next(font) != nil { count += 1 }
        }
        return count
    }

    /// General MIDI defaults: reverb send 40, chorus 0, delay 0.
    static func resetSends(_ levels: UnsafeMutablePointer<Float>, count: Int) {
        for k in 0..<count {
            levels[3 * k] = 40 / 127
            levels[3 * k + 1] = 0
            levels[3 * k + 2] = 0
        }
    }

    deinit {
        delete_fluid_synth(synth)
        delete_fluid_settings(settings)
        sendTarget.deallocate()
        sendCurrent.deallocate()
        sendAim.deallocate()
        sendStep.deallocate()
        sendRampLeft.deallocate()
        groupActive.deallocate()
        partSendRead.deallocate()
        groupOwner.deallocate()
        ownerFixed.deallocate()
        channelBuffers?.deallocate()
        outPointers?.deallocate()
    }

    /// Checks a path before any audio work: present, readable, a SoundFont.
    public static func check(_ path: String) throws(SoundFontError) {
        FluidLog.install()   // FluidSynth's header check logs its own error line; the one thrown here says it
        var st = stat()
        if stat(path, &st) != 0 {
            throw SoundFontError(path: path, reason: "\(String(cString: strerror(errno))); pass an existing .sf2/.sf3 file with --soundfont")
        }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            throw SoundFontError(path: path, reason: "is a directory; pass a .sf2/.sf3 file with --soundfont")
        }
        // Every load passes here (render, play's font switch, bench): opening
        // a FIFO would block until something writes to it.
        if (st.st_mode & S_IFMT) != S_IFREG {
            throw SoundFontError(path: path, reason: "is not a regular file (a FIFO, a device or a socket); a SoundFont is an .sf2 or .sf3 file")
        }
        if access(path, R_OK) != 0 {
            throw SoundFontError(path: path, reason: "\(String(cString: strerror(errno))); check the file's permissions")
        }
        if st.st_size == 0 {
            throw SoundFontError(path: path, reason: "the file is empty; pass a .sf2/.sf3 file with --soundfont")
        }
        if fluid_is_soundfont(path) == 0 {
            throw SoundFontError(path: path, reason: "not a SoundFont (no RIFF sfbk header); pass a .sf2/.sf3 file with --soundfont")
        }
        if let problem = riffProblem(path: path, fileSize: Int64(st.st_size)) {
            throw SoundFontError(path: path, reason: "\(problem); the file is damaged, pass another with --soundfont")
        }
    }

    /// Walks the top-level RIFF structure (a few small reads): the RIFF size
    /// and each chunk (INFO, sdta, pdta) must fit in the file. FluidSynth
    /// would otherwise read a truncated font's missing samples as garbage.
    static func riffProblem(path: String, fileSize: Int64) -> String? {
        guard let f = fopen(path, "rb") else { return "cannot open it: \(String(cString: strerror(errno)))" }
        defer { fclose(f) }
        func read32(at offset: Int64) -> (tag: UInt32, size: UInt32)? {
            var buf = [UInt8](repeating: 0, count: 8)
            guard fseeko(f, Int(offset), SEEK_SET) == 0, fread(&buf, 1, 8, f) == 8 else { return nil }
            let tag = UInt32(buf[0]) << 24 | UInt32(buf[1]) << 16 | UInt32(buf[2]) << 8 | UInt32(buf[3])
            let size = UInt32(buf[4]) | UInt32(buf[5]) << 8 | UInt32(buf[6]) << 16 | UInt32(buf[7]) << 24
            return (tag, size)
        }
        guard let riff = read32(at: 0) else { return "the file is too short to be a SoundFont" }
        // Some fonts in the wild declare a few bytes more than they hold; be lenient there.
        let declared = 8 + Int64(riff.size)
        if declared > fileSize + 8 {
            return "the file is truncated (its header declares \(declared) bytes, the file has \(fileSize))"
        }
        let riffEnd = min(declared, fileSize)
        var offset: Int64 = 12
        var chunks = 0
        while offset + 8 <= riffEnd {
            guard let chunk = read32(at: offset) else { return "unreadable chunk header at byte \(offset)" }
            let end = offset + 8 + Int64(chunk.size)
            if end > fileSize {
                return "the chunk at byte \(offset) declares \(chunk.size) bytes, past the end of the file (truncated?)"
            }
            offset = end + Int64(chunk.size & 1)
            chunks += 1
        }
        return chunks >= 3 ? nil : "the file has \(chunks) of the 3 chunks a SoundFont needs (INFO, sdta, pdta)"
    }

    /// One-thread OpenMP regions FluidSynth opened that Spinet ran inline
    /// (see CFluidSynthRealtime): nonzero where libfluidsynth uses OpenMP.
    public static var inlineParallelRegions: Int { Int(spinet_inline_parallel_regions()) }

    /// Messages FluidSynth raised on the render path of any unit since the last call.
    public static func drainRenderThreadMessages() -> [String] { FluidLog.drainRenderLogs() }

    /// Messages FluidSynth raised on this unit's render path since the last call.
    public func drainRenderMessages() -> [String] { renderLog.drain() }

    // MARK: InstrumentUnit

    public func prepare(sampleRate: Double, maxFrames: Int, channels: Int) {
        precondition(sampleRate == self.sampleRate, "SoundFontUnit was loaded for \(self.sampleRate) Hz")
        precondition(channels <= self.channels, "SoundFontUnit was loaded for \(self.channels) channels")
        channelBuffers?.deallocate()
        outPointers?.deallocate()
        self.maxFrames = maxFrames
        let buffers = UnsafeMutablePointer<Float>.allocate(capacity: 2 * groups * maxFrames)
        buffers.initialize(repeating: 0, count: 2 * groups * maxFrames)
        channelBuffers = buffers
        let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: 2 * groups)
        for k in 0..<(2 * groups) { pointers[k] = groupActive[k / 2] ? buffers + k * maxFrames : nil }
        outPointers = pointers
    }

    /// Gives group `g` its buffers (still zero: nothing wrote to them).
    @inline(__always)
    private func activate(_ g: Int) {
        groupActive[g] = true
        if let buffers = channelBuffers, let pointers = outPointers {
            pointers[2 * g] = buffers + 2 * g * maxFrames
            pointers[2 * g + 1] = buffers + (2 * g + 1) * maxFrames
        }
    }

    /// Render thread only. Dry sound and the CC 91/93/94 sends, from
    /// FluidSynth's per-channel outputs (or FluidSynth's own mix and effects
    /// with `fluidEffects`, and silent sends). With a backlog, renders block
    /// by block and hands the backlog over at each block's start.
    public func render(_ output: UnitOutput, frames: Int) {
        render(output, parts: nil, partOffset: 0, frames: frames)
    }

    // MARK: PartedUnit: FluidSynth's outputs one by one (stems)

    /// One part per FluidSynth output (`outputGroups`; one with its own effects).
    public var partCount: Int { groups }

    /// The output a channel named in `SoundFontOptions.soundingChannels`
    /// owns; nil for any other channel (or with FluidSynth's own effects).
    public func part(forChannel channel: Int) -> Int? {
        guard !fluidEffects, channel >= 0, channel < channels else { return nil }
        let g = channel % groups
        return ownerFixed[g] && groupOwner[g] == channel ? g : nil
    }

    public func readSends(ofPart part: Int, _ effects: StemEffects) {
        guard part >= 0 && part < groups else { return }
        partSendRead[3 * part] = effects.contains(.reverb)
        partSendRead[3 * part + 1] = effects.contains(.chorus)
        partSendRead[3 * part + 2] = effects.contains(.delay)
    }

    /// `render(_:frames:)`, also writing each FluidSynth output's dry sound
    /// and sends to its part (silence with FluidSynth's own effects; a
    /// silent send nothing reads (`readSends`) is left as it was).
    public func render(_ output: UnitOutput, parts: UnsafePointer<UnitOutput>, partOffset: Int, frames: Int) {
        render(output, parts: Optional(parts), partOffset: partOffset, frames: frames)
    }

    private func render(_ output: UnitOutput, parts: UnsafePointer<UnitOutput>?, partOffset: Int, frames: Int) {
        guard frames > 0 else { return }
        let previousLog = FluidLog.enterRender(renderLog)
        defer { FluidLog.leaveRender(previousLog) }
        flushHeld()
        var done = 0
        while done < frames {
            let n = nextPiece(frames - done)
            let o = output.advanced(by: done)
            if fluidEffects || channelBuffers == nil {
                renderMix(left: o.left, right: o.right, frames: n)
                o.silenceSends(frames: n)
                if let parts { for g in 0..<groups { parts[g].advanced(by: partOffset + done).silence(frames: n) } }
            } else {
                renderGroups(o, parts: parts, partOffset: partOffset + done, frames: n)
            }
            rendered(n)
            done += n
        }
    }

    /// Frames to render next, at most `remaining`: all of them without a
    /// backlog; else up to the next block boundary, handing the backlog
    /// over first when at one.
    @inline(__always)
    private func nextPiece(_ remaining: Int) -> Int {
        guard flood.count > 0 else { return remaining }
        if position % Self.grid == 0 { drainBacklog() }
        guard flood.count > 0 else { return remaining }
        return min(remaining, Int(Self.grid - position % Self.grid))
    }

    /// After rendering `n` frames: when they crossed the start of a
    /// FluidSynth block, FluidSynth took everything queued.
    @inline(__always)
    private func rendered(_ n: Int) {
        let g = Self.grid
        if position % g == 0 || position / g != (position + Int64(n) - 1) / g { flood.ringEmptied() }
        position += Int64(n)
    }

    /// The groups' sum into `output`; with `parts`, each group also into
    /// its part (from `partOffset`), and the sum is the sum of the parts
    /// to the bit: each send product is the same float either way.
    private func renderGroups(_ output: UnitOutput, parts: UnsafePointer<UnitOutput>?, partOffset: Int, frames: Int) {
        guard let buffers = channelBuffers, let pointers = outPointers else { return }
        let stride = maxFrames
        // With parts, FluidSynth writes each group's dry sound straight
        // into its part (no copy); the group's own buffers otherwise.
        for g in 0..<groups where groupActive[g] {
            if let parts {
                let part = parts[g].advanced(by: partOffset)
                pointers[2 * g] = part.left
                pointers[2 * g + 1] = part.right
            }
            pointers[2 * g]!.update(repeating: 0, count: frames)
            pointers[2 * g + 1]!.update(repeating: 0, count: frames)
        }
        fluid_synth_process(synth, Int32(frames), 0, nil, Int32(2 * groups), pointers)
        voices = Int(fluid_synth_get_active_voice_count(synth))
        output.silence(frames: frames)
        for g in 0..<groups {
            let part = parts.map { $0[g].advanced(by: partOffset) }
            guard groupActive[g] else {
                part?.silence(frames: frames)
                continue
            }
            let l = pointers[2 * g]!, r = pointers[2 * g + 1]!
            if part != nil {
                pointers[2 * g] = buffers + 2 * g * stride
                pointers[2 * g + 1] = buffers + (2 * g + 1) * stride
            }
            for i in 0..<frames {
                output.left[i] += l[i]
                output.right[i] += r[i]
            }
            let owner = 3 * groupOwner[g]
            guard let part else {
                mixSend(3 * g, owner, l, r, into: output.reverbLeft, output.reverbRight, frames: frames)
                mixSend(3 * g + 1, owner + 1, l, r, into: output.chorusLeft, output.chorusRight, frames: frames)
                mixSend(3 * g + 2, owner + 2, l, r, into: output.delayLeft, output.delayRight, frames: frames)
                continue
            }
            // Written, not cleared and added to: the same floats (0 + x).
            // A silent send is not added to the unit's: a sum that starts
            // from +0 is never -0, and adding +0 to it changes nothing. It
            // is cleared in the part only if its stem's effect reads it.
            let partSends = SendBus(part), unitSends = SendBus(output)
            for e in 0..<3 {
                let send = partSends.pair(e), sum = unitSends.pair(e)
                if mixSend(3 * g + e, owner + e, l, r, into: send.left, send.right, frames: frames, adding: false,
                           clearSilence: partSendRead[3 * g + e]) {
                    Self.add(send.left, into: sum.left, frames)
                    Self.add(send.right, into: sum.right, frames)
                }
            }
        }
    }

    @inline(__always)
    private static func add(_ source: UnsafeMutablePointer<Float>, into destination: UnsafeMutablePointer<Float>, _ frames: Int) {
        for i in 0..<frames { destination[i] += source[i] }
    }

    /// Adds one group into one send (`adding` false: writes what adding
    /// it to silence would give, `0 + x`, without the clearing). A new
    /// level for the owning channel starts a ramp of `sendRampFrames`
    /// frames from the level reached (no zipper noise on CC changes), which
    /// goes on across calls: the same frames get the same levels however
    /// the calls are split. False when the send was silent (nothing added;
    /// zeros written when not `adding`, if `clearSilence`).
    @inline(__always) @discardableResult
    private func mixSend(_ index: Int, _ target: Int, _ l: UnsafeMutablePointer<Float>, _ r: UnsafeMutablePointer<Float>,
                         into dl: UnsafeMutablePointer<Float>, _ dr: UnsafeMutablePointer<Float>, frames: Int,
                         adding: Bool = true, clearSilence: Bool = true) -> Bool {
        let to = sendTarget[target]
        if to != sendAim[index] {
            sendAim[index] = to
            sendRampLeft[index] = Self.sendRampFrames
            sendStep[index] = (to - sendCurrent[index]) / Float(Self.sendRampFrames)
        }
        var level = sendCurrent[index]
        let ramping = min(sendRampLeft[index], frames)
        if ramping == 0 && level == 0 {
            if !adding && clearSilence {
                dl.update(repeating: 0, count: frames)
                dr.update(repeating: 0, count: frames)
            }
            return false
        }
        let step = sendStep[index]
        if adding {
            for i in 0..<ramping {
                level += step
                dl[i] += l[i] * level
                dr[i] += r[i] * level
            }
        } else {
            for i in 0..<ramping {
                level += step
                dl[i] = 0 + l[i] * level
                dr[i] = 0 + r[i] * level
            }
        }
        sendRampLeft[index] -= ramping
        if sendRampLeft[index] == 0 { level = to }
        if level != 0 {
            if adding {
                for i in ramping..<frames {
                    dl[i] += l[i] * level
                    dr[i] += r[i] * level
                }
            } else {
                for i in ramping..<frames {
                    dl[i] = 0 + l[i] * level
                    dr[i] = 0 + r[i] * level
                }
            }
        } else if !adding {
            (dl + ramping).update(repeating: 0, count: frames - ramping)
            (dr + ramping).update(repeating: 0, count: frames - ramping)
        }
        sendCurrent[index] = level
        return true
    }

    public func deliveryFrame(forEventAt frame: Int64) -> Int64 {
        // nearest boundary of FluidSynth's 64-frame grid (ties go late)
        let g = Self.grid
        let f = max(frame, 0)
        return (f + g / 2) / g * g
    }

    /// Render thread only. A controller value that a later one may
    /// supersede is held (see the type's documentation); anything else first
    /// hands over the held values, then goes to FluidSynth, or to the
    /// backlog when FluidSynth's ring has no room for it this block.
    public func receive(_ message: MIDIMessage) {
        // FluidSynth has `channels` channels; the per-channel state here too.
        if let c = message.channel, Int(c) >= channels { return }
        let previousLog = FluidLog.enterRender(renderLog)
        defer { FluidLog.leaveRender(previousLog) }
        if let slot = FloodControl.slot(for: message) {
            flood.hold(message, slot: slot)
            return
        }
        flushHeld()
        submit(message)
    }

    public func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>) {
        guard message.count >= 3 else { return }
        let previousLog = FluidLog.enterRender(renderLog)
        defer { FluidLog.leaveRender(previousLog) }
        flushHeld()
        if flood.count == 0 && charge(fixed: sysExCost(message), channel: -1, perVoice: 0, release: false) {
            applySysEx(message)
        } else if !flood.append(sysEx: message) {
            flood.dropped.add(1, ordering: .relaxed)
        }
    }

    /// Messages FluidSynth could not take in time and the unit dropped
    /// (live only: offline, the engine never gives the unit more than its
    /// backlog holds; releases are never among them), and the calls whose
    /// voice updates FluidSynth's full ring lost (its "Ringbuffer full":
    /// the estimate below fell short; none is expected). Any thread.
    public var droppedEvents: Int { flood.dropped.load(ordering: .relaxed) + renderLog.losses.load(ordering: .relaxed) }

    /// Messages that waited in the backlog for a later block. Any thread.
    public var delayedEvents: Int { flood.delayed.load(ordering: .relaxed) }

    /// Events the unit can take in the next slice without dropping any.
    public var eventRoom: Int { flood.bytesFull ? 0 : max(0, FloodControl.backlogLimit - flood.count - flood.heldCount) }

    /// Hands the held values on, in the order they first came.
    @inline(__always)
    private func flushHeld() {
        let n = flood.heldCount
        guard n > 0 else { return }
        flood.heldCount = 0
        for i in 0..<n {
            let m = flood.held[i]
            if let slot = FloodControl.slot(for: m) { flood.heldIndex[slot] = -1 }
            submit(m)
        }
    }

    /// To FluidSynth now, or to the backlog (behind what waits there; a
    /// release whose channel has nothing waiting goes ahead of it, see
    /// `FloodControl.mayOvertake`).
    private func submit(_ m: MIDIMessage) {
        if (flood.count == 0 || flood.mayOvertake(m)) && chargeFor(m) {
            apply(m)
        } else if !flood.append(m) {
            flood.dropped.add(1, ordering: .relaxed)
        }
    }

    /// At the start of a FluidSynth block: hands over as much of the
    /// backlog as the ring takes (at least one message, so it always moves).
    private func drainBacklog() {
        while flood.count > 0 {
            switch flood.backlog[flood.head] {
            case .message(let m):
                guard chargeFor(m) else { return }
                flood.removeFirst()
                apply(m)
            case .sysEx(let n):
                guard charge(fixed: sysExCost(flood.peekSysEx(length: n)), channel: -1, perVoice: 0, release: false) else { return }
                flood.removeFirst()
                applySysEx(UnsafeBufferPointer(start: flood.scratch, count: n))
            }
        }
    }

    /// The estimate for a reset (System Reset, GM/GS/XG reset SysEx, which
    /// turn every voice off) or a tuning SysEx (which retunes every voice).
    private var systemCost: Int { 4 * Int(fluid_synth_get_active_voice_count(synth)) + 64 }

    /// What a SysEx costs: `systemCost` for those FluidSynth acts on that
    /// touch voices (MIDI Tuning Standard, GM System On/Off, GS and XG
    /// reset, GS rhythm part), nothing for the rest (FluidSynth ignores
    /// them: master volume, GS parameters, effect types ...). `m` is F0 ... F7.
    private func sysExCost(_ m: UnsafeBufferPointer<UInt8>) -> Int {
        guard m.count >= 6 else { return 0 }
        switch SysExKind(m) {
        case .gmSystemOn, .gmSystemOff, .gm2SystemOn, .gsReset, .xgSystemOn:
            return systemCost
        default:
            // MIDI Tuning Standard (universal sub-ID 08), GS rhythm part (40 1x 15)
            let tuning = (m[1] == 0x7E || m[1] == 0x7F) && m[3] == 0x08
            let rhythmPart = m.count >= 9 && m[1] == 0x41 && m[3] == 0x42 && m[4] == 0x12 && m[5] == 0x40
                && m[6] & 0xF0 == 0x10 && m[7] == 0x15
            return tuning || rhythmPart ? systemCost : 0
        }
    }

    /// Charges the estimated voice updates of `m` to this block's ring
    /// budget; false when they do not fit (nothing charged). The estimates
    /// follow fluid_synth.c and fluid_voice.c of FluidSynth 2.3 and were
    /// measured with the bundled font: a voice started is 48 updates (50
    /// counted, for a voice stolen to make room costs one more, 52 with the
    /// release of the key's previous note), plus, on any channel, one for
    /// each voice of the same key still sounding (FluidSynth releases every
    /// one again, those already in their release too: a flood of one key
    /// costs more with every note) and 3 for each voice of the same
    /// exclusive class (killed: a closed hi-hat kills every hi-hat still
    /// sounding); 4 counted for every voice on the channel. A note-off
    /// one per voice of the key, a controller one per voice for
    /// each generator its modulators reach (1 for volume, expression,
    /// modulation, pitch bend and pressure, 2 for pan; 2 and 3 counted, for
    /// a font may add modulators; a pedal pressed none, 1 counted, a pedal
    /// let go one per voice it held, 2 counted), Reset All Controllers about
    /// 10 per voice (16 counted). In mono or legato mode a note-off may start the note
    /// held before it, so it counts as a note-on.
    private func chargeFor(_ m: MIDIMessage) -> Bool {
        switch m {
        case .noteOn(let c, _, let v) where v > 0:
            let k = Int(flood.noteVoices[Int(c)])
            return charge(fixed: 52 * k, channel: Int(c), perVoice: 4, release: false)
        case .noteOn(let c, _, _), .noteOff(let c, _, _):
            let k = Int(flood.noteVoices[Int(c)])
            return charge(fixed: flood.mono[Int(c)] ? 51 * k : k, channel: Int(c), perVoice: 0, release: true)
        case .polyPressure(let c, _, _), .channelPressure(let c, _), .pitchBend(let c, _):
            return charge(fixed: 0, channel: Int(c), perVoice: 2, release: false)
        case .controlChange(let c, let n, _):
            let k: Int
            switch n {
            case 121: k = 16
            case 8, 10: k = 3
            // bank select and (N)RPN numbers only set channel state (SF2
            // forbids them as modulator sources, FluidSynth ignores such)
            case 0, 32, 98...101: k = 0
            // a pedal pressed modulates nothing in FluidSynth's defaults; let
            // go, it also releases the voices it held (one update each)
            case 64...69: k = m.isRelease ? 2 : 1
            default: k = 2
            }
            return charge(fixed: 0, channel: Int(c), perVoice: k, release: m.isRelease)
        case .programChange:
            return charge(fixed: 1, channel: -1, perVoice: 0, release: false)
        case .systemReset:
            return charge(fixed: systemCost, channel: -1, perVoice: 0, release: true)
        }
    }

    /// Charges `fixed` updates plus `perVoice` for each voice on `channel`
    /// (-1: none) if the block's estimate stays under seven eighths of
    /// FluidSynth's ring (31/32 for a release; the rest is margin for
    /// estimates that fall short), or if nothing was charged yet
    /// this block. First every channel counts as holding every active voice
    /// (no counting needed while that fits); then the voices are counted
    /// per channel, once a block.
    private func charge(fixed: Int, channel c: Int, perVoice k: Int, release: Bool) -> Bool {
        let ring = 64 * polyphony
        let limit = release ? ring - ring / 32 : ring - ring / 8
        let fresh = flood.fresh
        if !flood.counted {
            let total = Int(fluid_synth_get_active_voice_count(synth))
            if fresh || flood.fixed + fixed + (flood.perVoiceSum + k) * total <= limit {
                flood.fixed += fixed
                if c >= 0 && k > 0 { flood.perVoice[c] += Int32(k); flood.perVoiceSum += k }
                return true
            }
            countVoices()
        }
        let perChannel = c >= 0 ? k * Int(flood.voicesOn[c]) : 0
        guard fresh || flood.fixed + flood.countedSum + fixed + perChannel <= limit else { return false }
        flood.fixed += fixed
        if c >= 0 && k > 0 { flood.perVoice[c] += Int32(k); flood.perVoiceSum += k }
        flood.countedSum += perChannel
        return true
    }

    /// Counts the voices on each channel (FluidSynth's voice list) and
    /// re-estimates what this block has charged with the counts.
    private func countVoices() {
        flood.voicesOn.update(repeating: 0, count: channels)
        fluid_synth_get_voicelist(synth, flood.voiceList, Int32(flood.voiceListCapacity), -1)
        var i = 0
        while i < flood.voiceListCapacity, let v = flood.voiceList[i] {
            let c = Int(fluid_voice_get_channel(v))
            if c >= 0 && c < channels { flood.voicesOn[c] += 1 }
            i += 1
        }
        var sum = 0
        for c in 0..<channels where flood.perVoice[c] != 0 { sum += Int(flood.perVoice[c]) * Int(flood.voicesOn[c]) }
        flood.countedSum = sum
        flood.counted = true
    }

    /// Gives FluidSynth one message (and keeps the unit's own channel state).
    private func apply(_ message: MIDIMessage) {
        switch message {
        case .noteOn(let c, let k, let v):
            if v == 0 {
                fluid_synth_noteoff(synth, Int32(c), Int32(k))
            } else {
                let g = Int(c) % groups
                if !groupActive[g] { activate(g) }
                if !ownerFixed[g] { groupOwner[g] = Int(c) }
                let before = fluid_synth_get_active_voice_count(synth)
                fluid_synth_noteon(synth, Int32(c), Int32(k), Int32(v))
                let started = Int(fluid_synth_get_active_voice_count(synth) - before)
                // More voices than expected: the charge grows to what the
                // note did, and the estimate for the channel's next notes
                // learns the most voices one started. (Fewer is no refund:
                // a note-on that steals or kills voices, or starts none
                // because every voice was stolen this block, still costs.)
                let expected = Int(flood.noteVoices[Int(c)])
                if started > expected {
                    flood.fixed += 50 * (started - expected)
                    flood.noteVoices[Int(c)] = Int32(started)
                }
                if flood.counted && started > 0 { flood.voicesOn[Int(c)] += Int32(started) }
            }
        case .noteOff(let c, let k, _):
            fluid_synth_noteoff(synth, Int32(c), Int32(k))
        case .polyPressure(let c, let k, let p):
            fluid_synth_key_pressure(synth, Int32(c), Int32(k), Int32(p))
        case .controlChange(let c, let n, let v):
            let s = 3 * Int(c)
            if n == MIDIController.reverbSend { sendTarget[s] = Float(v) / 127 }
            if n == MIDIController.chorusSend { sendTarget[s + 1] = Float(v) / 127 }
            if n == MIDIController.delaySend { sendTarget[s + 2] = Float(v) / 127 }
            if n == 126 || (n == 68 && v >= 64) { flood.mono[Int(c)] = true }
            if n == 127 || (n == 68 && v < 64) { flood.mono[Int(c)] = false }
            fluid_synth_cc(synth, Int32(c), Int32(n), Int32(v))
        case .programChange(let c, let p):
            fluid_synth_program_change(synth, Int32(c), Int32(p))
        case .channelPressure(let c, let p):
            fluid_synth_channel_pressure(synth, Int32(c), Int32(p))
        case .pitchBend(let c, let v):
            fluid_synth_pitch_bend(synth, Int32(c), Int32(v))
        case .systemReset:
            Self.resetSends(sendTarget, count: channels)
            flood.mono.update(repeating: false, count: channels)
            fluid_synth_system_reset(synth)
        }
    }

    private func applySysEx(_ message: UnsafeBufferPointer<UInt8>) {
        // FluidSynth takes the bytes between F0 and F7.
        guard message.count >= 3, let base = message.baseAddress else { return }
        base.withMemoryRebound(to: CChar.self, capacity: message.count) { p in
            _ = fluid_synth_sysex(synth, p + 1, Int32(message.count - 2), nil, nil, nil, 0)
        }
        if SysExKind(message)?.isGMSystemOrGSReset == true {
            Self.resetSends(sendTarget, count: channels)
        }
    }

    public func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        guard frames > 0 else { return }
        let previousLog = FluidLog.enterRender(renderLog)
        defer { FluidLog.leaveRender(previousLog) }
        flushHeld()
        var done = 0
        while done < frames {
            let n = nextPiece(frames - done)
            renderMix(left: left + done, right: right + done, frames: n)
            rendered(n)
            done += n
        }
    }

    private func renderMix(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        fluid_synth_write_float(synth, Int32(frames), left, 0, 1, right, 0, 1)
        voices = Int(fluid_synth_get_active_voice_count(synth))
    }

    public var activeVoices: Int { voices }
}

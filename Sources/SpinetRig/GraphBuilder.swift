import FoundationEssentials
import Glibc
import SpinetEffects
import SpinetEngine
import SpinetFile
import SpinetMIDI
import SpinetSettings
import SpinetSoundFont
import SpinetSynth

/// A setup problem the graph builder found (a bad `--channel`, a font that
/// does not load). `description` is the one line a command prints.
public struct RigError: Error, CustomStringConvertible, Sendable {
    public var description: String
    /// The exit status it ends a command with: 1, 128 + the signal when
    /// stopped, 0 when the reader of a stream went away (`| head`).
    public var exitStatus: Int32
    public init(_ description: String, exitStatus: Int32 = 1) {
        self.description = description
        self.exitStatus = exitStatus
    }
}

/// The cores this process may run on (its CPU affinity and CPU quota): the
/// default render threads and batch jobs, and the most render threads one
/// file gets.
public enum RenderCores {
    public static var available: Int {
        let online = max(ProcessInfo.processInfo.activeProcessorCount, 1)
        return min(online, allowedCount ?? online)
    }

    /// The CPUs in this process's affinity mask (`taskset`, a container's
    /// cpuset), from `Cpus_allowed_list` in /proc/self/status ("0-3,6").
    public static var allowedCount: Int? {
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let text = String(decoding: bytes[0..<n], as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) else { return nil }
        return cpuCount(list: line.dropFirst("Cpus_allowed_list:".count))
    }

    /// How many CPUs a list such as "0-3,6" names (nil if it is not one).
    public static func cpuCount(list: Substring) -> Int? {
        var count = 0
        for part in list.split(separator: ",") {
            let bounds = part.split(separator: "-").map { Int(String($0.filter { $0 != " " && $0 != "\t" })) }
            guard bounds.count == 1 || bounds.count == 2, let first = bounds[0], let last = bounds[bounds.count - 1],
                  first >= 0, last >= first else { return nil }
            count += last - first + 1
        }
        return count > 0 ? count : nil
    }
}

/// What a Spinet graph is made of, before any unit exists: every host
/// (`render`, `play`, `bench`, `spinet-rtcheck`, and the JACK and plugin
/// hosts) fills one and hands it to `GraphBuilder`.
public struct GraphSettings: Sendable {
    /// Ports, master gain, mute and solo, Spinet's send effects, EQ. Offline,
    /// `ports` and `offlineRenderThreads` are decided by the builder (from
    /// the file and `renderThreads`).
    public var engine = Engine.Configuration()
    /// The SoundFont players' polyphony and whether FluidSynth's own reverb
    /// and chorus run (`soundingChannels`/`programs` are set offline).
    public var soundFont = SoundFontOptions()
    /// Spinet's oscillator synth: its presets and voices.
    public var presets: PresetBank = .factory
    public var synthPolyphony = 256
    /// `--channel` values (`N=synth[:PRESET]`, `N=soundfont`), the config
    /// file's first: the first `configChannelCount` of them, named in errors
    /// by `configLabel` (`config PATH: "channels":`).
    public var channelAssignments: [String] = []
    public var configChannelCount = 0
    public var configLabel = ""
    /// Offline: render threads for one file (at most one per channel group,
    /// and one per core: `RenderCores.available`).
    public var renderThreads = 1
    /// Offline: renders running at once in this process (a batch's
    /// `--jobs`), each with as many players as this one: the voice memory
    /// budget is for all of them together.
    public var concurrentRenders = 1
    /// Offline: one stem per channel that plays notes and is heard (see
    /// `GraphBuilder.offline`).
    public var stems = false

    public init() {}
}

/// The sound a host asked for, in the words `render`, `play` and the
/// plugins share (from their options, the config file or a saved state):
/// `GraphSettings(_:ports:)` is the one conversion of them into a graph's
/// settings.
public struct SoundChoices: Sendable {
    public var gainDB = 0.0
    /// The limiter's ceiling (nil: the engine's default).
    public var ceilingDBFS: Double?
    public var mutedChannels: [Int] = []
    public var soloChannels: [Int] = []
    public var effects = EffectChoices()
    /// Voices per SoundFont player (nil: the players' default).
    public var polyphony: Int?
    public var presets: PresetBank = .factory
    /// `--channel` values, the config file's first (see `GraphSettings`).
    public var channelAssignments: [String] = []
    public var configChannelCount = 0
    public var configLabel = ""

    public init() {}
}

/// FluidSynth's own reverb and chorus, or Spinet's send effects (each nil:
/// that one is off), and the master EQ (nil: none).
public struct EffectChoices: Sendable {
    public var fluidEffects = false
    public var reverb: ReverbPreset?
    public var chorus: ChorusPreset?
    public var delay: DelayPreset?
    public var equalizer: Equalizer.Parameters?

    public init(fluidEffects: Bool = false, reverb: ReverbPreset? = nil, chorus: ChorusPreset? = nil, delay: DelayPreset? = nil,
                equalizer: Equalizer.Parameters? = nil) {
        self.fluidEffects = fluidEffects
        self.reverb = reverb
        self.chorus = chorus
        self.delay = delay
        self.equalizer = equalizer
    }
}

extension GraphSettings {
    /// The graph settings for `sound` on `ports` ports (the offline fields
    /// keep their defaults).
    public init(_ sound: SoundChoices, ports: Int = 1) {
        self.init()
        engine.ports = ports
        engine.gainDB = sound.gainDB
        if let ceiling = sound.ceilingDBFS { engine.ceilingDBFS = ceiling }
        engine.mutedChannels = sound.mutedChannels
        engine.soloChannels = sound.soloChannels
        engine.reverb = sound.effects.reverb
        engine.chorus = sound.effects.chorus
        engine.delay = sound.effects.delay
        engine.equalizer = sound.effects.equalizer
        soundFont.fluidEffects = sound.effects.fluidEffects
        if let polyphony = sound.polyphony { soundFont.polyphony = polyphony }
        presets = sound.presets
        channelAssignments = sound.channelAssignments
        configChannelCount = sound.configChannelCount
        configLabel = sound.configLabel
    }
}

/// An engine with its units and input queues, built but not yet prepared:
/// the host calls `engine.prepare(sampleRate:maxFrames:)` once it knows its
/// block size, then renders.
public final class EngineGraph: @unchecked Sendable {
    /// What it was built from (offline: with the file's ports).
    public let settings: GraphSettings
    public let engine: Engine
    /// The SoundFont players, in the order they were added (offline: one per
    /// channel group; live: the one in `soundFontSlot`, as first loaded).
    public let soundFonts: [SoundFontUnit]
    /// Live only: the slot a new SoundFont is offered to while playing.
    public let soundFontSlot: SwappableInstrument?
    /// Spinet's synth, with the presets `--channel` gave it. Offline it joins
    /// the engine only when something can play it (`synthInEngine`).
    public let synth: OscillatorSynth
    public let synthInEngine: Bool
    /// Global channels `--channel` gave to the synth.
    public let synthChannels: Set<Int>
    /// Stems mode: the global channel of each of the engine's stems, in
    /// stem order (empty without stems).
    public let stemChannels: [Int]
    /// Offline: how the file's channels were split (nil live).
    public let plan: RenderPlan?
    /// The input queues, one per producer thread, in the order asked for.
    public let inputs: [EventQueue]

    init(settings: GraphSettings, engine: Engine, soundFonts: [SoundFontUnit], soundFontSlot: SwappableInstrument?, synth: OscillatorSynth,
         synthInEngine: Bool, synthChannels: Set<Int>, inputs: [EventQueue], stemChannels: [Int] = [], plan: RenderPlan? = nil) {
        self.stemChannels = stemChannels
        self.plan = plan
        self.settings = settings
        self.engine = engine
        self.soundFonts = soundFonts
        self.soundFontSlot = soundFontSlot
        self.synth = synth
        self.synthInEngine = synthInEngine
        self.synthChannels = synthChannels
        self.inputs = inputs
    }
}

/// The one place a Spinet graph is built: SoundFont player(s), Spinet's
/// synth and its channels, Bank Select 126 routing, the offline channel
/// partition, the effects, the input queues.
public enum GraphBuilder {
    /// Spinet's synth with `settings`' presets and `--channel` assignments
    /// applied; returns it and the channels it plays. `ports` bounds `PORT.N`.
    public static func synth(_ settings: GraphSettings, ports: Int) throws(RigError) -> (OscillatorSynth, Set<Int>) {
        let synth = OscillatorSynth(presets: settings.presets, polyphony: settings.synthPolyphony)
        let channels = try applyAssignments(settings.channelAssignments, to: synth, ports: ports,
                                            configCount: settings.configChannelCount, configLabel: settings.configLabel)
        return (synth, channels)
    }

    /// The live graph (`spinet play`, JACK, plugins, and what `spinet-rtcheck`
    /// checks): `soundFont` in a `SwappableInstrument` slot playing every
    /// channel, Spinet's synth on the channels given to it and on any channel
    /// a Bank Select 126 moves there, and one input queue per capacity in
    /// `inputCapacities` (one per thread that pushes events).
    public static func live(_ settings: GraphSettings, soundFont: SoundFontUnit,
                            inputCapacities: [Int] = [8192]) throws(RigError) -> EngineGraph {
        let ports = settings.engine.ports
        let engine = Engine(configuration: settings.engine)
        // The SoundFont sits in a slot that a new one can replace while playing.
        let slot = SwappableInstrument(soundFont, channels: ports * 16)
        engine.routeAll(to: engine.add(slot))
        // Spinet's own synth: channels given to it, and any channel a Bank Select 126 moves there.
        let (synth, synthChannels) = try Self.synth(settings, ports: ports)
        let synthIndex = engine.add(synth)
        for c in synthChannels { engine.route(channel: c, to: synthIndex) }
        engine.routeBank(msb: OscillatorSynth.spinetPresetBank, to: synthIndex)
        let inputs = inputCapacities.map { engine.addInput(capacity: $0) }
        return EngineGraph(settings: settings, engine: engine, soundFonts: [soundFont], soundFontSlot: slot, synth: synth,
                           synthInEngine: true, synthChannels: synthChannels, inputs: inputs)
    }

    /// The live graph playing `fonts` at `rate`: its SoundFont player
    /// (`liveSoundFont`) built, then `live(_:soundFont:inputCapacities:)`.
    /// The one entry every live host (`play`, `bench`, `spinet-rtcheck`, the
    /// plugin core, a rate change) builds its graph by.
    public static func live(_ settings: GraphSettings, fonts: [String], rate: Double,
                            inputCapacities: [Int] = [8192]) throws(RigError) -> EngineGraph {
        try live(settings, soundFont: liveSoundFont(settings, fonts: fonts, rate: rate), inputCapacities: inputCapacities)
    }

    /// The SoundFont player a live graph of `settings` plays, or takes over
    /// in a font swap: `fonts` at `rate`, on every channel of its ports,
    /// with its options. A font that does not load is the font's one line.
    public static func liveSoundFont(_ settings: GraphSettings, fonts: [String], rate: Double) throws(RigError) -> SoundFontUnit {
        do {
            return try SoundFontUnit(fonts: fonts, sampleRate: rate, channels: settings.engine.ports * 16, options: settings.soundFont)
        } catch {
            throw RigError(error.description)
        }
    }

    /// The ports a file's channels need (16 channels each).
    public static func ports(_ schedule: MIDISchedule) -> Int {
        var maxChannel = 0
        for e in schedule.events {
            if case .message(let m) = e.kind, let c = m.channel { maxChannel = max(maxChannel, Int(c)) }
        }
        return maxChannel / 16 + 1
    }

    /// How `spinet render` splits `schedule` (see `RenderPlan`), priced by
    /// what its notes cost in `fonts`: their layers, releases and sample
    /// lengths (the model is gone before FluidSynth loads a font). Every
    /// loaded font's exclusive classes keep their keys together: a preset
    /// may come from any of them. `partitions`: a forced count (nil: the
    /// music decides); `polyphony` caps the count so that the players'
    /// voices fit `VoiceMemory.budget`.
    public static func plan(fonts: [String], schedule: MIDISchedule, partitions: Int? = nil, polyphony: Int = 256) -> RenderPlan {
        NotePricing(fonts: fonts).plan(schedule, partitions: partitions, polyphony: polyphony)
    }

    /// What notes cost in a stack of SoundFonts, read once for the plans
    /// of many files (a batch's order).
    public struct NotePricing {
        let fontCount: Int
        let models: [VoiceCostModel]
        public init(fonts: [String]) {
            fontCount = fonts.count
            models = fonts.reversed().compactMap { VoiceCostModel(path: $0) }
        }

        /// `GraphBuilder.plan` of `schedule`.
        public func plan(_ schedule: MIDISchedule, partitions: Int? = nil, polyphony: Int = 256) -> RenderPlan {
            let models = self.models
            let noteCost: ChannelPartition.NoteCost = { bank, program, drum, key, velocity, held in
                models.lazy.compactMap { $0.cost(bank: bank, program: program, drum: drum, key: key, velocity: velocity, held: held) }.first
            }
            let exclusiveKeys: ChannelPartition.ExclusiveKeys = { bank, program, drum in
                models.flatMap { $0.exclusiveKeys(bank: bank, program: program, drum: drum) }
            }
            return RenderPlan(schedule, channels: GraphBuilder.ports(schedule) * 16, noteCost: models.isEmpty ? nil : noteCost,
                              exclusiveKeys: models.count == fontCount ? exclusiveKeys : nil,
                              partitions: partitions, limit: VoiceMemory.mostPlayers(polyphony: polyphony))
        }
    }

    /// The offline graph for one MIDI file (`spinet render`): the channels
    /// split as `plan` says (see `RenderPlan`: how many partitions the
    /// music needs, or `partitions`), each partition with its own SoundFont
    /// player loading only what it plays, so that the output has the same
    /// bytes on any number of render threads; a channel that is most of the
    /// work shares its keys between the partitions. The synth joins only if
    /// something can play it. One input queue of `inputCapacity`.
    public static func offline(_ settings: GraphSettings, fonts: [String], schedule: MIDISchedule, sampleRate: Double,
                               partitions: Int? = nil, inputCapacity: Int = 16384) throws(RigError) -> EngineGraph {
        let ports = ports(schedule)
        var options = settings.soundFont
        let (synth, synthChannels) = try Self.synth(settings, ports: ports)
        let plan = plan(fonts: fonts, schedule: schedule, partitions: partitions, polyphony: options.polyphony)
        // the channels a Bank Select may move to the synth
        let bankSynthChannels = Set(schedule.events.compactMap { e -> Int? in
            guard case .message(.controlChange(let c, MIDIController.bankSelectMSB, let value)) = e.kind,
                  OscillatorSynth.bankSelectsSpinetPresets(msb: value) else { return nil }
            return Int(c)
        })
        let bankSelectsSynth = !bankSynthChannels.isEmpty
        var laneGroups = plan.groups
            .map { $0.filter { !synthChannels.contains($0.channel) } }.filter { !$0.isEmpty }
        if laneGroups.isEmpty { laneGroups = [[]] }   // the SoundFont player stays for Bank Select switches back
        let groups = laneGroups.map { lanes in lanes.map(\.channel) }
        let plays = ChannelPartition.playing(schedule, channels: ports * 16)
        try checkVoiceMemory(options.polyphony, players: groups.count, why: "one per partition",
                             renders: settings.concurrentRenders)
        var units: [SoundFontUnit] = []
        do {
            // FluidSynth shares one copy of the sample data between its synths.
            for channels in groups {
                // only the channels that play get an output of their own
                options.soundingChannels = channels.filter { plays[$0] }
                // only the presets the group's Program Changes can reach (a
                // channel's messages only ever reach its own group's unit)
                let members = Set(channels)
                options.programs = Set(schedule.events.compactMap { e -> Int? in
                    guard case .message(.programChange(let c, let program)) = e.kind, members.contains(Int(c)) else { return nil }
                    return Int(program)
                })
                units.append(try SoundFontUnit(fonts: fonts, sampleRate: sampleRate, channels: ports * 16, options: options))
            }
        } catch {
            throw RigError(error.description)
        }

        var config = settings.engine
        config.ports = ports
        // No more threads than cores: the render team's hand-overs spin (see
        // UnitWorkers), and a spinning thread with no core of its own only
        // delays the one it waits for (16 threads on 2 cores: +83 % CPU and
        // nearly twice the time). The bytes do not depend on the count.
        config.offlineRenderThreads = min(settings.renderThreads, groups.count, RenderCores.available)
        let engine = Engine(configuration: config)
        var built = settings
        built.engine = config
        // a split channel: its home unit first, then its guests
        var splits: [Int: (units: [Int], fixedKeys: [Int])] = [:]
        for (unit, lanes) in zip(units, laneGroups) {
            let index = engine.add(unit)
            for lane in lanes {
                switch lane.share {
                case .whole: engine.route(channel: lane.channel, to: index)
                case .home(let keys): splits[lane.channel, default: ([], [])].units.insert(index, at: 0)
                                      splits[lane.channel]!.fixedKeys = keys
                case .guest: splits[lane.channel, default: ([], [])].units.append(index)
                }
            }
        }
        for (channel, split) in splits.sorted(by: { $0.key < $1.key }) {
            engine.route(channel: channel, takingTurns: split.units, fixedKeys: split.fixedKeys)
        }
        if settings.stems {
            let stemChannels = try addStems(settings, to: engine, units: units, schedule: schedule, ports: ports,
                                            synthChannels: synthChannels, bankSynthChannels: bankSynthChannels, plays: plays)
            let queue = engine.addInput(capacity: inputCapacity)
            return EngineGraph(settings: built, engine: engine, soundFonts: units, soundFontSlot: nil, synth: synth,
                               synthInEngine: stemChannels.contains { synthChannels.contains($0) || bankSynthChannels.contains($0) },
                               synthChannels: synthChannels,
                               inputs: [queue], stemChannels: stemChannels, plan: plan)
        }
        // The synth joins only if something can play it: a silent unit would
        // still be rendered, mixed and given its wavetables (1.5 MB) each render.
        let synthInEngine = !synthChannels.isEmpty || bankSelectsSynth
        if synthInEngine {
            let synthIndex = engine.add(synth)
            for c in synthChannels { engine.route(channel: c, to: synthIndex) }
            engine.routeBank(msb: OscillatorSynth.spinetPresetBank, to: synthIndex)
        }
        let queue = engine.addInput(capacity: inputCapacity)
        return EngineGraph(settings: built, engine: engine, soundFonts: units, soundFontSlot: nil, synth: synth,
                           synthInEngine: synthInEngine, synthChannels: synthChannels, inputs: [queue], plan: plan)
    }

    /// Stems for the offline graph: one per channel that plays notes and is
    /// heard (not muted, soloed if any are), in channel order. A SoundFont
    /// channel's stem is its own output of the players `engine` already has
    /// (FluidSynth's per-channel outputs: every player the channel's notes
    /// reach), so the mix is the one a render without stems makes; a synth
    /// channel gets an oscillator synth of its own (one synth for all would
    /// mix them), and so does a channel a Bank Select 126 moves to the synth
    /// (`bankSynthChannels`: its stem is its SoundFont parts and that synth,
    /// with a bank route of its own). Each stem runs only the send effects
    /// its channel sends to (`effectsSent`; all of them when a synth plays
    /// it). Returns the stems' channels.
    ///
    /// FluidSynth's own effects run on its internal mix, which no stem has:
    /// the caller refuses them with stems.
    static func addStems(_ settings: GraphSettings, to engine: Engine, units: [SoundFontUnit], schedule: MIDISchedule, ports: Int,
                         synthChannels: Set<Int>, bankSynthChannels: Set<Int>, plays: [Bool]) throws(RigError) -> [Int] {
        guard !settings.soundFont.fluidEffects else {
            throw RigError("--stems takes each channel from FluidSynth's outputs, which its own effects mix into one: use --effects spinet")
        }
        let channelCount = ports * 16
        let muted = Set(settings.engine.mutedChannels), solo = Set(settings.engine.soloChannels)
        let stemChannels = (0..<channelCount).filter { plays[$0] && !muted.contains($0) && (solo.isEmpty || solo.contains($0)) }
        let ownSynths = stemChannels.filter { synthChannels.contains($0) || bankSynthChannels.contains($0) }.count
        guard units.count + ownSynths <= 64 else {
            throw RigError("--stems: this file plays notes on \(ownSynths) channels given to the synth (or moved there by Bank Select \(OscillatorSynth.spinetPresetBank)); with stems each needs a synth of its own, and an engine holds at most \(64 - units.count) here: give fewer channels to the synth")
        }
        // the players were the engine's first units, in order
        let unitIndexes = Array(units.indices)
        var stems: [[StemPart]] = []
        var effects: [StemEffects] = []
        // a synth of the channel's own: a unit of the engine, its index
        func ownSynth() throws(RigError) -> Int { engine.add(try Self.synth(settings, ports: ports).0) }
        for c in stemChannels {
            if synthChannels.contains(c) {
                let index = try ownSynth()
                engine.route(channel: c, to: index)
                stems.append([StemPart(unit: index)])
                effects.append(.all)
                continue
            }
            var parts = zip(units, unitIndexes).compactMap { unit, index in
                unit.part(forChannel: c).map { StemPart(unit: index, part: $0) }
            }
            let movesToSynth = bankSynthChannels.contains(c)
            if movesToSynth {
                let index = try ownSynth()
                engine.routeBank(msb: OscillatorSynth.spinetPresetBank, channel: c, to: index)
                parts.append(StemPart(unit: index))
            }
            stems.append(parts)
            effects.append(movesToSynth ? .all : effectsSent(schedule, channel: c))
        }
        // synth channels without a stem make no sound
        for c in synthChannels where !stemChannels.contains(c) { engine.route(channel: c, to: nil) }
        engine.setStems(stems, effects: effects)
        return stemChannels
    }

    /// The send effects channel `channel`'s sound may reach in a SoundFont
    /// player: those whose send level (CC 91, 93, 94; General MIDI's 40, 0,
    /// 0 at the start and after a reset) is above 0 at or after the
    /// channel's first note, or still ramping down there (a change takes
    /// `SoundFontUnit.sendRampFrames`, from FluidSynth's block boundary).
    public static func effectsSent(_ schedule: MIDISchedule, channel: Int) -> StemEffects {
        let controllers = [MIDIController.reverbSend, MIDIController.chorusSend, MIDIController.delaySend]
        let defaults: [UInt8] = [40, 0, 0]
        let margin = Int64(SoundFontUnit.sendRampFrames) + 2 * SoundFontUnit.grid
        var level = defaults
        var ringsUntil = defaults.map { $0 > 0 ? Int64.max : Int64.min }
        var firstNote: Int64?
        var sent: StemEffects = []
        func set(_ k: Int, _ value: UInt8, at frame: Int64) {
            if level[k] > 0 && value == 0 { ringsUntil[k] = frame + margin }
            if value > 0 { ringsUntil[k] = .max }
            level[k] = value
            if firstNote != nil && value > 0 { sent.insert(StemEffects(rawValue: 1 << k)) }
        }
        for e in schedule.events {
            switch e.kind {
            case .message(.controlChange(let c, let n, let v)) where Int(c) == channel:
                if let k = controllers.firstIndex(of: n) { set(k, v, at: e.frame) }
            case .message(.systemReset):
                for k in 0..<3 { set(k, defaults[k], at: e.frame) }
            case .sysEx(let index):
                if schedule.sysEx[index].withUnsafeBufferPointer({ SysExKind($0)?.isGMSystemOrGSReset == true }) {
                    for k in 0..<3 { set(k, defaults[k], at: e.frame) }
                }
            case .message(let m) where firstNote == nil && m.isNoteOn && m.channel.map(Int.init) == channel:
                firstNote = e.frame
                for k in 0..<3 where level[k] > 0 || ringsUntil[k] >= e.frame { sent.insert(StemEffects(rawValue: 1 << k)) }
            default:
                break
            }
        }
        return sent
    }

    /// Refuses, before any player exists, a polyphony whose voices would
    /// take more memory on `players` players than `VoiceMemory.budget`.
    /// `renders` renders at once (a batch's --jobs) each run `players` players.
    public static func checkVoiceMemory(_ polyphony: Int, players: Int, why: String, renders: Int = 1) throws(RigError) {
        let all = renders > 1 ? why + ", on each of \(renders) files rendered at once: fewer --jobs also fits" : why
        if let problem = VoiceMemory.problem(polyphony: polyphony, players: players * max(renders, 1), why: all) { throw RigError(problem) }
    }

    /// Applies `--channel` values to `synth`; returns the channels that play
    /// it. The first `configCount` came from the config file (`configLabel`
    /// names it and its key).
    public static func applyAssignments(_ texts: [String], to synth: OscillatorSynth, ports: Int,
                                        configCount: Int = 0, configLabel: String = "") throws(RigError) -> Set<Int> {
        var synthChannels = Set<Int>()
        for (i, text) in texts.enumerated() {
            let option = i < configCount ? configLabel : "--channel"
            let a: ChannelAssignment
            do { a = try ChannelAssignment(parsing: text, ports: max(ports, 1), option: option) } catch { throw RigError(error.description) }
            for c in a.channels {
                switch a.instrument {
                case .soundFont:
                    synthChannels.remove(c)
                case .synth(let preset):
                    synthChannels.insert(c)
                    if let preset {
                        do {
                            try synth.setPreset(preset, channel: c)
                        } catch {
                            throw RigError("\(option) \(text): \(error.description)")
                        }
                    }
                }
            }
        }
        return synthChannels
    }
}

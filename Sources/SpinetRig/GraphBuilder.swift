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
    public init(_ description: String) { self.description = description }
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
    /// Offline: render threads for one file (at most one per partition).
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
    /// The input queues, one per producer thread, in the order asked for.
    public let inputs: [EventQueue]
    /// Offline: how the file's channels were split (nil live and with stems).
    public let plan: RenderPlan?

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
        if settings.stems {
            return try stems(settings, fonts: fonts, schedule: schedule, sampleRate: sampleRate, partitions: plan.partitions,
                             inputCapacity: inputCapacity, ports: ports, synth: synth, synthChannels: synthChannels)
        }
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
        config.offlineRenderThreads = min(settings.renderThreads, groups.count)
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
        // The synth joins only if something can play it: a silent unit would
        // still be rendered, mixed and given its wavetables (1.5 MB) each render.
        let bankSelectsSynth = schedule.events.contains { e in
            guard case .message(.controlChange(_, MIDIController.bankSelectMSB, let value)) = e.kind else { return false }
            return OscillatorSynth.bankSelectsSpinetPresets(msb: value)
        }
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

    /// The offline graph with stems: each channel that plays notes and is
    /// heard (not muted, soloed if any are) gets units of its own, so each
    /// unit's output (dry sound and sends) belongs to one stem: a SoundFont
    /// channel one SoundFont player (or, when the plain partition would
    /// split it over `partitions` players, as many, its keys taking turns
    /// the same way), a synth channel its own oscillator synth. The other
    /// channels (no notes, or muted) are routed to the first SoundFont stem's
    /// player, where they make no sound. The split depends only on the file,
    /// so the output is the same on any number of threads.
    ///
    /// FluidSynth's own effects run on its internal mix, which no stem has:
    /// the caller refuses them with stems. A file that moves channels to the
    /// synth by Bank Select 126 is refused (one synth per channel cannot
    /// follow such moves yet).
    static func stems(_ settings: GraphSettings, fonts: [String], schedule: MIDISchedule, sampleRate: Double,
                      partitions: Int, inputCapacity: Int, ports: Int, synth: OscillatorSynth,
                      synthChannels: Set<Int>) throws(RigError) -> EngineGraph {
        let channelCount = ports * 16
        let bankSelectsSynth = schedule.events.contains { e in
            guard case .message(.controlChange(_, MIDIController.bankSelectMSB, let value)) = e.kind else { return false }
            return OscillatorSynth.bankSelectsSpinetPresets(msb: value)
        }
        if bankSelectsSynth {
            throw RigError("--stems cannot yet follow a channel that Bank Select \(OscillatorSynth.spinetPresetBank) moves to Spinet's synth, as this file does; render it without --stems, or give such channels to the synth with --channel N=synth")
        }
        let plays = ChannelPartition.playing(schedule, channels: channelCount)
        let muted = Set(settings.engine.mutedChannels), solo = Set(settings.engine.soloChannels)
        let stemChannels = (0..<channelCount).filter { plays[$0] && !muted.contains($0) && (solo.isEmpty || solo.contains($0)) }
        // Which channels the plain partition would split, and how.
        let models = fonts.reversed().compactMap { VoiceCostModel(path: $0) }
        let noteCost: ChannelPartition.NoteCost = { bank, program, drum, key, velocity, held in
            models.lazy.compactMap { $0.cost(bank: bank, program: program, drum: drum, key: key, velocity: velocity, held: held) }.first
        }
        let exclusiveKeys: ChannelPartition.ExclusiveKeys = { bank, program, drum in
            models.flatMap { $0.exclusiveKeys(bank: bank, program: program, drum: drum) }
        }
        let balancedPortions: [ChannelPartition.Portion] = ChannelPartition.portions(schedule, channels: channelCount, parts: partitions,
                                           noteCost: models.isEmpty ? nil : noteCost,
                                           exclusiveKeys: models.count == fonts.count ? exclusiveKeys : nil).flatMap { $0 }

        var lanes = balancedPortions
        func count() -> Int {
            stemChannels.reduce(0) { n, c in n + (synthChannels.contains(c) ? 1 : max(1, lanes.filter { $0.channel == c }.count)) }
        }
        // an engine holds at most 64 units: no channel is split beyond that
        if count() > 64 { lanes = [] }
        guard count() <= 64 else {
            throw RigError("--stems: this file plays notes on \(stemChannels.count) channels; Spinet renders stems for at most 64")
        }
        let unitCount = count()
        let players = stemChannels.reduce(0) { n, c in n + (synthChannels.contains(c) ? 0 : max(1, lanes.filter { $0.channel == c }.count)) }
        try checkVoiceMemory(settings.soundFont.polyphony, players: players,
                             why: players == stemChannels.count ? "one per stem" : "for \(stemChannels.count) stems, a busy one split",
                             renders: settings.concurrentRenders)
        var config = settings.engine
        config.ports = ports
        config.offlineRenderThreads = min(settings.renderThreads, max(1, unitCount))
        let engine = Engine(configuration: config)
        var units: [SoundFontUnit] = []
        var stemUnits: [[Int]] = []
        var synths: [OscillatorSynth] = []
        var options = settings.soundFont
        for c in stemChannels {
            if synthChannels.contains(c) {
                let (own, _) = try Self.synth(settings, ports: ports)
                let index = engine.add(own)
                engine.route(channel: c, to: index)
                synths.append(own)
                stemUnits.append([index])
                continue
            }
            options.soundingChannels = [c]
            options.programs = Set(schedule.events.compactMap { e -> Int? in
                guard case .message(.programChange(let ch, let program)) = e.kind, Int(ch) == c else { return nil }
                return Int(program)
            })
            let shares = lanes.filter { $0.channel == c }
            var indexes: [Int] = []
            var fixed: [Int] = []
            for share in shares.count > 1 ? shares : [ChannelPartition.Portion(channel: c)] {
                do {
                    let unit = try SoundFontUnit(fonts: fonts, sampleRate: sampleRate, channels: channelCount, options: options)
                    units.append(unit)
                    let index = engine.add(unit)
                    if case .home(let keys) = share.share {
                        indexes.insert(index, at: 0)
                        fixed = keys
                    } else {
                        indexes.append(index)
                    }
                } catch {
                    throw RigError(error.description)
                }
            }
            if indexes.count > 1 {
                engine.route(channel: c, takingTurns: indexes, fixedKeys: fixed)
            } else {
                engine.route(channel: c, to: indexes[0])
            }
            stemUnits.append(indexes)
        }
        // Channels without a stem make no sound; they go to the first SoundFont player.
        let stemSet = Set(stemChannels)
        let firstSoundFont = stemChannels.firstIndex { !synthChannels.contains($0) }.map { stemUnits[$0][0] }
        for c in 0..<channelCount where !stemSet.contains(c) {
            engine.route(channel: c, to: synthChannels.contains(c) ? nil : firstSoundFont)
        }
        engine.setStems(stemUnits)
        var built = settings
        built.engine = config
        let queue = engine.addInput(capacity: inputCapacity)
        return EngineGraph(settings: built, engine: engine, soundFonts: units, soundFontSlot: nil, synth: synth,
                           synthInEngine: !synths.isEmpty, synthChannels: synthChannels, inputs: [queue], stemChannels: stemChannels)
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

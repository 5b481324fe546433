import Glibc
import SpinetEngine
import SpinetMIDI

/// An MPE zone (MIDI Polyphonic Expression): a manager channel whose
/// messages apply to the whole zone and member channels that each carry one
/// note with its own pitch bend, pressure and CC 74.
///
/// Spinet supports the lower zone of each port (manager = the port's first
/// channel, members the next `memberChannels`) and the upper zone (manager =
/// the port's last channel), as configured by the MPE Configuration Message
/// (RPN 6 on the manager channel); this value sets the lower zone of the
/// first port at start-up.
public struct MPEZone: Sendable, Equatable {
    /// 1...15.
    public var memberChannels: Int
    /// Pitch bend range of member channels in semitones (MPE default 48).
    public var memberBendRange: Double
    /// Pitch bend range of the manager channel in semitones (MPE default 2).
    public var managerBendRange: Double

    public init(memberChannels: Int = 15, memberBendRange: Double = 48, managerBendRange: Double = 2) {
        self.memberChannels = max(1, min(memberChannels, 15))
        self.memberBendRange = memberBendRange
        self.managerBendRange = managerBendRange
    }

    /// The whole first port as one lower zone: manager channel 1, members 2-16.
    public static let lower = MPEZone()
}

/// Spinet's own instrument: a polyphonic subtractive synthesizer.
///
/// Per voice: two band-limited oscillators (sine, saw, square with pulse
/// width, triangle; detune, interval and mix), a resonant zero-delay-feedback
/// state-variable low-pass with envelope amount, key tracking and velocity
/// amount, ADSR envelopes for amplitude and filter, glide, and an LFO for
/// vibrato (mod wheel) and filter movement. Presets come from a `PresetBank`
/// and are chosen by program change.
///
/// Timing: sample-exact. The engine renders up to each event's frame and
/// delivers it there (`deliveryFrame` is the identity); a note starts on the
/// first sample of the next render call. Modulation (envelopes, LFO, glide,
/// bends, smoothed controllers) is computed every 16 samples and ramped
/// linearly in between, restarting at every render call, so no event waits
/// for a grid.
///
/// Real-time behaviour: `init` and `prepare` allocate everything (the voice
/// pool, per-channel state, tables); `receive` and `render` allocate nothing,
/// take no lock and make no system call. Voices are rendered four at a time
/// in SIMD lanes; groups with no sounding voice are skipped, so idle voices
/// cost nothing.
///
/// Clicks: every level change is ramped. Attacks, releases and decays take
/// at least `minimumRampSeconds` (1 ms) and their first step is never
/// steeper than a straight 1 ms ramp, so attack 0 and release 0 do not click.
/// Controller changes (volume, expression, pan, CC 74, mod wheel, pressure)
/// are smoothed with a 5 ms time constant; bends are ramped every 16 samples.
///
/// Polyphony: a preallocated pool (`polyphony` voices, plus a reserve of a
/// quarter of that for voices fading out). When all `polyphony` voices are
/// busy a new note steals one: first the quietest voice in its release
/// phase, else the quietest held voice (levels compared in 1.5 dB steps),
/// the oldest among equals. The stolen voice fades out over 3 ms in a
/// reserve slot while the new note starts on time in another.
///
/// Same-note retrigger, as on hardware polysynths (Prophet-5, Juno): a note-on
/// for a key that is still sounding on its channel (held, pedal-held or
/// releasing) restarts that voice's envelopes from their current levels, with
/// the new velocity; the oscillators keep their phase. No second voice, no
/// click. If the channel's preset changed in between, the old voice fades out
/// and a new one starts instead.
///
/// Pedals: sustain (CC 64) keeps released keys sounding until it is lifted;
/// sostenuto (CC 66) holds only the keys that were down when it was pressed;
/// soft (CC 67) makes notes struck while it is down 3 dB quieter and 5
/// semitones darker (like una corda, it does not change notes already sounding).
///
/// Mixer controls live here for now: Spinet's mixer stage does not exist
/// yet, so volume (CC 7, GM curve (v/127)^2, default 100), expression
/// (CC 11, same curve, default 127) and pan (CC 10, constant-power sin/cos
/// law, 0 or 1 = hard left, 64 = centre, 127 = hard right) are applied per
/// channel in this unit.
///
/// Effect sends: `render(_:frames:)` also writes the reverb, chorus and
/// delay sends that feed Spinet's shared effects: each voice's panned
/// output (after volume, expression and pan, like the dry sound) times its
/// channel's CC 91 (reverb), CC 93 (chorus) and CC 94 (delay) level,
/// value/127 as in the SoundFont unit, smoothed like the other controllers.
/// Defaults are the SoundFont unit's (reverb 40, chorus 0, delay 0), so
/// synth and SoundFont channels sit in the same space; System Reset and
/// GM/GS reset restore them, Reset All Controllers keeps them (RP-015).
/// Groups whose sounding voices all have zero sends skip the send work.
/// `render(left:right:frames:)` writes the same dry sound and no sends.
///
/// Other controllers: pitch bend with the RPN 0 range (default 2 semitones,
/// MSB semitones + LSB cents; 8191 above centre bends by exactly the range),
/// mod wheel (CC 1) for vibrato, CC 74 (brightness: ±36 semitones of cutoff
/// around 64), channel pressure and poly aftertouch routed per preset
/// (default vibrato / brightness), portamento on/off (CC 65, default on: the
/// preset's glide time applies), all sound off (120), reset all controllers
/// (121, per RP-015, except that portamento returns to on), all notes off
/// (123; also 124-127, which imply it; pedals still hold), System Reset and
/// the GM/GS reset SysEx. Bank select is ignored here: the synth answers
/// program changes from its own bank on every channel routed to it (see
/// `spinetPresetBank` for how a host picks this synth).
///
/// MPE: see `MPEZone`. Member channels carry per-note pitch bend (default
/// range 48 semitones), channel pressure and CC 74; the manager channel's
/// bend is added to every note of the zone, and its program, pedals, volume,
/// pan, mod wheel and effect sends apply to the whole zone.
///
/// Threads: `init`, `setPreset` and `prepare` on a control thread before
/// rendering; the `InstrumentUnit` render-thread methods after that.
public final class OscillatorSynth: InstrumentUnit {
    public let name = "synth"
    public let bank: PresetBank
    /// Voices that may sound at once (stolen beyond that).
    public let polyphony: Int
    public let initialMPE: MPEZone?

    /// The bank select MSB (CC 0) that tells a host "this channel plays
    /// Spinet's own synth presets": a DAW sends CC 0 = 126, then a program
    /// change that picks the preset (`preset(program:)`). 126 is outside the
    /// GM/GS/XG bank ranges that SoundFonts use (0, 1-8, 127 for XG drums,
    /// 120-121 for GM2) and not a common SoundFont bank.
    public static let spinetPresetBank: UInt8 = 126

    /// True when bank select MSB `msb` selects Spinet's synth presets.
    public static func bankSelectsSpinetPresets(msb: UInt8) -> Bool { msb == spinetPresetBank }

    /// The shortest amplitude ramp: attack 0 and release 0 take this long.
    public static let minimumRampSeconds = 0.001
    /// How long a stolen (or all-sound-off) voice takes to fade out.
    public static let stealFadeSeconds = 0.003
    /// Time constant of controller smoothing.
    public static let smoothingSeconds = 0.005
    /// Samples between modulation control points.
    static let controlBlock = 16
    /// Headroom: a single voice at full velocity, volume 127, peaks near -6 dBFS
    /// (before pan), so chords have room before the engine's limiter.
    static let voiceLevel: Float = 0.5
    static let softPedalLevel: Float = 0.707_9            // -3 dB
    static let softPedalCutoff: Float = 5                 // semitones
    static let timbreRange: Float = 36                    // CC 74 semitones at 0 / 127
    static let maximumPolyphony = 4096
    /// Send levels of a channel that never sent CC 91, CC 93 or CC 94 (and
    /// after System Reset or GM/GS reset): the SoundFont unit's defaults
    /// (GM2 reverb 40, chorus 0; delay 0), so both units share one space.
    static let defaultReverbSend: Float = 40 / 127
    static let defaultChorusSend: Float = 0
    static let defaultDelaySend: Float = 0

    // Prepared state (allocated in prepare, read and written on the render thread).
    public private(set) var sampleRate: Double = 0
    private(set) var maxFrames = 0
    private(set) var channelCount = 0
    var prepared = false
    var tablesOwner: SampleRateTables?
    var tables: TableView
    var patches: FixedBuffer<Patch>
    var patchCount = 0
    var programToPatch: FixedBuffer<Int32>
    var channels: FixedBuffer<ChannelState>
    var voices: FixedBuffer<Voice>
    var groups: FixedBuffer<VoiceGroup>
    /// Per group, a bit per lane whose voice is not free.
    var groupLanes: FixedBuffer<UInt8>
    /// The non-fading voice of each (channel, key), or -1.
    var keyVoice: FixedBuffer<Int32>
    /// Interleaved left/right lane sums for one block.
    var mixBuffer: FixedBuffer<Lanes>
    /// Per group, its control block under way (see `ControlBlock`).
    var controlBlocks: FixedBuffer<ControlBlock>
    /// Some group may have a control block under way (cleared by `endControlBlocks`).
    var blocksUnderWay = false
    /// One control block of oscillator output, between the two sample loops.
    let oscillatorScratch: FixedBuffer<Lanes>
    /// One control block of panned lane outputs (interleaved left/right),
    /// kept by the filter loop for the effect sends.
    let sendStash: FixedBuffer<Lanes>
    /// Interleaved left/right lane sums of the reverb, chorus and delay
    /// sends for one block, `2 * maxFrames` each.
    var sendMix: FixedBuffer<Lanes>
    /// Per render block, a bit per send (1 reverb, 2 chorus, 4 delay) that
    /// some group fed, so its lane sums are cleared and summed; the others
    /// are written as silence without touching `sendMix`.
    var sendsTouched: UInt8 = 0
    /// Smoothing factor for a control block of n samples, n = 0...16.
    var smoothing: FixedBuffer<Float>
    var slotCount = 0
    var groupCount = 0
    /// Voices held or releasing (what polyphony limits).
    var playingCount = 0
    /// Voices not free (playing or fading).
    var soundingCount = 0
    var nextStamp: UInt64 = 0
    /// Group renders so far (one per non-empty group per render call): what
    /// the idle-cost test counts.
    var renderedGroupBlocks: UInt64 = 0
    var minimumRamp: Float = 48
    var fadeSamples: Float = 144
    /// Preset per channel set with `setPreset`, kept across resets.
    var channelPresets: [Int: Int32] = [:]
    /// The same, per prepared channel, for the render thread.
    var channelDefaults: FixedBuffer<Int32>
    var defaultPatch: Int32 = 0
    /// Member channel counts of the lower and upper MPE zone of each port.
    var lowerZoneMembers: FixedBuffer<Int>
    var upperZoneMembers: FixedBuffer<Int>

    /// - Parameters:
    ///   - presets: the presets program changes choose from.
    ///   - polyphony: voices that may sound at once, 1...4096 (default 64).
    ///   - mpe: an MPE lower zone on the first port from the start; an MPE
    ///     Configuration Message can set or change zones later either way.
    public init(presets: PresetBank = .factory, polyphony: Int = 64, mpe: MPEZone? = nil) {
        // A bank with no presets (`"base": "empty", "presets": []`) is valid:
        // the synth then has one preset, `default`, with PRESETS.md's defaults.
        bank = presets.presets.isEmpty ? .fallback : presets
        self.polyphony = max(1, min(polyphony, Self.maximumPolyphony))
        initialMPE = mpe
        tables = SampleRateTables.placeholder.view
        // Empty until `prepare` makes the real ones.
        patches = FixedBuffer()
        programToPatch = FixedBuffer(repeating: -1, count: 128)
        channels = FixedBuffer()
        voices = FixedBuffer()
        groups = FixedBuffer()
        groupLanes = FixedBuffer()
        controlBlocks = FixedBuffer()
        keyVoice = FixedBuffer()
        channelDefaults = FixedBuffer()
        mixBuffer = FixedBuffer()
        sendMix = FixedBuffer()
        sendStash = FixedBuffer(repeating: Lanes(), count: 2 * Self.controlBlock)
        smoothing = FixedBuffer(repeating: 1, count: Self.controlBlock + 1)
        oscillatorScratch = FixedBuffer(repeating: Lanes(), count: Self.controlBlock)
        lowerZoneMembers = FixedBuffer()
        upperZoneMembers = FixedBuffer()
        for (i, p) in presets.presets.enumerated() { programToPatch[p.program] = Int32(i) }
        defaultPatch = programToPatch[0] >= 0 ? programToPatch[0] : 0
    }

    /// Makes `channel` (global: port * 16 + channel) play a preset, by name
    /// (e.g. for `--channel 3=synth:saw`). Until a program change arrives, and
    /// again after a reset, the channel plays this preset. Call before
    /// rendering starts (not on the render thread); during rendering, send a
    /// program change instead.
    public func setPreset(_ name: String, channel: Int) throws(PresetError) {
        guard let index = bank.index(named: name) else {
            throw PresetError("unknown synth preset \"\(name)\" (known: \(bank.names.joined(separator: ", ")))")
        }
        guard channel >= 0 && channel < 16 * 256 else {
            throw PresetError("synth preset \"\(name)\": channel \(channel + 1) is out of range")
        }
        channelPresets[channel] = Int32(index)
        if prepared && channel < channelCount {
            channelDefaults[channel] = Int32(index)
            channels[channel].patch = Int32(index)
        }
    }

    /// The name of the preset a channel plays now. Not on the render thread.
    public func presetName(channel: Int) -> String? {
        let index: Int32
        if prepared {
            guard channel >= 0 && channel < channelCount else { return nil }
            index = channels[channel].patch
        } else {
            index = channelPresets[channel] ?? defaultPatch
        }
        return bank.presets[Int(index)].name
    }

    // MARK: InstrumentUnit

    /// Not on the render thread. Allocates the voice pool, channel state and
    /// tables for `sampleRate`; may be called again to re-prepare (all sound stops).
    public func prepare(sampleRate: Double, maxFrames: Int, channels channelCount: Int) {
        precondition(sampleRate > 0 && maxFrames > 0 && channelCount > 0)
        // (Each buffer assigned below frees the one it replaces.)
        self.sampleRate = sampleRate
        self.maxFrames = maxFrames
        self.channelCount = channelCount
        let shared = SampleRateTables.shared(sampleRate: sampleRate)
        tablesOwner = shared
        tables = shared.view

        patchCount = bank.presets.count
        let bank = self.bank
        patches = FixedBuffer(count: patchCount) { Patch(bank.presets[$0], sampleRate: sampleRate) }

        let reserve = max(4, polyphony / 4)
        slotCount = (polyphony + reserve + laneCount - 1) / laneCount * laneCount
        groupCount = slotCount / laneCount
        voices = FixedBuffer(repeating: Voice(), count: slotCount)
        groups = FixedBuffer(repeating: VoiceGroup(), count: groupCount)
        groupLanes = FixedBuffer(repeating: 0, count: groupCount)
        controlBlocks = FixedBuffer(repeating: ControlBlock(), count: groupCount)
        blocksUnderWay = false
        self.channels = FixedBuffer(repeating: ChannelState(), count: channelCount)
        keyVoice = FixedBuffer(repeating: -1, count: channelCount * 128)
        let presets = channelPresets, defaultPatch = self.defaultPatch
        channelDefaults = FixedBuffer(count: channelCount) { presets[$0] ?? defaultPatch }
        mixBuffer = FixedBuffer(repeating: Lanes(), count: 2 * maxFrames)
        sendMix = FixedBuffer(repeating: Lanes(), count: 3 * 2 * maxFrames)
        let ports = (channelCount + 15) / 16
        lowerZoneMembers = FixedBuffer(repeating: 0, count: ports)
        upperZoneMembers = FixedBuffer(repeating: 0, count: ports)

        for n in 0...Self.controlBlock {
            smoothing[n] = Float(1 - exp(-Double(n) / (Self.smoothingSeconds * sampleRate)))
        }
        minimumRamp = Float(Self.minimumRampSeconds * sampleRate)
        fadeSamples = Float(Self.stealFadeSeconds * sampleRate)
        playingCount = 0
        soundingCount = 0
        prepared = true
        resetAllChannels()
    }

    /// Render thread only. Sample-exact: events apply at the engine's frame.
    public func deliveryFrame(forEventAt frame: Int64) -> Int64 { frame }

    /// Render thread only. Voices sounding (including ones fading out).
    public var activeVoices: Int { soundingCount }

    /// Render thread only. Applies a MIDI message at the current frame.
    public func receive(_ message: MIDIMessage) {
        guard prepared else { return }
        endControlBlocks()
        switch message {
        case .noteOn(let c, let key, let velocity):
            guard Int(c) < channelCount else { return }
            if velocity & 0x7F == 0 {
                noteOff(channel: Int(c), key: key & 0x7F)
            } else {
                noteOn(channel: Int(c), key: key & 0x7F, velocity: velocity & 0x7F)
            }
        case .noteOff(let c, let key, _):
            guard Int(c) < channelCount else { return }
            noteOff(channel: Int(c), key: key & 0x7F)
        case .polyPressure(let c, let key, let pressure):
            guard Int(c) < channelCount else { return }
            let v = keyVoice[Int(c) * 128 + Int(key & 0x7F)]
            if v >= 0 {
                groups[Int(v) / laneCount].polyPressure[Int(v) % laneCount] = Float(pressure & 0x7F) / 127
            }
        case .controlChange(let c, let controller, let value):
            guard Int(c) < channelCount else { return }
            controlChange(channel: Int(c), controller: controller & 0x7F, value: value & 0x7F)
        case .programChange(let c, let program):
            guard Int(c) < channelCount else { return }
            let index = programToPatch[Int(program & 0x7F)]
            if index >= 0 { channels[Int(c)].patch = index }
        case .channelPressure(let c, let pressure):
            guard Int(c) < channelCount else { return }
            channels[Int(c)].pressure = Float(pressure & 0x7F) / 127
        case .pitchBend(let c, let value):
            guard Int(c) < channelCount else { return }
            let v = Float(Int(min(value, 16383)) - 8192)
            channels[Int(c)].bend = v >= 0 ? v / 8191 : v / 8192
            refreshPitch(channel: Int(c))
        case .systemReset:
            resetAllChannels()
        }
    }

    /// Render thread only. GM System On, GM2 System On and the GS reset act
    /// like System Reset; other SysEx is ignored.
    public func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>) {
        guard prepared, SysExKind(message)?.isGMOrGSReset == true else { return }
        endControlBlocks()
        resetAllChannels()
    }

    /// Render thread only. Writes `frames` frames (any count, including 0 and
    /// more than `maxFrames`) of dry sound; no effect sends are computed.
    /// The same dry sound as `render(_:frames:)`, sample for sample.
    public func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        guard frames > 0 else { return }
        guard prepared else {
            left.update(repeating: 0, count: frames)
            right.update(repeating: 0, count: frames)
            return
        }
        var done = 0
        while done < frames {
            let n = min(frames - done, maxFrames)
            renderBlock(left: left + done, right: right + done, sends: nil, frames: n)
            done += n
        }
    }

    /// Render thread only. Writes `frames` frames of dry sound and of the
    /// reverb, chorus and delay sends: each voice's panned output times its
    /// channel's CC 91, CC 93 and CC 94 level (value/127, smoothed), so the
    /// engine's shared effects treat synth channels like SoundFont channels.
    public func render(_ output: UnitOutput, frames: Int) {
        guard frames > 0 else { return }
        guard prepared else {
            output.silence(frames: frames)
            return
        }
        var done = 0
        while done < frames {
            let n = min(frames - done, maxFrames)
            let o = output.advanced(by: done)
            renderBlock(left: o.left, right: o.right, sends: o, frames: n)
            done += n
        }
    }

    /// One block of at most `maxFrames`; `sends` (its send pointers) nil for dry only.
    private func renderBlock(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                             sends: UnitOutput?, frames: Int) {
        if soundingCount == 0 {
            if let sends {
                sends.silence(frames: frames)
            } else {
                left.update(repeating: 0, count: frames)
                right.update(repeating: 0, count: frames)
            }
            return
        }
        let mix = mixBuffer.pointer, sendMix = self.sendMix.pointer
        mix.update(repeating: Lanes(), count: 2 * frames)
        sendsTouched = 0
        let sendLanes = sends == nil ? nil : sendMix
        for g in 0..<groupCount where groupLanes[g] != 0 {
            renderGroup(g, frames: frames, into: mix, sends: sendLanes)
            renderedGroupBlocks &+= 1
        }
        Self.sum(mix, into: left, right, frames: frames)
        if let sends {
            let stride = 2 * maxFrames
            Self.sum(sendsTouched & 1 != 0 ? sendMix : nil, into: sends.reverbLeft, sends.reverbRight, frames: frames)
            Self.sum(sendsTouched & 2 != 0 ? sendMix + stride : nil, into: sends.chorusLeft, sends.chorusRight, frames: frames)
            Self.sum(sendsTouched & 4 != 0 ? sendMix + 2 * stride : nil, into: sends.delayLeft, sends.delayRight, frames: frames)
        }
    }

    /// Writes the lane sums of interleaved left/right `lanes` (nil: silence).
    @inline(__always)
    private static func sum(_ lanes: UnsafeMutablePointer<Lanes>?, into left: UnsafeMutablePointer<Float>,
                            _ right: UnsafeMutablePointer<Float>, frames: Int) {
        guard let lanes else {
            left.update(repeating: 0, count: frames)
            right.update(repeating: 0, count: frames)
            return
        }
        for i in 0..<frames {
            left[i] = lanes[2 * i].sum()
            right[i] = lanes[2 * i + 1].sum()
        }
    }
}

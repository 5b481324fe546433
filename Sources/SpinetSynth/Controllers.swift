import Glibc
import SpinetMIDI

// Controllers, RPNs, MPE zones and resets. Render thread, preallocated
// storage only.
extension OscillatorSynth {
    func controlChange(channel c: Int, controller: UInt8, value: UInt8) {
        let unit = Float(value) / 127
        switch controller {
        case MIDIController.modulation:
            channels[c].modulation = unit
        case MIDIController.volume:
            channels[c].volume = value
            refreshGain(channel: c)
        case MIDIController.expression:
            channels[c].expression = value
            refreshGain(channel: c)
        case MIDIController.pan:
            channels[c].pan = value
            refreshGain(channel: c)
        case MIDIController.reverbSend:
            channels[c].reverbSend = unit
            refreshSends(control: c)
        case MIDIController.chorusSend:
            channels[c].chorusSend = unit
            refreshSends(control: c)
        case MIDIController.delaySend:
            channels[c].delaySend = unit
            refreshSends(control: c)
        case MIDIController.portamento:
            channels[c].portamento = value >= 64
        case MIDIController.sustain:
            setSustain(channel: c, down: value >= 64)
        case MIDIController.sostenuto:
            setSostenuto(channel: c, down: value >= 64)
        case MIDIController.soft:
            channels[c].soft = value >= 64
        case MIDIController.brightness:
            channels[c].timbre = Float(Int(value) - 64) / (value >= 64 ? 63 : 64)
            refreshBrightness(channel: c)
        case MIDIController.rpnMSB:
            channels[c].rpnMSB = value
            channels[c].nrpnSelected = false
        case MIDIController.rpnLSB:
            channels[c].rpnLSB = value
            channels[c].nrpnSelected = false
        case MIDIController.nrpnMSB, MIDIController.nrpnLSB:
            channels[c].nrpnSelected = true
        case MIDIController.dataEntryMSB:
            dataEntry(channel: c, msb: value)
        case MIDIController.dataEntryLSB:
            if !channels[c].nrpnSelected && channels[c].rpnMSB == 0 && channels[c].rpnLSB == 0 {
                channels[c].bendCents = Float(value)
                refreshPitch(channel: c)
            }
        case MIDIController.allSoundOff:
            allSoundOff(channel: c)
        case MIDIController.resetAllControllers:
            resetControllers(channel: c)
        case MIDIController.allNotesOff, 124, 125, 126, 127:
            // Omni and mono/poly mode messages imply All Notes Off.
            allNotesOff(channel: c)
        default:
            break
        }
    }

    private func dataEntry(channel c: Int, msb value: UInt8) {
        guard !channels[c].nrpnSelected else { return }
        switch (channels[c].rpnMSB, channels[c].rpnLSB) {
        case (0, 0):
            channels[c].bendSemitones = Float(value)
            refreshPitch(channel: c)
        case (0, 6):
            // MPE Configuration Message: only meaningful on a port's first
            // (lower zone) or last (upper zone) channel.
            let port = c / 16
            if c % 16 == 0 { configureZone(port: port, lower: true, members: Int(value)) }
            if c % 16 == 15 { configureZone(port: port, lower: false, members: Int(value)) }
        default:
            break
        }
    }

    /// Sets (or with 0 members removes) an MPE zone, shrinking the other
    /// zone of the port if they would overlap, as the MPE specification asks;
    /// bend ranges return to the MPE defaults (48 members, 2 manager).
    func configureZone(port: Int, lower: Bool, members requested: Int, memberRange: Float = 48, managerRange: Float = 2) {
        let first = port * 16
        guard first < channelCount else { return }
        let members = max(0, min(requested, 15))
        if lower {
            lowerZoneMembers[port] = members
            if upperZoneMembers[port] > 0 && members + upperZoneMembers[port] > 14 {
                upperZoneMembers[port] = max(0, 14 - members)
            }
        } else {
            upperZoneMembers[port] = members
            if lowerZoneMembers[port] > 0 && members + lowerZoneMembers[port] > 14 {
                lowerZoneMembers[port] = max(0, 14 - members)
            }
        }
        let lowerCount = lowerZoneMembers[port], upperCount = upperZoneMembers[port]
        for i in 0..<16 where first + i < channelCount {
            let c = first + i
            let wasMember = channels[c].manager >= 0
            var manager: Int32 = -1
            if lowerCount > 0 && i >= 1 && i <= lowerCount { manager = Int32(first) }
            if upperCount > 0 && i <= 14 && i >= 15 - upperCount { manager = Int32(first + 15) }
            channels[c].manager = manager
            if manager >= 0 {
                channels[c].bendSemitones = memberRange
                channels[c].bendCents = 0
            } else if wasMember {
                channels[c].bendSemitones = 2
                channels[c].bendCents = 0
            }
        }
        if lower && lowerCount > 0 {
            channels[first].bendSemitones = managerRange
            channels[first].bendCents = 0
        }
        if !lower && upperCount > 0 && first + 15 < channelCount {
            channels[first + 15].bendSemitones = managerRange
            channels[first + 15].bendCents = 0
        }
        for i in 0..<16 where first + i < channelCount {
            refreshPitch(channel: first + i)
            refreshBrightness(channel: first + i)
        }
    }

    /// Recomputes what voices add for pitch bend on `channel`, and on its
    /// members when it manages an MPE zone.
    func refreshPitch(channel c: Int) {
        let own = channels[c].bend * (channels[c].bendSemitones + channels[c].bendCents / 100)
        let manager = channels[c].manager
        var offset = own
        if manager >= 0 {
            let m = Int(manager)
            offset += channels[m].bend * (channels[m].bendSemitones + channels[m].bendCents / 100)
        }
        channels[c].pitchOffset = offset
        if manager < 0 { forEachMember(of: c) { refreshPitch(channel: $0) } }
    }

    func refreshBrightness(channel c: Int) {
        var semitones = channels[c].timbre * Self.timbreRange
        let manager = channels[c].manager
        if manager >= 0 { semitones += channels[Int(manager)].timbre * Self.timbreRange }
        channels[c].brightness = semitones
        if manager < 0 { forEachMember(of: c) { refreshBrightness(channel: $0) } }
    }

    /// Calls `body` for each member channel of the zone `manager` manages.
    @inline(__always)
    private func forEachMember(of manager: Int, _ body: (Int) -> Void) {
        let port = manager / 16
        let first = port * 16
        if manager % 16 == 0 && lowerZoneMembers[port] > 0 {
            for i in 1...lowerZoneMembers[port] where first + i < channelCount { body(first + i) }
        }
        if manager % 16 == 15 && upperZoneMembers[port] > 0 {
            for i in (15 - upperZoneMembers[port])...14 where first + i < channelCount { body(first + i) }
        }
    }

    /// Points the send targets of the voices whose control channel is
    /// `control` (or of every voice, for -1) at that channel's send levels;
    /// the renderer ramps toward them.
    func refreshSends(control: Int) {
        for v in 0..<slotCount where voices[v].state != .free {
            let c = Int(voices[v].controlChannel)
            if control >= 0 && c != control { continue }
            let gi = v / laneCount, l = v % laneCount
            let reverb = channels[c].reverbSend, chorus = channels[c].chorusSend, delay = channels[c].delaySend
            groups[gi].reverbTarget[l] = reverb
            groups[gi].chorusTarget[l] = chorus
            groups[gi].delayTarget[l] = delay
            if reverb != 0 || chorus != 0 || delay != 0 { groups[gi].sendsLive = true }
        }
    }

    /// Volume and expression (GM curve (v/127)^2) and constant-power pan.
    func refreshGain(channel c: Int) {
        let volume = Float(channels[c].volume) / 127
        let expression = Float(channels[c].expression) / 127
        let level = volume * volume * expression * expression
        let pan = Float(max(Int(channels[c].pan) - 1, 0)) / 126          // 0 and 1 are both hard left
        let angle = pan * Float.pi / 2
        channels[c].gainLeft = level * cosf(angle)
        channels[c].gainRight = level * sinf(angle)
    }

    /// Reset All Controllers (RP-015): mod wheel, bend, expression, pedals,
    /// pressures and the RPN selection; volume, pan, program, CC 74 and the
    /// effect sends (CC 91/93/94, which RP-015 leaves alone and the SoundFont
    /// unit keeps too, so both units stay in the same space) stay.
    /// Portamento returns to on (the preset's glide applies).
    func resetControllers(channel c: Int) {
        channels[c].modulation = 0
        channels[c].bend = 0
        channels[c].expression = 127
        channels[c].pressure = 0
        channels[c].rpnMSB = 127
        channels[c].rpnLSB = 127
        channels[c].nrpnSelected = false
        channels[c].portamento = true
        channels[c].soft = false
        setSostenuto(channel: c, down: false)
        setSustain(channel: c, down: false)
        for v in 0..<slotCount where voices[v].state != .free && Int(voices[v].channel) == c {
            groups[v / laneCount].polyPressure[v % laneCount] = 0
        }
        refreshGain(channel: c)
        refreshPitch(channel: c)
    }

    /// System Reset / GM On: all voices fade out, every channel returns to
    /// its power-on state (its `setPreset` preset, default controllers and
    /// effect sends, bend range 2), MPE zones return to the `mpe` given at init.
    func resetAllChannels() {
        for v in 0..<slotCount where voices[v].state != .free { fadeOut(v) }
        for c in 0..<channelCount {
            channels[c] = ChannelState()
            channels[c].patch = channelDefaults[c]
            refreshGain(channel: c)
        }
        refreshSends(control: -1)
        let ports = (channelCount + 15) / 16
        for p in 0..<ports {
            lowerZoneMembers[p] = 0
            upperZoneMembers[p] = 0
        }
        if let zone = initialMPE {
            configureZone(port: 0, lower: true, members: zone.memberChannels,
                          memberRange: Float(zone.memberBendRange), managerRange: Float(zone.managerBendRange))
        }
    }
}

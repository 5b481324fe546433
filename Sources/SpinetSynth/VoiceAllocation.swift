import Glibc

// Notes, voices and pedals. Everything here runs on the render thread
// between render slices, touching only preallocated storage.
extension OscillatorSynth {
    /// The channel whose pedals, program, volume and pan apply to notes on
    /// `channel`: its MPE manager, or itself.
    @inline(__always)
    func controlChannel(of channel: Int) -> Int {
        let manager = channels[channel].manager
        return manager >= 0 ? Int(manager) : channel
    }

    func noteOn(channel c: Int, key: UInt8, velocity: UInt8) {
        let control = controlChannel(of: c)
        let patch = channels[control].patch
        let existing = keyVoice[c * 128 + Int(key)]
        if existing >= 0 {
            let v = Int(existing)
            if voices[v].patch == patch {
                retrigger(v, velocity: velocity)
                return
            }
            fadeOut(v)
        }
        if playingCount >= polyphony, let victim = stealCandidate() {
            fadeOut(victim)
        }
        let slot = freeSlot()
        start(slot: slot, channel: c, control: control, key: key, velocity: velocity, patch: Int(patch))
    }

    func noteOff(channel c: Int, key: UInt8) {
        let existing = keyVoice[c * 128 + Int(key)]
        guard existing >= 0 else { return }
        let v = Int(existing)
        guard voices[v].keyDown else { return }
        voices[v].keyDown = false
        let control = Int(voices[v].controlChannel)
        if channels[control].sustain || voices[v].sostenuto { return }
        release(v)
    }

    /// The lowest free slot (keeping busy voices packed into few groups), or
    /// when none is left, the quietest fading voice, cut short.
    func freeSlot() -> Int {
        for v in 0..<slotCount where voices[v].state == .free { return v }
        var best = 0
        var bestLevel = Float.infinity
        for v in 0..<slotCount where voices[v].state == .fading {
            let level = groups[v / laneCount].amp.level[v % laneCount]
            if level < bestLevel { best = v; bestLevel = level }
        }
        finish(best)
        return best
    }

    /// The voice to steal: the quietest releasing one, else the quietest
    /// held one; levels in 1.5 dB steps, the oldest among equals. A voice in
    /// its attack counts at its full level.
    func stealCandidate() -> Int? {
        var best: Int? = nil
        var bestKey = (released: false, step: Int.max, stamp: UInt64.max)
        for v in 0..<slotCount {
            let state = voices[v].state
            guard state == .held || state == .released else { continue }
            let g = groups[v / laneCount], l = v % laneCount
            // A note still in its attack counts at full level: it was just
            // struck, and is quiet only because it is still rising.
            let level = voices[v].ampStage == .attack ? 1 : g.amp.level[l]
            let loudness = level * g.velocityGain[l]
            let step = loudness > 1e-9 ? Int((20 * log10f(loudness) / 1.5).rounded(.down)) : Int.min
            let candidate = (released: state == .released, step: step, stamp: voices[v].stamp)
            let better: Bool
            if best == nil {
                better = true
            } else if candidate.released != bestKey.released {
                better = candidate.released
            } else if candidate.step != bestKey.step {
                better = candidate.step < bestKey.step
            } else {
                better = candidate.stamp < bestKey.stamp
            }
            if better {
                best = v
                bestKey = candidate
            }
        }
        return best
    }

    /// Starts a new voice in a free slot.
    func start(slot v: Int, channel c: Int, control: Int, key: UInt8, velocity: UInt8, patch patchIndex: Int) {
        let patch = patches[patchIndex]
        let gi = v / laneCount, l = v % laneCount
        let channel = channels.pointer + control
        let (velocityGain, cutoff) = dynamics(patch, key: key, velocity: velocity, soft: channel.pointee.soft)

        var g = groups[gi]
        let pitch1 = Float(key) + patch.pitch1Offset
        let pitch2 = Float(key) + patch.pitch2Offset
        g.pitch1[l] = pitch1
        g.pitch2[l] = pitch2
        g.baseIncrement1[l] = Float(pow(2, (Double(pitch1) - 69) / 12) * 440 / sampleRate * 4_294_967_296)
        g.baseIncrement2[l] = Float(pow(2, (Double(pitch2) - 69) / 12) * 440 / sampleRate * 4_294_967_296)
        g.phase1[l] = patch.startPhase
        g.phase2[l] = patch.startPhase
        g.increment1[l] = 0
        g.increment2[l] = 0
        let layout1 = tables.layout(patch.wave1), layout2 = tables.layout(patch.wave2)
        g.waveBase1[l] = layout1.base
        g.mipStride1[l] = layout1.mipStride
        g.waveBase2[l] = layout2.base
        g.mipStride2[l] = layout2.mipStride
        g.pulseOffset1[l] = patch.pulseOffset1
        g.pulseOffset2[l] = patch.pulseOffset2
        g.mix1[l] = patch.mix1
        g.mix2[l] = patch.mix2
        g.filterState1[l] = 0
        g.filterState2[l] = 0
        g.resonanceK[l] = patch.resonanceK
        g.cutoffBase[l] = cutoff
        g.filterEnvAmount[l] = patch.filterEnvAmount
        g.lfoToCutoff[l] = patch.lfoToCutoff
        g.lfoPhase[l] = 0
        g.lfoRate[l] = patch.lfoCyclesPerSample
        g.vibratoDepth[l] = patch.vibrato
        g.pressureToVibrato[l] = patch.pressureToVibrato
        g.pressureToBrightness[l] = patch.pressureToBrightness
        g.polyPressureToVibrato[l] = patch.polyPressureToVibrato
        g.polyPressureToBrightness[l] = patch.polyPressureToBrightness
        g.polyPressure[l] = 0
        g.velocityGain[l] = velocityGain
        g.weightLeft[l] = 0
        g.weightRight[l] = 0
        // A new voice starts at its channel's send levels (no ramp from the
        // lane's previous voice).
        let reverb = channel.pointee.reverbSend, chorus = channel.pointee.chorusSend, delay = channel.pointee.delaySend
        g.reverbSend[l] = reverb
        g.chorusSend[l] = chorus
        g.delaySend[l] = delay
        g.reverbTarget[l] = reverb
        g.chorusTarget[l] = chorus
        g.delayTarget[l] = delay
        if reverb != 0 || chorus != 0 || delay != 0 { g.sendsLive = true }
        g.lastModulation[l] = 0
        g.fresh[l] = 1
        g.channel[l] = Int32(c)
        g.controlChannel[l] = Int32(control)
        // Glide from the channel's previous note.
        let lastKey = channel.pointee.lastKey
        if patch.glideLog2Rate < 0 && channel.pointee.portamento && lastKey >= 0 {
            g.glide[l] = lastKey - Float(key)
        } else {
            g.glide[l] = 0
        }
        g.glideLog2Rate[l] = patch.glideLog2Rate
        channel.pointee.lastKey = Float(key)

        g.amp.level[l] = 0
        startSegment(&g.amp, lane: l, from: 0, to: 1, samples: patch.attack, nominalRatio: 0.3)
        g.filterEnvelope.level[l] = 0
        startSegment(&g.filterEnvelope, lane: l, from: 0, to: 1, samples: patch.filterAttack, nominalRatio: 0.3)
        groups[gi] = g

        voices[v] = Voice(state: .held, ampStage: .attack, filterStage: .attack, keyDown: true, sostenuto: false,
                          key: key, channel: Int32(c), controlChannel: Int32(control), patch: Int32(patchIndex),
                          stamp: nextStamp)
        nextStamp &+= 1
        keyVoice[c * 128 + Int(key)] = Int32(v)
        groupLanes[gi] |= UInt8(1 << l)
        playingCount += 1
        soundingCount += 1
    }

    /// Level and cutoff (MIDI pitch) a note gets from its velocity and key.
    func dynamics(_ patch: Patch, key: UInt8, velocity: UInt8, soft: Bool) -> (gain: Float, cutoff: Float) {
        let curved = powf(Float(velocity) / 127, patch.velocityCurve)
        var gain = (1 - patch.velocitySensitivity) + patch.velocitySensitivity * curved
        var cutoff = patch.cutoffPitch + patch.keyTracking * (Float(key) - 60) + patch.velocityToCutoff * curved
        if soft {
            gain *= Self.softPedalLevel
            cutoff -= Self.softPedalCutoff
        }
        return (gain * patch.level * Self.voiceLevel, cutoff)
    }

    /// Same-note retrigger: envelopes restart from where they are.
    func retrigger(_ v: Int, velocity: UInt8) {
        let patch = patches[Int(voices[v].patch)]
        let gi = v / laneCount, l = v % laneCount
        let control = Int(voices[v].controlChannel)
        let (velocityGain, cutoff) = dynamics(patch, key: voices[v].key, velocity: velocity, soft: channels[control].soft)
        var g = groups[gi]
        g.velocityGain[l] = velocityGain
        g.cutoffBase[l] = cutoff
        startSegment(&g.amp, lane: l, from: 0, to: 1, samples: patch.attack, nominalRatio: 0.3)
        startSegment(&g.filterEnvelope, lane: l, from: 0, to: 1, samples: patch.filterAttack, nominalRatio: 0.3)
        groups[gi] = g
        voices[v].state = .held
        voices[v].ampStage = .attack
        voices[v].filterStage = .attack
        voices[v].keyDown = true
        voices[v].stamp = nextStamp
        nextStamp &+= 1
        channels[control].lastKey = Float(voices[v].key)
    }

    /// Note-off reached the voice (no pedal holds it): both envelopes release.
    func release(_ v: Int) {
        guard voices[v].state == .held else { return }
        let patch = patches[Int(voices[v].patch)]
        let gi = v / laneCount, l = v % laneCount
        var g = groups[gi]
        startSegment(&g.amp, lane: l, from: g.amp.level[l], to: 0, samples: patch.release, nominalRatio: 0.001)
        if voices[v].filterStage != .idle {
            startSegment(&g.filterEnvelope, lane: l, from: g.filterEnvelope.level[l], to: 0,
                         samples: patch.filterRelease, nominalRatio: 0.001)
            voices[v].filterStage = .release
        }
        groups[gi] = g
        voices[v].state = .released
        voices[v].ampStage = .release
    }

    /// Fades a voice out over `stealFadeSeconds` (steal, replacement, all
    /// sound off). It stops counting against the polyphony at once.
    func fadeOut(_ v: Int) {
        let state = voices[v].state
        guard state == .held || state == .released else { return }
        let gi = v / laneCount, l = v % laneCount
        startSegment(&groups[gi].amp, lane: l, from: groups[gi].amp.level[l], to: 0, samples: fadeSamples, nominalRatio: 1e4)
        voices[v].state = .fading
        voices[v].ampStage = .release
        let keyIndex = Int(voices[v].channel) * 128 + Int(voices[v].key)
        if keyVoice[keyIndex] == Int32(v) { keyVoice[keyIndex] = -1 }
        playingCount -= 1
    }

    /// Ends a voice now: its lane goes silent and the slot is free.
    func finish(_ v: Int) {
        let state = voices[v].state
        guard state != .free else { return }
        if state == .held || state == .released {
            playingCount -= 1
            let keyIndex = Int(voices[v].channel) * 128 + Int(voices[v].key)
            if keyVoice[keyIndex] == Int32(v) { keyVoice[keyIndex] = -1 }
        }
        soundingCount -= 1
        voices[v].state = .free
        let gi = v / laneCount, l = v % laneCount
        silence(&groups[gi], lane: l)
        groupLanes[gi] &= ~UInt8(1 << l)
    }

    /// Clears a lane so it renders exact zeros and holds no stale state.
    func silence(_ g: inout VoiceGroup, lane l: Int) {
        g.amp.hold(lane: l, at: 0)
        g.filterEnvelope.hold(lane: l, at: 0)
        g.weightLeft[l] = 0
        g.weightRight[l] = 0
        g.gainLeft[l] = 0
        g.gainRight[l] = 0
        g.reverbSend[l] = 0
        g.chorusSend[l] = 0
        g.delaySend[l] = 0
        g.reverbTarget[l] = 0
        g.chorusTarget[l] = 0
        g.delayTarget[l] = 0
        g.filterState1[l] = 0
        g.filterState2[l] = 0
        g.increment1[l] = 0
        g.increment2[l] = 0
        g.incrementValue1[l] = 0
        g.incrementValue2[l] = 0
        g.baseIncrement1[l] = 0
        g.baseIncrement2[l] = 0
        g.mix1[l] = 0
        g.mix2[l] = 0
        g.pulseOffset1[l] = 0
        g.pulseOffset2[l] = 0
        g.glide[l] = 0
        g.polyPressure[l] = 0
    }

    /// Starts an envelope segment in one lane, at least `minimumRamp` long
    /// and never starting steeper than a straight ramp of that length.
    func startSegment(_ env: inout EnvelopeLanes, lane l: Int, from: Float, to stop: Float, samples: Float, nominalRatio: Float) {
        let n = max(samples, minimumRamp)
        let ratio = tables.curveRatio(samples: n, minimumRamp: minimumRamp, nominal: nominalRatio)
        env.start(lane: l, from: from, to: stop, samples: n, ratio: ratio)
    }

    /// Called by the renderer when segments end: attack -> decay -> sustain;
    /// a finished release (or a sustain at 0) ends the voice.
    func endSegments(_ group: UnsafeMutablePointer<VoiceGroup>, group gi: Int, amp ampReached: LaneMask, filter filterReached: LaneMask) {
        var g = group.pointee
        defer { group.pointee = g }
        for l in 0..<laneCount {
            let v = gi * laneCount + l
            guard voices[v].state != .free else { continue }
            let patch = patches[Int(voices[v].patch)]
            if filterReached[l] {
                switch voices[v].filterStage {
                case .attack:
                    voices[v].filterStage = .decay
                    startSegment(&g.filterEnvelope, lane: l, from: 1, to: patch.filterSustain, samples: patch.filterDecay, nominalRatio: 0.001)
                case .decay:
                    voices[v].filterStage = .sustain
                    g.filterEnvelope.hold(lane: l, at: patch.filterSustain)
                case .release:
                    voices[v].filterStage = .idle
                    g.filterEnvelope.hold(lane: l, at: 0)
                case .sustain, .idle:
                    break
                }
            }
            if ampReached[l] {
                switch voices[v].ampStage {
                case .attack:
                    voices[v].ampStage = .decay
                    startSegment(&g.amp, lane: l, from: 1, to: patch.sustain, samples: patch.decay, nominalRatio: 0.001)
                case .decay:
                    voices[v].ampStage = .sustain
                    g.amp.hold(lane: l, at: patch.sustain)
                    if patch.sustain <= 0 { finishInGroup(&g, voice: v) }
                case .release:
                    finishInGroup(&g, voice: v)
                case .sustain, .idle:
                    break
                }
            }
        }
    }

    /// `finish` for a voice whose group the renderer holds in a local copy.
    private func finishInGroup(_ g: inout VoiceGroup, voice v: Int) {
        let gi = v / laneCount, l = v % laneCount
        let state = voices[v].state
        if state == .held || state == .released {
            playingCount -= 1
            let keyIndex = Int(voices[v].channel) * 128 + Int(voices[v].key)
            if keyVoice[keyIndex] == Int32(v) { keyVoice[keyIndex] = -1 }
        }
        soundingCount -= 1
        voices[v].state = .free
        silence(&g, lane: l)
        groupLanes[gi] &= ~UInt8(1 << l)
    }

    // MARK: pedals and channel-wide note messages

    /// Voices whose pedals and zone-wide messages come from `control`.
    @inline(__always)
    func isControlled(_ v: Int, by control: Int) -> Bool {
        voices[v].state != .free && Int(voices[v].controlChannel) == control
    }

    func setSustain(channel c: Int, down: Bool) {
        let wasDown = channels[c].sustain
        channels[c].sustain = down
        guard wasDown && !down else { return }
        for v in 0..<slotCount where isControlled(v, by: c) {
            if voices[v].state == .held && !voices[v].keyDown && !voices[v].sostenuto { release(v) }
        }
    }

    func setSostenuto(channel c: Int, down: Bool) {
        let wasDown = channels[c].sostenuto
        channels[c].sostenuto = down
        if !wasDown && down {
            for v in 0..<slotCount where isControlled(v, by: c) && voices[v].state == .held && voices[v].keyDown {
                voices[v].sostenuto = true
            }
        } else if wasDown && !down {
            for v in 0..<slotCount where isControlled(v, by: c) && voices[v].sostenuto {
                voices[v].sostenuto = false
                if voices[v].state == .held && !voices[v].keyDown && !channels[c].sustain { release(v) }
            }
        }
    }

    /// All Notes Off: every key of the channel is let go (pedals still hold).
    func allNotesOff(channel c: Int) {
        for v in 0..<slotCount where voices[v].state == .held && voices[v].keyDown
            && (Int(voices[v].channel) == c || Int(voices[v].controlChannel) == c) {
            noteOff(channel: Int(voices[v].channel), key: voices[v].key)
        }
    }

    /// All Sound Off: every voice of the channel fades out now.
    func allSoundOff(channel c: Int) {
        for v in 0..<slotCount where voices[v].state != .free
            && (Int(voices[v].channel) == c || Int(voices[v].controlChannel) == c) {
            fadeOut(v)
        }
    }
}

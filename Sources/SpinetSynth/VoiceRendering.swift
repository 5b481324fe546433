// The voice renderer: one group of voices (one per SIMD lane) at a time.
//
// A group renders in control blocks of 16 samples. At the start of every
// block the renderer computes the modulation (envelopes, LFO, glide, bends,
// smoothed controllers) for the block's end and from it each ramped value's
// end point; the samples in between ramp linearly: oscillator increments,
// filter coefficients and the output weights (envelope x gain).
//
// A block is planned for its 16 samples whatever the render call: it
// carries on across calls (the plan is kept per group in a `ControlBlock`),
// so the output does not depend on how the frames are cut into calls (a
// host's block size, an engine's slices). An event is what ends blocks
// early: before a message changes what the plans assumed, every block under
// way ends where the samples are (`endControlBlocks`), its control state
// moved on by the samples rendered, its ramps kept where they got to; the
// next block starts on the event's frame, so events are never moved to a grid.
//
// The samples of a block go through two loops: the oscillators write their
// mix to a 16-sample scratch buffer, then the filter and the output stage
// read it. Two short loops keep their values in registers, and the
// oscillator loop, free of loop-carried dependencies, runs at full width
// while the filter's recursion waits on its own chain.
//
// Effect sends: when the caller wants them (`render(_ output:frames:)`) and
// a block has a sounding lane with a nonzero send level, the filter loop
// also keeps each lane's panned output in a stash, and one short loop per
// such send adds stash x send level (ramped across the block) into that
// send's lane sums. Blocks whose sounding lanes all have zero sends run the
// plain filter loop, and a group whose send levels and targets are all zero
// (`sendsLive` false) does not even look, so a dry synth costs what it did
// without sends. Targets are copied into the lanes by the (rare) messages
// that change them, so the renderer reads no channel state for sends.
extension OscillatorSynth {
    /// Render thread only. Adds `frames` frames of group `gi` into `mix`
    /// (interleaved left/right lane sums) and, when `sends` is given, its
    /// effect sends into `sends` (reverb, chorus, delay: each interleaved
    /// left/right lane sums, `2 * maxFrames` apart; see `sendsTouched`).
    func renderGroup(_ gi: Int, frames: Int, into mix: UnsafeMutablePointer<Lanes>, sends: UnsafeMutablePointer<Lanes>?) {
        let g = groups.pointer + gi
        let block = controlBlocks.pointer + gi
        let table = tables.storage
        let scratch = oscillatorScratch.pointer
        var done = 0
        while done < frames {
            if block.pointee.done == block.pointee.planned {
                planBlock(g, block, sends: sends != nil)
            }
            let left = block.pointee.planned - block.pointee.done
            let n = frames - done < left ? frames - done : left
            block.pointee.oscillators.render(table: table, into: scratch, frames: n)
            if let sends, block.pointee.feedsSends {
                renderFilterWithSends(block, input: scratch, offset: done, frames: n, mix: mix, sends: sends, blockFrames: frames)
            } else {
                block.pointee.filter.render(input: scratch, output: mix + 2 * done, frames: n)
            }
            block.pointee.done += n
            done += n
            if block.pointee.done == block.pointee.planned {
                Self.finishBlock(g, oscillators: block.pointee.oscillators, filter: block.pointee.filter)
                let amp = block.pointee.filter.ampReached, filter = block.pointee.filter.filterReached
                if any(amp .| filter) {
                    endSegments(g, group: gi, amp: amp, filter: filter)
                    if groupLanes[gi] == 0 { break }
                }
            }
        }
    }

    /// Plans group `g`'s next control block (a full one): moves its controls
    /// on to the block's end, keeping what they were for an early end, and
    /// the ramps from here to there.
    @inline(__always)
    func planBlock(_ g: UnsafeMutablePointer<VoiceGroup>, _ block: UnsafeMutablePointer<ControlBlock>, sends: Bool) {
        let n = Self.controlBlock
        block.pointee.before = ControlState(g.pointee)
        let modulation = Self.advanceControls(g, channels: UnsafePointer(channels.pointer), smoothing: smoothing[n], frames: n)
        block.pointee.oscillators = Self.planOscillators(g, tables: tables, semitones: modulation.semitones, frames: n)
        block.pointee.filter = Self.planFilter(g, tables: tables, lfo: modulation.lfo, frames: n)
        // Send levels only move while sends are rendered and some lane has one.
        if sends && g.pointee.sendsLive {
            Self.planSends(g, block, smoothing: smoothing[n], frames: n)
        } else {
            block.pointee.sendsMoved = false
            block.pointee.feedsSends = false
        }
        block.pointee.planned = n
        block.pointee.done = 0
        blocksUnderWay = true
    }

    /// Render thread only. Ends every control block under way at the
    /// current frame, before an event changes what they were planned from:
    /// each group's controls (smoothed values, LFO, glide, envelopes) move on
    /// by the samples the block rendered, from where they were when it was
    /// planned, and its ramped values (increments, filter, output weights,
    /// send levels) stay where the samples left them. The next block starts here.
    func endControlBlocks() {
        guard blocksUnderWay else { return }
        blocksUnderWay = false
        let channels = UnsafePointer(self.channels.pointer)
        for gi in 0..<groupCount where controlBlocks[gi].done < controlBlocks[gi].planned {
            let g = groups.pointer + gi, block = controlBlocks.pointer + gi
            let k = block.pointee.done, planned = block.pointee.planned
            block.pointee.done = planned
            block.pointee.before.restore(into: g)
            let modulation = Self.advanceControls(g, channels: channels, smoothing: smoothing[k], frames: k)
            g.pointee.lastModulation = modulation.semitones
            let amp = g.pointee.amp.advance(Float(k))
            let filter = g.pointee.filterEnvelope.advance(Float(k))
            g.pointee.fresh = Lanes()
            let share = Lanes(repeating: Float(k) / Float(planned))
            let oscillators = block.pointee.oscillators, ramps = block.pointee.filter
            g.pointee.incrementValue1 = oscillators.from1 + (oscillators.to1 - oscillators.from1) * share
            g.pointee.incrementValue2 = oscillators.from2 + (oscillators.to2 - oscillators.from2) * share
            Self.finishBlock(g, oscillators: oscillators, filter: ramps)
            g.pointee.increment1 = oscillators.increment1
            g.pointee.increment2 = oscillators.increment2
            g.pointee.filterM11 = ramps.m11
            g.pointee.filterM12 = ramps.m12
            g.pointee.filterM21 = ramps.m21
            g.pointee.filterM22 = ramps.m22
            g.pointee.weightLeft = ramps.left
            g.pointee.weightRight = ramps.right
            if block.pointee.sendsMoved {
                let kF = Lanes(repeating: Float(k))
                g.pointee.reverbSend = block.pointee.reverbFrom + block.pointee.reverbStep * kF
                g.pointee.chorusSend = block.pointee.chorusFrom + block.pointee.chorusStep * kF
                g.pointee.delaySend = block.pointee.delayFrom + block.pointee.delayStep * kF
                g.pointee.sendsLive = true
            }
            if any(amp .| filter) { endSegments(g, group: gi, amp: amp, filter: filter) }
        }
    }

    /// Channel controls each lane follows, smoothed (new voices start at
    /// their targets), then the LFO and glide. Returns the pitch modulation
    /// in semitones and the LFO value.
    @inline(never)
    static func advanceControls(_ g: UnsafeMutablePointer<VoiceGroup>, channels: UnsafePointer<ChannelState>,
                                smoothing: Float, frames n: Int) -> (semitones: Lanes, lfo: Lanes) {
        let nF = Float(n)
        let fresh = g.pointee.fresh .> 0
        let c = g.pointee.channel, k = g.pointee.controlChannel
        let own0 = channels + Int(c.l0), own1 = channels + Int(c.l1), own2 = channels + Int(c.l2), own3 = channels + Int(c.l3)
        let ctl0 = channels + Int(k.l0), ctl1 = channels + Int(k.l1), ctl2 = channels + Int(k.l2), ctl3 = channels + Int(k.l3)
        let pitchOffset = Lanes(own0.pointee.pitchOffset, own1.pointee.pitchOffset, own2.pointee.pitchOffset, own3.pointee.pitchOffset)
        let brightness = Lanes(own0.pointee.brightness, own1.pointee.brightness, own2.pointee.brightness, own3.pointee.brightness)
        let pressure = Lanes(own0.pointee.pressure, own1.pointee.pressure, own2.pointee.pressure, own3.pointee.pressure)
        let modulation = Lanes(ctl0.pointee.modulation, ctl1.pointee.modulation, ctl2.pointee.modulation, ctl3.pointee.modulation)
        let channelLeft = Lanes(ctl0.pointee.gainLeft, ctl1.pointee.gainLeft, ctl2.pointee.gainLeft, ctl3.pointee.gainLeft)
        let channelRight = Lanes(ctl0.pointee.gainRight, ctl1.pointee.gainRight, ctl2.pointee.gainRight, ctl3.pointee.gainRight)

        let k4 = Lanes(repeating: smoothing)
        let poly = g.pointee.polyPressure
        let brightnessTarget = brightness + pressure * g.pointee.pressureToBrightness + poly * g.pointee.polyPressureToBrightness
        g.pointee.brightness = smooth(g.pointee.brightness, toward: brightnessTarget, k4, snap: 1e-4).replacing(with: brightnessTarget, where: fresh)
        let vibratoTarget = (modulation + pressure * g.pointee.pressureToVibrato + poly * g.pointee.polyPressureToVibrato).limited(0, 1)
        let vibrato = smooth(g.pointee.vibratoAmount, toward: vibratoTarget, k4, snap: 1e-6).replacing(with: vibratoTarget, where: fresh)
        g.pointee.vibratoAmount = vibrato
        let velocity = g.pointee.velocityGain
        let leftTarget = channelLeft * velocity, rightTarget = channelRight * velocity
        g.pointee.gainLeft = smooth(g.pointee.gainLeft, toward: leftTarget, k4, snap: 1e-7).replacing(with: leftTarget, where: fresh)
        g.pointee.gainRight = smooth(g.pointee.gainRight, toward: rightTarget, k4, snap: 1e-7).replacing(with: rightTarget, where: fresh)

        var lfoPhase = g.pointee.lfoPhase + g.pointee.lfoRate * nF
        lfoPhase = lfoPhase.replacing(with: lfoPhase - 1, where: lfoPhase .>= 1)
        g.pointee.lfoPhase = lfoPhase
        let lfo = fastSine(cycles: lfoPhase)
        var glide = g.pointee.glide * fastExp2(g.pointee.glideLog2Rate * nF)
        glide = glide.replacing(with: 0, where: glide.absolute .< 1e-4)
        g.pointee.glide = glide
        return (pitchOffset + glide + lfo * g.pointee.vibratoDepth * vibrato, lfo)
    }

    /// Phase increments (fixed point, exact end points, linear steps) and
    /// the tables to read, for the pitch modulation of this block.
    @inline(never)
    static func planOscillators(_ g: UnsafeMutablePointer<VoiceGroup>, tables: TableView, semitones: Lanes, frames n: Int) -> OscillatorBlock {
        let fresh = g.pointee.fresh .> 0
        let inverseN = Lanes(repeating: 1 / Float(n))
        let ratio = fastExp2(semitones * (1 / 12))
        let end1 = (g.pointee.baseIncrement1 * ratio).limited(0, 2_147_483_520)
        let end2 = (g.pointee.baseIncrement2 * ratio).limited(0, 2_147_483_520)
        let start1 = g.pointee.incrementValue1.replacing(with: end1, where: fresh)
        let start2 = g.pointee.incrementValue2.replacing(with: end2, where: fresh)
        g.pointee.incrementValue1 = end1
        g.pointee.incrementValue2 = end2
        let endBits1 = fixedPoint(end1), endBits2 = fixedPoint(end2)
        // Tables are chosen for the highest pitch reached in the block.
        let mipSemitones = semitones.atLeast(g.pointee.lastModulation.replacing(with: semitones, where: fresh))
        g.pointee.lastModulation = semitones
        let base1 = tables.tableOffsets(base: g.pointee.waveBase1, mipStride: g.pointee.mipStride1, pitch: g.pointee.pitch1 + mipSemitones)
        let base2 = tables.tableOffsets(base: g.pointee.waveBase2, mipStride: g.pointee.mipStride2, pitch: g.pointee.pitch2 + mipSemitones)
        let silent = LaneInts(repeating: tables.silentBase)
        let pulse1 = g.pointee.pulseOffset1, pulse2 = g.pointee.pulseOffset2
        let mix2 = g.pointee.mix2
        return OscillatorBlock(
            phase1: g.pointee.phase1, phase2: g.pointee.phase2,
            increment1: g.pointee.increment1.replacing(with: endBits1, where: fresh),
            increment2: g.pointee.increment2.replacing(with: endBits2, where: fresh),
            step1: fixedPoint((end1 - start1) * inverseN), step2: fixedPoint((end2 - start2) * inverseN),
            end1: endBits1, end2: endBits2,
            table1: base1, table2: base2,
            pulseTable1: base1.replacing(with: silent, where: !pulse1.nonzeroMask()),
            pulseTable2: base2.replacing(with: silent, where: !pulse2.nonzeroMask()),
            pulseOffset1: pulse1, pulseOffset2: pulse2,
            mix1: g.pointee.mix1, mix2: mix2,
            usePulse1: any(pulse1.nonzeroMask()), useOscillator2: any(mix2 .!= 0), usePulse2: any(pulse2.nonzeroMask()),
            from1: start1, from2: start2, to1: end1, to2: end2)
    }

    /// Both envelopes, the cutoff they and the controls make, the filter
    /// matrix and the output weights for the end of this block.
    @inline(never)
    static func planFilter(_ g: UnsafeMutablePointer<VoiceGroup>, tables: TableView, lfo: Lanes, frames n: Int) -> FilterBlock {
        let nF = Float(n)
        let fresh = g.pointee.fresh .> 0
        let inverseN = Lanes(repeating: 1 / nF)
        let ampReached = g.pointee.amp.advance(nF)
        let filterReached = g.pointee.filterEnvelope.advance(nF)
        let cutoff = g.pointee.cutoffBase + g.pointee.filterEnvelope.level * g.pointee.filterEnvAmount
            + g.pointee.brightness + lfo * g.pointee.lfoToCutoff
        let matrix = FilterBlock.matrix(g: tables.filterG(pitch: cutoff), k: g.pointee.resonanceK)
        let m11 = g.pointee.filterM11.replacing(with: matrix.m11, where: fresh)
        let m12 = g.pointee.filterM12.replacing(with: matrix.m12, where: fresh)
        let m21 = g.pointee.filterM21.replacing(with: matrix.m21, where: fresh)
        let m22 = g.pointee.filterM22.replacing(with: matrix.m22, where: fresh)
        g.pointee.filterM11 = matrix.m11
        g.pointee.filterM12 = matrix.m12
        g.pointee.filterM21 = matrix.m21
        g.pointee.filterM22 = matrix.m22
        let amp = g.pointee.amp.level
        let left = g.pointee.weightLeft, right = g.pointee.weightRight
        let leftEnd = amp * g.pointee.gainLeft * 0.5
        let rightEnd = amp * g.pointee.gainRight * 0.5
        g.pointee.weightLeft = leftEnd
        g.pointee.weightRight = rightEnd
        g.pointee.fresh = Lanes()
        return FilterBlock(
            state1: g.pointee.filterState1, state2: g.pointee.filterState2,
            m11: m11, m12: m12, m21: m21, m22: m22,
            m11Step: (matrix.m11 - m11) * inverseN, m12Step: (matrix.m12 - m12) * inverseN,
            m21Step: (matrix.m21 - m21) * inverseN, m22Step: (matrix.m22 - m22) * inverseN,
            left: left, right: right,
            leftStep: (leftEnd - left) * inverseN, rightStep: (rightEnd - right) * inverseN,
            ampReached: ampReached, filterReached: filterReached)
    }

    /// Stores what the sample loops leave behind: phases, exact end
    /// increments, filter states (tiny ones flushed to zero so a decaying
    /// filter never runs on denormals).
    @inline(__always)
    static func finishBlock(_ g: UnsafeMutablePointer<VoiceGroup>, oscillators: OscillatorBlock, filter: FilterBlock) {
        g.pointee.phase1 = oscillators.phase1
        g.pointee.phase2 = oscillators.phase2
        g.pointee.increment1 = oscillators.end1
        g.pointee.increment2 = oscillators.end2
        let s1 = filter.state1, s2 = filter.state2
        g.pointee.filterState1 = s1.replacing(with: 0, where: s1.absolute .< 1e-20)
        g.pointee.filterState2 = s2.replacing(with: 0, where: s2.absolute .< 1e-20)
    }

    /// The send ramps of a block about to be planned (sends rendered, some
    /// level or target not 0): the levels move one block on, and the block
    /// feeds each send some sounding lane has a level for.
    @inline(never)
    static func planSends(_ g: UnsafeMutablePointer<VoiceGroup>, _ block: UnsafeMutablePointer<ControlBlock>,
                          smoothing: Float, frames n: Int) {
        let reverbFrom = g.pointee.reverbSend, chorusFrom = g.pointee.chorusSend, delayFrom = g.pointee.delaySend
        advanceSends(g, smoothing: smoothing)
        let reverbTo = g.pointee.reverbSend, chorusTo = g.pointee.chorusSend, delayTo = g.pointee.delaySend
        // Lanes that sound in this block (free and finished lanes have zero weights).
        let filter = block.pointee.filter
        let audible = (filter.left .!= 0) .| (filter.right .!= 0) .| (g.pointee.weightLeft .!= 0) .| (g.pointee.weightRight .!= 0)
        let reverb = any(audible .& ((reverbFrom .!= 0) .| (reverbTo .!= 0)))
        let chorus = any(audible .& ((chorusFrom .!= 0) .| (chorusTo .!= 0)))
        let delay = any(audible .& ((delayFrom .!= 0) .| (delayTo .!= 0)))
        let inverseN = Lanes(repeating: 1 / Float(n))
        block.pointee.sendsMoved = true
        block.pointee.feedsSends = reverb || chorus || delay
        block.pointee.feedsReverb = reverb
        block.pointee.feedsChorus = chorus
        block.pointee.feedsDelay = delay
        block.pointee.reverbFrom = reverbFrom
        block.pointee.chorusFrom = chorusFrom
        block.pointee.delayFrom = delayFrom
        block.pointee.reverbLevel = reverbFrom
        block.pointee.chorusLevel = chorusFrom
        block.pointee.delayLevel = delayFrom
        block.pointee.reverbStep = (reverbTo - reverbFrom) * inverseN
        block.pointee.chorusStep = (chorusTo - chorusFrom) * inverseN
        block.pointee.delayStep = (delayTo - delayFrom) * inverseN
    }

    /// The filter and output stage of frames `offset ..< offset + frames`
    /// of the render block, part of one control block that feeds some send:
    /// each send it feeds gets its lanes' panned output times the level, ramped.
    @inline(never)
    func renderFilterWithSends(_ block: UnsafeMutablePointer<ControlBlock>, input: UnsafePointer<Lanes>,
                               offset done: Int, frames n: Int, mix: UnsafeMutablePointer<Lanes>,
                               sends: UnsafeMutablePointer<Lanes>, blockFrames: Int) {
        let stash = sendStash.pointer
        block.pointee.filter.render(input: input, output: mix + 2 * done, stash: stash, frames: n)
        let stride = 2 * maxFrames
        if block.pointee.feedsReverb {
            claimSend(0, base: sends, frames: blockFrames)
            Self.addSend(stash, level: &block.pointee.reverbLevel, step: block.pointee.reverbStep, into: sends + 2 * done, frames: n)
        }
        if block.pointee.feedsChorus {
            claimSend(1, base: sends, frames: blockFrames)
            Self.addSend(stash, level: &block.pointee.chorusLevel, step: block.pointee.chorusStep, into: sends + stride + 2 * done, frames: n)
        }
        if block.pointee.feedsDelay {
            claimSend(2, base: sends, frames: blockFrames)
            Self.addSend(stash, level: &block.pointee.delayLevel, step: block.pointee.delayStep,
                         into: sends + 2 * stride + 2 * done, frames: n)
        }
    }

    /// Moves the send levels one control block toward their targets (the
    /// gains' smoothing); once all levels and targets are 0 the group stops
    /// being live and its send work is skipped.
    @inline(never)
    static func advanceSends(_ g: UnsafeMutablePointer<VoiceGroup>, smoothing: Float) {
        let k4 = Lanes(repeating: smoothing)
        let reverbTarget = g.pointee.reverbTarget, chorusTarget = g.pointee.chorusTarget, delayTarget = g.pointee.delayTarget
        let reverb = smooth(g.pointee.reverbSend, toward: reverbTarget, k4, snap: 1e-6)
        let chorus = smooth(g.pointee.chorusSend, toward: chorusTarget, k4, snap: 1e-6)
        let delay = smooth(g.pointee.delaySend, toward: delayTarget, k4, snap: 1e-6)
        g.pointee.reverbSend = reverb
        g.pointee.chorusSend = chorus
        g.pointee.delaySend = delay
        // Targets reached (the smoother snaps) and all zero: nothing left to send.
        if !any((reverb .!= 0) .| (chorus .!= 0) .| (delay .!= 0) .| (reverbTarget .!= 0) .| (chorusTarget .!= 0) .| (delayTarget .!= 0)) {
            g.pointee.sendsLive = false
        }
    }

    /// Clears send `index`'s lane sums for the whole render block the first
    /// time a group adds to it, so sends nobody feeds are never touched.
    @inline(__always)
    func claimSend(_ index: Int, base: UnsafeMutablePointer<Lanes>, frames: Int) {
        let bit = UInt8(1) << UInt8(index)
        if sendsTouched & bit != 0 { return }
        sendsTouched |= bit
        (base + index * 2 * maxFrames).update(repeating: Lanes(), count: 2 * frames)
    }

    /// Render thread. Adds one send: the stashed panned lane outputs times
    /// the send level, ramped linearly like the output weights (`ramp` is
    /// left where the last frame put it).
    @inline(never)
    static func addSend(_ stash: UnsafePointer<Lanes>, level ramp: inout Lanes, step: Lanes,
                        into output: UnsafeMutablePointer<Lanes>, frames: Int) {
        var level = ramp
        for i in 0..<frames {
            level += step
            output[2 * i] += stash[2 * i] * level
            output[2 * i + 1] += stash[2 * i + 1] * level
        }
        ramp = level
    }

    /// One step of a one-pole smoother, landing exactly on the target once
    /// within `snap` of it (no endless approach into denormals).
    @_transparent
    static func smooth(_ value: Lanes, toward target: Lanes, _ k: Lanes, snap: Float) -> Lanes {
        let next = value + (target - value) * k
        return next.replacing(with: target, where: (target - next).absolute .< Lanes(repeating: snap))
    }
}

/// The oscillators of one voice group for one control block: both
/// oscillators (a pulse is two reads of the saw table a pulse width apart)
/// mixed into a scratch buffer.
struct OscillatorBlock {
    var phase1 = LaneBits()
    var phase2 = LaneBits()
    var increment1 = LaneBits()
    var increment2 = LaneBits()
    var step1 = LaneBits()
    var step2 = LaneBits()
    var end1 = LaneBits()
    var end2 = LaneBits()
    var table1 = LaneInts()
    var table2 = LaneInts()
    var pulseTable1 = LaneInts()
    var pulseTable2 = LaneInts()
    var pulseOffset1 = LaneBits()
    var pulseOffset2 = LaneBits()
    var mix1 = Lanes()
    var mix2 = Lanes()
    var usePulse1 = false
    var useOscillator2 = false
    var usePulse2 = false
    /// The increments' ramp as floats, for a block that ends early.
    var from1 = Lanes()
    var from2 = Lanes()
    var to1 = Lanes()
    var to2 = Lanes()

    /// Render thread. Writes `frames` frames of the oscillator mix to `scratch`.
    @inline(never)
    mutating func render(table: UnsafeMutablePointer<Float>, into scratch: UnsafeMutablePointer<Lanes>, frames: Int) {
        let table = UnsafePointer(table)
        var phase1 = phase1, increment1 = increment1
        for i in 0..<frames {
            increment1 &+= step1
            phase1 &+= increment1
            var o1 = lookup(table, phase1, table1)
            if usePulse1 { o1 -= lookup(table, phase1 &+ pulseOffset1, pulseTable1) }
            scratch[i] = o1 * mix1
        }
        self.phase1 = phase1
        self.increment1 = increment1
        guard useOscillator2 else { return }
        var phase2 = phase2, increment2 = increment2
        for i in 0..<frames {
            increment2 &+= step2
            phase2 &+= increment2
            var o2 = lookup(table, phase2, table2)
            if usePulse2 { o2 -= lookup(table, phase2 &+ pulseOffset2, pulseTable2) }
            scratch[i] += o2 * mix2
        }
        self.phase2 = phase2
        self.increment2 = increment2
    }
}

/// The filter and output stage of one voice group for one control block.
///
/// The filter is the zero-delay-feedback state-variable low-pass
/// (Zavalishin; Simper's formulation): with a1 = 1/(1 + g(g + k)),
/// a2 = g·a1, a3 = g·a2 and d = s2 - x, its state update
/// s1' = 2v1 - s1, s2' = 2v2 - s2 is the matrix product
///
///     s1' = (2a1 - 1)·s1 - 2a2·d
///     s2' = x + 2a2·s1 + (1 - 2a3)·d
///
/// and the low-pass output is v2 = (s2 + s2')/2. Written this way the
/// recursion is three operations deep (nine cycles) instead of seven, which
/// is what bounds this loop. The four matrix entries are ramped linearly
/// across the block.
///
/// Kept out of line on purpose: compiled on its own, the vectorizer keeps
/// the four lanes in one SSE register per value; inlined into the large
/// render function it split them into two-lane halves (twice the work).
struct FilterBlock {
    var state1 = Lanes()
    var state2 = Lanes()
    var m11 = Lanes()
    var m12 = Lanes()
    var m21 = Lanes()
    var m22 = Lanes()
    var m11Step = Lanes()
    var m12Step = Lanes()
    var m21Step = Lanes()
    var m22Step = Lanes()
    /// Output weights, halved (the low-pass output is (s2 + s2')/2).
    var left = Lanes()
    var right = Lanes()
    var leftStep = Lanes()
    var rightStep = Lanes()
    /// Lanes whose envelope segment ended at this block's end.
    var ampReached = LaneMask(false, false, false, false)
    var filterReached = LaneMask(false, false, false, false)

    /// Render thread. Adds `frames` frames into the interleaved left/right lane sums.
    @inline(never)
    mutating func render(input: UnsafePointer<Lanes>, output: UnsafeMutablePointer<Lanes>, frames: Int) {
        run(input: input, output: output, stash: nil, frames: frames)
    }

    /// Render thread. The same, and also writes each lane's panned output
    /// (what it adds to `output`) to `stash`, for the effect sends.
    @inline(never)
    mutating func render(input: UnsafePointer<Lanes>, output: UnsafeMutablePointer<Lanes>,
                         stash: UnsafeMutablePointer<Lanes>, frames: Int) {
        run(input: input, output: output, stash: stash, frames: frames)
    }

    /// The loop of both `render`s; inlined into each, so the dry one has no
    /// stash test left in it.
    @inline(__always)
    private mutating func run(input: UnsafePointer<Lanes>, output: UnsafeMutablePointer<Lanes>,
                              stash: UnsafeMutablePointer<Lanes>?, frames: Int) {
        var s1 = state1, s2 = state2
        var m11 = m11, m12 = m12, m21 = m21, m22 = m22
        var left = left, right = right
        for i in 0..<frames {
            m11 += m11Step
            m12 += m12Step
            m21 += m21Step
            m22 += m22Step
            let x = input[i]
            let d = s2 - x
            let next1 = m11 * s1 + m12 * d
            let next2 = (x + m21 * s1) + m22 * d
            let low2 = s2 + next2
            s1 = next1
            s2 = next2
            left += leftStep
            right += rightStep
            let outLeft = low2 * left, outRight = low2 * right
            output[2 * i] += outLeft
            output[2 * i + 1] += outRight
            if let stash {
                stash[2 * i] = outLeft
                stash[2 * i + 1] = outRight
            }
        }
        state1 = s1
        state2 = s2
        self.m11 = m11
        self.m12 = m12
        self.m21 = m21
        self.m22 = m22
        self.left = left
        self.right = right
    }

    /// The matrix entries for filter coefficient g = tan(π·fc/fs) and damping k = 1/Q.
    @_transparent
    static func matrix(g: Lanes, k: Lanes) -> (m11: Lanes, m12: Lanes, m21: Lanes, m22: Lanes) {
        let a1 = 1 / (1 + g * (g + k))
        let a2 = g * a1
        let a3 = g * a2
        return (a1 + a1 - 1, -(a2 + a2), a2 + a2, 1 - (a3 + a3))
    }
}

/// One voice group's control block under way: planned for
/// `OscillatorSynth.controlBlock` frames, `done` of them rendered. It
/// carries on across render calls, so the plan does not depend on how the
/// frames are cut into calls; `OscillatorSynth.endControlBlocks` ends it
/// early at an event. `done == planned`: none under way.
struct ControlBlock {
    var planned = 0
    var done = 0
    /// The oscillators and the filter as far as rendered (their ramps' values and steps).
    var oscillators = OscillatorBlock()
    var filter = FilterBlock()
    /// The controls the plan moved on to the block's end, as they were
    /// before it, for an early end to move them on by `done` instead.
    var before = ControlState()
    /// The send levels moved a block on with the plan (`sendsMoved`), and
    /// which sends the block feeds: each ramp's start, step and value so far.
    var sendsMoved = false
    var feedsSends = false
    var feedsReverb = false
    var feedsChorus = false
    var feedsDelay = false
    var reverbFrom = Lanes()
    var chorusFrom = Lanes()
    var delayFrom = Lanes()
    var reverbStep = Lanes()
    var chorusStep = Lanes()
    var delayStep = Lanes()
    var reverbLevel = Lanes()
    var chorusLevel = Lanes()
    var delayLevel = Lanes()
}

/// What planning a control block moves on to the block's end in a voice
/// group, besides the ramped values: the smoothed controls, the LFO, the
/// glide, both envelopes and which lanes start fresh.
struct ControlState {
    var brightness = Lanes()
    var vibratoAmount = Lanes()
    var gainLeft = Lanes()
    var gainRight = Lanes()
    var lfoPhase = Lanes()
    var glide = Lanes()
    var fresh = Lanes()
    var amp = EnvelopeLanes()
    var filterEnvelope = EnvelopeLanes()

    init() {}

    @inline(__always)
    init(_ g: VoiceGroup) {
        brightness = g.brightness
        vibratoAmount = g.vibratoAmount
        gainLeft = g.gainLeft
        gainRight = g.gainRight
        lfoPhase = g.lfoPhase
        glide = g.glide
        fresh = g.fresh
        amp = g.amp
        filterEnvelope = g.filterEnvelope
    }

    @inline(__always)
    func restore(into g: UnsafeMutablePointer<VoiceGroup>) {
        g.pointee.brightness = brightness
        g.pointee.vibratoAmount = vibratoAmount
        g.pointee.gainLeft = gainLeft
        g.pointee.gainRight = gainRight
        g.pointee.lfoPhase = lfoPhase
        g.pointee.glide = glide
        g.pointee.fresh = fresh
        g.pointee.amp = amp
        g.pointee.filterEnvelope = filterEnvelope
    }
}

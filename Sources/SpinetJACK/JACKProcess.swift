import CJACK
import Glibc
import SpinetEngine

// JACK's callbacks. Each is a C function pointer made in a nonisolated
// static function and reaches the client through an Unmanaged context
// pointer: a closure written in top-level (main-actor) code would be
// main-actor-isolated, and calling it on JACK's thread traps in Swift 6.

extension JACKClient {
    @inline(__always)
    static func client(_ arg: UnsafeMutableRawPointer?) -> JACKClient {
        Unmanaged<JACKClient>.fromOpaque(arg!).takeUnretainedValue()
    }

    /// Registers every callback on `c` with `context` (an unretained JACKClient).
    /// Before jack_activate.
    nonisolated static func installCallbacks(_ c: OpaquePointer, _ context: UnsafeMutableRawPointer) {
        jack_set_process_callback(c, { frames, arg in
            Unmanaged<JACKClient>.fromOpaque(arg!)._withUnsafeGuaranteedRef { $0.process(frames: frames) }
        }, context)
        // pipewire-jack calls only jack_on_shutdown; jackd2 calls only the
        // info variant when both are set. Either marks the server gone.
        jack_on_shutdown(c, { arg in
            JACKClient.client(arg).serverWentAway()
        }, context)
        jack_on_info_shutdown(c, { _, _, arg in
            JACKClient.client(arg).serverWentAway()
        }, context)
        jack_set_xrun_callback(c, { arg in
            JACKClient.client(arg).xrunCount.add(1, ordering: .relaxed)
            return 0
        }, context)
        jack_set_freewheel_callback(c, { starting, arg in
            JACKClient.client(arg).freewheeling.store(starting != 0, ordering: .relaxed)
        }, context)
        // The engine is prepared for `maxFrames`, and renders longer periods
        // in pieces: a new period needs nothing but its length.
        jack_set_buffer_size_callback(c, { frames, arg in
            JACKClient.client(arg).serverPeriod.store(Int(frames), ordering: .relaxed)
            return 0
        }, context)
        // A new rate needs a new graph: the supervisor builds it; the process
        // thread plays silence until it is there.
        jack_set_sample_rate_callback(c, { rate, arg in
            JACKClient.client(arg).serverRateChanged(to: Int(rate))
            return 0
        }, context)
        jack_set_latency_callback(c, { mode, arg in
            JACKClient.client(arg).reportLatency(mode)
        }, context)
        jack_set_port_connect_callback(c, { a, b, connected, arg in
            let me = JACKClient.client(arg)
            me.connectionsChangedAt.store(JACKClient.now(), ordering: .releasing)
            if connected == 0 { me.sourceDisconnected(a, b) }
        }, context)
    }

    /// The server runs at `rate` from now on (notification thread).
    func serverRateChanged(to rate: Int) {
        serverRate.store(rate, ordering: .releasing)
        wake()
    }

    /// A connection between ports `a` and `b` is gone (notification
    /// thread): if one is a MIDI input of ours, the notes its source held
    /// are released (those of every source on that port: JACK merges them).
    func sourceDisconnected(_ a: jack_port_id_t, _ b: jack_port_id_t) {
        guard let c = client else { return }
        let first = jack_port_by_id(c, a), second = jack_port_by_id(c, b)
        var mask: UInt32 = 0
        for k in 0..<midiPortCount where midiIn[k] != nil && (midiIn[k] == first || midiIn[k] == second) {
            mask |= 1 << UInt32(k)
        }
        if mask != 0 { releaseRequested.bitwiseOr(mask, ordering: .releasing) }
    }

    func serverWentAway() {
        serverGone.store(true, ordering: .releasing)
        wake()
    }

    /// JACK's latency callback (notification thread). Sound leaves `out_L`
    /// and `out_R` the engine's latency (the limiter's look-ahead) after the
    /// MIDI that caused it came in: capture latency flows from the MIDI
    /// inputs to the outputs plus that much, playback latency from the
    /// outputs back to the MIDI inputs plus that much, so a DAW recording
    /// Spinet compensates.
    func reportLatency(_ mode: jack_latency_callback_mode_t) {
        guard let left = outLeft, let right = outRight else { return }
        let own = UInt32(clamping: latencyFrames)
        var range = jack_latency_range_t(min: 0, max: 0)
        if mode == JackCaptureLatency {
            var upstream = jack_latency_range_t(min: UInt32.max, max: 0)
            for i in 0..<midiPortCount {
                guard let p = midiIn[i] else { continue }
                jack_port_get_latency_range(p, JackCaptureLatency, &range)
                upstream.min = min(upstream.min, range.min)
                upstream.max = max(upstream.max, range.max)
            }
            if upstream.min == UInt32.max { upstream.min = 0 }
            var out = jack_latency_range_t(min: upstream.min &+ own, max: upstream.max &+ own)
            jack_port_set_latency_range(left, JackCaptureLatency, &out)
            jack_port_set_latency_range(right, JackCaptureLatency, &out)
        } else {
            var downstream = jack_latency_range_t(min: UInt32.max, max: 0)
            for p in [left, right] {
                jack_port_get_latency_range(p, JackPlaybackLatency, &range)
                downstream.min = min(downstream.min, range.min)
                downstream.max = max(downstream.max, range.max)
            }
            if downstream.min == UInt32.max { downstream.min = 0 }
            var inward = jack_latency_range_t(min: downstream.min &+ own, max: downstream.max &+ own)
            for i in 0..<midiPortCount {
                if let p = midiIn[i] { jack_port_set_latency_range(p, JackPlaybackLatency, &inward) }
            }
        }
    }

    // MARK: the process thread

    /// JACK's process callback: one cycle of `frames` frames. Process thread
    /// only. Allocates nothing, takes no lock, makes no system call, logs
    /// nothing; accepts any frame count, 0 included.
    func process(frames nframes: jack_nframes_t) -> Int32 {
        let observe = cycleObserver
        observe?(CyclePhase.begin.rawValue)
        let start = Self.now()
        let frames = Int(nframes)
        guard let leftPort = outLeft, let rightPort = outRight,
              let l = jack_port_get_buffer(leftPort, nframes), let r = jack_port_get_buffer(rightPort, nframes) else {
            observe?(CyclePhase.end.rawValue)
            return 0
        }
        let left = l.assumingMemoryBound(to: Float.self)
        let right = r.assumingMemoryBound(to: Float.self)
        adoptPendingGraph()
        let bits = currentGraph.load(ordering: .acquiring)
        guard bits != 0 else {
            silence(left, right, frames, dropping: nframes)
            observe?(CyclePhase.end.rawValue)
            return 0
        }
        Unmanaged<JACKGraph>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)._withUnsafeGuaranteedRef { graph in
            // A rate change under way: the graph for the new rate is being
            // built; silence until then rather than sound at the wrong pitch.
            guard graph.sampleRate == serverRate.load(ordering: .relaxed) else {
                silence(left, right, frames, dropping: nframes)
                return
            }
            graph.beginCycle()
            if releaseRequested.load(ordering: .relaxed) != 0 {
                graph.release(ports: releaseRequested.exchange(0, ordering: .acquiring))
            }
            for port in 0..<midiPortCount {
                guard let p = midiIn[port], let buffer = jack_port_get_buffer(p, nframes) else { continue }
                let count = jack_midi_get_event_count(buffer)
                if count > 0 { midiReceived.add(Int(count), ordering: .relaxed) }
                var event = jack_midi_event_t()
                var i: UInt32 = 0
                while i < count {
                    if jack_midi_event_get(&event, buffer, i) == 0, let bytes = event.buffer {
                        graph.deliver(bytes, count: event.size, offset: event.time, port: port)
                    }
                    i += 1
                }
            }
            if let hooks = hookReference, let c = client {
                // The cycle's measured start (jack_frames_to_time is an
                // estimate that lags by a quarter second on the dummy driver).
                var frameCount: jack_nframes_t = 0
                var now: jack_time_t = 0, next: jack_time_t = 0
                var period: Float = 0
                _ = jack_get_cycle_times(c, &frameCount, &now, &next, &period)
                // JACK's clock is jackd2's CLOCK_MONOTONIC_RAW (PipeWire's
                // CLOCK_MONOTONIC): moved onto CLOCK_MONOTONIC here (both
                // read through the vDSO, no system call), NTP's slew apart.
                let offset = Int64(Self.now()) &- Int64(jack_get_time()) &* 1000
                let start = Int64(now) &* 1000 &+ offset
                hooks._withUnsafeGuaranteedRef { $0.cycleStarts(engineFrame: graph.engine.frameTime, frames: frames, nanoseconds: start) }
            }
            observe?(CyclePhase.engineBegin.rawValue)
            graph.render(frames: frames, left: left, right: right)
            observe?(CyclePhase.engineEnd.rawValue)
            hookReference?._withUnsafeGuaranteedRef { $0.cycleRendered(left: left, right: right, frames: frames) }
        }
        account(Self.now() - start)
        cycleCount.add(1, ordering: .relaxed)
        observe?(CyclePhase.end.rawValue)
        return 0
    }

    /// Process thread. Takes the graph the supervisor built, if there is one
    /// and the last one given up has been collected.
    @inline(__always)
    private func adoptPendingGraph() {
        guard let next = graphs.take() else { return }
        let old = currentGraph.exchange(UInt(bitPattern: next.toOpaque()), ordering: .acquiringAndReleasing)
        if old != 0 { graphs.retire(Unmanaged<JACKGraph>.fromOpaque(UnsafeRawPointer(bitPattern: old)!)) }
    }

    /// Process thread. Zeroes the outputs; counts the cycle's MIDI as not played.
    private func silence(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>, _ frames: Int,
                         dropping nframes: jack_nframes_t) {
        left.update(repeating: 0, count: frames)
        right.update(repeating: 0, count: frames)
        for port in 0..<midiPortCount {
            guard let p = midiIn[port], let buffer = jack_port_get_buffer(p, nframes) else { continue }
            let n = Int(jack_midi_get_event_count(buffer))
            if n > 0 { unplayedEvents.add(n, ordering: .relaxed) }
        }
    }

    @inline(__always)
    private func account(_ spent: Int) {
        if let p = UnsafeMutablePointer<Int>(bitPattern: cycleRecord.load(ordering: .acquiring)) {
            let i = cycleRecordCount.load(ordering: .relaxed)
            if i < cycleRecordCapacity.load(ordering: .relaxed) {
                p[i] = spent
                cycleRecordCount.store(i + 1, ordering: .releasing)
            }
        }
        if freewheeling.load(ordering: .relaxed) { return }
        intervalSum.add(spent, ordering: .relaxed)
        intervalCount.add(1, ordering: .relaxed)
        if spent > intervalPeak.load(ordering: .relaxed) { intervalPeak.store(spent, ordering: .relaxed) }
        // The first half second warms code and memory up: left out of the total.
        let rate = serverRate.load(ordering: .relaxed)
        if cycleCount.load(ordering: .relaxed) * max(serverPeriod.load(ordering: .relaxed), 1) < rate / 2 { return }
        totalSum.add(spent, ordering: .relaxed)
        totalCount.add(1, ordering: .relaxed)
        if spent > totalPeak.load(ordering: .relaxed) { totalPeak.store(spent, ordering: .relaxed) }
    }
}

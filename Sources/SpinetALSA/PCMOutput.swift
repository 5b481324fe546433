import CALSA
import Glibc
import Synchronization
import SpinetEngine
import SpinetHost

/// The live audio driver: an ALSA PCM playback device and the render
/// thread that feeds it from an `Engine`.
///
/// The render thread's loop, once per period:
///   1. wait until the device has room for one period (`snd_pcm_wait`);
///   2. publish where the engine's next frame meets the clock (`AudioTimeline`),
///      from the device's timestamp of its last position update;
///   3. `engine.render` one period, copy it to the record ring, convert it
///      to the device's format;
///   4. `snd_pcm_writei` it (there is room: it does not block).
/// It allocates nothing, takes no lock and logs nothing; xruns are
/// recovered (`snd_pcm_recover`) and counted, a device that disappears ends
/// the loop and is reported by `failure`.
public final class PCMOutput: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// An ALSA PCM name: `default`, `hw:0,0`, `plughw:1`, `pipewire`, ...
        public var device = "default"
        public var sampleRate = 48000
        public var periodFrames = 128
        /// Periods in the buffer; nil picks 2 for `hw:` devices and 3 for
        /// the others (plugins and sound servers need the extra room).
        public var periods: Int?
        public init() {}
    }

    public let device: String
    /// What the device accepted (it may differ from what was asked).
    public let sampleRate: Int
    public let periodFrames: Int
    public let periods: Int
    public let bufferFrames: Int
    public let format: DeviceSampleFormat
    public let channels: Int
    /// The device has no clock of its own (ALSA's `null` takes any amount at
    /// once): the render thread paces itself, one period per period of
    /// CLOCK_MONOTONIC, so it behaves like a sound card (for measurements).
    public let pacedByClock: Bool

    private var pcm: OpaquePointer?
    private var thread: NativeThread?
    private let stopRequested = Atomic<Bool>(false)
    private let xrunCount = Atomic<Int>(0)
    private let failureCode = Atomic<Int>(0)
    private let stallCount = Atomic<Int>(0)
    // render load, in nanoseconds of render time per period
    private let intervalSum = Atomic<Int>(0)
    private let intervalCount = Atomic<Int>(0)
    private let intervalPeak = Atomic<Int>(0)
    private let totalSum = Atomic<Int>(0)
    private let totalCount = Atomic<Int>(0)
    private let totalPeak = Atomic<Int>(0)
    private let anchorFallbacks = Atomic<Int>(0)

    /// Opens and configures the device. Not on the render thread.
    public init(_ configuration: Configuration) throws(ALSAError) {
        ALSA.quietErrors()
        device = configuration.device
        var handle: OpaquePointer?
        let rc = snd_pcm_open(&handle, configuration.device, SND_PCM_STREAM_PLAYBACK, 0)
        guard rc >= 0, let pcm = handle else {
            throw Self.openError(configuration.device, rc)
        }
        self.pcm = pcm
        func fail(_ what: String, _ code: Int32) -> ALSAError {
            snd_pcm_close(pcm)
            return ALSAError("audio device \(configuration.device): \(what): \(ALSA.text(code))")
        }

        var hw: OpaquePointer?
        snd_pcm_hw_params_malloc(&hw)
        defer { snd_pcm_hw_params_free(hw) }
        var err = snd_pcm_hw_params_any(pcm, hw)
        if err < 0 { throw fail("cannot read its capabilities", err) }
        err = snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED)
        if err < 0 { throw fail("it does not take interleaved samples", err) }

        var chosen: DeviceSampleFormat?
        for f in DeviceSampleFormat.allCases where snd_pcm_hw_params_test_format(pcm, hw, Self.alsaFormat(f)) == 0 {
            chosen = f
            break
        }
        guard let format = chosen else {
            snd_pcm_close(pcm)
            throw ALSAError("audio device \(configuration.device) takes none of the sample formats Spinet writes (FLOAT, S32, S24, S16); try plughw: or default")
        }
        err = snd_pcm_hw_params_set_format(pcm, hw, Self.alsaFormat(format))
        if err < 0 { throw fail("cannot set format \(format)", err) }

        var ch: UInt32 = 2
        err = snd_pcm_hw_params_set_channels_near(pcm, hw, &ch)
        if err < 0 { throw fail("cannot set 2 channels", err) }

        var rate = UInt32(configuration.sampleRate)
        err = snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, nil)
        if err < 0 { throw fail("cannot set the sample rate \(configuration.sampleRate) Hz", err) }

        var period = snd_pcm_uframes_t(configuration.periodFrames)
        var dir: Int32 = 0
        err = snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &dir)
        if err < 0 { throw fail("cannot set a period of \(configuration.periodFrames) frames", err) }

        let isHardware = configuration.device.hasPrefix("hw:")
        var periods = UInt32(configuration.periods ?? (isHardware ? 2 : 3))
        err = snd_pcm_hw_params_set_periods_near(pcm, hw, &periods, &dir)
        if err < 0 { throw fail("cannot set \(periods) periods", err) }

        err = snd_pcm_hw_params(pcm, hw)
        if err < 0 { throw fail("it refused the settings (\(format), \(rate) Hz, \(periods) x \(period) frames)", err) }

        var buffer: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_period_size(hw, &period, &dir)
        snd_pcm_hw_params_get_buffer_size(hw, &buffer)
        snd_pcm_hw_params_get_rate(hw, &rate, &dir)
        snd_pcm_hw_params_get_channels(hw, &ch)

        self.format = format
        self.pacedByClock = configuration.device == "null"
        self.channels = Int(ch)
        self.sampleRate = Int(rate)
        self.periodFrames = Int(period)
        self.bufferFrames = Int(buffer)
        self.periods = max(1, Int(buffer) / max(Int(period), 1))

        // Software parameters: wake once a period is free; start when the
        // buffer is full; silence behind the play position; timestamp
        // position updates with CLOCK_MONOTONIC.
        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        snd_pcm_sw_params_current(pcm, sw)
        snd_pcm_sw_params_set_avail_min(pcm, sw, period)
        snd_pcm_sw_params_set_start_threshold(pcm, sw, snd_pcm_uframes_t(self.periods) * period)
        // The kernel zeroes what has been played: after an xrun or at the
        // end of a drain the device plays silence, never a stale buffer.
        var boundary: snd_pcm_uframes_t = 0
        if snd_pcm_sw_params_get_boundary(sw, &boundary) == 0 {
            snd_pcm_sw_params_set_silence_threshold(pcm, sw, 0)
            snd_pcm_sw_params_set_silence_size(pcm, sw, boundary)
        }
        snd_pcm_sw_params_set_tstamp_mode(pcm, sw, SND_PCM_TSTAMP_ENABLE)
        snd_pcm_sw_params_set_tstamp_type(pcm, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC)
        err = snd_pcm_sw_params(pcm, sw)
        if err < 0 { throw fail("cannot set its software parameters", err) }
    }

    deinit {
        if let pcm { snd_pcm_close(pcm) }
    }

    static func alsaFormat(_ f: DeviceSampleFormat) -> snd_pcm_format_t {
        switch f {
        case .float32: return SND_PCM_FORMAT_FLOAT_LE
        case .int32: return SND_PCM_FORMAT_S32_LE
        case .int24: return SND_PCM_FORMAT_S24_LE
        case .int24Packed: return SND_PCM_FORMAT_S24_3LE
        case .int16: return SND_PCM_FORMAT_S16_LE
        }
    }

    static func openError(_ device: String, _ rc: Int32) -> ALSAError {
        let detail = ALSA.takeLastMessage()
        let why = ALSA.text(rc)
        switch -rc {
        case EBUSY:
            return ALSAError("audio device \(device): \(why): another program is using it; stop that program, or use 'default' (shared) instead of a hw: device")
        case EACCES, EPERM:
            return ALSAError("audio device \(device): \(why); add your user to the 'audio' group and log in again")
        default:
            // "Unknown PCM" (no such name) and a missing card (ENOENT/ENODEV) mean the same to a user.
            let missing = detail.contains("Unknown PCM") || rc == -ENOENT || rc == -ENODEV
            return ALSAError("audio device \(device): \(missing ? "No such device" : why); list devices with 'spinet ports'")
        }
    }

    // MARK: statistics (any thread)

    public typealias Load = RenderLoad

    private var periodNanoseconds: Double { Double(periodFrames) * 1e9 / Double(sampleRate) }

    /// Render load since the previous call.
    public func takeIntervalLoad() -> Load {
        let s = intervalSum.exchange(0, ordering: .relaxed)
        let n = intervalCount.exchange(0, ordering: .relaxed)
        let p = intervalPeak.exchange(0, ordering: .relaxed)
        return Load(mean: n > 0 ? Double(s) / Double(n) / periodNanoseconds : 0,
                    peak: Double(p) / periodNanoseconds, periods: n)
    }

    /// Render load since the start, leaving out the first half second
    /// (first touches of code and memory, a burst of notes at start).
    public var totalLoad: Load {
        let n = totalCount.load(ordering: .relaxed)
        return Load(mean: n > 0 ? Double(totalSum.load(ordering: .relaxed)) / Double(n) / periodNanoseconds : 0,
                    peak: Double(totalPeak.load(ordering: .relaxed)) / periodNanoseconds, periods: n)
    }

    public var xruns: Int { xrunCount.load(ordering: .relaxed) }

    /// Set when the device failed for good (it disappeared): the render
    /// thread has stopped. One line, naming the device.
    public var failure: String? {
        let code = failureCode.load(ordering: .acquiring)
        guard code != 0 else { return nil }
        if code == -Int(ETIMEDOUT) {
            return "audio device \(device) stopped taking samples (no progress for 5 s); stopped"
        }
        if code == -Int(ENODEV) {
            return "audio device \(device) disappeared (unplugged, or its driver was removed); stopped"
        }
        return "audio device \(device) failed: \(ALSA.text(code)) (unplugged or taken away?); stopped"
    }

    // MARK: the render thread

    /// Starts the render thread. `priority` > 0 asks for SCHED_FIFO.
    public func start(engine: Engine, timeline: AudioTimeline, ring: RecordRing?, priority: Int32) -> ThreadScheduling {
        precondition(thread == nil, "start once")
        precondition(engine.maxFrames >= periodFrames, "prepare the engine for at least one period")
        let t = NativeThread(name: "spinet-audio", priority: priority) { [self] in
            self.renderLoop(engine: engine, timeline: timeline, ring: ring)
        }
        thread = t
        return t.scheduling
    }

    /// Stops the render thread, then the device. With `drain`, what is
    /// queued is played first (at most one buffer: call after a fade-out, so
    /// the sound ends in silence, not with a click); else it is dropped.
    public func stop(drain: Bool = true) {
        stopRequested.store(true, ordering: .releasing)
        thread?.join()
        thread = nil
        guard let pcm else { return }
        if drain && failure == nil && snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING {
            snd_pcm_drain(pcm)
        } else {
            snd_pcm_drop(pcm)
        }
    }

    /// Render thread only.
    private func renderLoop(engine: Engine, timeline: AudioTimeline, ring: RecordRing?) {
        guard let pcm else { return }
        let period = periodFrames
        var converter = SampleConverter(format: format, channels: channels)
        let bytesPerFrame = converter.bytesPerFrame
        let left = UnsafeMutablePointer<Float>.allocate(capacity: period)
        let right = UnsafeMutablePointer<Float>.allocate(capacity: period)
        let raw = UnsafeMutableRawPointer.allocate(byteCount: period * bytesPerFrame, alignment: 16)
        defer { left.deallocate(); right.deallocate(); raw.deallocate() }
        let rate = Double(sampleRate)
        let buffer = Int64(bufferFrames)
        var timeouts = 0
        var warmup = Int((0.5 * rate / Double(period)).rounded(.up))
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let periodNs = Int(Double(period) * 1e9 / rate)

        loop: while !stopRequested.load(ordering: .relaxed) {
            let avail = snd_pcm_avail_update(pcm)
            if avail < 0 {
                if !recover(pcm, Int32(truncatingIfNeeded: avail)) { break loop }
                continue
            }
            if Int(avail) < period {
                if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED {
                    // Full but not started (the buffer is not a whole number of periods).
                    let s = snd_pcm_start(pcm)
                    if s < 0 && !recover(pcm, s) { break loop }
                    continue
                }
                let w = snd_pcm_wait(pcm, 1000)
                if w < 0 {
                    if !recover(pcm, w) { break loop }
                } else if w == 0 {
                    timeouts += 1
                    stallCount.add(1, ordering: .relaxed)
                    if timeouts >= 5 {
                        failureCode.store(-Int(ETIMEDOUT), ordering: .releasing)
                        break loop
                    }
                } else {
                    timeouts = 0
                }
                continue
            }

            // Where the next frame meets the clock: the device's timestamp of
            // its last position update, plus the frames queued before ours.
            if snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING {
                var a: snd_pcm_uframes_t = 0
                var ts = snd_htimestamp_t()
                var anchor: Int64
                if snd_pcm_htimestamp(pcm, &a, &ts) == 0 && (ts.tv_sec != 0 || ts.tv_nsec != 0) {
                    let queued = buffer - Int64(a)
                    anchor = Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
                        + Int64(Double(queued) * 1e9 / rate)
                } else {
                    anchorFallbacks.add(1, ordering: .relaxed)
                    anchor = monotonicNanoseconds() + Int64(Double(buffer - Int64(avail)) * 1e9 / rate)
                }
                timeline.publish(TimelineAnchor(frame: engine.frameTime, nanoseconds: anchor))
            }

            let t0 = monotonicNanoseconds()
            engine.render(frames: period, left: left, right: right)
            ring?.write(left: left, right: right, frames: period)
            converter.convert(left: left, right: right, frames: period, into: raw)
            let spent = Int(monotonicNanoseconds() - t0)
            account(spent, warmingUp: warmup > 0)
            if warmup > 0 { warmup -= 1 }

            var offset = 0
            while offset < period {
                let w = snd_pcm_writei(pcm, raw + offset * bytesPerFrame, snd_pcm_uframes_t(period - offset))
                if w < 0 {
                    if w == -Int(EAGAIN) { continue }
                    if !recover(pcm, Int32(truncatingIfNeeded: w)) { break loop }
                    break   // after an xrun the rest of this block is dropped
                }
                offset += Int(w)
            }
            if pacedByClock {
                deadline.tv_nsec += periodNs
                while deadline.tv_nsec >= 1_000_000_000 { deadline.tv_nsec -= 1_000_000_000; deadline.tv_sec += 1 }
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil)
            }
        }
    }

    /// Render thread. Recovers from an xrun or a suspend; returns false when
    /// the device is gone (the failure is recorded).
    private func recover(_ pcm: OpaquePointer, _ err: Int32) -> Bool {
        if err == -EPIPE || err == -ESTRPIPE || err == -EINTR {
            if err == -EPIPE { xrunCount.add(1, ordering: .relaxed) }
            let r = snd_pcm_recover(pcm, err, 1)
            if r >= 0 { return true }
            failureCode.store(Int(isGone(pcm) ? -ENODEV : r), ordering: .releasing)
            return false
        }
        failureCode.store(Int(isGone(pcm) ? -ENODEV : err), ordering: .releasing)
        return false
    }

    /// Render thread, once the loop is ending. A card that is removed makes
    /// the wait fail with a plain EIO; asking the device once more tells a
    /// vanished device (ENODEV) from other failures, so the message can say so.
    private func isGone(_ pcm: OpaquePointer) -> Bool {
        snd_pcm_state(pcm) == SND_PCM_STATE_DISCONNECTED || snd_pcm_avail(pcm) == -Int(ENODEV)
    }

    @inline(__always)
    private func account(_ spent: Int, warmingUp: Bool) {
        intervalSum.add(spent, ordering: .relaxed)
        intervalCount.add(1, ordering: .relaxed)
        if spent > intervalPeak.load(ordering: .relaxed) { intervalPeak.store(spent, ordering: .relaxed) }
        if warmingUp { return }
        totalSum.add(spent, ordering: .relaxed)
        totalCount.add(1, ordering: .relaxed)
        if spent > totalPeak.load(ordering: .relaxed) { totalPeak.store(spent, ordering: .relaxed) }
    }
}

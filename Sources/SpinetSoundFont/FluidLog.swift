import CFluidSynth
import Glibc
import Synchronization
import SpinetEngine

/// Routes FluidSynth's log through Spinet.
///
/// FluidSynth logs from whichever thread calls it. On the render thread a
/// message is copied into a `RealtimeLog` slot (no printing, no allocation);
/// on any other thread (SoundFont loading) it is collected so the loader can
/// name the reason in its error.
enum FluidLog {
    static let realtime = RealtimeLog(slots: 64)
    private static let collected = Mutex<[String]>([])
    private static let stray = Mutex<[String]>([])
    private static let renderThread = Atomic<UInt>(0)
    /// The thread loading a font (one at a time): its messages are collected
    /// even when it rendered before (a batch job's thread loads the next
    /// file's synths), since the load reads them.
    private static let loadingThread = Atomic<UInt>(0)
    private static let installed = Atomic<Bool>(false)

    static func install() {
        if installed.exchange(true, ordering: .acquiringAndReleasing) { return }
        // Statics are created lazily on first use; create these here, off the
        // render thread, so FluidSynth's first warning there allocates nothing.
        _ = realtime.dropped
        _ = renderThread.load(ordering: .relaxed)
        _ = loadingThread.load(ordering: .relaxed)
        let handler: fluid_log_function_t = { level, message, _ in
            guard let message else { return }
            let me = UInt(pthread_self())
            if FluidLog.renderThread.load(ordering: .relaxed) == me && FluidLog.loadingThread.load(ordering: .relaxed) != me {
                FluidLog.realtime.post(message)
                return
            }
            // Debug and info chatter is not for users.
            guard level <= Int32(FLUID_WARN.rawValue) else { return }
            let text = String(cString: message)
            // While a font loads, every message is kept (the loader reads
            // every sample FluidSynth names, and FluidSynth decodes samples
            // on OpenMP threads of its own), up to a bound no real font
            // reaches. Otherwise only the last few: a render thread that is
            // not the marked one (a second offline render thread) can raise
            // a warning for every note, and 30,000 simultaneous notes used
            // to keep 600 MB of them.
            if FluidLog.loadingThread.load(ordering: .relaxed) != 0 {
                FluidLog.collected.withLock { if $0.count < 1 << 16 { $0.append(text) } }
            } else {
                FluidLog.stray.withLock { list in
                    if list.count >= 64 { list.removeFirst() }
                    list.append(text)
                }
            }
        }
        for level in [FLUID_PANIC, FLUID_ERR, FLUID_WARN, FLUID_INFO, FLUID_DBG] {
            fluid_set_log_function(Int32(level.rawValue), handler, nil)
        }
    }

    /// Marks the calling thread as loading a font (or no thread, `false`).
    static func markLoadingThread(_ loading: Bool = true) {
        loadingThread.store(loading ? UInt(pthread_self()) : 0, ordering: .relaxed)
    }

    /// Marks the calling thread as the render thread (messages go to the ring).
    static func markRenderThread() {
        renderThread.store(UInt(pthread_self()), ordering: .relaxed)
    }

    /// Removes and returns the messages collected off the render thread.
    static func takeCollected() -> [String] {
        let others = stray.withLock { list in
            let out = list
            list.removeAll()
            return out
        }
        return others + collected.withLock { list in
            let out = list
            list.removeAll()
            return out
        }
    }
}

/// The memory a SoundFont player takes for its polyphony, and the bound
/// Spinet keeps it under.
///
/// FluidSynth allocates everything a voice needs when its synthesizer is
/// created, for every voice of `synth.polyphony`, used or not: the voice and
/// its two render voices (one for a voice being stolen), the mixer's voice
/// tables, and 64 entries per voice of the ring its voice updates travel
/// in; the unit's flood control adds its voice list. A render runs several
/// players (one per partition), each with the whole
/// polyphony, so `--polyphony` times the players is what it preallocates.
public enum VoiceMemory {
    /// Bytes one voice of polyphony adds to a player, measured with
    /// FluidSynth 2.3.1 on x86-64: the peak resident memory of `spinet render
    /// --stems` of a 12-channel file (12 players) was 128 MB at --polyphony
    /// 256, 618 MB at 4096 and 2,183 MB at 16384, and of a plain render (2
    /// players) 47 MB at 256 and 1,433 MB at 65535: 10.6 KiB per voice and
    /// player each time, so the rest of a render does not grow with it.
    public static let bytesPerVoice = 10_900

    /// The most voice memory one render or play session may preallocate:
    /// 4 GiB. Every default (256 voices on up to 64 players: 180 MB) and the
    /// largest polyphony on a plain render's two players (65535: 1.4 GB) stay
    /// under it; --polyphony 65535 with 12 stems (8.5 GB) does not. More
    /// voices than that sound no better (FluidSynth steals voices long
    /// before), and a render that needs more memory than the machine has
    /// swaps or is killed by the kernel mid-way instead of failing at once.
    public static let budget = 4 << 30

    /// The voice memory of `players` players at `polyphony`, in bytes.
    public static func bytes(polyphony: Int, players: Int) -> Int {
        polyphony * max(players, 1) * bytesPerVoice
    }

    /// The largest polyphony `players` players may have within `budget`.
    public static func largestPolyphony(players: Int) -> Int {
        max(1, min(65535, budget / bytesPerVoice / max(players, 1)))
    }

    /// The most players of `polyphony` voices each within `budget` (at least 1).
    public static func mostPlayers(polyphony: Int) -> Int {
        max(1, budget / bytesPerVoice / max(polyphony, 1))
    }

    /// One line saying why `polyphony` on `players` players (`why` says
    /// what they are for: "one per partition") is beyond the budget, naming the
    /// figures and the fix; nil when it is within.
    public static func problem(polyphony: Int, players: Int, why: String) -> String? {
        let need = bytes(polyphony: polyphony, players: players)
        guard need > budget else { return nil }
        // tenths of a GiB, the need rounded up (never "4.0 GB over a 4 GB limit")
        let tenths = (need * 10 + (1 << 30) - 1) >> 30
        let needText = tenths >= 100 ? "\((tenths + 5) / 10)" : "\(tenths / 10).\(tenths % 10)"
        return "--polyphony \(polyphony) on \(players) SoundFont player\(players == 1 ? "" : "s") (\(why)) needs about \(needText) GB "
            + "of voice memory (each preallocates all its voices); the limit is \(budget >> 30) GB; use --polyphony \(largestPolyphony(players: players)) or less"
    }
}

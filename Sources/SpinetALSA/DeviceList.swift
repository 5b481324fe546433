import CALSA
import Glibc

/// An audio output `--device` accepts.
public struct AudioOutput: Sendable, Equatable {
    /// The name to pass to `--device` (`default`, `hw:1,0`, ...).
    public var name: String
    public var description: String
}

/// What `spinet ports` lists.
public enum DeviceList {
    /// MIDI sources (readable, subscribable ports) and the reason auto-connect
    /// skips a source, if it does. Throws when there is no sequencer.
    public static func midiSources() throws(ALSAError) -> [(port: MIDIPort, skipped: String?)] {
        ALSA.quietErrors()
        if access("/dev/snd/seq", F_OK) != 0 {
            throw ALSAError("no ALSA sequencer (/dev/snd/seq is missing): the kernel module snd-seq is not loaded; load it with 'sudo modprobe snd-seq'")
        }
        var handle: OpaquePointer?
        let rc = snd_seq_open(&handle, "default", Int32(SND_SEQ_OPEN_DUPLEX), Int32(SND_SEQ_NONBLOCK))
        guard rc >= 0, let seq = handle else {
            throw ALSAError("cannot open the ALSA sequencer /dev/snd/seq: \(ALSA.text(rc))")
        }
        defer { snd_seq_close(seq) }
        let me = UInt8(snd_seq_client_id(seq))
        return SequencerPorts.all(seq)
            .filter { $0.isSource && $0.address.client != me && $0.address.client != 0 }   // not System:Timer/Announce
            .map { ($0, $0.autoConnectExclusion(selfClient: me)) }
    }

    /// Playback devices: the sound servers and `default` that alsa-lib's
    /// configuration names, then every card's playback device as `hw:C,D`.
    /// Sound cards the kernel knows (0: none, so nothing can play).
    public static func soundCardCount() -> Int {
        var card: Int32 = -1
        var n = 0
        while snd_card_next(&card) == 0 && card >= 0 { n += 1 }
        return n
    }

    public static func audioOutputs() -> [AudioOutput] {
        ALSA.quietErrors()
        var out: [AudioOutput] = []
        // Named devices from the configuration (default, pipewire, pulse, jack, ...).
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        if snd_device_name_hint(-1, "pcm", &hints) == 0, let hints {
            var i = 0
            while let h = hints[i] {
                i += 1
                guard let n = snd_device_name_get_hint(h, "NAME") else { continue }
                let name = String(cString: n)
                free(n)
                var io = "Output"
                if let d = snd_device_name_get_hint(h, "IOID") { io = String(cString: d); free(d) }
                guard io == "Output" else { continue }
                var desc = ""
                if let d = snd_device_name_get_hint(h, "DESC") {
                    desc = String(cString: d).replacing("\n", with: ", ")
                    free(d)
                }
                // Card-specific names are listed below as hw:C,D.
                let server = ["default", "pipewire", "pulse", "jack", "dmix"]
                if server.contains(name) { out.append(AudioOutput(name: name, description: desc)) }
            }
            snd_device_name_free_hint(hints)
        }
        if !out.contains(where: { $0.name == "default" }) {
            out.insert(AudioOutput(name: "default", description: "the system's default output"), at: 0)
        }

        var card: Int32 = -1
        while snd_card_next(&card) == 0 && card >= 0 {
            var ctl: OpaquePointer?
            guard snd_ctl_open(&ctl, "hw:\(card)", 0) >= 0, let ctl else { continue }
            defer { snd_ctl_close(ctl) }
            var info: OpaquePointer?
            snd_ctl_card_info_malloc(&info)
            defer { snd_ctl_card_info_free(info) }
            guard snd_ctl_card_info(ctl, info) >= 0 else { continue }
            let cardID = String(cString: snd_ctl_card_info_get_id(info))
            let cardName = String(cString: snd_ctl_card_info_get_name(info))
            var device: Int32 = -1
            var pinfo: OpaquePointer?
            snd_pcm_info_malloc(&pinfo)
            defer { snd_pcm_info_free(pinfo) }
            while snd_ctl_pcm_next_device(ctl, &device) == 0 && device >= 0 {
                snd_pcm_info_set_device(pinfo, UInt32(device))
                snd_pcm_info_set_subdevice(pinfo, 0)
                snd_pcm_info_set_stream(pinfo, SND_PCM_STREAM_PLAYBACK)
                guard snd_ctl_pcm_info(ctl, pinfo) >= 0 else { continue }   // capture only
                let pcmName = String(cString: snd_pcm_info_get_name(pinfo))
                out.append(AudioOutput(name: "hw:\(card),\(device)",
                                       description: "\(cardName): \(pcmName) (also hw:\(cardID),\(device); plughw:\(card),\(device) converts rate and format)"))
            }
        }
        return out
    }
}
